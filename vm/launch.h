// Internal: the per-launch state shared by the SM-mode and AICore-mode executors (counters,
// gates, task states), how a launch's result is filled, and its worker threads run next to a
// watchdog (vm/workers.h, vm/monitor.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "ir/rng.h"
#include "vm/image.h"
#include "vm/monitor.h"
#include "vm/observer.h"
#include "vm/options.h"
#include "vm/run_result.h"
#include "vm/spin.h"
#include "vm/workers.h"

namespace amk::vm::detail {

// Counter or gate cells: atomics when several threads share them, plain integers (reused across
// launches) otherwise.
template <bool Concurrent>
struct Cells {
  using Cell = std::conditional_t<Concurrent, std::atomic<uint32_t>, uint32_t>;
  std::unique_ptr<Cell[]> owned;
  Cell* v = nullptr;
  void reset(size_t n, const uint32_t* init, std::vector<uint32_t>& reuse) {
    if constexpr (Concurrent) {
      owned.reset(new Cell[n ? n : 1]);
      v = owned.get();
      for (size_t i = 0; i < n; ++i) v[i].store(init[i], std::memory_order_relaxed);
    } else {
      reuse.resize(n ? n : 1);
      v = reuse.data();
      if (n) std::memcpy(v, init, n * sizeof(uint32_t));
    }
  }
  uint32_t get(size_t i) const {
    if constexpr (Concurrent)
      return v[i].load(std::memory_order_acquire);
    else
      return v[i];
  }
  uint32_t inc(size_t i) {
    if constexpr (Concurrent)
      return v[i].fetch_add(1, std::memory_order_acq_rel) + 1;
    else
      return ++v[i];
  }
  uint32_t dec(size_t i) {
    if constexpr (Concurrent)
      return v[i].fetch_sub(1, std::memory_order_acq_rel) - 1;
    else
      return --v[i];
  }
};

// Per-task progress: atomics when shared, plain bytes otherwise.
template <bool Concurrent>
struct States {
  using Cell = std::conditional_t<Concurrent, std::atomic<uint8_t>, uint8_t>;
  std::unique_ptr<Cell[]> owned;
  Cell* v = nullptr;
  void reset(size_t n, std::vector<uint8_t>& reuse) {
    if constexpr (Concurrent) {
      owned.reset(new Cell[n ? n : 1]);
      v = owned.get();
      for (size_t i = 0; i < n; ++i) v[i].store(0, std::memory_order_relaxed);
    } else {
      reuse.assign(n ? n : 1, 0);
      v = reuse.data();
    }
  }
  void done(size_t i) {
    if constexpr (Concurrent)
      v[i].store(1, std::memory_order_relaxed);
    else
      v[i] = 1;
  }
  bool is_done(size_t i) const {
    if constexpr (Concurrent)
      return v[i].load(std::memory_order_relaxed) != 0;
    else
      return v[i] != 0;
  }
};

// State shared by the workers of one launch.
template <bool Concurrent>
struct Launch {
  Image& im;
  const RunOptions& o;
  const uint32_t nt;
  Cells<Concurrent> counters, gates;
  States<Concurrent> state;
  std::atomic<bool> abort{false}, finished{false};
  std::mutex err_mu;
  std::string error;
  uint32_t error_task = 0;
  bool kernel_failed = false;
  Clock::time_point t0;
  Observer* const obs;  // RunOptions::observer (null: not observed)

  const bool sm_order;  // a task also waits for its predecessor in its SM's queue (SM modes)

  Launch(Image& image, const RunOptions& opts, bool sm_queues = true)
      : im(image),
        o(opts),
        nt(static_cast<uint32_t>(image.prog.tasks.size())),
        obs(opts.observer),
        sm_order(sm_queues) {
    counters.reset(im.prog.counters.size(), im.counter_init(), im.serial_counters);
    gates.reset(nt, sm_order ? im.gate_init.data() : im.gate_init_waits.data(), im.serial_gates);
    state.reset(nt, im.serial_state);
  }

  void fail(uint32_t t, std::string_view msg) {
    std::lock_guard lock(err_mu);
    if (!kernel_failed) {
      kernel_failed = true;
      error_task = t;
      error = fmt::format("task {} ({}): {}", t, im.prog.tasks[t].display(), msg);
    }
    abort.store(true, std::memory_order_release);
  }

  // Runs task t's kernel; false when it failed (the run is then aborted).
  // The observer's lane of task t: its SM (SM modes), or the core running it (AICore mode).
  int32_t lane(uint32_t t, int32_t worker) const {
    return sm_order ? static_cast<int32_t>(im.prog.tasks[t].sm.value_or(0)) : worker;
  }

  bool exec(uint32_t t, inst::Workspace& ws, int32_t worker) {
    if (obs) obs->on_entry(lane(t, worker), t, ns_since(t0));
    if (im.hot[t].runs_kernel || o.kernel_for != inst::kernel_for) {
      const ir::Task& k = im.prog.tasks[t];
      const inst::Tensor* v = im.tensors.data() + im.io_off[t];
      const auto ni = k.inputs.size(), no = k.outputs.size();
      const ir::Recipe* recipe = im.recipes[t] ? &*im.recipes[t] : nullptr;
      inst::KernelArgs a{k.op, {v, ni}, {v + ni, no}, im.params[t], &k, recipe, ws};
      const inst::Status s = inst::call_kernel(o.kernel_for(k.op), a);
      if (!s.ok()) {
        fail(t, ir::error_messages(s.diagnostics));
        return false;
      }
    }
    if (obs) obs->on_exit(lane(t, worker), t, ns_since(t0));
    state.done(t);
    return true;
  }

  // Publishes t's completion; calls on_ready(u) for every task whose gate opens.
  template <class F>
  void complete(uint32_t t, F&& on_ready) {
    const Image::Hot& h = im.hot[t];
    const uint32_t v = counters.inc(h.out_counter);
    const CounterWaiter* b = im.waiters.data() + h.wbegin;
    const CounterWaiter* e = im.waiters.data() + h.wend;
    if (e - b > 8)
      b = std::lower_bound(b, e, v,
                           [](const CounterWaiter& w, uint32_t x) { return w.threshold < x; });
    else
      while (b != e && b->threshold < v) ++b;
    for (; b != e && b->threshold == v; ++b) open(b->task, on_ready);
    const int32_t n = sm_order ? h.sm_next : -1;
    if (n >= 0) {
      if (obs) obs->on_head(static_cast<uint32_t>(n), ns_since(t0));
      open(static_cast<uint32_t>(n), on_ready);
    }
  }

  template <class F>
  void open(uint32_t u, F& on_ready) {
    if (gates.dec(u) == 0) {
      if (obs) obs->on_ready(u, ns_since(t0));
      on_ready(u);
    }
  }

  uint32_t counter_value(size_t c) const { return counters.get(c); }
};

/// Fills the per-task part of a result (done count, bytes, kernel error).
template <bool C>
void fill_common(Launch<C>& L, RunResult& r) {
  const Image& im = L.im;
  r.tasks = L.nt;
  for (uint32_t t = 0; t < L.nt; ++t) r.tasks_done += L.state.is_done(t);
  if (r.tasks_done == r.tasks) {
    r.bytes = im.total_bytes;
  } else {
    for (uint32_t t = 0; t < L.nt; ++t)
      if (L.state.is_done(t)) r.bytes += im.task_bytes[t];
  }
  if (L.kernel_failed) {
    r.status = RunResult::Status::KernelError;
    r.diagnostics.push_back(ir::error("vm.kernel", L.error, ir::task_pointer(L.error_task)));
  } else if (r.tasks_done < r.tasks) {
    r.status = RunResult::Status::Stuck;
  }
}

/// A run refused before it starts: `n` threads of `what` exceed kMaxThreads (`vm.options`).
inline RunResult too_many_threads(int64_t n, std::string_view what) {
  RunResult r;
  r.status = RunResult::Status::KernelError;
  r.diagnostics.push_back(ir::error(
      "vm.options", fmt::format("{} {} would need as many OS threads; a run starts at most {} "
                                "(use fewer, or --mode sm to multiplex SMs on a few workers)",
                                n, what, kMaxThreads)));
  return r;
}

/// The error of a stuck single-thread run (no watchdog: nothing else could have moved).
inline ir::Diagnostic serial_deadlock(const RunResult& r) {
  return ir::error("vm.deadlock", fmt::format("deadlock: no task can run ({} of {} tasks done)",
                                              r.tasks_done, r.tasks));
}

/// Records why a run stopped: the watchdog's cause, or "aborted" when it had none.
inline void set_stuck(RunResult& r, ir::Diagnostic cause) {
  if (cause.code.empty()) cause = ir::error("vm.deadlock", "aborted");
  r.diagnostics.push_back(std::move(cause));
}

/// The first unsatisfied wait of task t (counter, threshold, value) and the producers of that
/// counter that never ran (`done(u)` false); counter -1 when every wait holds.
template <bool C, class Done>
BlockedSm blocked_on(Launch<C>& L, uint32_t t, Done&& done) {
  const ir::Program& p = L.im.prog;
  BlockedSm b;
  b.task = t;
  for (const ir::Wait& w : p.tasks[t].waits) {
    const uint32_t v = L.counter_value(static_cast<size_t>(w.counter));
    if (static_cast<int64_t>(v) < w.threshold) {
      b.counter = w.counter, b.threshold = w.threshold, b.value = v;
      break;
    }
  }
  if (b.counter >= 0)
    for (uint32_t u = 0; u < L.nt; ++u)
      if (p.tasks[u].out_counter == b.counter && !done(u)) b.idle_producers.push_back(u);
  return b;
}

/// Runs `n` threads of `body(w)` next to a watchdog; returns the watchdog's cause (an empty code
/// if none). The watchdog ticks every 20 ms (or every `watchdog_ms` when shorter) and aborts the
/// run, calling `on_abort()` just before, after `watchdog_ms` without progress (vm.timeout), or at
/// once when every worker sleeps while `pending()` is false: nothing can ever change
/// (vm.deadlock).
template <bool C, class Body, class Pending, class OnAbort>
ir::Diagnostic run_threads(Launch<C>& L, Workers& P, int n, Body&& body, Pending&& pending,
                           OnAbort&& on_abort) {
  ir::Diagnostic cause;
  P.active.store(n);
  const auto limit = std::chrono::milliseconds(std::max<int64_t>(1, L.o.watchdog_ms));
  Monitor dog;
  dog.start(std::min<std::chrono::milliseconds>(std::chrono::milliseconds(20), limit),
            [&, last = P.total_done(), last_change = Clock::now(), quiet = 0]() mutable {
              const uint64_t now = P.total_done();
              if (now != last) {
                last = now;
                last_change = Clock::now();
                quiet = 0;
                return true;
              }
              const int active = P.active.load(std::memory_order_seq_cst);
              const bool all_asleep = active > 0 &&
                                      P.sleepers.load(std::memory_order_seq_cst) == active &&
                                      !pending() && !L.finished.load();
              quiet = all_asleep ? quiet + 1 : 0;
              if (quiet >= 2) {
                cause = ir::error("vm.deadlock",
                                  fmt::format("deadlock: every worker is blocked and no task can "
                                              "run ({} of {} tasks done)",
                                              now, L.nt));
              } else if (Clock::now() - last_change >= limit) {
                cause = ir::error("vm.timeout",
                                  fmt::format("watchdog: no progress for {} ms ({} of {} tasks "
                                              "done)",
                                              L.o.watchdog_ms, now, L.nt));
              } else {
                return true;
              }
              on_abort();
              L.abort.store(true, std::memory_order_seq_cst);
              P.wake_all();
              return false;
            });
  {
    std::vector<std::jthread> threads;
    threads.reserve(static_cast<size_t>(n));
    for (int w = 0; w < n; ++w)
      threads.emplace_back([&, w] {
        body(w);
        P.active.fetch_sub(1);
      });
  }
  dog.stop();
  return cause;
}

}  // namespace amk::vm::detail
