#include "lower/emit.h"

#include <algorithm>

#include <fmt/format.h>

namespace amk::lower {

ir::Status emit(Plan& p) {
  std::vector<int64_t> counter(p.group_notes.size(), -1);
  std::vector<int64_t> size(p.group_notes.size(), 0);
  for (const PlanTask& t : p.tasks) ++size[static_cast<size_t>(t.group)];
  p.program.counters.clear();
  // A warm plan keeps its tasks (and the program its task storage): copy into the elements the
  // previous run left, so a steady state allocates nothing; a cold one moves.
  if (!p.keep_tasks) p.program.tasks.clear();
  p.program.tasks.resize(p.tasks.size());
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    PlanTask& pt = p.tasks[i];
    auto& c = counter[static_cast<size_t>(pt.group)];
    if (c < 0) c = p.program.add_counter(p.group_notes[static_cast<size_t>(pt.group)]);
    ir::Task& t = p.program.tasks[i];
    if (p.keep_tasks)
      t = pt.task;
    else
      t = std::move(pt.task);
    t.out_counter = c;
    t.waits.clear();
    for (uint32_t d : p.deps(i)) {
      const int64_t g = p.tasks[d].group;
      if (g == pt.group) continue;
      const int64_t dc = counter[static_cast<size_t>(g)];
      if (std::any_of(t.waits.begin(), t.waits.end(),
                      [&](const ir::Wait& w) { return w.counter == dc; }))
        continue;
      ir::Wait w;
      w.counter = dc;
      w.threshold = size[static_cast<size_t>(g)];
      t.waits.push_back(std::move(w));
    }
    if (t.waits.size() > static_cast<size_t>(ir::kMaxWaits))
      return ir::error("lower.abi",
                       fmt::format("task {} ({}) needs {} waits (ABI max {}); fuse less or tile "
                                   "coarser",
                                   i, t.label, t.waits.size(), ir::kMaxWaits));
  }
  return {};
}

}  // namespace amk::lower
