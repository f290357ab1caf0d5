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
#include "ir/csr.h"
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

// The queues of a placed program: AMK's loader puts an unassigned task on SM 0; the tasks of
// another runtime's graph that no worker is dealt (MPK's scheduler-run ones) are in none.
const ir::ScheduleGraph& placed_queues(const ir::Program& p, const ir::Graph& g,
                                       const ir::ScheduleGraph* queues,
                                       std::optional<ir::ScheduleGraph>& own) {
  const ir::QueueEdges mode = p.runtime && p.runtime->kind != ir::RuntimeKind::Amk
                                  ? ir::QueueEdges::Assigned
                                  : ir::QueueEdges::Loader;
  const bool reuse = queues && &queues->graph() == &g &&
                     (queues->queues() == mode || (queues->queues() == ir::QueueEdges::Assigned &&
                                                   queues->every_task_placed()));
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
  const double optin = hw.smem_bytes_per_block_optin.as_double();
  auto flight = [&](double per_thread) {
    const double stage = threads * per_thread;
    double f = stage;
    if (rt.staging == "shared") {  // pipelining_depth stages, as many as the buffers hold
      double budget = cfg_smem > 0 ? cfg_smem : rt.default_smem_bytes;
      if (optin > 0) budget = std::min(budget, optin);
      budget -= rt.reserved_smem_bytes;
      const double wanted = stage * static_cast<double>(std::max<int64_t>(1, depth));
      f = budget > 0 ? std::min(wanted, budget) : stage;
    } else if (rt.staging != "registers") {
      f = rt.default_smem_bytes;
    }
    return std::max(f, per_thread);
  };
  in_flight = flight(rt.bytes_per_thread);
  const double q_in_flight =
      rt.quant_bytes_per_thread > 0 ? flight(rt.quant_bytes_per_thread) : in_flight;
  peak = rt.worker_bytes_per_cycle * clock * 1e3;
  stream = std::min(peak, in_flight / (rt.latency_ns * 1e-3));
  hot = std::min(peak, in_flight / (rt.prefetched_latency_ns * 1e-3));
  auto or_ = [](double quant, double plain) { return quant > 0 ? quant : plain; };
  qstream = std::min(peak, q_in_flight / (or_(rt.quant_latency_ns, rt.latency_ns) * 1e-3));
  qhot = std::min(
      peak, q_in_flight / (or_(rt.quant_prefetched_latency_ns, rt.prefetched_latency_ns) * 1e-3));
  const double measured = hw.measured_bw_gbs.as_double();
  hbm = (measured > 0 ? measured : hw.hbm_bandwidth_gbs.as_double() * rt.peak_fraction) * 1e3;
  if (!(hbm > 0)) hbm = std::numeric_limits<double>::infinity();
  const double tf = hw.fp16_tflops.as_double() * 1e6 / static_cast<double>(workers);
  compute = threads * rt.flops_per_thread_cycle * clock * 1e3;
  if (tf > 0) compute = std::min(compute, tf);
  kv_step = rt.kv_step_ns * 1e-3;
  warps = std::max(1.0, std::ceil(threads / 32));
  launch = rt.launch_us;
  dispatch = rt.dispatch_ns * 1e-3;
  barrier = rt.barrier_ns * 1e-3;
  signal = rt.signal_ns * 1e-3;
  sync = barrier + signal;
  wait = rt.wait_ns * 1e-3;
  remote = rt.remote_ns * 1e-3;
  poll_half = rt.poll_ns * 0.5e-3;
  dynamic = rt.placement == "dynamic";
  quant_hint_ahead = rt.quant_hint == "ahead";
  if (rt.prefetch == "l2" && depth > 0) {
    prefetch = Prefetch::L2;
    prefetch_cap = hw.l2_bytes.as_double() / workers;
  } else if (rt.prefetch == "shared") {
    prefetch = Prefetch::Shared;
    prefetch_cap = in_flight;
  }
}

namespace {

// AMK's loader: each task in Kahn order to the SM with the least (Σest_bytes, Σest_flops, count,
// index).
void loader_placement(const WalkInput& in, uint32_t sms, std::vector<uint32_t>& w) {
  using Key = std::tuple<int64_t, int64_t, int64_t, uint32_t>;
  std::priority_queue<Key, std::vector<Key>, std::greater<>> heap;
  for (uint32_t s = 0; s < sms; ++s) heap.emplace(0, 0, 0, s);
  w.assign(in.out.size(), 0);
  for (uint32_t v : in.order) {
    auto [b, f, n, s] = heap.top();
    heap.pop();
    w[v] = s;
    heap.emplace(b + in.est[v].first, f + in.est[v].second, n + 1, s);
  }
}

}  // namespace

void WalkInput::resize_loads(size_t n) {
  bytes.resize(n);
  flops.resize(n);
  streams.resize(n);
  dequant.resize(n);
  chain.resize(n);
  op.resize(n);
}

void WalkInput::copy_loads(const WalkInput& from) {
  bytes = from.bytes;
  flops = from.flops;
  streams = from.streams;
  dequant = from.dequant;
  chain = from.chain;
  op = from.op;
}

void WalkInput::set_load(size_t i, const ir::TaskLoad& l, const ir::Task& t) {
  bytes[i] = l.bytes;
  flops[i] = l.flops;
  streams[i] = l.bytes > 0 && streams_weights(t);
  dequant[i] = l.dequant;
  chain[i] = {static_cast<float>(l.heads), static_cast<float>(l.steps),
              static_cast<float>(l.width)};
  op[i] = t.op;
}

void fill_walk_input(WalkInput& in, const ir::Program& p, const ir::Graph& g,
                     const ir::ScheduleGraph* queues, bool keep_program_part) {
  const size_t n = p.tasks.size();
  const bool placed = p.sm_assigned();
  std::optional<ir::ScheduleGraph> own;
  const std::vector<uint32_t>& order =
      placed ? placed_queues(p, g, queues, own).order() : g.topo_order();
  in.order.assign(order.begin(), order.end());
  in.acyclic = in.order.size() == n;
  if (keep_program_part) {
    AMK_ASSERT(in.bytes.size() == n && in.out.size() == n,
               "fill_walk_input: the program part of another program");
  } else {
    in.slots = g.num_slots();
    in.out.assign(g.out_slots().begin(), g.out_slots().end());
    in.wait_off.assign(g.wait_slot_offsets().begin(), g.wait_slot_offsets().end());
    in.waits.assign(g.wait_slot_list().begin(), g.wait_slot_list().end());
    in.resize_loads(n);
  }
  in.worker.resize(placed ? n : 0);
  in.est.resize(placed ? 0 : n);
  for (uint32_t i = 0; i < n; ++i) {
    const ir::Task& t = p.tasks[i];
    if (!keep_program_part) in.set_load(i, ir::task_load(p, t), t);
    if (placed)
      in.worker[i] = static_cast<uint32_t>(std::max<int64_t>(0, t.sm.value_or(0)));
    else
      in.est[i] = {t.est_bytes, t.est_flops};
  }
}

WalkInput walk_input(const ir::Program& p, const ir::Graph& g, const ir::ScheduleGraph* queues) {
  WalkInput in;
  fill_walk_input(in, p, g, queues);
  return in;
}

// One walk: each task in order on its worker, paying what the machine charges. Its memory is kept
// from one walk to the next.
struct Simulator::State {
  const WalkInput* in = nullptr;
  const Machine* m = nullptr;
  std::vector<float> k;              // by task: the workers streaming beside it (concurrency)
  std::vector<double> rate;          // by task: its streaming rate, m->rate(k)
  std::vector<uint32_t> count;       // scratch: weight-streaming tasks per last dependency
  std::vector<uint32_t> last_wait;   // scratch: each task's last dependency
  std::vector<double> rate_of;       // scratch: m->rate(c) by concurrency c
  std::vector<double> qrate_of;      // scratch: m->rate(c, true) by concurrency c
  uint64_t k_version = 0;            // the program version k and rate are of (0: none)
  std::optional<Machine> k_machine;  // and the machine
  std::vector<LatestFinish> slots;
  std::vector<double> ready, finish, comp;
  std::vector<uint32_t> bound, worker, where;
  std::span<const uint32_t> at;  // by task: its worker (where, or the input's own)
  // The per-worker state.
  std::vector<double> free;
  std::vector<uint32_t> last;                        // the task it ran last
  std::vector<std::array<double, kRing>> lookahead;  // recent tasks' ready times (prefetch)
  std::vector<uint32_t> done, last_weights;  // tasks run; position of the last weight task + 1
  std::vector<double> drained;     // when the worker's last task had streamed what it had to stream
  std::vector<double> drain_rate;  // the rate it streamed at
  std::optional<ir::FreeTimes> dyn;  // dynamic placement's earliest-free query
  size_t depth = 0;
  std::vector<double> hint_next;  // by task: bytes of the next weight task its worker hints
  std::vector<uint32_t> queue_off, queue, queue_fill;  // scratch: each worker's queue (CSR)
  void next_hints();

  void start(const WalkInput& input, const Machine& machine, uint64_t program_version);
  void concurrency();
  uint32_t run();
  template <Machine::Prefetch P, bool Dynamic>
  uint32_t walk();
  std::vector<uint32_t> trace(uint32_t last_task, Breakdown& b) const;
  std::span<const uint32_t> waits(uint32_t v) const {
    return {in->waits.data() + in->wait_off[v], in->wait_off[v + 1] - in->wait_off[v]};
  }
  template <bool Dynamic>
  uint32_t worker_of(uint32_t v);
  template <Machine::Prefetch P>
  double prefetched(uint32_t v, uint32_t wk, double start, double r) const;
  template <Machine::Prefetch P, bool Dynamic>
  double step(uint32_t v);
};

Simulator::Simulator() : s_(std::make_unique<State>()) {}
Simulator::~Simulator() = default;
Simulator::Simulator(Simulator&&) noexcept = default;
Simulator& Simulator::operator=(Simulator&&) noexcept = default;

// Sizes the state for a walk of `input` on `machine` and places the tasks when the input does not.
void Simulator::State::start(const WalkInput& input, const Machine& machine,
                             uint64_t program_version) {
  in = &input;
  m = &machine;
  const size_t n = input.out.size();
  AMK_ASSERT(input.bytes.size() == n && input.flops.size() == n && input.streams.size() == n &&
                 input.dequant.size() == n && input.chain.size() == n && input.op.size() == n &&
                 input.wait_off.size() == n + 1,
             "a walk's input holds a load and a wait list for every task");
  const uint32_t workers = machine.workers;
  if (program_version == 0 || program_version != k_version || k_machine != machine ||
      k.size() != n) {
    concurrency();
    k_version = program_version;
    k_machine = machine;
  }
  slots.assign(input.slots, LatestFinish{});
  ready.resize(n);
  finish.resize(n);
  comp.resize(n);
  bound.assign(n, kNoTask);
  worker.resize(n);
  free.assign(workers, 0.0);
  last.assign(workers, kNoTask);
  lookahead.resize(workers);
  done.assign(workers, 0);
  last_weights.assign(workers, 0);
  drained.assign(workers, 0.0);
  drain_rate.assign(workers, 0.0);
  depth = static_cast<size_t>(std::min<int64_t>(machine.depth, kRing));
  dyn.reset();
  if (!input.worker.empty()) {
    const bool in_range = std::all_of(input.worker.begin(), input.worker.end(),
                                      [&](uint32_t w) { return w < workers; });
    if (in_range) {
      at = input.worker;
      next_hints();
      return;
    }
    where.resize(n);
    for (size_t i = 0; i < n; ++i) where[i] = input.worker[i] % workers;
  } else if (!machine.dynamic) {
    loader_placement(input, workers, where);
  } else {
    dyn.emplace(workers);
    at = {};
    hint_next.clear();
    return;
  }
  at = where;
  next_hints();
}

void Simulator::State::next_hints() {
  hint_next.clear();
  if (!m->quant_hint_ahead || m->prefetch != Machine::Prefetch::L2 || depth == 0 ||
      std::none_of(in->dequant.begin(), in->dequant.end(), [](uint8_t d) { return d != 0; }))
    return;
  const uint32_t workers = m->workers;
  ir::build_csr(
      workers,
      [&](auto emit) {
        for (uint32_t v : in->order) emit(at[v], v);
      },
      queue_off, queue, queue_fill);
  hint_next.assign(in->out.size(), 0.0);
  for (uint32_t w = 0; w < workers; ++w)
    for (uint32_t i = queue_off[w]; i < queue_off[w + 1]; ++i)
      for (uint32_t j = i + 1; j < std::min<uint32_t>(queue_off[w + 1], i + 1 + depth); ++j)
        if (in->streams[queue[j]]) {
          hint_next[queue[i]] = in->bytes[queue[j]];
          break;
        }
}

// How many weight-streaming tasks share a task's last dependency: the workers streaming beside it,
// and the rate each task streams at.
void Simulator::State::concurrency() {
  const size_t n = in->out.size();
  count.assign(in->slots + 1, 0);
  last_wait.resize(n);  // a task's last dependency (the slots count stands for none)
  for (uint32_t v = 0; v < n; ++v) {
    const uint32_t end = in->wait_off[v + 1];
    last_wait[v] = end > in->wait_off[v] ? in->waits[end - 1] : in->slots;
    if (in->bytes[v] > 0) ++count[last_wait[v]];
  }
  // The rate of each concurrency from 1 to the workers, worked out once.
  rate_of.resize(m->workers + 1);
  qrate_of.resize(m->workers + 1);
  for (uint32_t c = 1; c <= m->workers; ++c) {
    rate_of[c] = m->rate(static_cast<float>(c));
    qrate_of[c] = m->rate(static_cast<float>(c), true);
  }
  k.resize(n);
  rate.resize(n);
  for (uint32_t v = 0; v < n; ++v) {
    const uint32_t c = std::clamp<uint32_t>(count[last_wait[v]], 1, m->workers);
    k[v] = static_cast<float>(c);
    rate[v] = in->dequant[v] ? qrate_of[c] : rate_of[c];
  }
}

// The critical path back from `last_task` through what each task waited on, and where its time
// went.
std::vector<uint32_t> Simulator::State::trace(uint32_t last_task, Breakdown& b) const {
  b.launch_us = m->launch;
  std::vector<uint32_t> path;
  for (uint32_t v = last_task; v != kNoTask;) {
    path.push_back(v);
    const uint32_t from = bound[v];
    b.sync_us += m->barrier;
    b.dispatch_us += m->dispatch;
    b.dependency_us += m->signal;  // storing its outputs and signalling: across the boundary
    b.compute_us += comp[v];
    b.memory_us += finish[v] - ready[v] - m->sync - comp[v];
    if (from != kNoTask && (from & kByProducer)) {
      const uint32_t q = from & ~kByProducer;
      b.dependency_us += ready[v] - m->dispatch - finish[q];
      v = q;
    } else {
      b.dependency_us += ready[v] - m->dispatch - (from == kNoTask ? 0.0 : finish[from]);
      v = from;
    }
  }
  return {path.rbegin(), path.rend()};
}

// The worker of task v: its own, the loader's, or the first free when its producers are done.
template <bool Dynamic>
inline uint32_t Simulator::State::worker_of(uint32_t v) {
  if constexpr (!Dynamic) {
    return at[v];
  } else {
    double deps = 0;
    for (uint32_t s : waits(v)) deps = std::max(deps, slots[s].f1);
    return static_cast<uint32_t>(dyn->earliest(deps));
  }
}

// Bytes of task v loaded before it started at `r`: into the staging buffers from the start of the
// task before it on the worker (a loader fills pages the running task frees), or into L2 from the
// ready time of the task that issued the prefetch (the earliest within `depth` since the last one
// that streamed weights), at the worker's share of HBM less what the task before it streams
// meanwhile (the two share the worker's part of the chip's bandwidth).
template <Machine::Prefetch P>
inline double Simulator::State::prefetched(uint32_t v, uint32_t wk, double start, double r) const {
  if constexpr (P == Machine::Prefetch::None) {
    return 0;
  } else {
    if (!in->streams[v]) return 0;
    const auto& seen = lookahead[wk];
    // Into shared memory: through the worker's own loads, free once the task before had streamed
    // its bytes.
    double from = done[wk] ? drained[wk] : start;
    double fill = rate[v];
    if constexpr (P == Machine::Prefetch::L2) {
      const uint32_t since = done[wk] - last_weights[wk];
      const size_t dist = std::min<size_t>(depth, last_weights[wk] ? since + 1 : since);
      from = dist == 0 ? start : seen[(done[wk] - dist) % kRing];
      // A hint holds no register: the worker's share of HBM, less what the task before takes of
      // it while it still streams.
      const double share = std::min(m->peak, m->hbm / k[v]);
      if (done[wk] && drained[wk] > from) {
        const double busy = std::max(0.0, std::min(r, drained[wk]) - from);
        const double idle = std::max(0.0, r - drained[wk]);
        return std::min({in->bytes[v], m->prefetch_cap,
                         busy * std::max(0.0, share - drain_rate[wk]) + idle * share});
      }
      fill = share;
    }
    return std::min({in->bytes[v], m->prefetch_cap, std::max(0.0, r - from) * fill});
  }
}

// Runs task v; its finish.
template <Machine::Prefetch P, bool Dynamic>
inline double Simulator::State::step(uint32_t v) {
  const Machine& mc = *m;
  const uint32_t wk = worker_of<Dynamic>(v);
  const double start = free[wk];
  const std::span<const uint32_t> ws = waits(v);
  double deps = kNone;
  uint32_t by = kNoTask;
  for (uint32_t s : ws) {
    uint32_t who = kNoTask;
    if (const double c = slots[s].ready_on(wk, mc.remote, &who); c > deps) {
      deps = c;
      by = who;
    }
  }
  double r;  // when its inputs are seen ready, then it is set up (dispatch)
  if (by != kNoTask && deps + mc.poll_half > start) {  // blocked: it sees the signal late
    r = deps + mc.poll_half + mc.wait + mc.dispatch;
    bound[v] = by | kByProducer;
  } else {
    r = start + (ws.empty() ? 0.0 : mc.wait) + mc.dispatch;
    bound[v] = last[wk];
  }
  const double flops = in->flops[v];
  const double pre = prefetched<P>(v, wk, start, r);
  const auto [heads, steps, width] = in->chain[v];
  const double serial = mc.chain(heads, steps, width);
  double ex = mc.exec_at(in->bytes[v], flops, pre, rate[v], serial, in->dequant[v]);
  double hint = 0;
  if constexpr (P == Machine::Prefetch::L2)
    if (!hint_next.empty() && in->dequant[v])
      hint = std::min(hint_next[v], mc.prefetch_cap) / std::min(mc.peak, mc.hbm / k[v]);
  ex += hint;
  const double f = r + ex + mc.sync;
  ready[v] = r;
  finish[v] = f;
  worker[v] = wk;
  comp[v] = std::min(ex, std::max(flops / mc.compute, serial));
  slots[in->out[v]].add(f, wk, v);
  free[wk] = f;
  last[wk] = v;
  if constexpr (P != Machine::Prefetch::None) {
    lookahead[wk][done[wk] % kRing] = r;
    if (P == Machine::Prefetch::Shared || in->streams[v]) {  // L2: the last that streamed
      drained[wk] = r + hint + (in->bytes[v] - pre) / rate[v];
      drain_rate[wk] = rate[v];
    }
    ++done[wk];
    if (in->streams[v]) last_weights[wk] = done[wk];
  }
  if constexpr (Dynamic) dyn->set(wk, f);
  return f;
}

// Walks every task; the task that finishes last.
uint32_t Simulator::State::run() {
  using enum Machine::Prefetch;
  switch (m->prefetch) {
    case None:
      return dyn ? walk<None, true>() : walk<None, false>();
    case L2:
      return dyn ? walk<L2, true>() : walk<L2, false>();
    case Shared:
      return dyn ? walk<Shared, true>() : walk<Shared, false>();
  }
  return kNoTask;
}

// run() for a machine that prefetches as P, placing the tasks as they come (Dynamic) or not.
template <Machine::Prefetch P, bool Dynamic>
uint32_t Simulator::State::walk() {
  double end = 0;
  uint32_t last_task = kNoTask;
  for (uint32_t v : in->order) {
    const double f = step<P, Dynamic>(v);
    if (f > end || last_task == kNoTask) {
      end = f;
      last_task = v;
    }
  }
  return last_task;
}

double bounded_makespan(double makespan_us, const Walk& w, const Machine& m, double floor_us) {
  const double r =
      std::max(makespan_us, m.launch + w.bytes / m.hbm);  // nothing streams before the launch
  return std::isfinite(floor_us) ? std::max(r, floor_us) : r;
}

Walk Simulator::run(const WalkInput& in, const Machine& m, bool times, uint64_t program_version) {
  Walk w;
  for (double b : in.bytes) w.bytes += b;
  if (!in.acyclic) {
    w.acyclic = false;
    return w;
  }
  State& st = *s_;
  st.start(in, m, program_version);
  const uint32_t last = st.run();
  std::vector<uint32_t> path = st.trace(last, w.breakdown);
  w.makespan = m.launch + (last != kNoTask ? st.finish[last] : 0.0);
  if (times) {
    w.path = std::move(path);
    w.ready = st.ready;
    w.finish = st.finish;
    w.worker = st.worker;
  }
  return w;
}

Walk simulate(const WalkInput& in, const Machine& m, bool times) {
  return Simulator().run(in, m, times);
}

}  // namespace amk::targets
