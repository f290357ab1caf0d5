// The AICore-mode executor: the Ascend PTO runtime's execution model on amk programs, on the
// machine of machine.h (schedulers, cores, handshake). A task is ready when every wait holds (its
// fanin; SM queues play no part here: the validator's race proof uses counter edges only, and its
// deadlock proof holds without the queue order); its completion increments its counter through
// the same code as SM mode. The watchdog is SM mode's; the deterministic mode picks every move
// from the seed on one thread.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "ir/rng.h"
#include "vm/aicore.h"
#include "vm/machine.h"

namespace amk::vm {

std::vector<ir::Op> default_aic_ops() {
  return {ir::Op::GEMV_TILE, ir::Op::GEMM_TILE, ir::Op::ATTENTION_TILE};
}

CoreType core_type_of(ir::Op op, const ir::Recipe* recipe, std::span<const ir::Op> aic_ops) {
  auto on_aic = [&](ir::Op o) {
    return std::find(aic_ops.begin(), aic_ops.end(), o) != aic_ops.end();
  };
  if (on_aic(op)) return CoreType::Aic;
  if (op == ir::Op::FUSED && recipe)
    for (const ir::RecipeStep& s : recipe->steps)
      if (on_aic(s.op)) return CoreType::Aic;
  return CoreType::Aiv;
}

CoreType core_type_of(const ir::Task& t, std::span<const ir::Op> aic_ops) {
  std::optional<ir::Recipe> r;
  if (t.op == ir::Op::FUSED)
    if (const ir::ParamValue* rv = t.param("recipe")) {
      std::vector<std::string> errs;
      r = ir::parse_recipe(rv->other, static_cast<int64_t>(t.inputs.size()), errs);
    }
  return core_type_of(t.op, r ? &*r : nullptr, aic_ops);
}

std::string_view name(CoreType c) {
  return c == CoreType::Aic ? "AIC" : "AIV";
}

namespace detail {

std::vector<std::string> lane_names(const Topology& topo) {
  std::vector<std::string> lanes;
  for (int64_t c = 0; c < topo.cores(); ++c)
    lanes.push_back(fmt::format("{} {} (cluster {})", name(topo.type(c)),
                                topo.type(c) == CoreType::Aic ? c : c - topo.aic_cores(),
                                topo.cluster_of(c)));
  for (int s = 0; s < topo.schedulers; ++s) lanes.push_back(fmt::format("AICPU scheduler {}", s));
  return lanes;
}

}  // namespace detail

namespace {

using namespace detail;

// A program launch as the machine's host (see machine.h); the observer sees dispatch and retire.
template <bool C>
struct ProgramHost {
  Launch<C>& L;
  std::vector<uint8_t> types;  // CoreType by task
  std::atomic<bool>& abort = L.abort;
  std::atomic<bool>& finished = L.finished;
  // The stall snapshot the watchdog takes when it aborts (read after the threads are joined).
  bool snapped = false;
  std::vector<BusyCore> busy_at_abort;
  int64_t ready_at_abort = 0;

  ProgramHost(Launch<C>& launch, std::vector<uint8_t> t) : L(launch), types(std::move(t)) {}
  uint8_t type_of(uint32_t t) const { return types[t]; }
  bool exec(uint32_t t, inst::Workspace& ws, int32_t core) { return L.exec(t, ws, core); }
  template <class F>
  void complete(uint32_t t, F&& on_ready) {
    L.complete(t, on_ready);
  }
  bool all_done(uint64_t retired) const { return retired == L.nt; }
  // Every ready task enters the queues (launch seeds them, completions release them).
  template <class F>
  bool take_published(F&&) const {
    return false;
  }
  bool has_published() const { return false; }
  void on_dispatch(uint32_t t, int sched) {
    if (L.obs) L.obs->on_dispatch(t, sched, ns_since(L.t0));
  }
  void on_retire(uint32_t t) {
    if (L.obs) L.obs->on_retire(t, ns_since(L.t0));
  }
};

template <bool C>
using ProgramMachine = Machine<ProgramHost<C>>;

template <bool C>
void snapshot(ProgramMachine<C>& M) {
  M.H.busy_at_abort = M.busy_cores();
  M.H.ready_at_abort = M.ready_count();
  M.H.snapped = true;
}

// One thread, every choice seeded: which ready task goes to which idle core, which busy core
// advances (ACK + kernel + FIN), which finished core is retired. Replayable from the seed.
void run_deterministic(ProgramMachine<false>& M, uint64_t seed) {
  ir::Rng rng = ir::Rng::seeded(seed, 0x632BE59BD9B4E019ull);
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

// The lanes (a core each, then a scheduler each); the observer gets them before the run.
template <bool C>
void set_up_lanes(ProgramMachine<C>& M, RunResult& r) {
  r.lanes = lane_names(M.topo);
  if (M.H.L.obs) M.H.L.obs->set_up(&M.H.L.im.prog, r.lanes);
}

template <bool C>
void fill_result(ProgramMachine<C>& M, RunResult& r) {
  Launch<C>& L = M.H.L;
  ProgramHost<C>& H = M.H;
  fill_common(L, r);
  if (r.status != RunResult::Status::Stuck) return;
  // The state when the watchdog gave up (threads may have moved on while stopping); without a
  // watchdog (the deterministic mode) the end state is that state.
  if (!H.snapped) snapshot(M);
  r.busy = H.busy_at_abort;
  r.ready_left = H.ready_at_abort;
  std::vector<uint8_t> held(L.nt, 0);  // on a core, not retired
  for (const BusyCore& b : r.busy) held[static_cast<size_t>(b.task)] = 1;
  const bool stalled = std::any_of(r.busy.begin(), r.busy.end(), [](const BusyCore& b) {
    return b.state == BusyCore::State::Running;
  });
  // A stuck launch always has tasks waiting: every submitted task is in the program.
  r.stall_class = classify_stall(stalled, r.ready_left, r.tasks - r.tasks_done);
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
  std::vector<uint8_t> types(nt);  // by opcode, from the target's data (aic_ops)
  for (uint32_t t = 0; t < nt; ++t)
    types[t] = static_cast<uint8_t>(core_type_of(
        im.prog.tasks[t].op, im.recipes[t] ? &*im.recipes[t] : nullptr, o.aicore.aic_ops));
  for (auto [t, c] : o.aicore.overrides) {
    if (t < 0 || t >= static_cast<int64_t>(nt)) {
      r.status = RunResult::Status::KernelError;
      r.diagnostics.push_back(ir::error(
          "vm.option",
          fmt::format("core-type override for task {}: the program has {} tasks", t, nt)));
      return r;
    }
    types[static_cast<size_t>(t)] = static_cast<uint8_t>(c);
  }
  for (uint32_t t = 0; t < nt; ++t)
    if (topo.cores_of(static_cast<CoreType>(types[t])) == 0) {
      r.status = RunResult::Status::KernelError;
      r.diagnostics.push_back(
          ir::error("vm.option",
                    fmt::format("task {} ({}) runs on an {} core and the topology has none", t,
                                im.prog.tasks[t].display(), name(static_cast<CoreType>(types[t]))),
                    ir::task_pointer(t)));
      return r;
    }
  if (o.aicore.deterministic) {
    Launch<false> L(im, o, false);
    ProgramHost<false> H(L, std::move(types));
    ProgramMachine<false> M(H, topo, nt, 1);
    M.topo.schedulers = 1;
    set_up_lanes(M, r);
    for (uint32_t t = 0; t < nt; ++t)
      if (im.gate_init_waits[t] == 0) M.ready[H.type_of(t)].push(t);
    L.t0 = Clock::now();
    run_deterministic(M, o.seed);
    r.wall_s = std::chrono::duration<double>(Clock::now() - L.t0).count();
    r.workers = 1;
    fill_result(M, r);
    if (r.status == RunResult::Status::Stuck) r.diagnostics.push_back(serial_deadlock(r));
    return r;
  }
  Launch<true> L(im, o, false);
  const int threads = topo.schedulers + topo.core_threads;
  if (threads > kMaxThreads) return too_many_threads(threads, "scheduler and core threads");
  ProgramHost<true> H(L, std::move(types));
  ProgramMachine<true> M(H, topo, nt, threads);
  set_up_lanes(M, r);
  for (uint32_t t = 0; t < nt; ++t)
    if (im.gate_init_waits[t] == 0) M.ready[H.type_of(t)].push(t);
  L.t0 = Clock::now();
  ir::Diagnostic cause = run_threads(
      L, M.P, threads, [&](int w) { machine_thread(M, w); }, [&] { return M.any_ready(); },
      [&] { snapshot(M); });
  r.wall_s = std::chrono::duration<double>(Clock::now() - L.t0).count();
  r.workers = threads;
  fill_result(M, r);
  if (r.status == RunResult::Status::Stuck) set_stuck(r, std::move(cause));
  return r;
}

}  // namespace amk::vm
