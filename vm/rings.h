// Internal: the orchestrator's bounded resources, PTO2's rings: the task ring (slots by task id),
// the heap ring (make_tensor() memory) and the dependency pool (producer -> consumer entries).
// Each is reclaimed in order as the orchestrator's watermark passes the tasks that hold it.
#pragma once

#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace amk::vm::detail {

/// An index into a ring of `size` entries: a mask when the size is a power of two (the defaults),
/// so the hot paths take no division.
class RingIndex {
 public:
  explicit RingIndex(uint64_t size = 1)
      : size_(size), mask_(std::has_single_bit(size) ? size - 1 : 0) {}
  uint64_t operator()(uint64_t i) const { return mask_ ? i & mask_ : i % size_; }

 private:
  uint64_t size_, mask_;
};

/// The task ring: `window` slots, task id -> slot.
template <class Slot>
class TaskRing {
 public:
  explicit TaskRing(uint32_t window) : slots_(new Slot[window]), at_(window), window_(window) {}
  Slot& operator[](uint32_t id) { return slots_[at_(id)]; }
  /// The ring position of the i-th entry of anything laid out like the slots (the stage).
  uint64_t pos(uint64_t i) const { return at_(i); }
  uint32_t window() const { return window_; }

 private:
  std::unique_ptr<Slot[]> slots_;
  RingIndex at_;
  uint32_t window_;
};

/// One block of the heap ring.
struct HeapBlock {
  int64_t off = 0, size = 0;
  uint32_t last_user = 0;  ///< last task using it (+1; 0: none yet)
  bool pinned = true;      ///< its scope has not ended
  int scope = -1;
};

/// The heap ring: blocks allocated in order (never straddling the end) and freed in order once
/// unpinned (their scope ended) and past their last user. The caller serialises access (the
/// orchestrator's watermark lock).
class HeapRing {
 public:
  explicit HeapRing(int64_t bytes)
      : mem_(new std::byte[static_cast<size_t>(bytes > 0 ? bytes : 1)]),
        bytes_(bytes > 0 ? bytes : 0) {}
  int64_t capacity() const { return bytes_; }
  int64_t used() const { return used_; }
  std::byte* data(int64_t off) { return mem_.get() + off; }
  /// Where `size` bytes fit now, or -1.
  int64_t place(int64_t size) const {
    if (blocks_.empty()) return 0;
    const int64_t top = blocks_.back().off + blocks_.back().size, tail = blocks_.front().off;
    if (top > tail || (top == tail && used_ == 0)) {
      if (top + size <= bytes_) return top;
      if (size <= tail) return 0;  // wrap; never straddle the end
      return -1;
    }
    return top + size <= tail ? top : -1;
  }
  /// Takes [off, off + size) for `scope` (-1: the top level); returns the block's global index.
  int64_t take(int64_t off, int64_t size, int scope) {
    blocks_.push_back({off, size, 0, true, scope});
    used_ += size;
    return popped_ + static_cast<int64_t>(blocks_.size()) - 1;
  }
  /// Task `id` uses block `block` (a global index; a block already freed is ignored).
  void use(int64_t block, uint32_t id) {
    if (block >= popped_) blocks_[static_cast<size_t>(block - popped_)].last_user = id + 1;
  }
  /// Unpins the blocks of `scope` (-1: the top level's, at finish()).
  void unpin(int scope) {
    for (HeapBlock& b : blocks_)
      if (b.scope == scope) b.pinned = false;
  }
  /// Frees the unpinned blocks at the front whose last user is below `alive`.
  void free_before(uint32_t alive) {
    while (!blocks_.empty() && !blocks_.front().pinned && blocks_.front().last_user <= alive) {
      used_ -= blocks_.front().size;
      blocks_.pop_front();
      ++popped_;
    }
  }
  /// The oldest live block, or nullptr.
  const HeapBlock* oldest() const { return blocks_.empty() ? nullptr : &blocks_.front(); }

 private:
  std::unique_ptr<std::byte[]> mem_;
  int64_t bytes_;
  std::deque<HeapBlock> blocks_;  // allocation order
  int64_t popped_ = 0;            // global index of blocks_.front()
  int64_t used_ = 0;
};

/// A dependency-pool entry: `consumer` waits for `producer`; `next` chains the producer's fanout.
struct DepEntry {
  uint32_t producer = 0, consumer = 0;
  int32_t next = -1;
};

/// The dependency pool: entries taken in order by submits (a ring) and returned in order as the
/// watermark passes their consumers.
class DepPool {
 public:
  explicit DepPool(uint32_t size) : entries_(new DepEntry[size]), at_(size), size_(size) {}
  DepEntry& operator[](int32_t e) { return entries_[static_cast<size_t>(e)]; }
  /// The pool index of the i-th entry ever taken.
  int32_t at(uint64_t i) const { return static_cast<int32_t>(at_(i)); }
  uint32_t size() const { return size_; }

 private:
  std::unique_ptr<DepEntry[]> entries_;
  RingIndex at_;
  uint32_t size_;
};

}  // namespace amk::vm::detail
