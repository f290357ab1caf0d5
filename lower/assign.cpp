#include "lower/assign.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "lower/cost.h"

namespace amk::lower {

std::string assign_workers(Plan& p) {
  if (p.opt.amk_compat || p.opt.reference) return "";
  const size_t n = p.tasks.size();
  const auto sms = static_cast<size_t>(p.target->num_workers());
  if (p.knobs.sm == Knobs::Sm::RoundRobin) {
    for (size_t i = 0; i < n; ++i) p.tasks[i].task.sm = static_cast<int64_t>(i % sms);
    return "";
  }
  std::vector<int64_t> fixed(n, -1);
  for (auto [task, sm] : p.knobs.sm_map) {
    if (task >= static_cast<int64_t>(n))
      return fmt::format(
          "/config/sm_assignment/{}: task {} does not exist (the program has {} "
          "tasks)",
          task, task, n);
    fixed[static_cast<size_t>(task)] = sm;
  }
  // Earliest finish time in queue (id) order: exactly the cost model's makespan recurrence.
  std::vector<double> fin(n, 0.0), avail(sms, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const double t = task_time_sm_us(p.program, p.tasks[i].task, p.target->record, p.knobs.depth);
    double ready = 0;
    for (uint32_t d : p.deps(i)) ready = std::max(ready, fin[d]);
    size_t best = 0;
    if (fixed[i] >= 0) {
      best = static_cast<size_t>(fixed[i]);
    } else {
      double best_start = std::numeric_limits<double>::infinity();
      for (size_t s = 0; s < sms; ++s) {
        const double start = std::max(ready, avail[s]);
        if (start < best_start) {  // ties: the lowest index, so queues stay dense
          best_start = start;
          best = s;
          if (avail[s] <= ready) break;  // cannot start earlier than `ready`
        }
      }
    }
    fin[i] = std::max(ready, avail[best]) + t;
    avail[best] = fin[i];
    p.tasks[i].task.sm = static_cast<int64_t>(best);
  }
  return "";
}

}  // namespace amk::lower
