// MPK's persistent kernel as timed no-ops: the iteration's tasks dealt to their workers' bounded
// queues at once, each worker running its queue in order once the head's event has fired, and
// only the worker blocks the chip keeps resident beside the scheduler blocks.
#include <algorithm>
#include <deque>
#include <limits>

#include <fmt/format.h>

#include "vm/foreign.h"
#include "vm/foreign_detail.h"

namespace amk::vm::detail {

namespace {

// The launch shape a run has: workers, scheduler blocks, SMs and the workers resident.
struct Launch {
  int64_t workers, ctas, sms, resident;
};

// The stuck report: the workers never resident (the cause when there are any), then per resident
// worker its head and what it waits for.
ir::Diagnostic stuck_report(const ir::Program& p, const Launch& l,
                            const std::vector<std::deque<uint32_t>>& queue,
                            const Counters& counters, size_t done, double now) {
  std::string lines;
  if (l.resident < l.workers) {
    size_t k = 0;
    for (int64_t w = l.resident; w < l.workers; ++w) k += queue[static_cast<size_t>(w)].size();
    lines += fmt::format(
        "\n  workers {}..{} never resident: {} worker and {} scheduler block(s) need {} SMs at "
        "once, the chip has {} (mirage #761); their {} queued task(s) never run",
        l.resident, l.workers - 1, l.workers, l.ctas, l.workers + l.ctas, l.sms, k);
  }
  int shown = 0;
  for (int64_t w = 0; w < l.resident && shown < 16; ++w) {
    const auto& q = queue[static_cast<size_t>(w)];
    if (q.empty()) continue;
    ++shown;
    lines += fmt::format("\n  worker {}: head {} {} ({} task(s) queued)", w,
                         task_name(p, q.front()), counters.why(q.front()), q.size());
  }
  return ir::error("vm.deadlock",
                   fmt::format("MPK graph stuck after {} of {} tasks (t = {} us):{}", done,
                               p.tasks.size(), now, lines),
                   ir::task_pointer(0));
}

// MPK deals a worker's tasks at the iteration's start: more than its queue holds overflows it.
ir::Status check_queues(const ir::Runtime& rt, const std::vector<std::deque<uint32_t>>& queue,
                        int64_t queue_len) {
  for (size_t w = 0; w < queue.size(); ++w) {
    // BEGIN_TASK_GRAPH ran before the deal; the rest are all queued at once.
    const auto& q = queue[w];
    const auto dealt = static_cast<int64_t>(std::count_if(q.begin(), q.end(), [&](uint32_t t) {
      return t >= rt.tasks.size() || rt.tasks[t].kind != 10;
    }));
    if (dealt >= queue_len)
      return ir::error(
          "vm.overflow",
          fmt::format("worker {}'s queue overflowed: {} task(s) are dealt to it at the iteration's "
                      "start and its queue holds {} (MPK asserts next + queue > last; without the "
                      "assert the ring overwrites tasks not yet read: mirage #464)",
                      w, dealt, queue_len),
          ir::task_pointer(q.back()));
  }
  return {};
}

}  // namespace

ir::Result<ForeignRun> run_mpk(const ir::Program& p, const ForeignOptions& o) {
  const ir::Runtime& rt = *p.runtime;
  const int64_t workers = std::max<int64_t>(1, rt.value(ir::Cap::workers).value_or(1));
  const int64_t schedulers = rt.value(ir::Cap::schedulers).value_or(0);
  const int64_t ctas = (schedulers + 3) / 4;
  int64_t sms = rt.value(ir::Cap::sms).value_or(workers + ctas);
  if (p.target && p.target->num_sms.is_int) sms = p.target->num_sms.i;
  // The scheduler kernel's blocks take their SMs; the workers fill what is left (mirage #761).
  const int64_t resident = std::clamp<int64_t>(sms - ctas, 0, workers);
  const int64_t queue_len = rt.value(ir::Cap::worker_queue).value_or(8192);
  const size_t n = p.tasks.size();
  std::vector<std::deque<uint32_t>> queue(static_cast<size_t>(workers));
  std::vector<uint32_t> free_tasks;  // not queued on a worker (TERMINATE): run when ready
  for (uint32_t t = 0; t < n; ++t) {
    const auto& sm = p.tasks[t].sm;
    if (sm && *sm >= 0 && *sm < workers) {
      queue[static_cast<size_t>(*sm)].push_back(t);
    } else {
      free_tasks.push_back(t);
    }
  }
  if (ir::Status st = check_queues(rt, queue, queue_len); !st) return std::move(st.diagnostics);
  Counters counters(p);
  ForeignRun run;
  std::vector<double> busy_until(static_cast<size_t>(workers), -1);
  std::vector<int64_t> running(static_cast<size_t>(workers), -1);
  std::vector<uint8_t> free_started(free_tasks.size(), 0);
  std::vector<std::pair<double, uint32_t>> free_running;
  double now = 0;
  size_t done = 0;
  while (done < n) {
    // Start every head whose event has fired, on the resident workers.
    for (int64_t w = 0; w < resident; ++w) {
      auto& q = queue[static_cast<size_t>(w)];
      if (running[static_cast<size_t>(w)] >= 0 || q.empty() || !counters.ready(q.front())) continue;
      running[static_cast<size_t>(w)] = q.front();
      busy_until[static_cast<size_t>(w)] = now + o.task_us;
      q.pop_front();
    }
    for (size_t k = 0; k < free_tasks.size(); ++k)
      if (!free_started[k] && counters.ready(free_tasks[k])) {
        free_started[k] = 1;
        free_running.emplace_back(now + o.task_us, free_tasks[k]);
      }
    double next = std::numeric_limits<double>::infinity();
    for (int64_t w = 0; w < resident; ++w)
      if (running[static_cast<size_t>(w)] >= 0)
        next = std::min(next, busy_until[static_cast<size_t>(w)]);
    for (const auto& [at, t] : free_running) next = std::min(next, at);
    if (next == std::numeric_limits<double>::infinity()) break;  // nothing runs: stuck
    now = next;
    for (int64_t w = 0; w < resident; ++w)
      if (running[static_cast<size_t>(w)] >= 0 && busy_until[static_cast<size_t>(w)] <= now) {
        counters.complete(static_cast<uint32_t>(running[static_cast<size_t>(w)]));
        running[static_cast<size_t>(w)] = -1;
        ++done;
      }
    for (size_t k = 0; k < free_running.size();)
      if (free_running[k].first <= now) {
        counters.complete(free_running[k].second);
        free_running.erase(free_running.begin() + static_cast<std::ptrdiff_t>(k));
        ++done;
      } else {
        ++k;
      }
  }
  run.tasks_run = done;
  run.makespan_us = now;
  if (done == n) return run;
  return stuck_report(p, Launch{workers, ctas, sms, resident}, queue, counters, done, now);
}

}  // namespace amk::vm::detail
