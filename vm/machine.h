// Internal: the AICore machine (AICPU scheduler threads, AIC/AIV cores, the register handshake),
// shared by AICore-mode program runs and the orchestrator.
//
// The chip is `clusters` x (aic_per_cluster AIC + aiv_per_cluster AIV) cores, numbered PTO-style:
// AIC cores first (cluster i owns AIC i*A .. i*A+A-1), then AIV cores (cluster i owns
// C*A + i*V ..). AICPU scheduler thread s owns the clusters i with i % S == s; a cluster is never
// split. Ready tasks go to one queue per core type; a scheduler pops for its idle cores of that
// type and dispatches through an emulated register handshake:
//   scheduler: payload = task; DMB = token (release)  -- a per-core sequence, never a sentinel
//   core:      sees a new DMB (acquire); COND = ACK(token); runs the kernel; COND = FIN(token)
//   scheduler: sees COND == FIN(token) (acquire); completes the task (consumers whose last
//              dependency it was become ready); the core is idle again.
// COND: bit 31 = FIN (1) or ACK (0), bits 30..0 = the token, as in PTO's MAKE_ACK/MAKE_FIN_VALUE.
// Kernels run on `core_threads` OS threads (each serving a fixed set of cores) or, with
// core_threads 0, on the scheduler thread that owns them between its completion and dispatch
// scans: either way a 72-core chip runs on a few threads. Idle threads spin a while, then block
// on the pool's epoch word.
//
// What runs is up to the Host: a program launch (aicore.cpp) or an orchestration
// (orchestrator.cpp). A Host has `std::atomic<bool>& abort, &finished` and
//   uint8_t type_of(uint32_t t);                       // CoreType of task t
//   bool exec(uint32_t t, inst::Workspace&, int32_t core);  // false: failed, run aborted
//   void complete(uint32_t t, F&& on_ready);           // on_ready(u) for tasks it makes ready
//   bool all_done(uint64_t retired);                   // may the schedulers stop by themselves
//   bool take_published(F&& on_ready);  // on_ready(u) for tasks handed over outside the queues
//   bool has_published();               // take_published() would find some
//   void on_dispatch(uint32_t t, int scheduler); void on_retire(uint32_t t);  // trace hooks
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "vm/launch.h"

namespace amk::vm::detail {

constexpr uint32_t kIdle = 0x7FFFFFFD;      // DMB/COND: nothing (PTO's AICPU_IDLE_TASK_ID)
constexpr uint32_t kFin = 0x80000000u;      // COND bit 31: FIN; clear: ACK
constexpr uint32_t kTokenMax = 0x3FFFFFFF;  // tokens 1..kTokenMax stay below the sentinels

/// One core's register block (PTO: DATA_MAIN_BASE and COND in a per-core MMIO block).
struct alignas(64) CoreRegs {
  std::atomic<uint32_t> dmb{kIdle};   // AICPU -> core: dispatch token
  std::atomic<uint32_t> cond{kIdle};  // core -> AICPU: ACK(token) / FIN(token)
  uint32_t payload = kNone;           // the task, written before the DMB release store
};

/// Clusters, cores per cluster, scheduler and core threads.
struct Topology {
  int64_t clusters = 24, aic = 1, aiv = 2;
  int schedulers = 3, core_threads = 0;
  int64_t cores() const { return clusters * (aic + aiv); }
  int64_t aic_cores() const { return clusters * aic; }
  int64_t cores_of(CoreType c) const {
    return c == CoreType::Aic ? aic_cores() : cores() - aic_cores();
  }
  CoreType type(int64_t c) const { return c < aic_cores() ? CoreType::Aic : CoreType::Aiv; }
  int64_t cluster_of(int64_t c) const {
    return c < aic_cores() ? c / aic : (c - aic_cores()) / aiv;
  }
};

/// The topology AicoreOptions ask for (defaults: a2a3's 24 x (1 + 2), 3 schedulers).
inline Topology topology_of(const AicoreOptions& a) {
  Topology t;
  if (a.clusters > 0) t.clusters = a.clusters;
  t.aic = std::max<int64_t>(0, a.aic_per_cluster);
  t.aiv = std::max<int64_t>(0, a.aiv_per_cluster);
  t.schedulers = a.schedulers > 0 ? a.schedulers : 3;
  t.schedulers =
      static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(t.schedulers, t.clusters)));
  t.core_threads = std::max(0, a.core_threads);
  return t;
}

/// The lanes of a topology as observers see them: every core ("AIC 0 (cluster 0)", AIC first),
/// then every scheduler ("AICPU scheduler 0").
std::vector<std::string> lane_names(const Topology& topo);

template <class Host>
struct Machine {
  Host& H;
  Topology topo;
  std::unique_ptr<CoreRegs[]> regs;
  ReadyRing ready[2];  // by CoreType
  Workers P;           // epoch, sleepers and per-thread completion counts
  // Per core, written only by the thread owning it (scheduler side: running/token, atomics only so
  // a watchdog can snapshot them; executing side: seen).
  std::unique_ptr<std::atomic<uint32_t>[]> running, token;
  std::vector<uint32_t> seen;

  Machine(Host& host, const Topology& t, uint32_t queue_capacity, int threads)
      : H(host),
        topo(t),
        regs(new CoreRegs[static_cast<size_t>(t.cores() ? t.cores() : 1)]),
        ready{ReadyRing(queue_capacity), ReadyRing(queue_capacity)},
        P(0, threads),
        running(new std::atomic<uint32_t>[static_cast<size_t>(t.cores() ? t.cores() : 1)]),
        token(new std::atomic<uint32_t>[static_cast<size_t>(t.cores() ? t.cores() : 1)]),
        seen(static_cast<size_t>(t.cores()), kIdle) {
    for (int64_t c = 0; c < t.cores(); ++c) {
      running[static_cast<size_t>(c)].store(kNone, std::memory_order_relaxed);
      token[static_cast<size_t>(c)].store(0, std::memory_order_relaxed);
    }
  }

  // Wakes every sleeper: threads are not interchangeable (a scheduler dispatches only to its own
  // idle cores of the task's type; core threads dispatch nothing), so waking one could pick a
  // thread that cannot take the task and leave the one that can asleep.
  void make_ready(uint32_t u) {
    ready[H.type_of(u)].push(u);
    if (P.sleepers.load(std::memory_order_seq_cst) > 0) P.wake_all();
  }
  bool any_ready() const { return ready[0].has_items() || ready[1].has_items(); }
  int64_t ready_count() const { return ready[0].size() + ready[1].size(); }
  uint32_t tok(size_t c) const { return token[c].load(std::memory_order_relaxed); }
  uint32_t task_on(size_t c) const { return running[c].load(std::memory_order_relaxed); }

  /// Cores holding a task not yet retired, and how far its handshake got.
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

  /// Scheduler side: hands task t to idle core c.
  void dispatch(int64_t c, uint32_t t, int sched) {
    const auto ci = static_cast<size_t>(c);
    const uint32_t k = tok(ci) % kTokenMax + 1;
    token[ci].store(k, std::memory_order_relaxed);
    running[ci].store(t, std::memory_order_relaxed);
    regs[ci].payload = t;
    H.on_dispatch(t, sched);
    regs[ci].dmb.store(k, std::memory_order_release);
    if (topo.core_threads > 0 && P.sleepers.load(std::memory_order_seq_cst) > 0) P.wake_all();
  }

  /// Scheduler side: if core c finished its task, retires it (consumers released); true if so.
  bool retire(int64_t c) {
    const auto ci = static_cast<size_t>(c);
    if (regs[ci].cond.load(std::memory_order_acquire) != (tok(ci) | kFin)) return false;
    const uint32_t t = task_on(ci);
    running[ci].store(kNone, std::memory_order_relaxed);
    H.on_retire(t);
    H.complete(t, [&](uint32_t u) { make_ready(u); });
    return true;
  }

  /// Core side: a new token in DMB -> ACK, run the kernel, FIN. True when it ran a task (false
  /// also when the kernel failed: the run is then aborted and FIN is never written).
  bool core_step(int64_t c, inst::Workspace& ws) {
    const auto ci = static_cast<size_t>(c);
    const uint32_t d = regs[ci].dmb.load(std::memory_order_acquire);
    if (d == kIdle || d == seen[ci]) return false;
    seen[ci] = d;
    const uint32_t t = regs[ci].payload;
    regs[ci].cond.store(d, std::memory_order_release);  // ACK
    if (!H.exec(t, ws, static_cast<int32_t>(c))) return false;
    regs[ci].cond.store(d | kFin, std::memory_order_release);
    return true;
  }
  bool has_new_token(int64_t c) const {
    const auto ci = static_cast<size_t>(c);
    const uint32_t d = regs[ci].dmb.load(std::memory_order_acquire);
    return d != kIdle && d != seen[ci];
  }

  bool stopping() const {
    return H.abort.load(std::memory_order_acquire) || H.finished.load(std::memory_order_acquire);
  }
  void finish_run() {
    H.finished.store(true, std::memory_order_release);
    P.wake_all();
  }
};

/// One AICPU scheduler thread: completion scan over its busy cores, dispatch to its idle cores,
/// and (core_threads 0) the kernels of the cores it just dispatched to.
template <class Host>
void scheduler(Machine<Host>& M, int s) {
  std::vector<int64_t> idle[2], busy;
  for (int64_t c = M.topo.cores() - 1; c >= 0; --c)
    if (M.topo.cluster_of(c) % M.topo.schedulers == s)
      idle[static_cast<int>(M.topo.type(c))].push_back(c);
  const bool inline_cores = M.topo.core_threads == 0;
  inst::Workspace ws;
  uint64_t local = 0;
  for (int spin = 0;;) {
    if (M.stopping()) return;
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
    if (M.H.take_published([&](uint32_t u) { M.make_ready(u); })) progress = true;
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
        if (!M.core_step(busy[i], ws) && M.H.abort.load(std::memory_order_acquire)) {
          M.P.wake_all();
          return;
        }
    if (progress && busy.empty() && !M.any_ready() && M.H.all_done(M.P.total_done())) {
      M.finish_run();
      return;
    }
    if (progress) {
      spin = 0;
      continue;
    }
    if (spin == kSpin && M.H.all_done(M.P.total_done())) {
      M.finish_run();
      return;
    }
    M.P.idle(spin, [&] {
      if (M.H.abort.load(std::memory_order_seq_cst) || M.H.finished.load(std::memory_order_seq_cst))
        return true;
      if (M.H.has_published()) return true;
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

/// One OS thread running the kernels of cores w, w + W, w + 2W, ...
template <class Host>
void core_thread(Machine<Host>& M, int w) {
  const int W = M.topo.core_threads;
  inst::Workspace ws;
  for (int spin = 0;;) {
    if (M.stopping()) return;
    bool ran = false;
    for (int64_t c = w; c < M.topo.cores(); c += W) {
      if (M.core_step(c, ws)) {
        ran = true;
      } else if (M.H.abort.load(std::memory_order_acquire)) {
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
      if (M.H.abort.load(std::memory_order_seq_cst) || M.H.finished.load(std::memory_order_seq_cst))
        return true;
      for (int64_t c = w; c < M.topo.cores(); c += W)
        if (M.has_new_token(c)) return true;
      return false;
    });
  }
}

/// Thread w of a machine: schedulers first, then core threads.
template <class Host>
void machine_thread(Machine<Host>& M, int w) {
  if (w < M.topo.schedulers)
    scheduler(M, w);
  else
    core_thread(M, w - M.topo.schedulers);
}

}  // namespace amk::vm::detail
