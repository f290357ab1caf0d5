#include "targets/cost.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "ir/assert.h"
#include "ir/digraph.h"
#include "ir/graph.h"

namespace amk::targets {

namespace {

struct Parts {
  double mem_us = 0, compute_us = 0;
  double hbm_us = 0;     // the bytes at the achievable HBM bandwidth: prefetching hides latency,
                         // it does not move bytes faster, so the shared-HBM bound has no `exposed`
  double mem_sm_us = 0;  // at one SM's share: kSmShare x (bandwidth / num_sms), at most all of it
};

// One SM streams at most this many times its fair share of HBM bandwidth (so a quarter of the
// SMs saturate HBM); AMK's formula lets every task stream at full bandwidth.
constexpr double kSmShare = 4.0;

// What task_parts reads of a target and a depth, worked out once for all of a program's tasks.
struct Rates {
  double exposed, bw, tf, sm_bw;
  Rates(const ir::Target& tg, int64_t depth)
      : exposed(std::max(0.5, 1.0 / (1.0 + 0.6 * static_cast<double>(depth)))),
        bw(tg.hbm_bandwidth_gbs.as_double()),
        tf(tg.fp16_tflops.as_double()),
        sm_bw(std::min(bw, bw * kSmShare / std::max(1.0, tg.num_sms.as_double()))) {}
};

Parts task_parts(const ir::Program& p, const ir::Task& t, const Rates& r) {
  const ir::TaskLoad load = ir::task_load(p, t);
  const double hbm = r.bw > 0 ? load.bytes / (r.bw * 1e3 * 0.80) : 0.0;
  return {hbm * r.exposed, r.tf > 0 ? load.flops / (r.tf * 1e6 * 0.70) : 0.0, hbm,
          r.sm_bw > 0 ? load.bytes / (r.sm_bw * 1e3 * 0.80) * r.exposed : 0.0};
}

double finish(const Parts& q, double mem, const ir::Task& t) {
  return std::max(mem, q.compute_us) + 1.5 + (t.op == ir::Op::GEMV_TILE ? 0.05 : 0.0);
}

// The queues a placed program runs under: AMK's loader puts an unassigned task on SM 0; the
// tasks of another runtime's graph that no worker is dealt (MPK's scheduler-run ones) are in none.
ir::QueueEdges placed_queues(const ir::Program& p) {
  return p.runtime && p.runtime->kind != ir::RuntimeKind::Amk ? ir::QueueEdges::Assigned
                                                              : ir::QueueEdges::Loader;
}

}  // namespace

double task_time_us(const ir::Program& p, const ir::Task& t, const ir::Target& tg, int64_t depth) {
  const Parts q = task_parts(p, t, Rates(tg, depth));
  return finish(q, q.mem_us, t);
}

double task_time_sm_us(const ir::Program& p, const ir::Task& t, const ir::Target& tg,
                       int64_t depth) {
  const Parts q = task_parts(p, t, Rates(tg, depth));
  return finish(q, q.mem_sm_us, t);
}

CostEstimate estimate(const ir::Program& p, const ir::Target& tg) {
  return estimate(p, tg, ir::Graph::build(p));
}

CostEstimate estimate(const ir::Program& p, const ir::Target& tg, const ir::Graph& g,
                      const ir::ScheduleGraph* queues) {
  AMK_ASSERT(g.num_tasks() == p.tasks.size(), "estimate: a graph of another program");
  CostEstimate r;
  const int64_t depth = p.config ? p.config->depth() : 2;
  const size_t n = p.tasks.size();
  std::vector<double> t(n), ts(n);  // AMK's task times; with the per-SM bandwidth share
  const Rates rates(tg, depth);
  for (size_t i = 0; i < n; ++i) {
    const Parts q = task_parts(p, p.tasks[i], rates);
    t[i] = finish(q, q.mem_us, p.tasks[i]);
    ts[i] = finish(q, q.mem_sm_us, p.tasks[i]);
    r.total_us += t[i];
    r.bandwidth_us += q.hbm_us;
  }
  const double w = static_cast<double>(p.total_weight_bytes());
  r.floor_us = tg.bandwidth_bound_us(w);
  r.sm_assigned = p.sm_assigned();
  const ir::ScheduleGraph deps(p, g, ir::QueueEdges::None);
  if (!deps.acyclic()) {
    r.cyclic = true;
    r.makespan_us = r.amk_makespan_us = r.total_us;
    return r;
  }
  const std::span<const double> ct(t), cts(ts);
  if (!r.sm_assigned) {  // the critical path and the queue bound from one walk
    const auto len = *ir::longest_lengths<2>(deps, {ct, cts});
    r.critical_path_us = len[0];
    const double sms = std::max(1.0, tg.num_sms.as_double());
    r.amk_makespan_us = std::max(r.critical_path_us, r.total_us / sms);
    double total_sm = 0;
    for (double x : ts) total_sm += x;
    r.queue_us = std::max(len[1], total_sm / sms);
    r.makespan_us = std::max(r.queue_us, r.bandwidth_us);
    return r;
  }
  r.critical_path_us = (*ir::longest_lengths<1>(deps, {ct}))[0];
  // SMs assigned: each SM's queue runs in list order (placed_queues: where unassigned ones go).
  // A given graph of the queues as placed is that one when every task is on an SM >= 0.
  const ir::QueueEdges placed = placed_queues(p);
  const bool reuse = queues && &queues->graph() == &g &&
                     (queues->queues() == placed ||
                      (queues->queues() == ir::QueueEdges::Assigned &&
                       std::all_of(p.tasks.begin(), p.tasks.end(),
                                   [](const ir::Task& task) { return task.sm && *task.sm >= 0; })));
  std::optional<ir::ScheduleGraph> own;
  const ir::ScheduleGraph& queued = reuse ? *queues : own.emplace(p, g, placed);
  if (const auto len = ir::longest_lengths<2>(queued, {ct, cts})) {  // AMK's makespan, the queues
    r.amk_makespan_us = (*len)[0];
    r.queue_us = (*len)[1];
  } else {
    r.cyclic = true;
    r.amk_makespan_us = r.total_us;
  }
  r.makespan_us = std::max(r.queue_us, r.bandwidth_us);
  return r;
}

TaskTimes predicted_times(const ir::Program& p, const ir::Target& tg, const ir::Graph& g) {
  const int64_t depth = p.config ? p.config->depth() : 2;
  std::vector<double> ts(p.tasks.size());
  for (size_t i = 0; i < p.tasks.size(); ++i) ts[i] = task_time_sm_us(p, p.tasks[i], tg, depth);
  const ir::ScheduleGraph sg(p, g, p.sm_assigned() ? placed_queues(p) : ir::QueueEdges::None);
  const auto lp = ir::longest_path<double>(sg, ts);
  TaskTimes r;
  r.acyclic = lp.acyclic;
  if (!lp.acyclic) return r;
  r.finish_us = lp.finish;
  r.start_us.resize(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) r.start_us[i] = lp.finish[i] - ts[i];
  r.critical = lp.path();
  return r;
}

}  // namespace amk::targets
