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
  void record(uint32_t task, std::span<const Access> reads, std::span<const Access> writes,
              std::vector<uint32_t>& deps);
  /// Stale-entry cleanup: drops the entries of tasks before `task` (retired: nothing can wait on
  /// them any more).
  void forget_before(uint32_t task);
  /// Live entries (for tests and the orchestrator's pool accounting).
  size_t entries() const;
  /// Forgets everything (memory kept).
  void clear();

 private:
  struct Entry {
    uint32_t task;
    Region region;
  };
  struct Slot {
    std::vector<Entry> writes, reads;  // live entries (covered ones are dropped)
  };
  std::vector<Slot> by_buffer_;
  std::vector<int64_t> live_;     // buffers that may hold entries (each once)
  std::vector<uint8_t> in_live_;  // by buffer
  std::vector<uint32_t> seen_;
  uint32_t stamp_ = 0;
};

}  // namespace amk::ir
