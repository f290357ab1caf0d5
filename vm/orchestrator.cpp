// The orchestration runtime (PTO2's tensormap_and_ringbuffer model, host-side).
//
// Submit: ir::TensorMap gives the earlier tasks the new one must follow (RAW, WAW and WAR); the
// task takes a slot of the task ring (blocking while `task_window` tasks are alive) and wires
// itself PTO-style: fanin = producers still running + 1, each such producer gets it on its fanout
// list under the producer's lock (a finished producer counts as done at once), then the extra 1
// is released, which may make it ready. Ready tasks run on the AICore machine (machine.h: AICPU
// schedulers dispatch to AIC/AIV cores through the register handshake); a retired task releases
// its consumers and drops one reference on each producer. A task is CONSUMED when it has completed,
// its consumers have completed and its scope has ended (the scope reference); the watermark
// (`last_alive`) advances over consumed tasks in order, which frees ring slots, dependency-pool
// entries and heap blocks (in allocation order, once past their last user and unpinned by their
// scope's end). A submit that would wait on resources only the open scope can free is a provable
// deadlock, reported at once instead of hanging. Submits hand their tasks to the schedulers in
// groups (publish(): two stores, the published count and the count of tasks ready at submit),
// so one hand-over between threads serves publish_every tasks. The schedulers take the published
// ready tasks into their queues themselves, so publishing writes no line a scheduler writes. An
// idle orchestrator's rest is published by the monitor. A monitor thread is the schedulers'
// timeout: no retirement for watchdog_ms fails the run with PTO's stall class (S1
// running-stalled, S3 ready-but-idle, S4 dependency-deadlock, S5 orchestrator-starvation).
#include "vm/orchestrator.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <span>
#include <utility>

#include <fmt/format.h>

#include "vm/orchestrator_state.h"

namespace amk::vm {

namespace {

OrchestratorOptions clamped(OrchestratorOptions o) {
  o.rings.task_window = std::max<uint32_t>(2, o.rings.task_window);
  o.rings.heap_bytes = std::max<int64_t>(0, o.rings.heap_bytes);
  o.rings.dep_pool = std::clamp<uint32_t>(o.rings.dep_pool, 1, INT32_MAX);
  o.publish_every = std::max<uint32_t>(1, o.publish_every);
  return o;
}

}  // namespace

Orchestrator::Orchestrator(const OrchestratorOptions& o) : s_(std::make_unique<State>(clamped(o))) {
  State& s = *s_;
  s.stage.reset(new uint32_t[s.opt.rings.task_window]);
  s.topo = detail::topology_of(o.machine);
  if (o.observer) o.observer->set_up(nullptr, detail::lane_names(s.topo));
  const int n = s.topo.schedulers + s.topo.core_threads;
  s.M = std::make_unique<detail::Machine<State>>(s, s.topo, s.opt.rings.task_window, n);
  for (int w = 0; w < n; ++w) s.threads.emplace_back([&s, w] { detail::machine_thread(*s.M, w); });
  s.watch();
}

Orchestrator::~Orchestrator() {
  (void)finish();  // a destructor cannot report; finish() did when it was called
  s_->monitor.stop();
  s_->M->finish_run();
  for (auto& w : s_->threads) w.join();
}

int64_t Orchestrator::tensor(std::string name, ir::DType dtype, std::vector<int64_t> shape,
                             void* data, ir::BufferKind kind) {
  ir::Buffer b;
  b.name = std::move(name);
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.kind = kind;
  return s_->add_tensor(std::move(b), static_cast<std::byte*>(data), -1, -1);
}

ir::Result<int64_t> Orchestrator::make_tensor(std::string name, ir::DType dtype,
                                              std::vector<int64_t> shape) {
  State& s = *s_;
  ir::Buffer b;
  b.name = std::move(name);
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.kind = ir::BufferKind::ACTIVATION;
  const int64_t bytes = (b.nbytes() + kAlign - 1) / kAlign * kAlign;
  if (bytes > s.heap.capacity()) {
    return s.fail(ir::error(
        "orch.usage", fmt::format("make_tensor '{}': {} bytes exceed the heap ring ({} bytes)",
                                  b.name, bytes, s.heap.capacity())));
  }
  const int scope = s.open.empty() ? -1 : s.open.back();
  std::unique_lock lk(s.wm_mu);
  int64_t off = -1;
  auto place = [&] { return (off = s.heap.place(bytes)) >= 0; };
  if (!s.wait_for_space(lk, true, place)) return s.error;
  const int64_t block = s.heap.take(off, bytes, scope);
  s.rec_heap += bytes;
  s.st.max_heap_bytes = std::max(s.st.max_heap_bytes, s.heap.used());
  lk.unlock();
  std::memset(s.heap.data(off), 0, static_cast<size_t>(b.nbytes()));
  return s.add_tensor(std::move(b), s.heap.data(off), block, scope);
}

namespace {

// A submit's arguments after check_args: whether one is a proper sub-region of its tensor, and
// whether one lives on the heap ring.
struct ArgFacts {
  bool sub = false, heap = false;
};

// Checks a submit's arguments and lists their accesses (s.reads, s.writes) for the TensorMap;
// false with the error set when one is not a live tensor or not a row range of one.
template <class What>
bool check_args(Orchestrator::State& s, const std::vector<TensorArg>& args, const What& what,
                ArgFacts& facts) {
  s.reads.clear();
  s.writes.clear();
  for (const TensorArg& a : args) {
    if (a.tensor < 0 || a.tensor >= static_cast<int64_t>(s.tensors.size())) {
      s.fail(ir::error("orch.usage", fmt::format("submit {}: no tensor {}", what(), a.tensor)));
      return false;
    }
    const TensorInfo& t = s.tensors[static_cast<size_t>(a.tensor)];
    if (t.block >= 0 && t.scope >= 0 && !s.scope_open(t.scope)) {
      s.fail(ir::error(
          "orch.usage",
          fmt::format("submit {}: tensor '{}' escaped its scope #{} (it ended; its heap "
                      "bytes may already hold another tensor)",
                      what(), s.tensor_bufs[static_cast<size_t>(a.tensor)].name, t.scope)));
      return false;
    }
    facts.heap = facts.heap || t.block >= 0;
    if (a.region.axis >= 0) {
      const int64_t rows = t.view.rank == 0 ? 0 : t.view.shape[0];
      if (a.region.axis != 0 || a.region.lo < 0 || a.region.hi > rows ||
          a.region.lo >= a.region.hi) {
        s.fail(
            ir::error("orch.usage",
                      fmt::format("submit {}: region [{}, {}) on axis {} of tensor '{}' ({} rows): "
                                  "only non-empty row ranges within axis 0 are views",
                                  what(), a.region.lo, a.region.hi, a.region.axis,
                                  s.tensor_bufs[static_cast<size_t>(a.tensor)].name, rows)));
        return false;
      }
      facts.sub = facts.sub || a.region.lo != 0 || a.region.hi != rows;
    }
    if (a.dir != ArgDir::Output) s.reads.push_back({a.tensor, a.region});
    if (a.dir != ArgDir::Input) s.writes.push_back({a.tensor, a.region});
  }
  return true;
}

// Waits for a slot in the task ring and `need` entries of the dependency pool (the cached
// watermark and pool counts are re-read only when they say no); false with the error set on a
// provable deadlock or a request the pool can never hold.
template <class What>
bool take_room(Orchestrator::State& s, uint32_t id, uint64_t need, const What& what) {
  if (need > s.opt.rings.dep_pool) {
    s.fail(
        ir::error("orch.usage",
                  fmt::format("submit {}: {} dependencies exceed the dependency pool ({} entries)",
                              what(), need, s.opt.rings.dep_pool)));
    return false;  // the orchestration is over (error() is sticky)
  }
  const uint32_t window = s.opt.rings.task_window;
  const uint64_t pool = s.opt.rings.dep_pool;
  auto room = [&] {
    if (id - s.alive_cache >= window) s.alive_cache = s.last_alive.load(std::memory_order_acquire);
    if (s.dep_alloc - s.freed_cache + need > pool)
      s.freed_cache = s.dep_freed.load(std::memory_order_acquire);
    return id - s.alive_cache < window && s.dep_alloc - s.freed_cache + need <= pool;
  };
  if (room()) return true;
  std::unique_lock lk(s.wm_mu);  // back-pressure: wait for the cores to reclaim, or diagnose
  return s.wait_for_space(lk, false, room);
}

// The kernel's views of its arguments in the slot: inputs, then outputs (the slot's task carries
// no buffer ids: kernels get views, and record() keeps its own copy).
void fill_views(Orchestrator::State& s, Slot& sl, const std::vector<TensorArg>& args) {
  sl.n_in = static_cast<uint32_t>(s.reads.size());
  sl.n_views = static_cast<uint32_t>(s.reads.size() + s.writes.size());
  inst::Tensor* out = sl.views;
  if (sl.n_views > kInlineViews) {
    sl.more.resize(sl.n_views);
    out = sl.more.data();
  }
  for (int pass = 0; pass < 2; ++pass)
    for (const TensorArg& a : args) {
      if (pass == 0 ? a.dir == ArgDir::Output : a.dir == ArgDir::Input) continue;
      const TensorInfo& t = s.tensors[static_cast<size_t>(a.tensor)];
      inst::Tensor& v = *out++ = t.view;
      if (a.region.axis >= 0) {  // a row view (check_args checked it)
        const int64_t rows = t.view.shape[0];
        v.data = static_cast<std::byte*>(t.view.data) + a.region.lo * t.row_bytes;
        v.shape[0] = a.region.hi - a.region.lo;
        v.numel = v.numel / rows * v.shape[0];
      }
    }
}

// Appends task `id` to the record (OrchestratorOptions::record).
void record_task(Orchestrator::State& s, uint32_t id, const Slot& sl, CoreType core, bool sub,
                 size_t n_deps) {
  const ir::Task& task = sl.task;
  Recorded& rec = s.recorded.next();
  rec.op = task.op;
  rec.core = core;
  rec.user = sl.user;
  rec.n_in = static_cast<uint32_t>(s.reads.size());
  rec.n_out = static_cast<uint32_t>(s.writes.size());
  rec.sub = sub;
  rec.label_len = static_cast<uint32_t>(task.label.size());
  s.rec_chars += task.label;
  rec.n_params = static_cast<uint32_t>(task.params.size());
  s.rec_params.append(task.params);
  for (const ir::Access& a : s.reads) s.rec_bufs.push_back(a.buffer);
  for (const ir::Access& a : s.writes) s.rec_bufs.push_back(a.buffer);
  ir::ForeignTask ft;  // the ring accounting of the capacity rules (make_tensor() bytes made
  ft.id = id;          // for this task count as its own)
  ft.scope = sl.scope;
  ft.kind = static_cast<int32_t>(core == CoreType::Aic ? ir::PtoShape::Aic : ir::PtoShape::Aiv);
  ft.variant = 1;
  ft.heap = std::exchange(s.rec_heap, 0);
  ft.fanin = static_cast<int32_t>(n_deps);
  s.rec_tasks.push_back(ft);
}

// Wiring: each producer still running gets a pool entry on its fanout list (under its lock); one
// already finished (or reclaimed: before `alive_floor`) counts as done at once. Returns how many
// counted as done.
int32_t wire(Orchestrator::State& s, uint32_t id, Slot& sl, std::span<const uint32_t> deps,
             uint32_t alive_floor) {
  int32_t early = 0;
  for (uint32_t p : deps) {
    Slot& ps = s.slot(p);
    if (p < alive_floor || ps.state.load(std::memory_order_acquire) != kPending) {
      ++early;  // reclaimed, or finished: no lock needed
      continue;
    }
    const int32_t e = s.pool.at(sl.dep_begin + sl.n_linked);
    s.pool[e] = {p, id, -1};
    std::lock_guard pl(ps.mu);
    if (ps.state.load(std::memory_order_relaxed) != kPending) {
      ++early;
      continue;
    }
    (ps.fan_tail >= 0 ? s.pool[ps.fan_tail].next : ps.fan_head) = e;
    ps.fan_tail = e;
    ++ps.refs;
    ++sl.n_linked;
  }
  s.dep_alloc = sl.dep_begin + sl.n_linked;
  return early;
}

// The slot two submits ahead was last touched by a scheduler and a core (its previous
// occupant's run and completion): start moving all its lines here now, so that submit does not
// wait for them (all of them: the first 3 alone left submit waiting on the others).
void prefetch_slot_ahead(Orchestrator::State& s, uint32_t id) {
  const auto* next = reinterpret_cast<const std::byte*>(&s.slot(id + 2));
  for (size_t l = 0; l < sizeof(Slot) / 64; ++l) detail::prefetch_for_write(next + 64 * l);
}

// Both submit()s: an opcode task (`user` null) or a registered kernel's. Checks the arguments,
// finds the dependencies, waits for room, fills the slot, records, wires, and stages the task
// when it is ready at once.
bool submit_task(Orchestrator::State& s, ir::Op op, const UserKernel* user, CoreType core,
                 const std::vector<TensorArg>& args, std::vector<ir::Param> params,
                 std::string label) {
  if (!s.error.code.empty() || s.take_stall()) return false;
  if (s.phase.load(std::memory_order_relaxed) != kOrchestrating)
    s.phase.store(kOrchestrating, std::memory_order_release);
  const auto id = static_cast<uint32_t>(s.st.tasks);
  auto what = [&] { return label_of(label, op, user, id); };
  if (s.topo.cores_of(core) == 0) {
    s.fail(ir::error("orch.usage",
                     fmt::format("submit {}: it runs on an {} core and the machine has none",
                                 what(), name(core))));
    return false;
  }
  prefetch_slot_ahead(s, id);
  ArgFacts facts;
  if (!check_args(s, args, what, facts)) return false;
  s.deps_tmp.clear();
  s.war_tmp.clear();
  s.tm.record(id, s.reads, s.writes, s.deps_tmp, &s.war_tmp);
  const std::span<const uint32_t> deps(s.deps_tmp);
  for (uint8_t w : s.war_tmp) s.st.war_edges += w;
  // The producers' first lines (state and lock), which a scheduler may hold from their run: start
  // moving them now, in the exclusive state the wiring's lock needs, so the transfers overlap with
  // filling the slot and the record instead of stalling the wiring one after another.
  for (uint32_t p : deps)
    if (p >= s.alive_cache) detail::prefetch_for_write(&s.slot(p));
  if (!take_room(s, id, deps.size(), what)) return false;
  if (facts.heap) {  // heap blocks live until the watermark passes their last user
    std::lock_guard lk(s.wm_mu);
    for (const TensorArg& a : args) s.heap.use(s.tensors[static_cast<size_t>(a.tensor)].block, id);
  }
  // Tasks before alive_floor are reclaimed; the slot of any later one is not reused yet (it is
  // more recent than id - window).
  const uint32_t alive_floor = s.alive_cache;
  s.st.max_active = std::max(s.st.max_active, id + 1 - alive_floor);

  // The slot is free: its previous task was reclaimed, and advance() left it kFree, which stops the
  // watermark here until this task is consumed.
  Slot& sl = s.slot(id);
  const int scope = s.open.empty() ? -1 : s.open.back();
  sl.task.op = op;
  sl.task.label = std::move(label);
  sl.task.params = std::move(params);
  sl.user = user;
  fill_views(s, sl, args);
  sl.scope = scope;
  sl.core = static_cast<uint8_t>(core);
  sl.fan_head = sl.fan_tail = -1;
  sl.dep_begin = s.dep_alloc;
  sl.n_linked = 0;
  // No lock: the last thread to write this slot was advance() (kFree, under its lock, before its
  // release store of a last_alive past the previous occupant, which room() read (acquire) before
  // this submit could take the slot). advance() may lock it and read `state` meanwhile; it reads
  // nothing else of a slot that is not consumed.
  sl.refs = scope >= 0 ? 1 : 0;
  sl.state.store(kPending, std::memory_order_relaxed);
  if (s.opt.record) record_task(s, id, sl, core, facts.sub, deps.size());
  sl.fanin.store(static_cast<int32_t>(deps.size()) + 1, std::memory_order_relaxed);
  const int32_t early = wire(s, id, sl, deps, alive_floor);
  s.st.edges += deps.size();
  ++s.st.tasks;
  if (scope >= 0) {
    s.scope_tasks[static_cast<size_t>(scope)].push_back(id);
    ++s.scope_size[static_cast<size_t>(scope)];
  }
  // Linked to no running producer: nobody else can touch fanin, so no atomic read-modify-write.
  // Ready now: staged for the next publish().
  if (sl.n_linked == 0 || sl.fanin.fetch_sub(early + 1, std::memory_order_acq_rel) == early + 1) {
    const uint64_t k = s.staged.load(std::memory_order_relaxed);
    s.stage[s.ring.pos(k)] = id;  // at most task_window tasks are alive, so never one unpublished
    s.staged.store(k + 1, std::memory_order_release);
  }
  s.submitted.store(id + 1, std::memory_order_release);
  if (id + 1 - s.published_tasks >= s.opt.publish_every) s.publish();
  if ((id & 63) == 63)  // stale TensorMap entries of reclaimed tasks (costs what it drops)
    s.tm.forget_before(s.last_alive.load(std::memory_order_acquire));
  return true;
}

}  // namespace

KernelId Orchestrator::kernel(std::string name, inst::Kernel fn) {
  s_->kernels.push_back({std::move(name), fn});
  return {static_cast<int32_t>(s_->kernels.size()) - 1};
}

ir::Status Orchestrator::submit(KernelId kernel, CoreType core, const std::vector<TensorArg>& args,
                                std::vector<ir::Param> params, std::string label) {
  State& s = *s_;
  if (kernel.id < 0 || kernel.id >= static_cast<int32_t>(s.kernels.size()) ||
      !s.kernels[static_cast<size_t>(kernel.id)].fn) {
    if (s.error.code.empty())
      s.fail(ir::error("orch.usage",
                       fmt::format("submit {}: kernel {} is not registered (or has no function)",
                                   label.empty() ? std::string("task") : label, kernel.id)));
    return s.error;
  }
  if (submit_task(s, ir::Op::NOP, &s.kernels[static_cast<size_t>(kernel.id)], core, args,
                  std::move(params), std::move(label)))
    return {};
  return s.error;
}

ir::Status Orchestrator::submit(ir::Op op, CoreType core, const std::vector<TensorArg>& args,
                                std::vector<ir::Param> params, std::string label) {
  if (submit_task(*s_, op, nullptr, core, args, std::move(params), std::move(label))) return {};
  return s_->error;
}

void Orchestrator::scope_begin() {
  State& s = *s_;
  if (s.opt.record) {
    ir::RuntimeScope sc;
    sc.parent = s.open.empty() ? -1 : s.open.back();
    sc.depth = static_cast<int32_t>(s.open.size());
    sc.site = fmt::format("scope #{}", s.next_scope);
    sc.begin = sc.end = static_cast<int64_t>(s.st.tasks);
    s.rec_scopes.push_back(std::move(sc));
  }
  s.open.push_back(s.next_scope++);
  s.scope_tasks.emplace_back();
  s.scope_size.push_back(0);
}

void Orchestrator::scope_end() {
  State& s = *s_;
  if (s.open.empty()) return;
  const int id = s.open.back();
  s.open.pop_back();
  if (s.opt.record) s.rec_scopes[static_cast<size_t>(id)].end = static_cast<int64_t>(s.st.tasks);
  {
    std::lock_guard lk(s.wm_mu);
    s.heap.unpin(id);
    s.heap.free_before(s.last_alive.load(std::memory_order_relaxed));
  }
  s.publish();  // the scope's tasks go to the schedulers now, not after later submits
  std::vector<uint32_t> tasks;
  tasks.swap(s.scope_tasks[static_cast<size_t>(id)]);
  for (uint32_t t : tasks) s.release(t);
  s.advance();
}

ir::Status Orchestrator::finish() {
  State& s = *s_;
  s.phase.store(kFinishing, std::memory_order_release);
  s.finishing.store(true, std::memory_order_seq_cst);
  s.publish(true);
  while (!s.open.empty()) scope_end();
  {
    std::lock_guard lk(s.wm_mu);
    s.heap.unpin(-1);
    s.heap.free_before(s.last_alive.load(std::memory_order_relaxed));
  }
  {
    std::unique_lock lk(s.done_mu);
    s.done_cv.wait(lk, [&] {
      return s.completed.load(std::memory_order_seq_cst) >= s.st.tasks ||
             s.stalled.load(std::memory_order_acquire);
    });
  }
  if (s.take_stall()) return s.error;
  std::lock_guard lk(s.done_mu);
  if (!s.kernel_error.empty() && s.error.code.empty())
    s.fail(ir::error("vm.kernel", s.kernel_error));
  if (s.error.code.empty()) return {};
  return s.error;
}

OrchestratorStats Orchestrator::stats() const {
  return s_->st;
}

std::vector<std::pair<int64_t, CoreType>> Orchestrator::core_types() const {
  std::vector<std::pair<int64_t, CoreType>> v;
  for (size_t t = 0; t < s_->recorded.size(); ++t)
    v.emplace_back(static_cast<int64_t>(t), s_->recorded[t].core);
  return v;
}

ir::Result<ir::Program> Orchestrator::record() {
  State& s = *s_;
  if (!s.opt.record) {
    s.fail(ir::error("orch.usage",
                     "record(): this orchestrator was created with OrchestratorOptions::record "
                     "= false"));
    return s.error;
  }
  ir::Program p;
  for (const ir::Buffer& b : s.tensor_bufs) p.add_buffer(b.name, b.kind, b.dtype, b.shape);
  ir::TensorMap tm;  // whole buffers: a task with a proper sub-region has no record
  std::vector<ir::Access> reads, writes;
  std::vector<uint32_t> deps;
  uint64_t label = 0, bufs = 0, params = 0;
  for (size_t t = 0; t < s.recorded.size(); ++t) {
    const Recorded& r = s.recorded[t];
    const std::string text = s.rec_chars.substr(label, r.label_len);
    label += r.label_len;
    if (r.sub || r.user) {
      s.fail(ir::error(
          "orch.usage",
          fmt::format("record(): task {} ({}) {}", t, label_of(text, r.op, r.user, t),
                      r.user ? fmt::format("runs the registered kernel '{}', which has no "
                                           "amk opcode",
                                           r.user->name)
                             : std::string("uses a sub-region of a tensor; amk tasks "
                                           "address whole buffers"))));
      return s.error;
    }
    ir::Task k;
    k.op = r.op;
    k.label = label_of(text, r.op, nullptr, t);
    p.add_counter(k.label);
    for (uint32_t i = 0; i < r.n_params; ++i) k.params.push_back(s.rec_params[params++]);
    reads.clear();
    writes.clear();
    for (uint32_t i = 0; i < r.n_in + r.n_out; ++i) {
      const int64_t b = s.rec_bufs[bufs++];
      (i < r.n_in ? k.inputs : k.outputs).push_back(b);
      (i < r.n_in ? reads : writes).push_back({b, {}});
    }
    k.out_counter = static_cast<int64_t>(t);
    deps.clear();
    tm.record(static_cast<uint32_t>(t), reads, writes, deps);
    std::sort(deps.begin(), deps.end());
    for (uint32_t q : deps) k.waits.push_back({static_cast<int64_t>(q), 1, {}});
    p.add_task(std::move(k));
  }
  // The ring sizes it ran under and its scopes: the capacity rules prove the same ring deadlock
  // statically that the orchestrator's detector finds at run time.
  ir::Runtime rt;
  rt.kind = ir::RuntimeKind::Amk;
  rt.set(ir::Cap::task_window, {s.opt.rings.task_window});
  rt.set(ir::Cap::heap, {s.opt.rings.heap_bytes});
  rt.set(ir::Cap::dep_pool, {s.opt.rings.dep_pool});
  rt.scopes = s.rec_scopes;
  for (ir::RuntimeScope& sc : rt.scopes)
    if (s.scope_open(static_cast<int>(&sc - rt.scopes.data())))
      sc.end = static_cast<int64_t>(s.recorded.size());
  rt.tasks = s.rec_tasks;
  p.runtime = std::move(rt);
  return p;
}

}  // namespace amk::vm
