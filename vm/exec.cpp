// The executor: counters, gates, ready queues, workers, watchdog. See vm.h for the modes.
//
// Every task has a gate: the number of its waits not yet satisfied at reset, plus one when it has a
// predecessor in its SM's queue. A completing task increments its out_counter (release); the new
// value v opens exactly the waits whose threshold is v (counters move by one, so every value is
// seen once), and the task opens its SM successor. The task whose gate reaches zero is its SM's
// head with every wait holding: exactly the moment a persistent-kernel SM would start it.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <type_traits>

#include <fmt/format.h>

#include "vm/image.h"
#include "vm/vm.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define AMK_PAUSE() _mm_pause()
#else
#define AMK_PAUSE() std::this_thread::yield()
#endif

namespace amk::vm {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kNone = UINT32_MAX;
constexpr int kSpin = 2000;  // pauses before an idle worker blocks

int64_t ns_since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

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

struct alignas(64) PaddedCount {
  std::atomic<uint64_t> v{0};
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
  bool kernel_failed = false;
  Clock::time_point t0;
  // Trace (written by one thread per task, read after join).
  std::vector<int64_t> head_ns, ready_ns, start_ns, end_ns;
  std::vector<int32_t> worker_of;

  Launch(Image& image, const RunOptions& opts)
      : im(image), o(opts), nt(static_cast<uint32_t>(image.prog.tasks.size())) {
    counters.reset(im.prog.counters.size(), im.counter_init(), im.serial_counters);
    gates.reset(nt, im.gate_init.data(), im.serial_gates);
    state.reset(nt, im.serial_state);
    if (o.trace) {
      head_ns.assign(nt, 0), ready_ns.assign(nt, 0), start_ns.assign(nt, 0), end_ns.assign(nt, 0);
      worker_of.assign(nt, 0);
    }
  }

  void fail(uint32_t t, std::string_view msg) {
    std::lock_guard lock(err_mu);
    if (!kernel_failed) {
      kernel_failed = true;
      error = fmt::format("task {} ({}): {}", t, im.prog.tasks[t].display(), msg);
    }
    abort.store(true, std::memory_order_release);
  }

  // Runs task t's kernel; false when it failed (the run is then aborted).
  bool exec(uint32_t t, inst::Workspace& ws, int32_t worker) {
    if (o.trace) {
      start_ns[t] = ns_since(t0);
      worker_of[t] = worker;
    }
    if (im.hot[t].runs_kernel || o.kernel_for != inst::kernel_for) {
      const ir::Task& k = im.prog.tasks[t];
      const inst::Tensor* v = im.tensors.data() + im.io_off[t];
      const auto ni = k.inputs.size(), no = k.outputs.size();
      const ir::Recipe* recipe = im.recipes[t] ? &*im.recipes[t] : nullptr;
      inst::KernelArgs a{k.op, {v, ni}, {v + ni, no}, im.params[t], &k, recipe, ws};
      inst::Status s;
      try {
        inst::Kernel kern = o.kernel_for(k.op);
        s = kern ? kern(a) : inst::Status::fail("no kernel for this opcode");
      } catch (const std::exception& e) {
        s = inst::Status::fail(fmt::format("kernel threw: {}", e.what()));
      } catch (...) {
        s = inst::Status::fail("kernel threw a non-standard exception");
      }
      if (!s.ok()) {
        fail(t, s.error);
        return false;
      }
    }
    if (o.trace) end_ns[t] = ns_since(t0);
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
    const int32_t n = h.sm_next;
    if (n >= 0) {
      if (o.trace) head_ns[n] = ns_since(t0);
      open(static_cast<uint32_t>(n), on_ready);
    }
  }

  template <class F>
  void open(uint32_t u, F& on_ready) {
    if (gates.dec(u) == 0) {
      if (o.trace) ready_ns[u] = ns_since(t0);
      on_ready(u);
    }
  }

  uint32_t counter_value(size_t c) const { return counters.get(c); }
};

// One thread: FIFO order (Multiplexed with one worker) or seeded choice (Deterministic).
void run_serial(Launch<false>& L, bool seeded, uint64_t seed) {
  std::vector<uint32_t>& ready = L.im.serial_ready;
  ready.clear();
  ready.reserve(L.nt);
  for (uint32_t t = 0; t < L.nt; ++t)
    if (L.im.gate_init[t] == 0) ready.push_back(t);
  uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  auto next_rand = [&] {  // splitmix64
    uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  inst::Workspace ws;
  size_t head = 0;
  auto push = [&](uint32_t u) { ready.push_back(u); };
  while (head < ready.size()) {
    uint32_t t;
    if (seeded) {
      size_t pick = head + static_cast<size_t>(next_rand() % (ready.size() - head));
      std::swap(ready[head], ready[pick]);
    }
    t = ready[head++];
    if (!L.exec(t, ws, 0)) return;
    L.complete(t, push);
  }
}

// Several threads multiplexing the logical SMs: a lock-free ready queue (each task enters once per
// launch, so an array of nt slots never wraps), continuation of the first opened task on the same
// thread, bounded spinning then blocking on an epoch word.
struct Pool {
  explicit Pool(uint32_t nt, int workers)
      : slots(new std::atomic<uint32_t>[nt ? nt : 1]), done(static_cast<size_t>(workers)) {
    for (uint32_t i = 0; i < nt; ++i) slots[i].store(0, std::memory_order_relaxed);
  }
  std::unique_ptr<std::atomic<uint32_t>[]> slots;
  alignas(64) std::atomic<uint32_t> head{0};
  alignas(64) std::atomic<uint32_t> tail{0};
  alignas(64) std::atomic<uint32_t> epoch{0};
  alignas(64) std::atomic<int> sleepers{0};
  std::atomic<int> active{0};  // threads not yet returned
  std::vector<PaddedCount> done;

  void push(uint32_t t) {
    const uint32_t i = tail.fetch_add(1, std::memory_order_seq_cst);
    slots[i].store(t + 1, std::memory_order_release);
    if (sleepers.load(std::memory_order_seq_cst) > 0) {
      epoch.fetch_add(1, std::memory_order_seq_cst);
      epoch.notify_one();
    }
  }
  bool has_items() const {
    return head.load(std::memory_order_seq_cst) < tail.load(std::memory_order_seq_cst);
  }
  uint32_t try_pop() {
    uint32_t h = head.load(std::memory_order_relaxed);
    for (;;) {
      if (h >= tail.load(std::memory_order_acquire)) return kNone;
      if (head.compare_exchange_weak(h, h + 1, std::memory_order_acq_rel,
                                     std::memory_order_relaxed))
        break;
    }
    uint32_t v;
    while ((v = slots[h].load(std::memory_order_acquire)) == 0) AMK_PAUSE();  // pusher mid-publish
    return v - 1;
  }
  uint64_t total_done() const {
    uint64_t s = 0;
    for (const auto& d : done) s += d.v.load(std::memory_order_acquire);
    return s;
  }
  void wake_all() {
    epoch.fetch_add(1, std::memory_order_seq_cst);
    epoch.notify_all();
  }
};

void run_pool(Launch<true>& L, Pool& P, int w) {
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
        if (spin < kSpin) {
          ++spin;
          AMK_PAUSE();
          continue;
        }
        if (P.total_done() == L.nt) {
          L.finished.store(true, std::memory_order_release);
          P.wake_all();
          return;
        }
        const uint32_t e = P.epoch.load(std::memory_order_seq_cst);
        P.sleepers.fetch_add(1, std::memory_order_seq_cst);
        if (!P.has_items() && !L.abort.load(std::memory_order_seq_cst) &&
            !L.finished.load(std::memory_order_seq_cst))
          P.epoch.wait(e, std::memory_order_seq_cst);
        P.sleepers.fetch_sub(1, std::memory_order_seq_cst);
        spin = 0;
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
void run_sm_thread(Launch<true>& L, Pool& P, int64_t sm) {
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
        if (spin < kSpin) {
          ++spin;
          AMK_PAUSE();
          continue;
        }
        const uint32_t e = P.epoch.load(std::memory_order_seq_cst);
        P.sleepers.fetch_add(1, std::memory_order_seq_cst);
        if (L.counters.get(static_cast<size_t>(wt.counter)) < th &&
            !L.abort.load(std::memory_order_seq_cst))
          P.epoch.wait(e, std::memory_order_seq_cst);
        P.sleepers.fetch_sub(1, std::memory_order_seq_cst);
      }
    }
    if (L.abort.load(std::memory_order_relaxed)) return;
    if (L.o.trace) L.ready_ns[t] = ns_since(L.t0);
    if (!L.exec(t, ws, static_cast<int32_t>(sm))) {
      P.wake_all();
      return;
    }
    L.counters.inc(L.im.hot[t].out_counter);
    if (P.sleepers.load(std::memory_order_seq_cst) > 0) P.wake_all();
    P.done[static_cast<size_t>(sm)].v.store(++local, std::memory_order_release);
    if (L.o.trace && i + 1 < ql[sm + 1]) L.head_ns[static_cast<size_t>(q[i + 1])] = ns_since(L.t0);
  }
}

// Watches progress; aborts after `watchdog_ms` without any, or at once when every worker sleeps on
// an empty queue (nothing can ever change).
void watchdog(Launch<true>& L, Pool& P, bool pool_mode, std::mutex& mu, std::condition_variable& cv,
              bool& stop, std::string& cause) {
  const auto limit = std::chrono::milliseconds(std::max<int64_t>(1, L.o.watchdog_ms));
  const auto slice = std::min<std::chrono::milliseconds>(std::chrono::milliseconds(20), limit);
  uint64_t last = P.total_done();
  auto last_change = Clock::now();
  int quiet = 0;
  std::unique_lock lock(mu);
  while (!stop) {
    cv.wait_for(lock, slice);
    if (stop) break;
    const uint64_t now = P.total_done();
    if (now != last) {
      last = now;
      last_change = Clock::now();
      quiet = 0;
      continue;
    }
    const int active = P.active.load(std::memory_order_seq_cst);
    const bool all_asleep = active > 0 && P.sleepers.load(std::memory_order_seq_cst) == active &&
                            (!pool_mode || !P.has_items()) && !L.finished.load();
    quiet = all_asleep ? quiet + 1 : 0;
    if (quiet >= 2) {
      cause = fmt::format(
          "deadlock: every worker is blocked and no task can run ({} of {} tasks done)", now, L.nt);
    } else if (Clock::now() - last_change >= limit) {
      cause = fmt::format("watchdog: no progress for {} ms ({} of {} tasks done)", L.o.watchdog_ms,
                          now, L.nt);
    } else {
      continue;
    }
    L.abort.store(true, std::memory_order_seq_cst);
    P.wake_all();
    break;
  }
}

template <bool C>
void fill_result(Launch<C>& L, RunResult& r) {
  const Image& im = L.im;
  const ir::Program& p = im.prog;
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
    r.error = L.error;
  } else if (r.tasks_done < r.tasks) {
    r.status = RunResult::Status::Stuck;
    const int32_t* q = im.queue();
    const int32_t* ql = im.queue_len();
    for (int64_t s = 0; s < im.num_sms; ++s) {
      int32_t i = ql[s];
      while (i < ql[s + 1] && L.state.is_done(static_cast<size_t>(q[i]))) ++i;
      if (i == ql[s + 1]) continue;
      BlockedSm b;
      b.sm = s;
      b.task = q[i];
      b.remaining = ql[s + 1] - i;
      for (const ir::Wait& w : p.tasks[static_cast<size_t>(b.task)].waits) {
        const uint32_t v = L.counter_value(static_cast<size_t>(w.counter));
        if (static_cast<int64_t>(v) < w.threshold) {
          b.counter = w.counter, b.threshold = w.threshold, b.value = v;
          break;
        }
      }
      if (b.counter >= 0)
        for (uint32_t t = 0; t < L.nt; ++t)
          if (p.tasks[t].out_counter == b.counter && !L.state.is_done(t))
            b.idle_producers.push_back(t);
      r.blocked.push_back(std::move(b));
    }
  }
  if (L.o.trace)
    for (uint32_t t = 0; t < L.nt; ++t)
      if (L.state.is_done(t))
        r.trace.push_back({t, L.worker_of[t], L.head_ns[t], std::max(L.head_ns[t], L.ready_ns[t]),
                           L.start_ns[t], L.end_ns[t]});
}

}  // namespace

RunResult Vm::run(const RunOptions& o) {
  Image& im = *im_;
  RunResult r;
  std::memset(im.scratch(), 0, static_cast<size_t>(im.launch_scratch_bytes));
  if (auto e = im.wire()) {
    r.status = RunResult::Status::KernelError;
    r.error = *e;
    r.tasks = static_cast<int64_t>(im.prog.tasks.size());
    return r;
  }
  int workers = o.workers > 0 ? o.workers
                              : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (o.mode == Mode::Deterministic || (o.mode == Mode::Multiplexed && workers == 1)) {
    Launch<false> L(im, o);
    L.t0 = Clock::now();
    run_serial(L, o.mode == Mode::Deterministic, o.seed);
    r.wall_s = std::chrono::duration<double>(Clock::now() - L.t0).count();
    r.workers = 1;
    fill_result(L, r);
    if (r.status == RunResult::Status::Stuck)
      r.error =
          fmt::format("deadlock: no task can run ({} of {} tasks done)", r.tasks_done, r.tasks);
    return r;
  }
  Launch<true> L(im, o);
  const bool pool_mode = o.mode == Mode::Multiplexed;
  const int threads = pool_mode ? workers : static_cast<int>(im.num_sms);
  Pool P(L.nt, threads);
  if (pool_mode)
    for (uint32_t t = 0; t < L.nt; ++t)
      if (im.gate_init[t] == 0) P.push(t);
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::string cause;
  L.t0 = Clock::now();
  P.active.store(threads);
  std::thread dog(watchdog, std::ref(L), std::ref(P), pool_mode, std::ref(mu), std::ref(cv),
                  std::ref(stop), std::ref(cause));
  {
    std::vector<std::jthread> pool;
    pool.reserve(static_cast<size_t>(threads));
    for (int w = 0; w < threads; ++w) {
      if (pool_mode)
        pool.emplace_back([&, w] {
          run_pool(L, P, w);
          P.active.fetch_sub(1);
        });
      else
        pool.emplace_back([&, w] {
          run_sm_thread(L, P, w);
          P.active.fetch_sub(1);
        });
    }
  }
  r.wall_s = std::chrono::duration<double>(Clock::now() - L.t0).count();
  {
    std::lock_guard lock(mu);
    stop = true;
  }
  cv.notify_all();
  dog.join();
  r.workers = threads;
  fill_result(L, r);
  if (r.status == RunResult::Status::Stuck) r.error = cause.empty() ? "aborted" : cause;
  return r;
}

}  // namespace amk::vm
