// The one thread pool of amk: persistent worker threads that run a batch of items, the caller
// taking part as thread 0. Plain std::threads, so sanitizers see every hand-off (Debian's oneTBB
// is not instrumented).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace amk::ir {

/// `n` threads (the caller and n - 1 workers started once) that run batches of items.
class Pool {
 public:
  /// Starts n - 1 worker threads (none for n <= 1: every batch runs on the caller's thread; fewer
  /// when the system has no more to give).
  explicit Pool(size_t n);
  /// Stops and joins the workers.
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  /// Runs work(thread, item) for every item in [0, items), each once, on the pool's threads
  /// (`thread` in [0, n): 0 is the caller); returns when all are done, rethrowing the first
  /// exception an item threw (the items after it still run).
  void run(size_t items, const std::function<void(size_t, size_t)>& work);
  /// The number of threads, the caller's included.
  size_t size() const { return threads_.size() + 1; }

 private:
  void drain(size_t w);
  void loop(size_t w);

  std::mutex m_;
  std::condition_variable start_, done_;
  const std::function<void(size_t, size_t)>* work_ = nullptr;
  size_t items_ = 0, busy_ = 0, generation_ = 0;
  std::atomic<size_t> next_{0};
  std::exception_ptr failed_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace amk::ir
