#include "lower/cost.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/graph.h"

namespace amk::lower {

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

Parts task_parts(const ir::Program& p, const ir::Task& t, const ir::Target& tg, int64_t depth) {
  double bytes = static_cast<double>(t.est_bytes), flops = static_cast<double>(t.est_flops);
  if (bytes == 0 && flops == 0) {
    bool weight = false;
    for (int64_t b : t.inputs) {
      if (b < 0 || b >= static_cast<int64_t>(p.buffers.size())) continue;
      const ir::Buffer& buf = p.buffers[static_cast<size_t>(b)];
      if (buf.kind == ir::BufferKind::WEIGHT || buf.kind == ir::BufferKind::KV_CACHE) {
        bytes += static_cast<double>(buf.nbytes());
        weight = weight || buf.kind == ir::BufferKind::WEIGHT;
      }
    }
    if (t.op == ir::Op::GEMV_TILE || t.op == ir::Op::GEMM_TILE) {
      const double m = static_cast<double>(t.int_param("M_tile").value_or(1));
      const double k = static_cast<double>(t.int_param("K").value_or(0));
      const double n = static_cast<double>(t.int_param("N_tile").value_or(0));
      flops = 2 * m * k * n;
      if (!weight) bytes = k * n * 2;
    } else if (t.op == ir::Op::ATTENTION_TILE) {
      flops = 4.0 * static_cast<double>(t.int_param("n_heads").value_or(1)) *
              static_cast<double>(t.int_param("kv_len").value_or(0)) *
              static_cast<double>(t.int_param("head_dim").value_or(0));
    }
  }
  const double exposed = std::max(0.5, 1.0 / (1.0 + 0.6 * static_cast<double>(depth)));
  const double bw = tg.hbm_bandwidth_gbs.as_double(), tf = tg.fp16_tflops.as_double();
  const double sms = std::max(1.0, tg.num_sms.as_double());
  const double sm_bw = std::min(bw, bw * kSmShare / sms);
  const double hbm = bw > 0 ? bytes / (bw * 1e3 * 0.80) : 0.0;
  return {hbm * exposed, tf > 0 ? flops / (tf * 1e6 * 0.70) : 0.0, hbm,
          sm_bw > 0 ? bytes / (sm_bw * 1e3 * 0.80) * exposed : 0.0};
}

double finish(const Parts& q, double mem, const ir::Task& t) {
  return std::max(mem, q.compute_us) + 1.5 + (t.op == ir::Op::GEMV_TILE ? 0.05 : 0.0);
}

}  // namespace

double task_time_us(const ir::Program& p, const ir::Task& t, const ir::Target& tg, int64_t depth) {
  const Parts q = task_parts(p, t, tg, depth);
  return finish(q, q.mem_us, t);
}

double task_time_sm_us(const ir::Program& p, const ir::Task& t, const ir::Target& tg,
                       int64_t depth) {
  const Parts q = task_parts(p, t, tg, depth);
  return finish(q, q.mem_sm_us, t);
}

CostEstimate estimate(const ir::Program& p, const ir::Target& tg) {
  CostEstimate r;
  int64_t depth = 2;
  if (p.config && p.config->pipelining_depth.json().is_number_integer())
    depth = p.config->pipelining_depth.json().get<int64_t>();
  const size_t n = p.tasks.size();
  std::vector<double> t(n), ts(n);  // AMK's task times; with the per-SM bandwidth share
  for (size_t i = 0; i < n; ++i) {
    const Parts q = task_parts(p, p.tasks[i], tg, depth);
    t[i] = finish(q, q.mem_us, p.tasks[i]);
    ts[i] = finish(q, q.mem_sm_us, p.tasks[i]);
    r.total_us += t[i];
    r.bandwidth_us += q.hbm_us;
  }
  const double w = static_cast<double>(p.total_weight_bytes());
  r.floor_us = tg.bandwidth_bound_us(w);
  r.sm_assigned = p.sm_assigned();
  const ir::Graph g = ir::Graph::build(p);
  // Predecessors: counter producers, plus (when SMs are assigned) the previous task on the SM.
  std::vector<std::vector<uint32_t>> pred(n);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t s : g.wait_slots(i))
      for (uint32_t q : g.producers(s)) pred[i].push_back(q);
  std::vector<double> cp(n, 0.0);
  auto longest = [&](const std::vector<std::vector<uint32_t>>& pr, double& out,
                     const std::vector<double>& cost) {
    std::vector<uint32_t> indeg(n, 0);
    std::vector<std::vector<uint32_t>> succ(n);
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t q : pr[i]) {
        succ[q].push_back(i);
        ++indeg[i];
      }
    std::vector<uint32_t> order;
    for (uint32_t i = 0; i < n; ++i)
      if (!indeg[i]) order.push_back(i);
    std::vector<double> fin(n, 0.0);
    for (size_t k = 0; k < order.size(); ++k) {
      const uint32_t i = order[k];
      double start = 0;
      for (uint32_t q : pr[i]) start = std::max(start, fin[q]);
      fin[i] = start + cost[i];
      out = std::max(out, fin[i]);
      for (uint32_t s : succ[i])
        if (--indeg[s] == 0) order.push_back(s);
    }
    return order.size() == n;
  };
  if (!longest(pred, r.critical_path_us, t)) {
    r.cyclic = true;
    r.makespan_us = r.amk_makespan_us = r.total_us;
    return r;
  }
  if (!r.sm_assigned) {
    const double sms = std::max(1.0, tg.num_sms.as_double());
    r.amk_makespan_us = std::max(r.critical_path_us, r.total_us / sms);
    double cp_sm = 0, total_sm = 0;
    longest(pred, cp_sm, ts);
    for (double x : ts) total_sm += x;
    r.queue_us = std::max(cp_sm, total_sm / sms);
    r.makespan_us = std::max(r.queue_us, r.bandwidth_us);
    return r;
  }
  std::vector<int64_t> last;
  for (uint32_t i = 0; i < n; ++i) {
    const auto sm = static_cast<size_t>(std::max<int64_t>(0, p.tasks[i].sm.value_or(0)));
    if (last.size() <= sm) last.resize(sm + 1, -1);
    if (last[sm] >= 0) pred[i].push_back(static_cast<uint32_t>(last[sm]));
    last[sm] = i;
  }
  if (!longest(pred, r.amk_makespan_us, t)) {
    r.cyclic = true;
    r.amk_makespan_us = r.total_us;
  }
  longest(pred, r.queue_us, ts);
  r.makespan_us = std::max(r.queue_us, r.bandwidth_us);
  return r;
}

}  // namespace amk::lower
