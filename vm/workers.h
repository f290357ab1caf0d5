// Internal: the worker threads of one launch: the ready ring, their completion counts (the
// watchdog's progress signal) and the epoch idle threads block on after a bounded spin.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "vm/ready_ring.h"
#include "vm/spin.h"

namespace amk::vm::detail {

struct alignas(64) PaddedCount {
  std::atomic<uint64_t> v{0};
};

/// Worker bookkeeping of one launch: a ready ring, per-thread completion counts (the watchdog's
/// progress signal), and an epoch word idle threads block on after a bounded spin.
struct Workers {
  explicit Workers(uint32_t nt, int workers) : ready(nt), done(static_cast<size_t>(workers)) {}
  ReadyRing ready;
  alignas(64) std::atomic<uint32_t> epoch{0};
  alignas(64) std::atomic<int> sleepers{0};
  std::atomic<int> active{0};  // threads not yet returned
  std::vector<PaddedCount> done;

  void push(uint32_t t) {
    ready.push(t);
    wake_one();
  }
  void wake_one() {
    if (sleepers.load(std::memory_order_seq_cst) > 0) {
      epoch.fetch_add(1, std::memory_order_seq_cst);
      epoch.notify_one();
    }
  }
  bool has_items() const { return ready.has_items(); }
  uint32_t try_pop() { return ready.try_pop(); }
  uint64_t total_done() const {
    uint64_t s = 0;
    for (const auto& d : done) s += d.v.load(std::memory_order_acquire);
    return s;
  }
  void wake_all() {
    epoch.fetch_add(1, std::memory_order_seq_cst);
    epoch.notify_all();
  }
  /// One idle step of a worker: a pause while `spin` < kSpin, then (spin == kSpin) a block on the
  /// epoch unless `keep_awake()` holds, after which the spinning starts over.
  template <class F>
  void idle(int& spin, F&& keep_awake) {
    if (spin < kSpin) {
      ++spin;
      AMK_PAUSE();
      return;
    }
    sleep(keep_awake);
    spin = 0;
  }
  /// Blocks until the epoch moves, unless `keep_awake()` holds once registered as a sleeper.
  template <class F>
  void sleep(F&& keep_awake) {
    const uint32_t e = epoch.load(std::memory_order_seq_cst);
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    if (!keep_awake()) epoch.wait(e, std::memory_order_seq_cst);
    sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
};

}  // namespace amk::vm::detail
