// Internal: a monitor thread, the one watchdog of the VM (a launch's and the orchestrator's).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace amk::vm::detail {

/// A monitor thread: calls `tick()` every `slice` until it returns false or stop() is called.
class Monitor {
 public:
  Monitor() = default;
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;
  ~Monitor() { stop(); }
  template <class Tick>
  void start(std::chrono::milliseconds slice, Tick tick) {
    thread_ = std::thread([this, slice, tick]() mutable {
      std::unique_lock lk(mu_);
      while (!stop_) {
        cv_.wait_for(lk, slice);
        if (stop_ || !tick()) return;
      }
    });
  }
  /// Stops the ticks and joins the thread (idempotent).
  void stop() {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

}  // namespace amk::vm::detail
