#include "targets/simulate.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <queue>
#include <tuple>

#include <nlohmann/json.hpp>

#include "ir/assert.h"
#include "ir/free_times.h"

namespace amk::targets {

namespace {

constexpr double kNone = -std::numeric_limits<double>::infinity();
constexpr uint32_t kNoTask = UINT32_MAX;
constexpr uint32_t kByProducer = 1u << 31;  // Walk bound: the task waited on this producer
constexpr size_t kRing = 8;                 // the deepest L2 prefetch lookahead modelled

// A config knob as a number (nullopt when absent or not a number).
std::optional<double> knob(const ir::JsonValue& v) {
  if (!v.json().is_number()) return std::nullopt;
  return v.json().get<double>();
}

}  // namespace

bool streams_weights(const ir::Task& t) {
  return t.op == ir::Op::GEMV_TILE || t.op == ir::Op::GEMM_TILE || t.op == ir::Op::FUSED;
}

void LatestFinish::add(double f, uint32_t w, uint32_t t) {
  if (f > f1) {
    if (w != w1 || t1 == kNoTask) {
      f2 = f1;
      t2 = t1;
    }
    f1 = f;
    w1 = w;
    t1 = t;
  } else if (w != w1 && f > f2) {
    f2 = f;
    t2 = t;
  }
}

double LatestFinish::ready_on(uint32_t w, double cross, uint32_t* who) const {
  if (t1 == kNoTask) return kNone;
  double c = f1 + (w1 != w ? cross : 0.0);
  uint32_t by = t1;
  if (w1 == w && t2 != kNoTask && f2 + cross > c) {
    c = f2 + cross;
    by = t2;
  }
  if (who) *who = by;
  return c;
}

const ir::ScheduleGraph& placed_queues(const ir::Program& p, const ir::Graph& g,
                                       const ir::ScheduleGraph* queues,
                                       std::optional<ir::ScheduleGraph>& own) {
  const bool reuse = queues && &queues->graph() == &g &&
                     (queues->queues() == ir::QueueEdges::Loader ||
                      (queues->queues() == ir::QueueEdges::Assigned &&
                       std::all_of(p.tasks.begin(), p.tasks.end(),
                                   [](const ir::Task& t) { return t.sm && *t.sm >= 0; })));
  return reuse ? *queues : own.emplace(p, g, ir::QueueEdges::Loader);
}

Machine::Machine(const ir::ScheduleConfig* c, const ir::Target& hw, const Runtime& rt) {
  const double cfg_threads = c ? knob(c->threads_per_block).value_or(256) : 256;
  const double cfg_smem = c ? knob(c->smem_bytes_per_block).value_or(0) : 0;
  depth = c ? c->depth() : 2;
  workers = static_cast<uint32_t>(std::max(1.0, hw.num_sms.as_double()));
  threads = rt.threads > 0 ? rt.threads : std::max(1.0, cfg_threads);
  const double clock = hw.clock_ghz.as_double() > 0 ? hw.clock_ghz.as_double() : 1.0;
  // Bytes in flight per worker: one load per thread and stage, capped by what holds them.
  const double stage = threads * rt.bytes_per_thread;
  const double optin = hw.smem_bytes_per_block_optin.as_double();
  if (rt.staging == "registers") {
    in_flight = stage;
  } else if (rt.staging == "shared") {  // pipelining_depth stages, as many as the buffers hold
    double budget = cfg_smem > 0 ? cfg_smem : rt.default_smem_bytes;
    if (optin > 0) budget = std::min(budget, optin);
    budget -= rt.reserved_smem_bytes;
    const double wanted = stage * static_cast<double>(std::max<int64_t>(1, depth));
    in_flight = budget > 0 ? std::min(wanted, budget) : stage;
  } else {
    in_flight = rt.default_smem_bytes;
  }
  in_flight = std::max(in_flight, rt.bytes_per_thread);
  peak = rt.worker_bytes_per_cycle * clock * 1e3;
  stream = std::min(peak, in_flight / (rt.latency_ns * 1e-3));
  hot = std::min(peak, in_flight / (rt.prefetched_latency_ns * 1e-3));
  const double measured = hw.measured_bw_gbs.as_double();
  hbm = (measured > 0 ? measured : hw.hbm_bandwidth_gbs.as_double() * rt.peak_fraction) * 1e3;
  if (!(hbm > 0)) hbm = std::numeric_limits<double>::infinity();
  const double tf = hw.fp16_tflops.as_double() * 1e6 / static_cast<double>(workers);
  compute = threads * rt.flops_per_thread_cycle * clock * 1e3;
  if (tf > 0) compute = std::min(compute, tf);
  launch = rt.launch_us;
  dispatch = rt.dispatch_ns * 1e-3;
  sync = (rt.barrier_ns + rt.signal_ns) * 1e-3;
  wait = rt.wait_ns * 1e-3;
  remote = rt.remote_ns * 1e-3;
  poll_half = rt.poll_ns * 0.5e-3;
  dynamic = rt.placement == "dynamic";
  if (rt.prefetch == "l2" && depth > 0) {
    prefetch = Prefetch::L2;
    prefetch_cap = hw.l2_bytes.as_double() / workers;
  } else if (rt.prefetch == "shared") {
    prefetch = Prefetch::Shared;
    prefetch_cap = in_flight;
  }
}

double Machine::rate(double k) const {
  return std::min(stream, hbm / std::max(1.0, k));
}

double Machine::exec(double bytes, double flops, double pre, double k) const {
  const double r = rate(k);
  double mem = (bytes - pre) / r;
  if (prefetch == Prefetch::L2) mem += pre / hot;
  return std::max(mem, flops / compute);
}

namespace {

// AMK's loader: each task in Kahn order to the SM with the least (Σest_bytes, Σest_flops, count,
// index).
std::vector<uint32_t> loader_placement(const WalkInput& in, uint32_t sms) {
  using Key = std::tuple<int64_t, int64_t, int64_t, uint32_t>;
  std::priority_queue<Key, std::vector<Key>, std::greater<>> heap;
  for (uint32_t s = 0; s < sms; ++s) heap.emplace(0, 0, 0, s);
  std::vector<uint32_t> w(in.out.size(), 0);
  for (uint32_t v : in.order) {
    auto [b, f, n, s] = heap.top();
    heap.pop();
    w[v] = s;
    heap.emplace(b + in.est[v].first, f + in.est[v].second, n + 1, s);
  }
  return w;
}

// How many weight-streaming tasks share a task's last dependency: the workers streaming beside it.
std::vector<float> concurrency(const WalkInput& in, uint32_t workers) {
  const size_t n = in.out.size();
  std::vector<uint32_t> count(in.slots + 1, 0);
  auto key = [&](uint32_t v) {
    return in.wait_off[v + 1] > in.wait_off[v] ? in.waits[in.wait_off[v + 1] - 1] : in.slots;
  };
  for (uint32_t v = 0; v < n; ++v)
    if (in.bytes[v] > 0) ++count[key(v)];
  std::vector<float> k(n, 1.0f);
  for (uint32_t v = 0; v < n; ++v)
    k[v] = static_cast<float>(std::clamp<uint32_t>(count[key(v)], 1, workers));
  return k;
}

// The per-worker state of the walk.
struct Workers {
  std::vector<double> free;
  std::vector<uint32_t> last;                    // the task it ran last
  std::vector<std::array<double, kRing>> ready;  // L2 lookahead: recent tasks' ready times
  std::vector<uint32_t> done, last_weights;      // tasks run; position of the last weight task + 1
  ir::FreeTimes dyn;                             // dynamic placement's earliest-free query
  bool dynamic;
  Workers(uint32_t n, bool d)
      : free(n, 0.0),
        last(n, kNoTask),
        ready(n),
        done(n, 0),
        last_weights(n, 0),
        dyn(n),
        dynamic(d) {}
};

}  // namespace

WalkInput walk_input(const ir::Program& p, const ir::Graph& g, const ir::ScheduleGraph* queues) {
  WalkInput in;
  const size_t n = p.tasks.size();
  const bool placed = p.sm_assigned();
  std::optional<ir::ScheduleGraph> own;
  in.order = placed ? placed_queues(p, g, queues, own).order() : g.topo_order();
  in.acyclic = in.order.size() == n;
  in.bytes.resize(n);
  in.flops.resize(n);
  in.streams.resize(n);
  in.out.resize(n);
  in.slots = g.num_slots();
  if (placed)
    in.worker.resize(n);
  else
    in.est.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    const ir::Task& t = p.tasks[i];
    const ir::TaskLoad l = ir::task_load(p, t);
    in.bytes[i] = l.bytes;
    in.flops[i] = l.flops;
    in.streams[i] = l.bytes > 0 && streams_weights(t);
    in.out[i] = g.out_slot(i);
    const auto ws = g.wait_slots(i);
    in.waits.insert(in.waits.end(), ws.begin(), ws.end());
    in.wait_off.push_back(static_cast<uint32_t>(in.waits.size()));
    if (placed)
      in.worker[i] = static_cast<uint32_t>(std::max<int64_t>(0, t.sm.value_or(0)));
    else
      in.est[i] = {t.est_bytes, t.est_flops};
  }
  return in;
}

Walk simulate(const WalkInput& in, const Machine& m, bool times) {
  Walk w;
  const size_t n = in.out.size();
  for (double b : in.bytes) w.bytes += b;
  if (!in.acyclic) {
    w.acyclic = false;
    return w;
  }
  const bool placed = !in.worker.empty();
  const std::vector<float> k = concurrency(in, m.workers);
  std::vector<uint32_t> where;
  if (placed) {
    where.resize(n);
    for (size_t i = 0; i < n; ++i) where[i] = in.worker[i] % m.workers;
  } else if (!m.dynamic) {
    where = loader_placement(in, m.workers);
  }
  std::vector<LatestFinish> slots(in.slots);
  std::vector<double> ready(n), finish(n), comp(n);
  std::vector<uint32_t> bound(n, kNoTask);
  if (times) w.worker.resize(n);
  Workers ws(m.workers, !placed && m.dynamic);
  const size_t depth = static_cast<size_t>(std::min<int64_t>(m.depth, kRing));
  double end = 0;
  uint32_t last = kNoTask;
  for (uint32_t v : in.order) {
    const std::span<const uint32_t> waits(in.waits.data() + in.wait_off[v],
                                          in.wait_off[v + 1] - in.wait_off[v]);
    uint32_t wk;
    if (!where.empty()) {
      wk = where[v];
    } else {  // dynamic: the first worker free when the producers are done
      double deps = 0;
      for (uint32_t s : waits) deps = std::max(deps, slots[s].f1);
      wk = static_cast<uint32_t>(ws.dyn.earliest(deps));
    }
    const double start = ws.free[wk] + m.dispatch;
    double deps = kNone;
    uint32_t by = kNoTask;
    for (uint32_t s : waits) {
      uint32_t who = kNoTask;
      const double c = slots[s].ready_on(wk, m.remote, &who);
      if (c > deps) {
        deps = c;
        by = who;
      }
    }
    double r;
    if (by != kNoTask && deps + m.poll_half > start) {
      r = deps + m.poll_half + m.wait;
      bound[v] = by | kByProducer;
    } else {
      r = start + (waits.empty() ? 0.0 : m.wait);
      bound[v] = ws.last[wk];
    }
    // What was loaded ahead: from the worker's idle start (shared), or from the ready time of
    // the task that issued the L2 prefetch (the earliest within `depth` since the last one).
    double pre = 0;
    const bool streams = in.streams[v];
    if (streams && m.prefetch != Machine::Prefetch::None) {
      double from = ws.free[wk];
      if (m.prefetch == Machine::Prefetch::L2) {
        const uint32_t since = ws.done[wk] - ws.last_weights[wk];
        const size_t dist = std::min<size_t>(depth, ws.last_weights[wk] ? since + 1 : since);
        from = dist == 0 ? start : ws.ready[wk][(ws.done[wk] - dist) % kRing];
      }
      const double fill =
          m.prefetch == Machine::Prefetch::L2 ? std::min(m.peak, m.hbm / k[v]) : m.rate(k[v]);
      pre = std::min({in.bytes[v], m.prefetch_cap, std::max(0.0, r - from) * fill});
    }
    const double ex = m.exec(in.bytes[v], in.flops[v], pre, k[v]);
    const double f = r + ex + m.sync;
    ready[v] = r;
    finish[v] = f;
    if (times) w.worker[v] = wk;
    comp[v] = std::min(ex, in.flops[v] / m.compute);
    slots[in.out[v]].add(f, wk, v);
    ws.free[wk] = f;
    ws.last[wk] = v;
    ws.ready[wk][ws.done[wk] % kRing] = r;
    ++ws.done[wk];
    if (streams) ws.last_weights[wk] = ws.done[wk];
    if (ws.dynamic) ws.dyn.set(wk, f);
    if (f > end || last == kNoTask) {
      end = f;
      last = v;
    }
  }
  w.makespan = m.launch + end;
  // The critical path: back from the last task through what each one waited on.
  Breakdown& b = w.breakdown;
  b.launch_us = m.launch;
  std::vector<uint32_t> path;
  for (uint32_t v = last; v != kNoTask;) {
    path.push_back(v);
    const uint32_t from = bound[v];
    const double ex = finish[v] - ready[v] - m.sync;
    b.sync_us += m.sync;
    b.compute_us += comp[v];
    b.memory_us += ex - comp[v];
    if (from != kNoTask && (from & kByProducer)) {
      const uint32_t q = from & ~kByProducer;
      b.dependency_us += ready[v] - finish[q];
      v = q;
    } else {
      const double start = (from == kNoTask ? 0.0 : finish[from]) + m.dispatch;
      b.dispatch_us += m.dispatch;
      b.dependency_us += ready[v] - start;
      v = from;
    }
  }
  if (times) {
    w.path.assign(path.rbegin(), path.rend());
    w.ready = std::move(ready);
    w.finish = std::move(finish);
  }
  return w;
}

}  // namespace amk::targets
