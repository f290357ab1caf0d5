// TensorMap: dependencies inferred from overlapping buffer regions (PTO's idea, with
// write-after-read tracked too, which PTO leaves out). One piece of code serves the lowering's
// dependency pass and the orchestration API.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace amk::ir {

/// A region of a buffer: the whole buffer (axis -1), or [lo, hi) along one axis.
struct Region {
  int axis = -1;
  int64_t lo = 0, hi = 0;
};

/// Whether two regions of one buffer may share an element (different axes: conservatively yes).
bool overlaps(const Region& a, const Region& b);
/// Whether `outer` contains every element of `inner`.
bool covers(const Region& outer, const Region& inner);

/// One buffer access of a task.
struct Access {
  int64_t buffer = 0;
  Region region;
};

/// Records tasks in submission order and answers which earlier tasks each one must follow.
class TensorMap {
 public:
  /// Records `task`'s accesses; appends to `deps` the earlier tasks it must follow: writers of
  /// what it reads (RAW), writers and readers of what it writes (WAW, WAR). Each task once; ids
  /// increase from call to call.
  /// With `war_only`, appends one flag per appended dependency: 1 when it comes only from a
  /// read entry of what this task writes (write-after-read).
  void record(uint32_t task, std::span<const Access> reads, std::span<const Access> writes,
              std::vector<uint32_t>& deps, std::vector<uint8_t>* war_only = nullptr);
  /// Stale-entry cleanup: drops the entries of tasks before `task` (retired: nothing can wait on
  /// them any more). Costs a step per entry those tasks made, not a visit of every buffer.
  void forget_before(uint32_t task);
  /// Live entries (for tests and the orchestrator's pool accounting).
  size_t entries() const;
  /// Forgets everything (memory kept).
  void clear();

 private:
  // Entries live in one pool of nodes with a free list, chained per buffer in insertion order:
  // no allocation once the pool has grown to the live entries.
  static constexpr uint32_t kFreed = UINT32_MAX;  // Node::task on the free list
  struct Node {
    uint32_t task;
    int32_t next;  // -1: end
    Region region;
  };
  // `axis` >= 0: every entry is a non-empty region along that axis ending at or before `end`, so
  // a region along it starting at `end` or later overlaps and covers none of them (the tiles of
  // one output, written in order, skip the scan).
  static constexpr int kEmpty = -1, kMixed = -2;
  struct List {
    int32_t head = -1, tail = -1;
    int axis = kEmpty;
    int64_t end = 0;
    bool past(const Region& r) const {
      return head < 0 || (axis >= 0 && r.axis == axis && r.lo >= end);
    }
  };
  struct Slot {
    List writes, reads;  // live entries (covered ones are dropped)
  };
  // Every entry in insertion order, hence in task order: forget_before pops the stale ones from
  // the front. A list holds its entries in that order too, so a stale entry still live is its
  // list's head when popped.
  struct Expiry {
    int64_t buffer;
    uint32_t task;
    int32_t node;
    bool read;
  };
  void push(int64_t buffer, bool read, uint32_t task, const Region& r);
  template <class Pred>
  void erase_if(List& l, Pred&& stale);
  void free_node(int32_t i);
  Slot& slot(int64_t buffer);

  std::vector<Node> pool_;
  int32_t free_ = -1;
  size_t live_entries_ = 0;
  std::vector<Slot> by_buffer_;
  std::vector<Expiry> expiry_;  // [expiry_head_, end): entries not yet forgotten
  size_t expiry_head_ = 0;
  std::vector<uint32_t> seen_;  // by task (a ring): stamp_ once it is in this call's deps
  std::vector<uint32_t> pos_;   // by task (a ring): its index in war_only (when seen_)
  uint32_t stamp_ = 0;
};

}  // namespace amk::ir
