#include "lower/emit.h"

#include <algorithm>

#include <fmt/format.h>

#include "ir/assert.h"

namespace amk::lower {

ir::Status emit(Plan& p) {
  if (p.tasks_emitted) {  // the same tasks, counters and waits as last time: only the SMs move
    AMK_ASSERT(p.program.tasks.size() == p.tasks.size(), "emit: tasks_emitted on other tasks");
    if (!p.sm.empty())
      for (size_t i = 0; i < p.tasks.size(); ++i) p.program.tasks[i].sm = p.sm[p.task_at(i)];
    else
      for (size_t i = 0; i < p.tasks.size(); ++i)
        p.program.tasks[i].sm = p.tasks[p.task_at(i)].task.sm;
    return {};
  }
  std::vector<int64_t> counter(p.group_notes.size(), -1);
  std::vector<int64_t> size(p.group_notes.size(), 0);
  for (const PlanTask& t : p.tasks) ++size[static_cast<size_t>(t.group)];
  p.program.counters.clear();
  // A warm plan keeps its tasks (and the program its task storage): copy into the elements the
  // previous run left, so a steady state allocates little; a cold one moves.
  if (!p.keep_tasks) p.program.tasks.clear();
  resize_reusing(p.program.tasks, p.tasks.size(), p.spare_tasks);
  for (size_t i = 0; i < p.tasks.size(); ++i) {  // i: emission position
    const uint32_t id = p.task_at(i);
    PlanTask& pt = p.tasks[id];
    auto& c = counter[static_cast<size_t>(pt.group)];
    if (c < 0) c = p.program.add_counter(p.group_notes[static_cast<size_t>(pt.group)]);
    ir::Task& t = p.program.tasks[i];
    if (p.keep_tasks)
      t = pt.task;
    else
      t = std::move(pt.task);
    if (!p.sm.empty()) t.sm = p.sm[id];
    t.out_counter = c;
    t.waits.clear();
    for (uint32_t d : p.deps(id)) {
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
