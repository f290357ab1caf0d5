// The SM-mode executor: counters, gates, ready queues, workers, watchdog. See vm.h for the modes.
//
// Every task has a gate: the number of its waits not yet satisfied at reset, plus one when it has a
// predecessor in its SM's queue. A completing task increments its out_counter (release); the new
// value v opens exactly the waits whose threshold is v (counters move by one, so every value is
// seen once), and the task opens its SM successor. The task whose gate reaches zero is its SM's
// head with every wait holding: exactly the moment a persistent-kernel SM would start it.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "vm/aicore.h"
#include "vm/image.h"
#include "vm/launch.h"
#include "vm/vm.h"

namespace amk::vm {
namespace {

using namespace detail;

// One thread: FIFO order (Multiplexed with one worker) or seeded choice (Deterministic).
void run_serial(Launch<false>& L, bool seeded, uint64_t seed) {
  std::vector<uint32_t>& ready = L.im.serial_ready;
  ready.clear();
  ready.reserve(L.nt);
  for (uint32_t t = 0; t < L.nt; ++t)
    if (L.im.gate_init[t] == 0) ready.push_back(t);
  ir::Rng rng = ir::Rng::seeded(seed, 0x632BE59BD9B4E019ull);
  inst::Workspace ws;
  size_t head = 0;
  auto push = [&](uint32_t u) { ready.push_back(u); };
  while (head < ready.size()) {
    if (seeded) std::swap(ready[head], ready[head + rng.below(ready.size() - head)]);
    const uint32_t t = ready[head++];
    if (!L.exec(t, ws, 0)) return;
    L.complete(t, push);
  }
}

// Several threads multiplexing the logical SMs on the pool's ready ring, continuing with the first
// opened task on the same thread, spinning a while then blocking on the epoch word.
void run_pool(Launch<true>& L, Workers& P, int w) {
  inst::Workspace ws;
  uint64_t local = 0;
  uint32_t next = kNone;
  auto on_ready = [&](uint32_t u) {
    if (next == kNone)
      next = u;
    else
      P.push(u);
  };
  for (;;) {
    uint32_t t = next;
    next = kNone;
    if (t == kNone) {
      for (int spin = 0;;) {
        if (L.abort.load(std::memory_order_acquire) || L.finished.load(std::memory_order_acquire))
          return;
        if ((t = P.try_pop()) != kNone) break;
        if (spin == kSpin && P.total_done() == L.nt) {
          L.finished.store(true, std::memory_order_release);
          P.wake_all();
          return;
        }
        P.idle(spin, [&] {
          return P.has_items() || L.abort.load(std::memory_order_seq_cst) ||
                 L.finished.load(std::memory_order_seq_cst);
        });
      }
    }
    if (L.abort.load(std::memory_order_relaxed)) return;
    if (!L.exec(t, ws, w)) {
      P.wake_all();
      return;
    }
    L.complete(t, on_ready);
    P.done[static_cast<size_t>(w)].v.store(++local, std::memory_order_release);
  }
}

// One OS thread per SM: walk the queue, spin then block on each wait's counter (the literal
// persistent-kernel model). Uses the same epoch word to block.
void run_sm_thread(Launch<true>& L, Workers& P, int64_t sm) {
  inst::Workspace ws;
  uint64_t local = 0;
  const int32_t* q = L.im.queue();
  const int32_t* ql = L.im.queue_len();
  for (int32_t i = ql[sm]; i < ql[sm + 1]; ++i) {
    const auto t = static_cast<uint32_t>(q[i]);
    for (const ir::Wait& wt : L.im.prog.tasks[t].waits) {
      const auto th = static_cast<uint32_t>(std::clamp<int64_t>(wt.threshold, 0, UINT32_MAX));
      for (int spin = 0; L.counters.get(static_cast<size_t>(wt.counter)) < th;) {
        if (L.abort.load(std::memory_order_acquire)) return;
        P.idle(spin, [&] {
          return L.counters.get(static_cast<size_t>(wt.counter)) >= th ||
                 L.abort.load(std::memory_order_seq_cst);
        });
      }
    }
    if (L.abort.load(std::memory_order_relaxed)) return;
    if (L.obs) L.obs->on_ready(t, ns_since(L.t0));
    if (!L.exec(t, ws, static_cast<int32_t>(sm))) {
      P.wake_all();
      return;
    }
    L.counters.inc(L.im.hot[t].out_counter);
    if (P.sleepers.load(std::memory_order_seq_cst) > 0) P.wake_all();
    P.done[static_cast<size_t>(sm)].v.store(++local, std::memory_order_release);
    if (L.obs && i + 1 < ql[sm + 1])
      L.obs->on_head(static_cast<uint32_t>(q[i + 1]), ns_since(L.t0));
  }
}

// The SM-mode result: the common part, then one BlockedSm per SM whose queue did not finish.
template <bool C>
void fill_result(Launch<C>& L, RunResult& r) {
  fill_common(L, r);
  if (r.status != RunResult::Status::Stuck) return;
  const int32_t* q = L.im.queue();
  const int32_t* ql = L.im.queue_len();
  for (int64_t s = 0; s < L.im.num_sms; ++s) {
    int32_t i = ql[s];
    while (i < ql[s + 1] && L.state.is_done(static_cast<size_t>(q[i]))) ++i;
    if (i == ql[s + 1]) continue;
    BlockedSm b =
        blocked_on(L, static_cast<uint32_t>(q[i]), [&](uint32_t u) { return L.state.is_done(u); });
    b.sm = s;
    b.remaining = ql[s + 1] - i;
    r.blocked.push_back(std::move(b));
  }
}

}  // namespace

namespace {

// Tells the observer the lanes (one per SM) and that each queue's first task heads it from the
// start.
template <bool C>
void set_up_observer(Launch<C>& L, RunResult& r) {
  for (int64_t s = 0; s < L.im.num_sms; ++s) r.lanes.push_back(fmt::format("SM {}", s));
  if (!L.obs) return;
  L.obs->set_up(&L.im.prog, r.lanes);
  const int32_t* q = L.im.queue();
  const int32_t* ql = L.im.queue_len();
  for (int64_t s = 0; s < L.im.num_sms; ++s)
    if (ql[s] < ql[s + 1]) L.obs->on_head(static_cast<uint32_t>(q[ql[s]]), 0);
}

}  // namespace

RunResult Vm::run(const RunOptions& o) {
  RunResult r = launch(o);
  if (o.observer) o.observer->on_finish(im_->prog, r);
  return r;
}

RunResult Vm::launch(const RunOptions& o) {
  Image& im = *im_;
  RunResult r;
  std::memset(im.scratch(), 0, static_cast<size_t>(im.launch_scratch_bytes));
  if (ir::Status st = im.wire(); !st) {
    r.status = RunResult::Status::KernelError;
    r.diagnostics = std::move(st.diagnostics);
    r.tasks = static_cast<int64_t>(im.prog.tasks.size());
    return r;
  }
  if (o.mode == Mode::Aicore) return run_aicore(im, o);
  int workers = o.workers > 0 ? o.workers
                              : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (o.mode == Mode::Deterministic || (o.mode == Mode::Multiplexed && workers == 1)) {
    Launch<false> L(im, o);
    set_up_observer(L, r);
    L.t0 = Clock::now();
    run_serial(L, o.mode == Mode::Deterministic, o.seed);
    r.wall_s = std::chrono::duration<double>(Clock::now() - L.t0).count();
    r.workers = 1;
    fill_result(L, r);
    if (r.status == RunResult::Status::Stuck) r.diagnostics.push_back(serial_deadlock(r));
    return r;
  }
  Launch<true> L(im, o);
  set_up_observer(L, r);
  const bool pool_mode = o.mode == Mode::Multiplexed;
  const int threads = pool_mode ? workers : static_cast<int>(im.num_sms);
  if (threads > kMaxThreads) return too_many_threads(threads, pool_mode ? "workers" : "SM threads");
  Workers P(L.nt, threads);
  if (pool_mode)
    for (uint32_t t = 0; t < L.nt; ++t)
      if (im.gate_init[t] == 0) P.ready.push(t);
  L.t0 = Clock::now();
  ir::Diagnostic cause = run_threads(
      L, P, threads,
      [&](int w) {
        if (pool_mode)
          run_pool(L, P, w);
        else
          run_sm_thread(L, P, w);
      },
      [&] { return pool_mode && P.has_items(); }, [] {});
  r.wall_s = std::chrono::duration<double>(Clock::now() - L.t0).count();
  r.workers = threads;
  fill_result(L, r);
  if (r.status == RunResult::Status::Stuck) set_stuck(r, std::move(cause));
  return r;
}

}  // namespace amk::vm
