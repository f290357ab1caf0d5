// Internal: the launch's ready ring, a bounded lock-free MPMC queue of task ids.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>

#include "vm/spin.h"

namespace amk::vm::detail {

/// A lock-free MPMC queue of task ids holding at most `capacity` ids at once (a launch's task
/// count, each task entering once; or an orchestrator's task window). Per-slot sequence numbers
/// (Vyukov) let it wrap: a push waits for the previous lap's pop of its slot to finish reading.
struct ReadyRing {
  explicit ReadyRing(uint32_t capacity)
      : mask(std::bit_ceil(std::max<uint32_t>(capacity, 1)) - 1), cells(new Cell[mask + 1]) {
    for (uint32_t i = 0; i <= mask; ++i) cells[i].seq.store(i, std::memory_order_relaxed);
  }
  struct Cell {
    std::atomic<uint32_t> seq;  // i: free for push i; i + 1: holds push i's id
    uint32_t id = 0;
  };
  const uint32_t mask;
  std::unique_ptr<Cell[]> cells;
  alignas(64) std::atomic<uint32_t> head{0};
  alignas(64) std::atomic<uint32_t> tail{0};

  void push(uint32_t t) {
    const uint32_t i = tail.fetch_add(1, std::memory_order_seq_cst);
    Cell& c = cells[i & mask];
    while (c.seq.load(std::memory_order_acquire) != i) AMK_PAUSE();  // last lap's pop reading
    c.id = t;
    c.seq.store(i + 1, std::memory_order_release);
  }
  /// Ids pushed and not yet claimed (wrap-safe).
  int32_t size() const {
    return static_cast<int32_t>(tail.load(std::memory_order_seq_cst) -
                                head.load(std::memory_order_seq_cst));
  }
  bool has_items() const { return size() > 0; }
  uint32_t try_pop() {
    uint32_t h = head.load(std::memory_order_relaxed);
    for (;;) {
      if (static_cast<int32_t>(tail.load(std::memory_order_acquire) - h) <= 0) return kNone;
      if (head.compare_exchange_weak(h, h + 1, std::memory_order_acq_rel,
                                     std::memory_order_relaxed))
        break;
    }
    Cell& c = cells[h & mask];
    while (c.seq.load(std::memory_order_acquire) != h + 1) AMK_PAUSE();  // pusher mid-publish
    const uint32_t v = c.id;
    c.seq.store(h + mask + 1, std::memory_order_release);
    return v;
  }
};

}  // namespace amk::vm::detail
