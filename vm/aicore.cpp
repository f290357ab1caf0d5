// The AICore-mode executor: the Ascend PTO runtime's execution model on amk programs.
//
// The chip is `clusters` x (aic_per_cluster AIC + aiv_per_cluster AIV) cores, numbered PTO-style:
// AIC cores first (cluster i owns AIC i*A .. i*A+A-1), then AIV cores (cluster i owns
// C*A + i*V ..). AICPU scheduler thread s owns the clusters i with i % S == s; a cluster is never
// split. A task is ready when every wait holds (its fanin; SM queues play no part here: the
// validator's race proof uses counter edges only, and its deadlock proof holds without the queue
// order). Ready tasks go to one queue per core type; a scheduler pops for its idle cores of that
// type and dispatches through an emulated register handshake:
//   scheduler: payload = task; DMB = token (release)        -- a per-core sequence, never a
//   sentinel core:      sees a new DMB (acquire); COND = ACK(token); runs the kernel; COND =
//   FIN(token) scheduler: sees COND == FIN(token) (acquire); increments the task's counter
//   (consumers whose
//              last wait it satisfies become ready); the core is idle again.
// COND: bit 31 = FIN (1) or ACK (0), bits 30..0 = the token, as in PTO's MAKE_ACK/MAKE_FIN_VALUE.
// Cores' kernels run on `core_threads` OS threads (each serving a fixed set of cores) or, with
// core_threads 0, on the scheduler thread that owns them between its completion and dispatch scans:
// either way a 72-core chip runs on a few threads. Idle threads spin a while, then block on the
// shared epoch word; the watchdog is SM mode's.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "vm/aicore.h"
#include "vm/launch.h"

namespace amk::vm {

namespace {

bool is_matrix(ir::Op op) {
  return op == ir::Op::GEMV_TILE || op == ir::Op::GEMM_TILE || op == ir::Op::ATTENTION_TILE;
}

}  // namespace

CoreType core_type_of(ir::Op op, const ir::Recipe* recipe) {
  if (is_matrix(op)) return CoreType::Aic;
  if (op == ir::Op::FUSED && recipe)
    for (const ir::RecipeStep& s : recipe->steps)
      if (is_matrix(s.op)) return CoreType::Aic;
  return CoreType::Aiv;
}

CoreType core_type_of(const ir::Task& t) {
  std::optional<ir::Recipe> r;
  if (t.op == ir::Op::FUSED)
    if (const ir::ParamValue* rv = t.param("recipe")) {
      std::vector<std::string> errs;
      r = ir::parse_recipe(rv->other, static_cast<int64_t>(t.inputs.size()), errs);
    }
  return core_type_of(t.op, r ? &*r : nullptr);
}

std::string_view name(CoreType c) {
  return c == CoreType::Aic ? "AIC" : "AIV";
}

namespace {

using namespace detail;

constexpr uint32_t kIdle = 0x7FFFFFFD;      // DMB/COND: nothing (PTO's AICPU_IDLE_TASK_ID)
constexpr uint32_t kFin = 0x80000000u;      // COND bit 31: FIN; clear: ACK
constexpr uint32_t kTokenMax = 0x3FFFFFFF;  // tokens 1..kTokenMax stay below the sentinels

// One core's register block (PTO: DATA_MAIN_BASE and COND in a per-core MMIO block).
struct alignas(64) CoreRegs {
  std::atomic<uint32_t> dmb{kIdle};   // AICPU -> core: dispatch token
  std::atomic<uint32_t> cond{kIdle};  // core -> AICPU: ACK(token) / FIN(token)
  uint32_t payload = kNone;           // the task, written before the DMB release store
};

struct Topology {
  int64_t clusters = 24, aic = 1, aiv = 2;
  int schedulers = 3, core_threads = 0;
  int64_t cores() const { return clusters * (aic + aiv); }
  int64_t aic_cores() const { return clusters * aic; }
  CoreType type(int64_t c) const { return c < aic_cores() ? CoreType::Aic : CoreType::Aiv; }
  int64_t cluster_of(int64_t c) const {
    return c < aic_cores() ? c / aic : (c - aic_cores()) / aiv;
  }
};

Topology topology_of(const AicoreOptions& a) {
  Topology t;
  if (a.clusters > 0) t.clusters = a.clusters;
  t.aic = std::max<int64_t>(0, a.aic_per_cluster);
  t.aiv = std::max<int64_t>(0, a.aiv_per_cluster);
  t.schedulers = a.schedulers > 0 ? a.schedulers : 3;
  t.schedulers = static_cast<int>(std::min<int64_t>(t.schedulers, t.clusters));
  t.core_threads = std::max(0, a.core_threads);
  return t;
}

template <bool C>
struct Machine {
  Launch<C>& L;
  Topology topo;
  std::unique_ptr<CoreRegs[]> regs;
  std::vector<uint8_t> task_type;  // CoreType by task
  ReadyRing ready[2];
  Pool P;  // epoch, sleepers and per-thread completion counts
  // Per core, written only by the thread owning it (scheduler side: running/token, atomics only so
  // the watchdog can snapshot them; executing side: seen).
  std::unique_ptr<std::atomic<uint32_t>[]> running, token;
  std::vector<uint32_t> seen;
  // The stall snapshot the watchdog takes when it aborts (read after the threads are joined).
  bool snapped = false;
  std::vector<BusyCore> busy_at_abort;
  int64_t ready_at_abort = 0;
  // Trace (per task).
  std::vector<int32_t> sched_of;
  std::vector<int64_t> dispatch_ns, retire_ns;

  Machine(Launch<C>& launch, const Topology& t, std::vector<uint8_t> types, int threads)
      : L(launch),
        topo(t),
        regs(new CoreRegs[static_cast<size_t>(t.cores() ? t.cores() : 1)]),
        task_type(std::move(types)),
        ready{ReadyRing(launch.nt), ReadyRing(launch.nt)},
        P(launch.nt, threads),
        running(new std::atomic<uint32_t>[static_cast<size_t>(t.cores() ? t.cores() : 1)]),
        token(new std::atomic<uint32_t>[static_cast<size_t>(t.cores() ? t.cores() : 1)]),
        seen(static_cast<size_t>(t.cores()), kIdle) {
    for (int64_t c = 0; c < t.cores(); ++c) {
      running[static_cast<size_t>(c)].store(kNone, std::memory_order_relaxed);
      token[static_cast<size_t>(c)].store(0, std::memory_order_relaxed);
    }
    if (L.o.trace) {
      sched_of.assign(L.nt, -1);
      dispatch_ns.assign(L.nt, 0);
      retire_ns.assign(L.nt, 0);
    }
  }

  void make_ready(uint32_t u) {
    ready[task_type[u]].push(u);
    P.wake_one();
  }
  bool any_ready() const { return ready[0].has_items() || ready[1].has_items(); }
  uint32_t tok(size_t c) const { return token[c].load(std::memory_order_relaxed); }
  uint32_t task_on(size_t c) const { return running[c].load(std::memory_order_relaxed); }

  // Cores holding a task not yet retired, and how far its handshake got.
  std::vector<BusyCore> busy_cores() const {
    std::vector<BusyCore> v;
    for (int64_t c = 0; c < topo.cores(); ++c) {
      const auto ci = static_cast<size_t>(c);
      const uint32_t t = task_on(ci);
      if (t == kNone) continue;
      const uint32_t cond = regs[ci].cond.load(std::memory_order_acquire);
      const auto st = cond == (tok(ci) | kFin) ? BusyCore::State::Finished
                      : cond == tok(ci)        ? BusyCore::State::Running
                                               : BusyCore::State::Dispatched;
      v.push_back({c, topo.type(c), t, st});
    }
    return v;
  }
  int64_t ready_count() const {
    int64_t n = 0;
    for (const auto& q : ready)
      n += static_cast<int64_t>(q.tail.load(std::memory_order_acquire)) -
           static_cast<int64_t>(q.head.load(std::memory_order_acquire));
    return n;
  }
  void snapshot() {
    busy_at_abort = busy_cores();
    ready_at_abort = ready_count();
    snapped = true;
  }

  // Scheduler side: hands task t to idle core c.
  void dispatch(int64_t c, uint32_t t, int sched) {
    const auto ci = static_cast<size_t>(c);
    const uint32_t k = tok(ci) % kTokenMax + 1;
    token[ci].store(k, std::memory_order_relaxed);
    running[ci].store(t, std::memory_order_relaxed);
    regs[ci].payload = t;
    if (L.o.trace) {
      sched_of[t] = sched;
      dispatch_ns[t] = ns_since(L.t0);
    }
    regs[ci].dmb.store(k, std::memory_order_release);
    if (topo.core_threads > 0 && P.sleepers.load(std::memory_order_seq_cst) > 0) P.wake_all();
  }

  // Scheduler side: if core c finished its task, retires it (consumers released) and returns true.
  bool retire(int64_t c) {
    const auto ci = static_cast<size_t>(c);
    if (regs[ci].cond.load(std::memory_order_acquire) != (tok(ci) | kFin)) return false;
    const uint32_t t = task_on(ci);
    running[ci].store(kNone, std::memory_order_relaxed);
    if (L.o.trace) retire_ns[t] = ns_since(L.t0);
    L.complete(t, [&](uint32_t u) { make_ready(u); });
    return true;
  }

  // Core side: a new token in DMB -> ACK, run the kernel, FIN. Returns true when it ran a task
  // (false also when the kernel failed: the run is then aborted and FIN is never written).
  bool core_step(int64_t c, inst::Workspace& ws) {
    const auto ci = static_cast<size_t>(c);
    const uint32_t d = regs[ci].dmb.load(std::memory_order_acquire);
    if (d == kIdle || d == seen[ci]) return false;
    seen[ci] = d;
    const uint32_t t = regs[ci].payload;
    regs[ci].cond.store(d, std::memory_order_release);  // ACK
    if (!L.exec(t, ws, static_cast<int32_t>(c))) return false;
    regs[ci].cond.store(d | kFin, std::memory_order_release);
    return true;
  }
  bool has_new_token(int64_t c) const {
    const auto ci = static_cast<size_t>(c);
    const uint32_t d = regs[ci].dmb.load(std::memory_order_acquire);
    return d != kIdle && d != seen[ci];
  }
};

// One AICPU scheduler thread: completion scan over its busy cores, dispatch to its idle cores,
// and (core_threads 0) the kernels of the cores it just dispatched to.
void scheduler(Machine<true>& M, int s) {
  Launch<true>& L = M.L;
  std::vector<int64_t> idle[2], busy;
  for (int64_t c = M.topo.cores() - 1; c >= 0; --c)
    if (M.topo.cluster_of(c) % M.topo.schedulers == s)
      idle[static_cast<int>(M.topo.type(c))].push_back(c);
  const bool inline_cores = M.topo.core_threads == 0;
  inst::Workspace ws;
  uint64_t local = 0;
  for (int spin = 0;;) {
    if (L.abort.load(std::memory_order_acquire) || L.finished.load(std::memory_order_acquire))
      return;
    bool progress = false;
    for (size_t i = 0; i < busy.size();) {
      const int64_t c = busy[i];
      if (M.retire(c)) {
        M.P.done[static_cast<size_t>(s)].v.store(++local, std::memory_order_release);
        busy[i] = busy.back();
        busy.pop_back();
        idle[static_cast<int>(M.topo.type(c))].push_back(c);
        progress = true;
      } else {
        ++i;
      }
    }
    const size_t before = busy.size();
    for (int k = 0; k < 2; ++k)
      while (!idle[k].empty()) {
        const uint32_t t = M.ready[k].try_pop();
        if (t == kNone) break;
        const int64_t c = idle[k].back();
        idle[k].pop_back();
        M.dispatch(c, t, s);
        busy.push_back(c);
        progress = true;
      }
    if (inline_cores)
      for (size_t i = before; i < busy.size(); ++i)
        if (!M.core_step(busy[i], ws) && L.abort.load(std::memory_order_acquire)) {
          M.P.wake_all();
          return;
        }
    if (progress && busy.empty() && !M.any_ready() && M.P.total_done() == L.nt) {
      L.finished.store(true, std::memory_order_release);
      M.P.wake_all();
      return;
    }
    if (progress) {
      spin = 0;
      continue;
    }
    if (spin == kSpin && M.P.total_done() == L.nt) {
      L.finished.store(true, std::memory_order_release);
      M.P.wake_all();
      return;
    }
    M.P.idle(spin, [&] {
      if (L.abort.load(std::memory_order_seq_cst) || L.finished.load(std::memory_order_seq_cst))
        return true;
      for (int k = 0; k < 2; ++k)
        if (!idle[k].empty() && M.ready[k].has_items()) return true;
      for (int64_t c : busy)
        if (M.regs[static_cast<size_t>(c)].cond.load(std::memory_order_seq_cst) ==
            (M.tok(static_cast<size_t>(c)) | kFin))
          return true;
      return false;
    });
  }
}

// One OS thread running the kernels of cores w, w + W, w + 2W, ...
void core_thread(Machine<true>& M, int w) {
  Launch<true>& L = M.L;
  const int W = M.topo.core_threads;
  inst::Workspace ws;
  for (int spin = 0;;) {
    if (L.abort.load(std::memory_order_acquire) || L.finished.load(std::memory_order_acquire))
      return;
    bool ran = false;
    for (int64_t c = w; c < M.topo.cores(); c += W) {
      if (M.core_step(c, ws)) {
        ran = true;
      } else if (L.abort.load(std::memory_order_acquire)) {
        M.P.wake_all();
        return;
      }
    }
    if (ran) {
      if (M.P.sleepers.load(std::memory_order_seq_cst) > 0) M.P.wake_all();  // FIN for a sleeper
      spin = 0;
      continue;
    }
    M.P.idle(spin, [&] {
      if (L.abort.load(std::memory_order_seq_cst) || L.finished.load(std::memory_order_seq_cst))
        return true;
      for (int64_t c = w; c < M.topo.cores(); c += W)
        if (M.has_new_token(c)) return true;
      return false;
    });
  }
}

// One thread, every choice seeded: which ready task goes to which idle core, which busy core
// advances (ACK + kernel + FIN), which finished core is retired. Replayable from the seed.
void run_deterministic(Machine<false>& M, uint64_t seed) {
  SplitMix rng(seed);
  std::vector<uint32_t> ready[2];
  std::vector<int64_t> idle[2], busy, finished;
  for (int64_t c = 0; c < M.topo.cores(); ++c) idle[static_cast<int>(M.topo.type(c))].push_back(c);
  for (int k = 0; k < 2; ++k)
    for (uint32_t t; (t = M.ready[k].try_pop()) != kNone;) ready[k].push_back(t);
  auto pick = [&](auto& v) {
    const size_t i = rng.below(v.size());
    std::swap(v[i], v.back());
    auto x = v.back();
    v.pop_back();
    return x;
  };
  inst::Workspace ws;
  for (;;) {
    int can_dispatch[2], n_dispatch = 0;
    for (int k = 0; k < 2; ++k)
      if (!ready[k].empty() && !idle[k].empty()) can_dispatch[n_dispatch++] = k;
    const size_t moves =
        static_cast<size_t>(n_dispatch) + (busy.empty() ? 0 : 1) + (finished.empty() ? 0 : 1);
    if (moves == 0) return;
    size_t m = rng.below(moves);
    if (m < static_cast<size_t>(n_dispatch)) {
      const int k = can_dispatch[m];
      const uint32_t t = pick(ready[k]);
      const int64_t c = pick(idle[k]);
      M.dispatch(c, t, 0);
      busy.push_back(c);
      continue;
    }
    m -= static_cast<size_t>(n_dispatch);
    if (m == 0 && !busy.empty()) {
      const int64_t c = pick(busy);
      if (!M.core_step(c, ws)) return;  // kernel error
      finished.push_back(c);
      continue;
    }
    const int64_t c = pick(finished);
    if (!M.retire(c)) return;  // cannot happen: FIN was written
    for (int k = 0; k < 2; ++k)
      for (uint32_t u; (u = M.ready[k].try_pop()) != kNone;) ready[k].push_back(u);
    idle[static_cast<int>(M.topo.type(c))].push_back(c);
  }
}

template <bool C>
void fill_result(Machine<C>& M, RunResult& r) {
  Launch<C>& L = M.L;
  fill_common(L, r);
  for (int64_t c = 0; c < M.topo.cores(); ++c)
    r.lanes.push_back(fmt::format("{} {} (cluster {})", name(M.topo.type(c)),
                                  M.topo.type(c) == CoreType::Aic ? c : c - M.topo.aic_cores(),
                                  M.topo.cluster_of(c)));
  const int nsched = M.topo.schedulers;
  for (int s = 0; s < nsched; ++s) r.lanes.push_back(fmt::format("AICPU scheduler {}", s));
  if (L.o.trace)
    for (TraceEvent& e : r.trace) {
      const auto t = static_cast<size_t>(e.task);
      e.scheduler = M.sched_of[t];
      e.dispatch_ns = M.dispatch_ns[t];
      e.retire_ns = M.retire_ns[t];
      e.head_ns = e.ready_ns;
    }
  if (r.status != RunResult::Status::Stuck) return;
  // The state when the watchdog gave up (threads may have moved on while stopping); without a
  // watchdog (the deterministic mode) the end state is that state.
  if (!M.snapped) M.snapshot();
  r.busy = M.busy_at_abort;
  r.ready_left = M.ready_at_abort;
  std::vector<uint8_t> held(L.nt, 0);  // on a core, not retired
  for (const BusyCore& b : r.busy) held[static_cast<size_t>(b.task)] = 1;
  const bool stalled = std::any_of(r.busy.begin(), r.busy.end(), [](const BusyCore& b) {
    return b.state == BusyCore::State::Running;
  });
  r.stall_class = stalled            ? "running-stalled"
                  : r.ready_left > 0 ? "ready-but-idle"
                                     : "dependency-deadlock";
  // Tasks that never became ready, with the wait that holds them (the first 16).
  auto retired = [&](uint32_t u) { return L.state.is_done(u) && !held[u]; };
  for (uint32_t t = 0; t < L.nt && r.blocked.size() < 16; ++t) {
    if (retired(t) || held[t]) continue;
    BlockedSm b = blocked_on(L, t, retired);
    if (b.counter < 0) continue;  // ready (queued)
    b.sm = -1;
    r.blocked.push_back(std::move(b));
  }
}

}  // namespace

RunResult run_aicore(Image& im, const RunOptions& o) {
  RunResult r;
  const Topology topo = topology_of(o.aicore);
  const auto nt = static_cast<uint32_t>(im.prog.tasks.size());
  r.tasks = nt;
  std::vector<uint8_t> types = im.core_type;  // by opcode, decided at load
  for (auto [t, c] : o.aicore.overrides) {
    if (t < 0 || t >= static_cast<int64_t>(nt)) {
      r.status = RunResult::Status::KernelError;
      r.error = fmt::format("core-type override for task {}: the program has {} tasks", t, nt);
      return r;
    }
    types[static_cast<size_t>(t)] = static_cast<uint8_t>(c);
  }
  const int64_t have[2] = {topo.aic_cores(), topo.cores() - topo.aic_cores()};
  for (uint32_t t = 0; t < nt; ++t)
    if (have[types[t]] == 0) {
      r.status = RunResult::Status::KernelError;
      r.error = fmt::format("task {} ({}) runs on an {} core and the topology has none", t,
                            im.prog.tasks[t].display(), name(static_cast<CoreType>(types[t])));
      return r;
    }
  if (o.aicore.deterministic) {
    Launch<false> L(im, o, false);
    Machine<false> M(L, topo, std::move(types), 1);
    M.topo.schedulers = 1;
    for (uint32_t t = 0; t < nt; ++t)
      if (im.gate_init_waits[t] == 0) M.ready[M.task_type[t]].push(t);
    L.t0 = Clock::now();
    run_deterministic(M, o.seed);
    r.wall_s = std::chrono::duration<double>(Clock::now() - L.t0).count();
    r.workers = 1;
    fill_result(M, r);
    if (r.status == RunResult::Status::Stuck) r.error = serial_deadlock(r);
    return r;
  }
  Launch<true> L(im, o, false);
  const int threads = topo.schedulers + topo.core_threads;
  Machine<true> M(L, topo, std::move(types), threads);
  for (uint32_t t = 0; t < nt; ++t)
    if (im.gate_init_waits[t] == 0) M.ready[M.task_type[t]].push(t);
  L.t0 = Clock::now();
  std::string cause = run_threads(
      L, M.P, threads,
      [&](int w) {
        if (w < topo.schedulers)
          scheduler(M, w);
        else
          core_thread(M, w - topo.schedulers);
      },
      [&] { return M.any_ready(); }, [&] { M.snapshot(); });
  r.wall_s = std::chrono::duration<double>(Clock::now() - L.t0).count();
  r.workers = threads;
  fill_result(M, r);
  if (r.status == RunResult::Status::Stuck) r.error = cause.empty() ? "aborted" : cause;
  return r;
}

}  // namespace amk::vm
