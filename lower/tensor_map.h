// TensorMap: dependencies inferred from overlapping buffer regions (PTO's idea, with
// write-after-read tracked too), so every consumer follows exactly the producers it overlaps.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "lower/plan.h"

namespace amk::lower {

/// Records tasks in execution order and answers which earlier tasks each one must follow.
class TensorMap {
 public:
  /// Records `task`'s accesses; appends to `deps` the earlier tasks it must follow: writers of
  /// what it reads (RAW), writers and readers of what it writes (WAW, WAR). Each task once.
  void record(uint32_t task, std::span<const Access> reads, std::span<const Access> writes,
              std::vector<uint32_t>& deps);
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
  std::vector<uint32_t> seen_;
  uint32_t stamp_ = 0;
};

/// Pass 3, dependencies: fills p.deps from the tasks' regions with a TensorMap.
void derive_dependencies(Plan& p);

}  // namespace amk::lower
