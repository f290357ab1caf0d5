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

// The queues of a placed program: AMK's loader puts an unassigned task on SM 0; the tasks of
// another runtime's graph that no worker is dealt (MPK's scheduler-run ones) are in none.
const ir::ScheduleGraph& placed_queues(const ir::Program& p, const ir::Graph& g,
                                       const ir::ScheduleGraph* queues,
                                       std::optional<ir::ScheduleGraph>& own) {
  const ir::QueueEdges mode = p.runtime && p.runtime->kind != ir::RuntimeKind::Amk
                                  ? ir::QueueEdges::Assigned
                                  : ir::QueueEdges::Loader;
  const bool reuse = queues && &queues->graph() == &g &&
                     (queues->queues() == mode ||
                      (queues->queues() == ir::QueueEdges::Assigned &&
                       std::all_of(p.tasks.begin(), p.tasks.end(),
                                   [](const ir::Task& t) { return t.sm && *t.sm >= 0; })));
  return reuse ? *queues : own.emplace(p, g, mode);
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
  barrier = rt.barrier_ns * 1e-3;
  signal = rt.signal_ns * 1e-3;
  sync = barrier + signal;
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

namespace {

// One walk: each task in order on its worker, paying what the machine charges.
class Walker {
 public:
  Walker(const WalkInput& in, const Machine& m)
      : in_(in),
        m_(m),
        n_(in.out.size()),
        k_(concurrency(in, m.workers)),
        slots_(in.slots),
        ready_(n_),
        finish_(n_),
        comp_(n_),
        bound_(n_, kNoTask),
        worker_(n_),
        ws_(m.workers, in.worker.empty() && m.dynamic),
        depth_(static_cast<size_t>(std::min<int64_t>(m.depth, kRing))) {
    if (!in.worker.empty()) {
      where_.resize(n_);
      for (size_t i = 0; i < n_; ++i) where_[i] = in.worker[i] % m.workers;
    } else if (!m.dynamic) {
      where_ = loader_placement(in, m.workers);
    }
  }

  // Walks every task; the task that finishes last.
  uint32_t run() {
    double end = 0;
    uint32_t last = kNoTask;
    for (uint32_t v : in_.order) {
      const double f = step(v);
      if (f > end || last == kNoTask) {
        end = f;
        last = v;
      }
    }
    return last;
  }

  // The critical path back from `last` through what each task waited on, and where its time went.
  std::vector<uint32_t> trace(uint32_t last, Breakdown& b) const {
    b.launch_us = m_.launch;
    std::vector<uint32_t> path;
    for (uint32_t v = last; v != kNoTask;) {
      path.push_back(v);
      const uint32_t from = bound_[v];
      b.sync_us += m_.barrier;
      b.dispatch_us += m_.dispatch;
      b.dependency_us += m_.signal;  // storing its outputs and signalling: across the boundary
      b.compute_us += comp_[v];
      b.memory_us += finish_[v] - ready_[v] - m_.sync - comp_[v];
      if (from != kNoTask && (from & kByProducer)) {
        const uint32_t q = from & ~kByProducer;
        b.dependency_us += ready_[v] - m_.dispatch - finish_[q];
        v = q;
      } else {
        b.dependency_us += ready_[v] - m_.dispatch - (from == kNoTask ? 0.0 : finish_[from]);
        v = from;
      }
    }
    return {path.rbegin(), path.rend()};
  }

  std::vector<double> take_ready() { return std::move(ready_); }
  std::vector<double> take_finish() { return std::move(finish_); }
  std::vector<uint32_t> take_worker() { return std::move(worker_); }

 private:
  std::span<const uint32_t> waits(uint32_t v) const {
    return {in_.waits.data() + in_.wait_off[v], in_.wait_off[v + 1] - in_.wait_off[v]};
  }

  // The worker of task v: its own, the loader's, or the first free when its producers are done.
  uint32_t worker_of(uint32_t v) {
    if (!where_.empty()) return where_[v];
    double deps = 0;
    for (uint32_t s : waits(v)) deps = std::max(deps, slots_[s].f1);
    return static_cast<uint32_t>(ws_.dyn.earliest(deps));
  }

  // Bytes of task v loaded before it started at `r`: into the staging buffers from the start of
  // the task before it on the worker (a loader fills pages the running task frees), or into L2
  // from the ready time of the task that issued the prefetch (the earliest within `depth` since
  // the last one that streamed weights).
  double prefetched(uint32_t v, uint32_t wk, double start, double r) const {
    if (!in_.streams[v] || m_.prefetch == Machine::Prefetch::None) return 0;
    double from = ws_.done[wk] ? ws_.ready[wk][(ws_.done[wk] - 1) % kRing] : start;
    double fill = m_.rate(k_[v]);
    if (m_.prefetch == Machine::Prefetch::L2) {
      const uint32_t since = ws_.done[wk] - ws_.last_weights[wk];
      const size_t dist = std::min<size_t>(depth_, ws_.last_weights[wk] ? since + 1 : since);
      from = dist == 0 ? start : ws_.ready[wk][(ws_.done[wk] - dist) % kRing];
      fill = std::min(m_.peak, m_.hbm / k_[v]);  // a hint holds no register: HBM's share
    }
    return std::min({in_.bytes[v], m_.prefetch_cap, std::max(0.0, r - from) * fill});
  }

  // Runs task v; its finish.
  double step(uint32_t v) {
    const uint32_t wk = worker_of(v);
    const double start = ws_.free[wk];
    double deps = kNone;
    uint32_t by = kNoTask;
    for (uint32_t s : waits(v)) {
      uint32_t who = kNoTask;
      if (const double c = slots_[s].ready_on(wk, m_.remote, &who); c > deps) {
        deps = c;
        by = who;
      }
    }
    double r;  // when its inputs are seen ready, then it is set up (dispatch)
    if (by != kNoTask && deps + m_.poll_half > start) {  // blocked: it sees the signal late
      r = deps + m_.poll_half + m_.wait + m_.dispatch;
      bound_[v] = by | kByProducer;
    } else {
      r = start + (waits(v).empty() ? 0.0 : m_.wait) + m_.dispatch;
      bound_[v] = ws_.last[wk];
    }
    const double ex = m_.exec(in_.bytes[v], in_.flops[v], prefetched(v, wk, start, r), k_[v]);
    const double f = r + ex + m_.sync;
    ready_[v] = r;
    finish_[v] = f;
    worker_[v] = wk;
    comp_[v] = std::min(ex, in_.flops[v] / m_.compute);
    slots_[in_.out[v]].add(f, wk, v);
    ws_.free[wk] = f;
    ws_.last[wk] = v;
    ws_.ready[wk][ws_.done[wk] % kRing] = r;
    ++ws_.done[wk];
    if (in_.streams[v]) ws_.last_weights[wk] = ws_.done[wk];
    if (ws_.dynamic) ws_.dyn.set(wk, f);
    return f;
  }

  const WalkInput& in_;
  const Machine& m_;
  size_t n_;
  std::vector<float> k_;
  std::vector<LatestFinish> slots_;
  std::vector<double> ready_, finish_, comp_;
  std::vector<uint32_t> bound_, worker_, where_;
  Workers ws_;
  size_t depth_;
};

}  // namespace

double bounded_makespan(double makespan_us, const Walk& w, const Machine& m, double floor_us) {
  const double r =
      std::max(makespan_us, m.launch + w.bytes / m.hbm);  // nothing streams before the launch
  return std::isfinite(floor_us) ? std::max(r, floor_us) : r;
}

Walk simulate(const WalkInput& in, const Machine& m, bool times) {
  Walk w;
  for (double b : in.bytes) w.bytes += b;
  if (!in.acyclic) {
    w.acyclic = false;
    return w;
  }
  Walker walker(in, m);
  const uint32_t last = walker.run();
  double end = 0;
  std::vector<uint32_t> path = walker.trace(last, w.breakdown);
  std::vector<double> finish = walker.take_finish();
  if (last != kNoTask) end = finish[last];
  w.makespan = m.launch + end;
  if (times) {
    w.path = std::move(path);
    w.ready = walker.take_ready();
    w.finish = std::move(finish);
    w.worker = walker.take_worker();
  }
  return w;
}

}  // namespace amk::targets
