// The orchestrator's state (vm/orchestrator.cpp): the task ring's slots, the tensors, the record,
// and the threads' shared counters, with what the schedulers, the monitor and the orchestrating
// thread do to them. Private to the vm library.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "ir/tensor_map.h"
#include "vm/machine.h"
#include "vm/monitor.h"
#include "vm/orchestrator.h"
#include "vm/rings.h"

namespace amk::vm {
namespace orch {

using detail::DepEntry;
using detail::DepPool;
using detail::HeapRing;
using detail::TaskRing;

// A slot's task: submitted, completed, consumed (see State), then kFree once the watermark has
// passed it, until the slot's next task is submitted.
enum : uint8_t { kPending = 0, kCompleted = 1, kConsumed = 2, kFree = 3 };
// Where the orchestrating thread is, for the starvation check.
enum : uint8_t { kNotStarted = 0, kOrchestrating = 1, kFinishing = 2 };
constexpr int64_t kAlign = 64;

// PTO's per-task fanout_lock: held for a few instructions, so a spinlock (a futex sleep would cost
// more than any critical section here).
class SpinLock {
 public:
  void lock() {
    while (f_.test_and_set(std::memory_order_acquire))
      while (f_.test(std::memory_order_relaxed)) AMK_PAUSE();
  }
  void unlock() { f_.clear(std::memory_order_release); }

 private:
  std::atomic_flag f_;
};

// A kernel registered with Orchestrator::kernel(); held in a deque, so slots can point at it
// while more are registered.
struct UserKernel {
  std::string name;
  inst::Kernel fn = nullptr;
};

// One task-ring slot, allocation-free: consumers and producers live in the dependency pool, and
// up to kInlineViews tensor views in the slot. The first cache line holds what the schedulers
// write at completion (PTO's fanout_lock, the counts under it, fanin); the rest is written by
// the orchestrator before the task can run. Slots are line-aligned, so a neighbour's payload
// never shares that line.
constexpr size_t kInlineViews = 5;

struct alignas(64) Slot {
  SpinLock mu;                           // PTO's fanout_lock
  std::atomic<uint8_t> state{kPending};  // written under mu; kPending -> done is read without it
  uint8_t core = 0;                      // CoreType
  int32_t refs = 0;                      // consumers not done + the scope reference (mu)
  std::atomic<int32_t> fanin{0};         // producers not done (+1 while wiring)
  int32_t fan_head = -1, fan_tail = -1;  // consumers to release: pool entries, in order (mu)
  int scope = -1;                        // innermost open scope at submit (-1: none)
  uint32_t n_linked = 0;                 // pool entries [dep_begin, + n_linked): its producers
  uint64_t dep_begin = 0;
  // Execution (written by the orchestrator before the task can become ready).
  uint32_t n_in = 0, n_views = 0;
  inst::Tensor views[kInlineViews];  // inputs then outputs, when they fit
  std::vector<inst::Tensor> more;    // all of them, when they do not
  ir::Task task;  // op, label and params (reused in place: the vectors keep their capacity)
  const UserKernel* user = nullptr;  // a registered kernel's task (its op is NOP)
  const inst::Tensor* view_data() const { return n_views <= kInlineViews ? views : more.data(); }
};

// A task's name in messages and in record(): its label, or "OP#id" ("KERNEL#id" for a
// registered kernel).
inline std::string label_of(const std::string& label, ir::Op op, const UserKernel* user,
                            uint64_t id) {
  if (!label.empty()) return label;
  return user ? fmt::format("{}#{}", user->name, id) : fmt::format("{}#{}", ir::name(op), id);
}

// What submit reads of a tensor: two cache lines, apart from its ir::Buffer (name, shape vector,
// JSON extras), which only errors and record() read.
struct alignas(64) TensorInfo {
  inst::Tensor view;      // the whole tensor, made once (submit narrows it for a row region)
  int64_t block = -1;     // heap block (global index), -1 for caller memory
  int64_t row_bytes = 0;  // bytes per row of axis 0 (0 for rank 0 or no rows)
  int scope = -1;         // make_tensor: the scope that owns it
};

// A submitted task as record() needs it, without an allocation per task: its label, params and
// buffers follow the previous task's in the record's flat arrays (record() walks them in order).
// Its dependencies are not kept: record() finds them again from the buffers, with a TensorMap that
// forgets nothing (submit's drops reclaimed tasks, whose edges the program still needs).
struct Recorded {
  const UserKernel* user = nullptr;
  uint32_t label_len = 0;        // the next label_len of rec_chars
  uint32_t n_in = 0, n_out = 0;  // the next n_in + n_out of rec_bufs: inputs, then outputs
  uint32_t n_params = 0;         // the next n_params of rec_params
  ir::Op op = ir::Op::NOP;
  CoreType core = CoreType::Aiv;
  bool sub = false;  // it used a proper sub-region of a tensor
};

// An append-only array in chunks of 4096: growing never moves (or touches again) what is
// already there, unlike a vector's doubling; a deque's 512-byte blocks would cost a malloc
// every few records.
template <class T>
class Chunked {
 public:
  static constexpr size_t kChunk = 4096;
  // The next element (default-constructed), now part of the array.
  T& next() {
    if (n_ % kChunk == 0) chunks_.emplace_back(new T[kChunk]);
    return chunks_.back()[n_++ % kChunk];
  }
  void push_back(const T& v) { next() = v; }
  void append(std::span<const T> v) {
    for (const T& x : v) push_back(x);
  }
  T& operator[](size_t i) { return chunks_[i / kChunk][i % kChunk]; }
  const T& operator[](size_t i) const { return chunks_[i / kChunk][i % kChunk]; }
  size_t size() const { return n_; }

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  size_t n_ = 0;
};

}  // namespace orch

// A private header, included by the orchestrator's source only.
using namespace orch;  // NOLINT(google-build-using-namespace)

struct Orchestrator::State {
  explicit State(const OrchestratorOptions& o)
      : opt(o), ring(o.rings.task_window), pool(o.rings.dep_pool), heap(o.rings.heap_bytes) {}
  OrchestratorOptions opt;  // with the ring sizes clamped (Orchestrator's constructor)
  TaskRing<Slot> ring;      // the task ring (slots, freed with the watermark)
  DepPool pool;             // the dependency pool (a ring, freed with the watermark)

  // Orchestrator thread only.
  alignas(64) ir::TensorMap tm;
  std::vector<TensorInfo> tensors;
  std::vector<ir::Buffer> tensor_bufs;  // by tensor id, beside `tensors`
  std::deque<UserKernel> kernels;       // Orchestrator::kernel() (stable addresses for the slots)
  // The record (OrchestratorOptions::record), grown by every submit.
  Chunked<Recorded> recorded;                      // every submitted task
  Chunked<int64_t> rec_bufs;                       // their buffers (Recorded::n_in, n_out)
  std::string rec_chars;                           // their labels (Recorded::label_len)
  Chunked<ir::Param> rec_params;                   // their params (Recorded::n_params)
  std::vector<int> open;                           // open scope ids, innermost last
  std::vector<std::vector<uint32_t>> scope_tasks;  // by scope id
  std::vector<uint32_t> scope_size;                // tasks per scope id
  std::vector<ir::RuntimeScope> rec_scopes;        // by scope id: its task range, for record()
  std::vector<ir::ForeignTask> rec_tasks;          // per task: scope, heap bytes, dependencies
  int64_t rec_heap = 0;                            // make_tensor() bytes since the last submit
  int next_scope = 0;
  ir::Diagnostic error;  // the first error (sticky); an empty code: none
  OrchestratorStats st;
  std::vector<uint32_t> deps_tmp;  // a submit's dependencies
  std::vector<uint8_t> war_tmp;    // which of them are write-after-read only
  uint32_t alive_cache = 0;        // last_alive as last read (a lower bound)
  uint64_t dep_alloc = 0;          // dependency-pool entries ever taken (orchestrator only)
  uint64_t freed_cache = 0;        // dep_freed as last read (a lower bound)
  // next_id and visible as this thread last published them. The monitor may have moved them on
  // since; publish() stores the current counts, which are never less.
  uint32_t published_tasks = 0;
  uint64_t published_stage = 0;
  std::vector<ir::Access> reads, writes;  // a submit's accesses (its TensorMap query)

  // Shared, grouped by writer on separate cache lines (a store to a line another thread polls
  // costs a transfer). next_id (tasks published: see publish()) is written by the orchestrator,
  // or by the monitor for an idle one.
  alignas(64) std::atomic<uint32_t> next_id{0};
  // Stage entries published: on a line of its own, as the schedulers poll it on every pass. They
  // read next_id only once finish() has begun (complete()); advance() stops at a kFree slot.
  alignas(64) std::atomic<uint64_t> visible{0};
  // Publication (publish()): the orchestrator records each submit and each task found ready at
  // submit with plain stores on lines only publishers read; publish() makes them visible, and the
  // schedulers take the visible stage entries themselves (take_published()), so a publication is
  // two stores and no read-modify-write of a line another thread polls.
  alignas(64) std::atomic<uint32_t> submitted{0};  // tasks submitted (published or not)
  std::atomic<uint64_t> staged{0};                 // tasks ever put in stage
  std::unique_ptr<uint32_t[]> stage;               // ready at submit, by staged count (task_at)
  std::atomic<uint8_t> phase{kNotStarted};         // read by the monitor only
  alignas(64) std::atomic<uint64_t> taken{0};      // stage entries the schedulers took
  // last_alive and the heap ring under wm_mu (the orchestrator's fast path reads the atomics
  // without it).
  alignas(64) std::mutex wm_mu;
  std::atomic<uint32_t> last_alive{0};
  std::atomic<uint64_t> dep_freed{0};  // entries returned (in use: dep_alloc - dep_freed)
  std::condition_variable space_cv;
  HeapRing heap;
  alignas(64) std::atomic<uint64_t> completed{0};  // tasks finished

  // Execution: the machine and its threads, finish()'s wait, the stall monitor. The flags are
  // polled by every scheduler loop and written about once per run.
  alignas(64) std::atomic<bool> abort{false}, finished{false};  // the machine host's (machine.h)
  std::atomic<bool> failed{false};     // a kernel failed: later kernels are skipped
  std::atomic<bool> stalled{false};    // the monitor timed out (stall_report set)
  std::atomic<bool> finishing{false};  // finish() has begun (completions then check for its end)
  detail::Topology topo;
  std::unique_ptr<detail::Machine<State>> M;
  std::vector<std::thread> threads;
  alignas(64) std::mutex done_mu;  // done_cv, kernel_error, stall
  std::condition_variable done_cv;
  std::string kernel_error, stall_report;               // done_mu
  StallClass stall_class = StallClass::None;            // done_mu
  detail::Monitor monitor;                              // the schedulers' timeout (watch())
  detail::Clock::time_point t0 = detail::Clock::now();  // the observer's time origin

  Slot& slot(uint32_t id) { return ring[id]; }

  // Records `d` as the error unless an earlier one is there (the first error is sticky); returns
  // the error.
  const ir::Diagnostic& fail(ir::Diagnostic d) {
    if (error.code.empty()) error = std::move(d);
    return error;
  }

  // Advances the watermark over consumed tasks; frees ring slots, pool entries (a task's own, to
  // its producers: every producer finished walking its fanout before the task could run), heap
  // blocks. A passed slot becomes kFree, so the walk needs no bound: the slot after the last
  // consumed task holds that task, pending or done, or a passed task's kFree. (No read of
  // next_id, a line the orchestrator writes at every publication.)
  void advance() {
    {
      std::lock_guard lk(wm_mu);
      uint32_t a = last_alive.load(std::memory_order_relaxed);
      uint64_t freed = 0;
      for (;; ++a) {
        Slot& s = slot(a);
        std::lock_guard sl(s.mu);
        if (s.state.load(std::memory_order_relaxed) != kConsumed) break;
        freed = s.dep_begin + s.n_linked;
        s.state.store(kFree, std::memory_order_relaxed);
      }
      if (freed) dep_freed.store(freed, std::memory_order_release);
      last_alive.store(a, std::memory_order_release);
      heap.free_before(a);
    }
    space_cv.notify_all();
  }

  // Drops one reference on task id (a consumer finished, or its scope ended).
  void release(uint32_t id) {
    Slot& s = slot(id);
    bool consumed = false;
    {
      std::lock_guard lk(s.mu);
      if (--s.refs == 0 && s.state.load(std::memory_order_relaxed) == kCompleted) {
        s.state.store(kConsumed, std::memory_order_relaxed);
        consumed = true;
      }
    }
    if (consumed) advance();
  }

  // The machine host (machine.h).
  uint8_t type_of(uint32_t id) { return slot(id).core; }
  bool all_done(uint64_t) const { return false; }  // the schedulers run until the destructor
  void on_dispatch(uint32_t id, int sched) {
    if (opt.observer) opt.observer->on_dispatch(id, sched, detail::ns_since(t0));
  }
  void on_retire(uint32_t id) {
    if (opt.observer) opt.observer->on_retire(id, detail::ns_since(t0));
  }
  // Runs the kernel unless an earlier one failed; always true, so a failed run still drains and
  // nothing waits forever.
  bool exec(uint32_t id, inst::Workspace& ws, int32_t core) {
    Slot& s = slot(id);
    if (failed.load(std::memory_order_acquire)) return true;
    if (opt.observer) opt.observer->on_entry(core, id, detail::ns_since(t0));
    ir::ParamTable params;
    params.set(s.task);
    const inst::Tensor* v = s.view_data();
    inst::KernelArgs a{s.task.op, {v, s.n_in}, {v + s.n_in, s.n_views - s.n_in}, params, &s.task,
                       nullptr,   ws};
    const inst::Status r = inst::call_kernel(s.user ? s.user->fn : opt.kernel_for(s.task.op), a);
    if (!r.ok()) {
      std::lock_guard lk(done_mu);
      if (kernel_error.empty())
        kernel_error =
            fmt::format("task {} ({}): {}", id, label_of(s.task.label, s.task.op, s.user, id),
                        ir::error_messages(r.diagnostics));
      failed.store(true, std::memory_order_release);
    }
    if (opt.observer) opt.observer->on_exit(core, id, detail::ns_since(t0));
    return true;
  }

  template <class F>
  void complete(uint32_t id, F&& on_ready) {
    Slot& s = slot(id);
    // Copies (the slot may be reused once the lock is dropped); per-thread, so no allocation once
    // warm and no freeing of the orchestrator's memory on this thread.
    thread_local std::vector<uint32_t> fan, prods;
    bool consumed = false;
    {
      std::lock_guard lk(s.mu);
      s.state.store(kCompleted, std::memory_order_release);
      fan.clear();
      for (int32_t e = s.fan_head; e >= 0;) {
        const DepEntry& d = pool[e];
        fan.push_back(d.consumer);
        e = d.next;
      }
      prods.clear();
      for (uint32_t k = 0; k < s.n_linked; ++k)
        prods.push_back(pool[pool.at(s.dep_begin + k)].producer);
      s.fan_head = s.fan_tail = -1;
      if (s.refs == 0) {
        s.state.store(kConsumed, std::memory_order_relaxed);
        consumed = true;
      }
    }
    for (uint32_t c : fan)
      if (slot(c).fanin.fetch_sub(1, std::memory_order_acq_rel) == 1) on_ready(c);
    for (uint32_t p : prods) release(p);
    if (consumed) advance();
    // Only a completion that catches up with the published tasks once finish() has begun can end
    // its wait (finish() sets `finishing`, publishes everything, then reads `completed`: seq_cst
    // on both sides, so one of the two sees the other). Before that, next_id is not read: the
    // orchestrator writes its line at every publication.
    const uint64_t done = completed.fetch_add(1, std::memory_order_seq_cst) + 1;
    if (finishing.load(std::memory_order_seq_cst) &&
        done >= next_id.load(std::memory_order_seq_cst)) {
      std::lock_guard lk(done_mu);  // finish() checks under it: no lost wake-up
      done_cv.notify_all();
    }
  }

  // The schedulers' timeout (PTO's SCHEDULER_TIMEOUT with its sub-classes), on the monitor
  // thread: every 2 ms it publishes what an idle orchestrator left unpublished; no retirement for
  // watchdog_ms while a task is pending, or while the orchestration is open and nothing is
  // pending, classifies the stall and fails the run.
  void watch() {
    const auto limit = std::chrono::milliseconds(std::max<int64_t>(1, opt.watchdog_ms));
    // 2 ms ticks: also the longest a task stays unpublished behind an idle orchestrator.
    const auto slice = std::min<std::chrono::milliseconds>(std::chrono::milliseconds(2), limit);
    monitor.start(slice,
                  [this, limit, last = M->P.total_done(), since = detail::Clock::now()]() mutable {
                    publish_idle();
                    const uint64_t retired = M->P.total_done();
                    const auto now = detail::Clock::now();
                    const uint64_t sub = next_id.load(std::memory_order_acquire);
                    const bool pending = completed.load(std::memory_order_acquire) < sub;
                    const bool open_orch = phase.load(std::memory_order_acquire) == kOrchestrating;
                    if (retired != last || (!pending && !open_orch)) {  // progress, or at rest
                      last = retired;
                      since = now;
                      return true;
                    }
                    if (now - since < limit) return true;
                    classify(sub, !open_orch);
                    return false;
                  });
  }

  // Records the stall (class and counts as in PTO's TIMEOUT_EXIT line) and fails the run.
  void classify(uint64_t sub, bool orch_done) {
    const std::vector<BusyCore> busy = M->busy_cores();
    const int64_t ready = M->ready_count();
    const uint64_t done = completed.load(std::memory_order_acquire);
    const auto running = static_cast<int64_t>(busy.size());
    const int64_t waiting =
        std::max<int64_t>(0, static_cast<int64_t>(sub - std::min(sub, done)) - running - ready);
    const BusyCore* stuck = nullptr;
    for (const BusyCore& b : busy)
      if (!stuck || b.state == BusyCore::State::Running) stuck = &b;
    const StallClass cls = classify_stall(stuck != nullptr, ready, waiting);
    std::string msg = fmt::format(
        "FATAL: Scheduler Timeout ({}): no task retired for {} ms; completed {}/{}, running {}, "
        "ready {}, waiting {}, orchestrator {}",
        name(cls), opt.watchdog_ms, done, sub, running, ready, waiting,
        orch_done ? "done" : "not done");
    if (stuck)
      msg += fmt::format("; stuck task {} on {} core {} ({})", stuck->task, name(stuck->type),
                         stuck->core,
                         stuck->state == BusyCore::State::Running      ? "ACK, no FIN"
                         : stuck->state == BusyCore::State::Dispatched ? "dispatched, no ACK"
                                                                       : "FIN, not retired");
    else if (!orch_done && waiting == 0)
      msg += "; every submitted task has run and the orchestrator has submitted nothing since";
    {
      std::lock_guard g(done_mu);
      stall_class = cls;
      stall_report = std::move(msg);
      failed.store(true, std::memory_order_release);
      stalled.store(true, std::memory_order_release);
    }
    done_cv.notify_all();
    space_cv.notify_all();
  }

  // Registers a tensor over `data`; returns its id.
  int64_t add_tensor(ir::Buffer b, std::byte* data, int64_t block, int scope) {
    TensorInfo& t = tensors.emplace_back();
    t.view = inst::Tensor::of(data, b.dtype, b.shape);
    t.block = block;
    t.scope = scope;
    const int64_t rows = b.shape.empty() ? 0 : b.shape[0];
    t.row_bytes = rows > 0 ? b.nbytes() / rows : 0;
    tensor_bufs.push_back(std::move(b));
    return static_cast<int64_t>(tensors.size()) - 1;
  }
  // The orchestrating thread takes over a stall report as its error; true if there was one.
  bool take_stall() {
    if (!stalled.load(std::memory_order_acquire)) return false;
    std::lock_guard g(done_mu);
    if (error.code.empty()) error = ir::error("vm.timeout", stall_report);
    st.stall_class = stall_class;
    return true;
  }

  bool scope_open(int scope) const {
    return scope >= 0 && std::find(open.begin(), open.end(), scope) != open.end();
  }

  // Under wm_mu: why waiting for the heap (`heap`) or the task ring / dependency pool can never
  // end, or "" when progress is still possible.
  std::string diagnose_locked(bool on_heap) {
    if (const detail::HeapBlock* oldest = heap.oldest(); on_heap && oldest && oldest->pinned) {
      const detail::HeapBlock& b = *oldest;
      if (b.scope < 0 || scope_open(b.scope))
        return fmt::format(
            "FATAL: Heap Ring Deadlock Detected! (heap ring full)\n"
            "  heap ring: {} of {} bytes in use; the oldest block ({} bytes at offset {}) belongs "
            "to {} and is freed only when it ends, which the blocked orchestrator cannot reach\n"
            "  Solution: heap_bytes of at least {} (2x what is in use)",
            heap.used(), heap.capacity(), b.size, b.off,
            b.scope < 0 ? std::string("the top level (freed at finish())")
                        : fmt::format("scope #{}, still open,", b.scope),
            std::bit_ceil(static_cast<uint64_t>(std::max<int64_t>(2 * heap.used(), 1024))));
    }
    const uint32_t oldest = last_alive.load(), end = next_id.load();
    if (oldest < end) {
      Slot& head = slot(oldest);
      if (scope_open(head.scope)) {
        const uint32_t active = end - oldest;
        const uint32_t in_scope = scope_size[static_cast<size_t>(head.scope)];
        return fmt::format(
            "FATAL: Flow Control Deadlock Detected! ({} full)\n"
            "  task ring: window {}, active tasks {}/{}; dependency pool {} of {} entries; heap "
            "ring {} of {} bytes in use\n"
            "  the oldest live task {} ({}) belongs to scope #{}, still open with {} task(s): its "
            "slot is reclaimed only at scope_end(), which the blocked orchestrator cannot reach\n"
            "  Solution: a task window larger than the scope's tasks; recommended "
            "task_window = {} (at least 2x the scope's {} tasks)",
            on_heap ? "heap ring" : "task ring / dependency pool", opt.rings.task_window, active,
            opt.rings.task_window, dep_alloc - dep_freed.load(), opt.rings.dep_pool, heap.used(),
            heap.capacity(), oldest, label_of(head.task.label, head.task.op, head.user, oldest),
            head.scope, in_scope, std::bit_ceil(std::max<uint32_t>(2 * in_scope, 4)), in_scope);
      }
    }
    return {};
  }

  // Makes the submitted tasks visible to the schedulers (orchestrator thread only): next_id (the
  // completion count finish() waits for, what the monitor counts as pending) and the stage entries
  // of the tasks that were ready at submit. Submits publish every opt.publish_every tasks and
  // before anything that waits; `seq_cst` for finish(), whose wait reads `completed` next (the
  // other side of complete()'s Dekker pair). Both counters only grow: the monitor's publish_idle()
  // moves them by compare-exchange to counts the orchestrator had already reached.
  void publish(bool seq_cst = false) {
    const uint32_t n = submitted.load(std::memory_order_relaxed);
    const uint64_t k = staged.load(std::memory_order_relaxed);
    if (seq_cst)  // (a memory order known only at run time would compile to seq_cst)
      next_id.store(n, std::memory_order_seq_cst);
    else if (published_tasks != n)
      next_id.store(n, std::memory_order_release);
    published_tasks = n;
    if (published_stage == k) return;
    published_stage = k;
    // A scheduler registers as a sleeper, then looks for work (has_published()); seq_cst on both
    // sides, so one of the two sees the other.
    visible.store(k, std::memory_order_seq_cst);
    if (M->P.sleepers.load(std::memory_order_seq_cst) > 0) M->P.wake_all();
  }
  // The monitor's publish() for an idle orchestrator (runs concurrently with submits).
  void publish_idle() {
    uint32_t e = next_id.load(std::memory_order_acquire);
    const uint32_t n = submitted.load(std::memory_order_acquire);
    if (e != n) next_id.compare_exchange_strong(e, n, std::memory_order_seq_cst);
    uint64_t v = visible.load(std::memory_order_acquire);
    const uint64_t k = staged.load(std::memory_order_acquire);
    if (v != k && visible.compare_exchange_strong(v, k, std::memory_order_seq_cst) &&
        M->P.sleepers.load(std::memory_order_seq_cst) > 0)
      M->P.wake_all();
  }
  // The machine host's (machine.h): claims the visible stage entries not yet taken and hands
  // each to on_ready. An entry's task stays alive until it has run, so its stage cell is not
  // reused before it is read here.
  template <class F>
  bool take_published(F&& on_ready) {
    uint64_t t = taken.load(std::memory_order_relaxed), v = 0;
    do {
      v = visible.load(std::memory_order_acquire);
      if (t >= v) return false;
    } while (!taken.compare_exchange_weak(t, v, std::memory_order_relaxed));
    for (; t < v; ++t) on_ready(stage[ring.pos(t)]);
    return true;
  }
  bool has_published() const {
    return taken.load(std::memory_order_relaxed) < visible.load(std::memory_order_seq_cst);
  }

  // Waits (under lk) until `ready()` holds; false with `error` set on a provable deadlock.
  template <class F>
  bool wait_for_space(std::unique_lock<std::mutex>& lk, bool on_heap, F&& ready_now) {
    if (ready_now()) return true;
    publish();  // what the cores must run to make room
    ++st.blocked;
    for (;;) {
      if (take_stall()) return false;
      if (std::string why = diagnose_locked(on_heap); !why.empty()) {
        fail(ir::error("orch.deadlock", std::move(why)));
        return false;
      }
      space_cv.wait_for(lk, std::chrono::milliseconds(20));
      if (ready_now()) return true;
    }
  }
};

}  // namespace amk::vm
