// The capacity rules: what the runtime that executes a program must hold at once, against what it
// provides (Program::runtime). A capacity deadlock hangs a graph whose dependencies are fine: more
// persistent blocks than the chip keeps resident, a worker queue that wraps, a scope that pins
// more ring slots, heap bytes or dependency entries than its ring has. capacity_needs() computes
// every need with its witness once; the rules report the ones above the capacity, `amk info` the
// largest per ring as the smallest safe sizes.
#include <algorithm>
#include <array>
#include <span>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "validate/context.h"
#include "validate/reach.h"

namespace amk::validate {

// The rules this file checks, in emission order (rules() lists every family's).
constexpr Rule kCoresidency{"capacity.coresidency",
                            "the persistent kernel's blocks do not all fit the chip at once",
                            false};
constexpr Rule kWorkerQueue{"capacity.worker-queue",
                            "an MPK worker is dealt more tasks per iteration than its queue holds",
                            false};
constexpr Rule kTaskWindow{"capacity.task-window",
                           "an open scope pins more tasks than its ring's task window admits",
                           false};
constexpr Rule kHeap{"capacity.heap",
                     "an open scope pins more output bytes than its ring's heap holds", false};
constexpr Rule kDepPool{"capacity.dep-pool",
                        "an open scope pins more dependency entries than its ring's pool holds",
                        false};
constexpr Rule kFaninSpill{
    "capacity.fanin-spill",
    "fan-in past the inline slots of an open scope's tasks overflows the spill pool", false};
constexpr Rule kReadyQueue{"capacity.ready-queue",
                           "more tasks of one shape may be ready at once than its queue holds",
                           false};
constexpr Rule kBlockNum{"capacity.block-num",
                         "warning: a task's block_num exceeds the cores of its shape", false};
constexpr Rule kTwait{"capacity.twait",
                      "a task blocked in TWAIT may hold the cores its notifier needs, or its "
                      "notifier runs only after it",
                      false};
constexpr Rule kEarlyDispatch{
    "capacity.early-dispatch",
    "a producer's early-dispatch consumers can gate every core its remaining blocks need", false};

std::span<const Rule> capacity_rules() {
  static constexpr Rule kList[] = {kCoresidency,   kWorkerQueue, kTaskWindow, kHeap,
                                   kDepPool,       kFaninSpill,  kReadyQueue, kBlockNum,
                                   kEarlyDispatch, kTwait};
  return kList;
}

namespace {

using ir::Cap;

std::string task_name(const ir::Program& p, size_t t) {
  return fmt::format("task {} ({})", t, p.tasks[t].label);
}

// The PTO (or amk orchestrator) ring pass. A task holds its ring's slot, heap bytes and
// dependency entries until the watermark passes it, and the watermark passes only consumed tasks
// in order; a task is not consumed while the scope that owns it is open. So when task L is
// submitted, the oldest task still owned by an open scope on L's ring (L's scope or one around it
// on the same ring) pins everything from it through L. Per pinning scope, the largest such range.
struct Pinned {
  int64_t tasks = 0, heap = 0, heap_max = 0, deps = 0, spill = 0;
  size_t first = 0, last = 0;  // positions in the ring's task list
};

// The needs of what each scope on ring r pins (by_scope, from ring_needs), with their witness.
void pinned_needs(const ir::Program& p, int r,
                  const std::vector<std::pair<int64_t, uint32_t>>& list,
                  const std::vector<Pinned>& by_scope, std::vector<CapacityNeed>& out) {
  const ir::Runtime& rt = *p.runtime;
  const bool pto = rt.kind == ir::RuntimeKind::Pto;
  const size_t ns = rt.scopes.size();
  const int64_t inline_cap = rt.value(Cap::fanin_inline, r).value_or(64);
  for (size_t s = 0; s < ns; ++s) {
    const Pinned& x = by_scope[s];
    if (x.tasks == 0) continue;
    const ir::RuntimeScope& sc = rt.scopes[s];
    const bool assumed = sc.site == "(derived)";
    const std::string where = fmt::format(
        "ring {}: scope '{}' (depth {}) keeps {} task(s) from being reclaimed while it is open, "
        "{} to {} (its own from the first, and every later one on the ring)",
        r, sc.site, sc.depth, x.tasks, p.tasks[list[x.first].second].label,
        p.tasks[list[x.last].second].label);
    auto need = [&](const Rule& rule, Cap key, int64_t needed, std::string amount, uint32_t at) {
      CapacityNeed c;
      c.rule = rule.code;
      c.key = key;
      c.ring = r;
      c.needed = needed;
      c.capacity = rt.value(key, r);
      c.warn_only = assumed;
      c.what = where + "; " + amount;
      c.pointer = ir::task_pointer(at);
      out.push_back(std::move(c));
    };
    // PTO admits a task while local - last_alive + 1 < window (one slot tells full from empty);
    // amk's orchestrator while local - last_alive < window.
    const int64_t window = x.tasks + (pto ? 1 : 0);
    const int64_t cap_w = rt.value(Cap::task_window, r).value_or(window);
    const size_t stuck =
        x.first + static_cast<size_t>(std::clamp<int64_t>(cap_w - (pto ? 1 : 0), 0, x.tasks - 1));
    need(kTaskWindow, Cap::task_window, window,
         fmt::format("the task window must hold {} slot(s)", window), list[stuck].second);
    if (x.heap > 0)
      need(kHeap, Cap::heap, x.heap + x.heap_max + (pto ? 1 : 0),
           fmt::format("{} output bytes, plus up to {} left unused where an allocation does not "
                       "straddle the heap's end",
                       x.heap, x.heap_max),
           list[x.last].second);
    if (x.deps > 0)
      need(kDepPool, Cap::dep_pool, x.deps, fmt::format("{} dependency entries", x.deps),
           list[x.last].second);
    if (x.spill > 0)
      need(kFaninSpill, Cap::fanin_spill, x.spill,
           fmt::format("{} fan-in entries past the {} inline slots of a task", x.spill, inline_cap),
           list[x.last].second);
  }
}

void ring_needs(const ir::Program& p, int r, const std::vector<std::pair<int64_t, uint32_t>>& list,
                std::vector<CapacityNeed>& out) {
  const ir::Runtime& rt = *p.runtime;
  const size_t n = list.size(), ns = rt.scopes.size();
  const int64_t inline_cap = rt.value(Cap::fanin_inline, r).value_or(64);
  // Prefix sums over the ring's tasks and each scope's first owned task.
  std::vector<int64_t> heap(n + 1, 0), deps(n + 1, 0), spill(n + 1, 0);
  std::vector<size_t> first(ns, SIZE_MAX);
  for (size_t i = 0; i < n; ++i) {
    const ir::ForeignTask& f = rt.tasks[list[i].second];
    heap[i + 1] = heap[i] + f.heap;
    deps[i + 1] = deps[i] + f.fanin;
    spill[i + 1] = spill[i] + std::max<int64_t>(0, f.fanin - inline_cap);
    if (f.scope >= 0 && static_cast<size_t>(f.scope) < ns &&
        first[static_cast<size_t>(f.scope)] == SIZE_MAX)
      first[static_cast<size_t>(f.scope)] = i;
  }
  std::vector<Pinned> by_scope(ns);
  std::vector<int64_t> heap_max(ns, 0);
  std::vector<size_t> pin_start(ns, SIZE_MAX);
  for (size_t i = 0; i < n; ++i) {
    const ir::ForeignTask& f = rt.tasks[list[i].second];
    size_t from = i;
    int32_t pin = -1;
    for (int32_t a = f.scope; a >= 0 && static_cast<size_t>(a) < ns;
         a = rt.scopes[static_cast<size_t>(a)].parent) {
      if (rt.scopes[static_cast<size_t>(a)].ring != r) break;
      if (first[static_cast<size_t>(a)] <= from) {
        from = first[static_cast<size_t>(a)];
        pin = a;
      }
    }
    if (pin < 0) continue;
    auto& x = by_scope[static_cast<size_t>(pin)];
    // The range's largest allocation (ranges of one pinning scope share their start).
    if (pin_start[static_cast<size_t>(pin)] != from) {
      pin_start[static_cast<size_t>(pin)] = from;
      heap_max[static_cast<size_t>(pin)] = 0;
      for (size_t k = from; k < i; ++k)
        heap_max[static_cast<size_t>(pin)] =
            std::max(heap_max[static_cast<size_t>(pin)], rt.tasks[list[k].second].heap);
    }
    heap_max[static_cast<size_t>(pin)] = std::max(heap_max[static_cast<size_t>(pin)], f.heap);
    const auto tasks = static_cast<int64_t>(i - from + 1);
    if (tasks >= x.tasks) {
      x.tasks = tasks;
      x.first = from;
      x.last = i;
    }
    x.heap = std::max(x.heap, heap[i + 1] - heap[from]);
    x.heap_max = std::max(x.heap_max, heap_max[static_cast<size_t>(pin)]);
    x.deps = std::max(x.deps, deps[i + 1] - deps[from]);
    x.spill = std::max(x.spill, spill[i + 1] - spill[from]);
  }
  pinned_needs(p, r, list, by_scope, out);
}

void scope_needs(const ir::Program& p, std::vector<CapacityNeed>& out) {
  const ir::Runtime& rt = *p.runtime;
  const bool pto = rt.kind == ir::RuntimeKind::Pto;
  // Per ring: the tasks by ring-local id (ids of amk's orchestrator are its ring-0 ids).
  std::array<std::vector<std::pair<int64_t, uint32_t>>, ir::kPtoRings> ring;
  for (uint32_t t = 0; t < rt.tasks.size() && t < p.tasks.size(); ++t) {
    const ir::ForeignTask& f = rt.tasks[t];
    if (f.id == UINT64_MAX) continue;  // a join amk added
    const uint64_t r = pto ? f.id >> 32 : 0;
    if (r >= static_cast<uint64_t>(ir::kPtoRings)) continue;
    ring[r].emplace_back(static_cast<int64_t>(f.id & 0xffffffffull), t);
  }
  for (int r = 0; r < ir::kPtoRings; ++r) {
    auto& v = ring[static_cast<size_t>(r)];
    std::sort(v.begin(), v.end());
    if (!v.empty()) ring_needs(p, r, v, out);
  }
}

// PTO: per shape, tasks that may be ready at once: at most those alive in each ring's window.
void pto_shape_needs(const ir::Program& p, std::vector<CapacityNeed>& out) {
  const ir::Runtime& rt = *p.runtime;
  static constexpr std::string_view kShapes[] = {"MIX", "AIC", "AIV"};
  std::array<std::array<int64_t, ir::kPtoRings>, 3> count{};
  std::array<int64_t, 3> widest{};
  std::array<uint32_t, 3> widest_at{};
  for (uint32_t t = 0; t < rt.tasks.size() && t < p.tasks.size(); ++t) {
    const ir::ForeignTask& f = rt.tasks[t];
    if (f.id == UINT64_MAX || f.kind < 0 || f.kind > 2) continue;
    ++count[static_cast<size_t>(f.kind)][std::min<uint64_t>(f.id >> 32, ir::kPtoRings - 1)];
    if (f.variant > widest[static_cast<size_t>(f.kind)]) {
      widest[static_cast<size_t>(f.kind)] = f.variant;
      widest_at[static_cast<size_t>(f.kind)] = t;
    }
  }
  for (size_t s = 0; s < 3; ++s) {
    int64_t ready = 0;
    uint32_t first = 0;
    for (int r = 0; r < ir::kPtoRings; ++r) {
      const int64_t alive = rt.value(Cap::task_window, r).value_or(16384) - 1;
      ready += std::min(count[s][static_cast<size_t>(r)], std::max<int64_t>(alive, 0));
    }
    for (uint32_t t = 0; t < rt.tasks.size(); ++t)
      if (rt.tasks[t].kind == static_cast<int32_t>(s)) {
        first = t;
        break;
      }
    if (ready > 0) {
      CapacityNeed x;
      x.rule = kReadyQueue.code;
      x.key = Cap::ready_queue;
      x.needed = ready;
      x.capacity = rt.value(Cap::ready_queue);
      x.what =
          fmt::format("{} {} task(s) may be ready at once (those alive in the rings' task windows)",
                      ready, kShapes[s]);
      x.pointer = ir::task_pointer(first);
      out.push_back(std::move(x));
    }
    if (widest[s] > 0) {
      // A MIX task takes a cluster: one AIC and two AIV cores.
      const std::optional<int64_t> aic = rt.value(Cap::cores_aic), aiv = rt.value(Cap::cores_aiv);
      std::optional<int64_t> cores = s == 1 ? aic : s == 2 ? aiv : std::nullopt;
      if (s == 0 && aic && aiv) cores = std::min(*aic, *aiv / 2);
      CapacityNeed x;
      x.rule = kBlockNum.code;
      x.key = s == 2 ? Cap::cores_aiv : Cap::cores_aic;
      x.needed = s == 0 ? widest[s] : widest[s];
      x.capacity = cores;
      x.what =
          fmt::format("{} runs block_num {} on {} {}", task_name(p, widest_at[s]), widest[s],
                      cores ? std::to_string(*cores) : std::string("?"),
                      s == 0 ? "clusters (1 AIC + 2 AIV)" : std::string(kShapes[s]) + " cores");
      x.pointer = ir::task_pointer(widest_at[s]);
      out.push_back(std::move(x));
    }
  }
}

// "1, 2, 3, ... (12 in all)": the first three of `tasks`.
std::string first_tasks(const std::vector<uint32_t>& tasks) {
  std::string s;
  for (size_t k = 0; k < tasks.size() && k < 3; ++k)
    s += fmt::format("{}{}", k ? ", " : "", tasks[k]);
  if (tasks.size() > 3) s += fmt::format(", ... ({} in all)", tasks.size());
  return s;
}

// A core-count need of `t`: `held` cores of type `core` (0 AIC, 1 AIV) plus its own block's.
CapacityNeed core_need(const ir::Program& p, uint32_t t, const Rule& rule, size_t core,
                       int64_t needed, std::string what) {
  const ir::Runtime& rt = *p.runtime;
  CapacityNeed x;
  x.rule = rule.code;
  x.key = core == 0 ? Cap::cores_aic : Cap::cores_aiv;
  x.needed = needed;
  x.capacity = rt.value(x.key);
  x.what = std::move(what);
  x.pointer = ir::task_pointer(t);
  return x;
}

constexpr std::string_view kCore[] = {"AIC", "AIV"};

// simpler #2136. A consumer flagged early_dispatch is staged while its producer runs: its blocks
// take cores and hold them, gated, until the producer completes. The runtime bounds that per
// producer edge, not in aggregate, so a producer fanned out to many such consumers can find every
// core of a type its remaining blocks need gated by them: they wait for it, it waits for a core.
// Safe when the cohorts leave one block of the producer room: gated + one block <= cores. A
// producer of one block has nothing left to place once it runs.
void early_dispatch_needs(const ir::Program& p, std::vector<CapacityNeed>& out) {
  const ir::Runtime& rt = *p.runtime;
  const size_t n = std::min(rt.tasks.size(), p.tasks.size());
  bool any = false;
  for (size_t t = 0; t < n && !any; ++t) any = rt.tasks[t].early;
  if (!any) return;
  // The early-dispatch consumers of each counter (a PTO producer's counter is shared only by
  // producers with the same consumers).
  std::vector<std::vector<uint32_t>> early_of(p.counters.size());
  for (uint32_t t = 0; t < n; ++t) {
    if (!rt.tasks[t].early || rt.tasks[t].id == UINT64_MAX) continue;
    for (const ir::Wait& w : p.tasks[t].waits)
      if (w.counter >= 0 && static_cast<size_t>(w.counter) < early_of.size()) {
        std::vector<uint32_t>& v = early_of[static_cast<size_t>(w.counter)];
        if (v.empty() || v.back() != t) v.push_back(t);
      }
  }
  for (uint32_t t = 0; t < n; ++t) {
    const ir::ForeignTask& f = rt.tasks[t];
    const int64_t c = p.tasks[t].out_counter;
    if (f.id == UINT64_MAX || f.variant < 2 || c < 0 || static_cast<size_t>(c) >= early_of.size())
      continue;
    const std::vector<uint32_t>& cons = early_of[static_cast<size_t>(c)];
    std::array<int64_t, 2> gated{};
    for (uint32_t q : cons)
      for (size_t core = 0; core < 2; ++core)
        gated[core] +=
            std::max<int64_t>(1, rt.tasks[q].variant) * ir::pto_block_cores(rt.tasks[q].kind)[core];
    const std::array<int64_t, 2> mine = ir::pto_block_cores(f.kind);
    for (size_t core = 0; core < 2; ++core)
      if (mine[core] > 0 && gated[core] > 0)
        out.push_back(core_need(
            p, t, kEarlyDispatch, core, gated[core] + mine[core],
            fmt::format("{} runs block_num {} on {} cores; its early-dispatch consumers (task {}) "
                        "may gate {} {} core(s) while it still has blocks to place, and its next "
                        "block needs {} more",
                        task_name(p, t), f.variant, kCore[core], first_tasks(cons), gated[core],
                        kCore[core], mine[core])));
  }
}

// The blocking-wait pairs (Runtime::twaits) as task indexes, each with how the graph orders its
// notifier and waiter.
struct TwaitPair {
  size_t index = 0;                    // in Runtime::twaits
  int64_t waiter = -1, notifier = -1;  // -1: an id no task has
  bool notifier_first = false;         // a path notifier -> waiter
  bool waiter_first = false;           // a path waiter -> notifier
};
std::vector<TwaitPair> twait_pairs(const ir::Program& p, const ir::Graph& g) {
  std::vector<TwaitPair> out;
  Reach reach;
  if (g.acyclic()) reach.bind(g);
  std::vector<std::array<size_t, 2>> queries;
  // A runtime record longer than the program (amk JSON says so) names no task past its end.
  const auto n_tasks = static_cast<int64_t>(p.tasks.size());
  for (const std::array<int64_t, 2>& wn : p.runtime->twait_tasks()) {
    TwaitPair& x = out.emplace_back();
    x.index = out.size() - 1;
    x.waiter = wn[0] < n_tasks ? wn[0] : -1;
    x.notifier = wn[1] < n_tasks ? wn[1] : -1;
    if (x.waiter >= 0 && x.notifier >= 0 && x.waiter != x.notifier && g.acyclic()) {
      const auto w = static_cast<uint32_t>(x.waiter), n = static_cast<uint32_t>(x.notifier);
      queries.push_back({reach.add(n, w), reach.add(w, n)});
    } else {
      queries.push_back({SIZE_MAX, SIZE_MAX});
    }
  }
  reach.solve();
  for (size_t i = 0; i < out.size(); ++i)
    if (queries[i][0] != SIZE_MAX) {
      out[i].notifier_first = reach.answer(queries[i][0]);
      out[i].waiter_first = reach.answer(queries[i][1]);
    }
  return out;
}

// A pair that a core count can make safe: both tasks known, distinct, and unordered by the graph.
bool unordered(const TwaitPair& x) {
  return x.waiter >= 0 && x.notifier >= 0 && x.waiter != x.notifier && !x.notifier_first &&
         !x.waiter_first;
}

// simpler #1798. A task that blocks in TWAIT holds its core until its notifier's TNOTIFY. Where
// the graph orders the notifier first, the waiter starts only after it; where it does not, the
// waiter may start first and block a core. Every such waiter may be blocked at once, so each
// notifier needs a core of its type beside all their cores. (A waiter the graph runs before its
// own notifier can start is check_twaits' error, not a capacity.)
void twait_needs(const ir::Program& p, std::span<const TwaitPair> pairs,
                 std::vector<CapacityNeed>& out) {
  const ir::Runtime& rt = *p.runtime;
  std::vector<uint8_t> blocking(p.tasks.size(), 0);
  std::array<int64_t, 2> held{};
  std::vector<uint32_t> waiters;
  for (const TwaitPair& x : pairs)
    if (unordered(x) && !blocking[static_cast<size_t>(x.waiter)]) {
      blocking[static_cast<size_t>(x.waiter)] = 1;
      waiters.push_back(static_cast<uint32_t>(x.waiter));
      const ir::ForeignTask& f = rt.tasks[static_cast<size_t>(x.waiter)];
      for (size_t core = 0; core < 2; ++core)
        held[core] += std::max<int64_t>(1, f.variant) * ir::pto_block_cores(f.kind)[core];
    }
  std::vector<uint8_t> seen(p.tasks.size(), 0);
  for (const TwaitPair& x : pairs) {
    if (!unordered(x) || seen[static_cast<size_t>(x.notifier)]) continue;
    const auto n = static_cast<uint32_t>(x.notifier);
    seen[n] = 1;
    const std::array<int64_t, 2> mine = ir::pto_block_cores(rt.tasks[n].kind);
    for (size_t core = 0; core < 2; ++core)
      if (mine[core] > 0)
        out.push_back(core_need(
            p, n, kTwait, core, held[core] + mine[core],
            fmt::format("{} sends the TNOTIFY that task {} blocks in TWAIT for, and no path "
                        "orders it first: the waiters unordered with their notifiers (task {}) "
                        "may hold {} {} core(s) at once, and its next block needs {} more",
                        task_name(p, n), x.waiter, first_tasks(waiters), held[core], kCore[core],
                        mine[core])));
  }
}

// What no core count makes safe: a pair naming no task, a task waiting for itself, a notifier
// the graph runs only after its waiter completes (it blocks forever), or pairs given to a
// runtime without blocking waits.
void check_twaits(Context& c, std::span<const TwaitPair> pairs) {
  const ir::Runtime& rt = *c.p.runtime;
  if (rt.twaits.empty()) return;
  if (rt.kind != ir::RuntimeKind::Pto) {
    c.error(kTwait,
            fmt::format("{} twait pair(s) given, but blocking waits (TWAIT) are PTO's; this is "
                        "the {} runtime",
                        rt.twaits.size(), ir::name(rt.kind)),
            "/runtime/twaits");
    return;
  }
  for (const TwaitPair& x : pairs) {
    const auto& ids = rt.twaits[x.index];
    if (x.waiter < 0 || x.notifier < 0) {
      c.error(kTwait,
              fmt::format("twait {}:{}: no task has id {}", ids[0], ids[1],
                          x.waiter < 0 ? ids[0] : ids[1]),
              fmt::format("/runtime/twaits/{}", x.index));
    } else if (x.waiter == x.notifier) {
      c.error(kTwait,
              fmt::format("{} blocks in TWAIT for its own TNOTIFY: it waits forever",
                          task_name(c.p, static_cast<size_t>(x.waiter))),
              ir::task_pointer(static_cast<size_t>(x.waiter)));
    } else if (x.waiter_first) {
      c.error(kTwait,
              fmt::format("{} blocks in TWAIT for the TNOTIFY of {}, which the graph runs only "
                          "after it completes: it waits forever",
                          task_name(c.p, static_cast<size_t>(x.waiter)),
                          task_name(c.p, static_cast<size_t>(x.notifier))),
              ir::task_pointer(static_cast<size_t>(x.waiter)));
    }
  }
}

// MPK: the launch's blocks on the chip, and each worker's queue.
void mpk_needs(const ir::Program& p, std::vector<CapacityNeed>& out) {
  const ir::Runtime& rt = *p.runtime;
  const int64_t workers = rt.value(Cap::workers).value_or(0);
  const int64_t schedulers = rt.value(Cap::schedulers).value_or(0);
  if (workers > 0) {
    // One worker CTA per SM; scheduler warps four to a CTA (persistent_kernel.cuh).
    const int64_t ctas = (schedulers + 3) / 4;
    CapacityNeed x;
    x.rule = kCoresidency.code;
    x.key = Cap::sms;
    x.needed = workers + ctas;
    x.capacity = rt.value(Cap::sms);
    if (p.target && p.target->num_sms.is_int) x.capacity = p.target->num_sms.i;
    x.what = fmt::format(
        "{} worker CTA(s) and {} scheduler CTA(s) ({} scheduler warps, 4 to a CTA) must all be "
        "resident at once, one to an SM",
        workers, ctas, schedulers);
    x.pointer = "/runtime/workers";
    // Blocks past the resident ones start only when others exit: a hang when a task is dealt to
    // one of them (mirage #761), else a launch that merely cannot be co-resident.
    const int64_t resident = x.capacity ? *x.capacity - ctas : workers;
    bool dealt = false;
    for (const ir::Task& t : p.tasks) dealt = dealt || (t.sm && *t.sm >= resident);
    x.warn_only = !dealt;
    if (!dealt) x.what += "; no task is dealt to the workers that cannot be resident";
    out.push_back(std::move(x));
  }
  // The tasks dealt at an iteration's start; BEGIN_TASK_GRAPH (10) ran before they were dealt.
  std::vector<int64_t> per;
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    const ir::Task& t = p.tasks[i];
    if (i < rt.tasks.size() && rt.tasks[i].kind == 10) continue;
    if (t.sm && *t.sm >= 0) {
      if (per.size() <= static_cast<size_t>(*t.sm)) per.resize(static_cast<size_t>(*t.sm) + 1);
      ++per[static_cast<size_t>(*t.sm)];
    }
  }
  const std::optional<int64_t> queue = rt.value(Cap::worker_queue);
  for (size_t w = 0; w < per.size(); ++w) {
    if (per[w] == 0) continue;
    // Only the fullest worker is a need; every worker past the queue is a witness.
    const bool over = queue && per[w] >= *queue;
    const bool fullest = per[w] == *std::max_element(per.begin(), per.end());
    if (!over && !fullest) continue;
    if (fullest && !over &&
        std::find(per.begin(), per.begin() + static_cast<std::ptrdiff_t>(w), per[w]) !=
            per.begin() + static_cast<std::ptrdiff_t>(w))
      continue;
    size_t last = 0;
    for (size_t t = 0; t < p.tasks.size(); ++t)
      if (p.tasks[t].sm == static_cast<int64_t>(w)) last = t;
    CapacityNeed x;
    x.rule = kWorkerQueue.code;
    x.key = Cap::worker_queue;
    x.needed = per[w] + 1;  // the worker asserts next + queue > last: fewer than queue pending
    x.capacity = queue;
    x.what = fmt::format("worker {} is dealt {} task(s) in one iteration, all queued at once", w,
                         per[w]);
    x.pointer = ir::task_pointer(last);
    out.push_back(std::move(x));
  }
}

// amk's own persistent kernel: one block per SM, each with the config's threads and shared
// memory, on a CUDA GPU target.
void coresidency_of_config(Context& c) {
  const ir::Program& p = c.p;
  if (!p.target || !p.config || p.target->sm_arch.as_double() <= 0) return;
  const ir::Target& t = *p.target;
  const auto& threads = p.config->threads_per_block.json();
  const auto& smem = p.config->smem_bytes_per_block.json();
  if (threads.is_number_integer() && t.max_threads_per_sm.is_int &&
      threads.get<int64_t>() > std::min<int64_t>(t.max_threads_per_sm.i, 1024))
    c.error(kCoresidency,
            fmt::format("config.threads_per_block = {}: a block of {} holds at most {} threads "
                        "(one persistent block per SM)",
                        threads.get<int64_t>(), t.name,
                        std::min<int64_t>(t.max_threads_per_sm.i, 1024)),
            "/config/threads_per_block");
  if (smem.is_number_integer() && t.smem_bytes_per_block_optin.is_int &&
      smem.get<int64_t>() > t.smem_bytes_per_block_optin.i)
    c.error(kCoresidency,
            fmt::format("config.smem_bytes_per_block = {}: a block on {} gets at most {} bytes of "
                        "shared memory (one persistent block per SM)",
                        smem.get<int64_t>(), t.name, t.smem_bytes_per_block_optin.i),
            "/config/smem_bytes_per_block");
}

// capacity_needs() with the program's twait pairs at hand.
std::vector<CapacityNeed> needs_of(const ir::Program& p, std::span<const TwaitPair> pairs) {
  std::vector<CapacityNeed> out;
  switch (p.runtime->kind) {
    case ir::RuntimeKind::Mpk:
      mpk_needs(p, out);
      break;
    case ir::RuntimeKind::Pto:
      scope_needs(p, out);
      pto_shape_needs(p, out);
      early_dispatch_needs(p, out);
      twait_needs(p, pairs, out);
      break;
    case ir::RuntimeKind::Amk:
      scope_needs(p, out);
      break;
  }
  return out;
}

}  // namespace

std::vector<CapacityNeed> capacity_needs(const ir::Program& p) {
  if (!p.runtime) return {};
  if (p.runtime->twaits.empty()) return needs_of(p, {});
  return needs_of(p, twait_pairs(p, ir::Graph::build(p)));
}

std::vector<CapacityNeed> smallest_safe_capacities(const ir::Program& p) {
  std::vector<CapacityNeed> out;
  for (CapacityNeed& x : capacity_needs(p)) {
    auto same = std::find_if(out.begin(), out.end(), [&](const CapacityNeed& y) {
      return y.key == x.key && y.ring == x.ring;
    });
    if (same == out.end()) {
      out.push_back(std::move(x));
    } else if (x.needed > same->needed) {
      *same = std::move(x);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const CapacityNeed& a, const CapacityNeed& b) {
    return std::make_pair(static_cast<int>(a.key), a.ring) <
           std::make_pair(static_cast<int>(b.key), b.ring);
  });
  return out;
}

void check_capacity(Context& c) {
  const ir::Program& p = c.p;
  coresidency_of_config(c);
  if (!p.runtime) return;
  const std::vector<TwaitPair> pairs =
      p.runtime->twaits.empty() ? std::vector<TwaitPair>{} : twait_pairs(p, c.g);
  check_twaits(c, pairs);
  const std::span<const Rule> rules = capacity_rules();
  // The core rules cannot vouch for a graph whose chip is unknown (deps.json does not name it):
  // the largest need of each, once, as a warning.
  std::vector<const CapacityNeed*> unknown;
  const std::vector<CapacityNeed> needs = needs_of(p, pairs);
  for (const CapacityNeed& x : needs) {
    if (!x.capacity && (x.rule == kEarlyDispatch.code || x.rule == kTwait.code)) {
      auto same = std::find_if(unknown.begin(), unknown.end(), [&](const CapacityNeed* y) {
        return y->rule == x.rule && y->key == x.key;
      });
      if (same == unknown.end()) {
        unknown.push_back(&x);
      } else if (x.needed > (*same)->needed) {
        *same = &x;
      }
    }
    if (!x.capacity || x.needed <= *x.capacity) continue;
    const Rule& rule =
        *std::find_if(rules.begin(), rules.end(), [&](const Rule& r) { return r.code == x.rule; });
    std::string msg = fmt::format("{}: needs {} = {}, the runtime provides {}", x.what,
                                  ir::cap_info(x.key).name, x.needed, *x.capacity);
    if (x.warn_only && x.rule != kCoresidency.code)
      msg +=
          " (scope boundaries unknown without scope_stats: if the ring's tasks are in one "
          "scope)";
    if (x.warn_only || x.rule == kBlockNum.code) {
      c.warn(rule, std::move(msg), x.pointer);
    } else {
      c.error(rule, std::move(msg), x.pointer);
    }
  }
  for (const CapacityNeed* x : unknown) {
    const Rule& rule =
        *std::find_if(rules.begin(), rules.end(), [&](const Rule& r) { return r.code == x->rule; });
    c.warn(rule,
           fmt::format("{}: needs {} = {}, and the chip's count is unknown, so this is not checked "
                       "(give --target or --launch {}=N)",
                       x->what, ir::cap_info(x->key).name, x->needed, ir::cap_info(x->key).name),
           x->pointer);
  }
  if (p.runtime->kind == ir::RuntimeKind::Mpk) {
    const int64_t workers = p.runtime->value(Cap::workers).value_or(0);
    if (workers > 160)
      c.error(kCoresidency,
              fmt::format("{} workers: MPK's persistent kernel holds at most MAX_NUM_WORKERS = 160",
                          workers),
              "/runtime/workers");
  }
}

}  // namespace amk::validate
