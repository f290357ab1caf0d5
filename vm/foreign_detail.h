// Internal: what the MPK and PTO runs of vm/foreign.h share.
#pragma once

#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/program.h"
#include "ir/result.h"
#include "vm/foreign.h"

namespace amk::vm::detail {

/// Counter values of a run: a task is ready when every wait holds; completing one increments its
/// counter.
class Counters {
 public:
  explicit Counters(const ir::Program& p) : p_(p), v_(p.counters.size(), 0) {
    for (size_t c = 0; c < p.counters.size(); ++c) v_[c] = p.counters[c].init;
  }
  bool ready(uint32_t t) const {
    for (const ir::Wait& w : p_.tasks[t].waits)
      if (w.counter < 0 || w.counter >= static_cast<int64_t>(v_.size()) ||
          v_[static_cast<size_t>(w.counter)] < w.threshold)
        return false;
    return true;
  }
  void complete(uint32_t t) {
    const int64_t c = p_.tasks[t].out_counter;
    if (c >= 0 && c < static_cast<int64_t>(v_.size())) ++v_[static_cast<size_t>(c)];
  }
  /// "waits on counter C (note) for >= T, has V" for the first wait that does not hold.
  std::string why(uint32_t t) const {
    for (const ir::Wait& w : p_.tasks[t].waits) {
      const int64_t have = w.counter >= 0 && w.counter < static_cast<int64_t>(v_.size())
                               ? v_[static_cast<size_t>(w.counter)]
                               : 0;
      if (have < w.threshold)
        return fmt::format("waits on counter {} ({}) for >= {}, has {}", w.counter,
                           w.counter >= 0 && w.counter < static_cast<int64_t>(v_.size())
                               ? p_.counters[static_cast<size_t>(w.counter)].note
                               : std::string("missing"),
                           w.threshold, have);
    }
    return "is ready";
  }

 private:
  const ir::Program& p_;
  std::vector<int64_t> v_;
};

/// "task 12 (label)".
inline std::string task_name(const ir::Program& p, uint32_t t) {
  return fmt::format("task {} ({})", t, p.tasks[t].display());
}

/// MPK's run (foreign_mpk.cpp).
ir::Result<ForeignRun> run_mpk(const ir::Program& p, const ForeignOptions& o);
/// PTO's (and amk's orchestrator's) run (foreign_pto.cpp).
ir::Result<ForeignRun> run_rings(const ir::Program& p, const ForeignOptions& o);

}  // namespace amk::vm::detail
