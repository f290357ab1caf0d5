// PTO's tensormap_and_ringbuffer runtime (and amk's orchestrator) as timed no-ops: an orchestrator
// submitting tasks in order into per-ring task windows, heaps and dependency pools, scopes that
// hold their tasks until they end, reclaim in task order behind the oldest live task, and
// schedulers dispatching ready tasks' blocks to the cores of their shape. A task flagged
// early_dispatch is staged once each of its producers has started: its blocks take cores and hold
// them, gated, until it is ready (simpler #2136). A pass stages before it places ready blocks: of
// the interleavings the runtime's scheduler threads allow, the one that hangs. A task that blocks
// in TWAIT (Runtime::twaits) holds its cores until its notifiers complete (simpler #1798).
#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "ir/graph.h"
#include "vm/foreign.h"
#include "vm/foreign_detail.h"

namespace amk::vm::detail {
namespace {

using ir::Cap;

constexpr uint64_t kJoin = UINT64_MAX;  // a join amk added: no ring, no core

enum class State : uint8_t { Unsubmitted, Pending, Running, Completed };

struct Ring {
  int64_t window = 0, heap = 0, dep_pool = 0, spill = 0;
  int64_t next = 0, last_alive = 0;     // ring-local ids: next to submit, oldest not reclaimed
  int64_t heap_top = 0, heap_tail = 0;  // offsets; the heap is a ring that nothing straddles
  int64_t heap_used = 0, deps = 0, spills = 0;
  std::vector<uint32_t> tasks;                     // by ring-local id
  std::deque<std::pair<int64_t, int64_t>> blocks;  // (offset, size) of live allocations
};

class Sim {
 public:
  Sim(const ir::Program& p, const ForeignOptions& o)
      : p_(p), rt_(*p.runtime), o_(o), g_(ir::Graph::build(p)), counters_(p) {}

  ir::Result<ForeignRun> run() {
    setup();
    if (std::optional<ir::Diagnostics> e = too_many_waves()) return std::move(*e);
    const size_t n = p_.tasks.size();
    double now = 0;
    while (completed_ < n) {
      bool moved = true;
      while (moved) {
        moved = submit_all();
        moved = dispatch(now) || moved;
      }
      if (ready_overflow_) return *ready_overflow_;
      double next = std::numeric_limits<double>::infinity();
      for (const Run& r : running_) next = std::min(next, r.end);
      if (next == std::numeric_limits<double>::infinity()) return stuck(now);
      now = now_ = next;
      for (size_t k = 0; k < running_.size();) {
        if (running_[k].end > now) {
          ++k;
          continue;
        }
        const Run r = running_[k];
        running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(k));
        take(per_block(r.task), -r.blocks);
        if ((unfinished_[r.task] -= r.blocks) == 0) finish(r.task);
      }
    }
    run_.tasks_run = completed_;
    run_.makespan_us = now;
    return run_;
  }

 private:
  const ir::Program& p_;
  const ir::Runtime& rt_;
  const ForeignOptions& o_;
  const ir::Graph g_;
  Counters counters_;
  ForeignRun run_;
  bool pto_ = true;
  std::array<Ring, ir::kPtoRings> rings_;
  std::vector<State> state_;
  std::vector<int32_t> ring_of_;     // -1: a join
  std::vector<int32_t> waiting_on_;  // consumers submitted and not completed, + scope reference
  std::vector<uint8_t> consumed_;
  std::vector<std::vector<uint32_t>> scope_tasks_;  // tasks each scope holds
  std::vector<std::vector<int32_t>> ends_after_;    // by task: scopes that end after its submit
  std::vector<uint8_t> scope_open_;
  size_t next_submit_ = 0, completed_ = 0;
  std::array<int64_t, 2> free_{};  // free cores: AIC, AIV (MIX takes one AIC and two AIV)
  std::array<int64_t, 2> total_{};
  std::vector<int64_t> unplaced_, unfinished_;  // by task: blocks not yet on a core, not done
  std::vector<uint8_t> started_;                // a block of it has run or runs
  std::vector<uint8_t> staged_;                 // its blocks hold their cores, gated
  std::vector<uint32_t> early_;                 // early_dispatch tasks, in task order
  std::vector<uint32_t> unstaged_;  // early_dispatch tasks submitted, not ready, not staged
  std::vector<std::vector<uint32_t>> waiters_of_;    // by notifier: the tasks blocking in TWAIT
  std::vector<std::vector<uint32_t>> notifiers_of_;  // by waiter
  std::vector<int32_t> open_notifies_;               // by waiter: notifiers not completed
  double now_ = 0;
  static constexpr double kBlocked = std::numeric_limits<double>::infinity();
  std::vector<std::vector<uint32_t>> holds_;  // by consumer: the producers it holds
  struct Run {
    double end;  // kBlocked while the task blocks in TWAIT
    uint32_t task;
    int64_t blocks;  // of that task, placed together
  };
  std::vector<Run> running_;
  std::deque<uint32_t> ready_;
  std::optional<ir::Diagnostics> ready_overflow_;
  std::string blocked_on_;

  const ir::ForeignTask& ft(uint32_t t) const { return rt_.tasks[t]; }

  // The AIC and AIV cores one block of t takes (a join: none).
  std::array<int64_t, 2> per_block(uint32_t t) const {
    return ring_of_[t] < 0 ? std::array<int64_t, 2>{0, 0} : ir::pto_block_cores(ft(t).kind);
  }
  // How many blocks of `need` the cores `have` hold at once (INT64_MAX: a block needs none).
  static int64_t blocks_in(std::array<int64_t, 2> need, std::array<int64_t, 2> have) {
    int64_t k = INT64_MAX;
    for (size_t c = 0; c < 2; ++c)
      if (need[c] > 0) k = std::min(k, have[c] / need[c]);
    return k;
  }
  void take(std::array<int64_t, 2> need, int64_t blocks) {  // negative: gives them back
    free_[0] -= need[0] * blocks;
    free_[1] -= need[1] * blocks;
  }

  void setup() {
    const size_t n = p_.tasks.size();
    pto_ = rt_.kind == ir::RuntimeKind::Pto;
    for (int r = 0; r < ir::kPtoRings; ++r) {
      Ring& x = rings_[static_cast<size_t>(r)];
      x.window = rt_.value(Cap::task_window, r).value_or(16384);
      x.heap = rt_.value(Cap::heap, r).value_or(int64_t{256} << 20);
      x.dep_pool = rt_.value(Cap::dep_pool, r).value_or(16384);
      x.spill = rt_.value(Cap::fanin_spill, r).value_or(x.dep_pool);
    }
    state_.assign(n, State::Unsubmitted);
    ring_of_.assign(n, -1);
    waiting_on_.assign(n, 0);
    consumed_.assign(n, 0);
    holds_.assign(n, {});
    unplaced_.assign(n, 1);
    started_.assign(n, 0);
    staged_.assign(n, 0);
    for (uint32_t t = 0; t < n && t < rt_.tasks.size(); ++t) {
      if (ft(t).id == kJoin) continue;
      unplaced_[t] = std::max<int64_t>(1, ft(t).variant);
      if (pto_ && ft(t).early) early_.push_back(t);
      const auto r = static_cast<int32_t>(pto_ ? std::min<uint64_t>(ft(t).id >> 32, 3) : 0);
      ring_of_[t] = r;
      rings_[static_cast<size_t>(r)].tasks.push_back(t);
    }
    // A scope ends after the last task it or a scope inside it holds is submitted.
    const size_t ns = rt_.scopes.size();
    scope_tasks_.assign(ns, {});
    scope_open_.assign(ns, 1);
    std::vector<int64_t> last(ns, -1);
    for (uint32_t t = 0; t < n && t < rt_.tasks.size(); ++t) {
      const int32_t s = ft(t).scope;
      if (s < 0 || s >= static_cast<int32_t>(ns)) continue;
      scope_tasks_[static_cast<size_t>(s)].push_back(t);
      for (int32_t a = s; a >= 0 && a < static_cast<int32_t>(ns);
           a = rt_.scopes[static_cast<size_t>(a)].parent)
        last[static_cast<size_t>(a)] = std::max<int64_t>(last[static_cast<size_t>(a)], t);
    }
    ends_after_.assign(n, {});
    for (size_t s = ns; s-- > 0;) {  // inner scopes (later begins) end first
      if (last[s] < 0) {
        scope_open_[s] = 0;
        continue;
      }
      ends_after_[static_cast<size_t>(last[s])].push_back(static_cast<int32_t>(s));
    }
    const int64_t cores = o_.default_cores;
    free_ = {rt_.value(Cap::cores_aic).value_or(cores),
             rt_.value(Cap::cores_aiv).value_or(2 * cores)};
    total_ = free_;
    unfinished_ = unplaced_;
    waiters_of_.assign(n, {});
    notifiers_of_.assign(n, {});
    open_notifies_.assign(n, 0);
    if (pto_ && !rt_.twaits.empty()) {
      for (const auto& [w, q] : rt_.twait_tasks()) {
        if (w < 0 || q < 0 || static_cast<size_t>(std::max(w, q)) >= n) continue;
        waiters_of_[static_cast<size_t>(q)].push_back(static_cast<uint32_t>(w));
        notifiers_of_[static_cast<size_t>(w)].push_back(static_cast<uint32_t>(q));
        ++open_notifies_[static_cast<size_t>(w)];
      }
    }
  }

  // The run steps at least once per wave of a task's blocks over the cores of its shape: a graph
  // whose waves add up past kMaxWaves is refused rather than stepped for minutes.
  static constexpr int64_t kMaxWaves = int64_t{1} << 24;
  std::optional<ir::Diagnostics> too_many_waves() const {
    int64_t waves = 0;
    for (uint32_t t = 0; t < p_.tasks.size(); ++t) {
      const int64_t at_once = blocks_in(per_block(t), total_);
      if (at_once == INT64_MAX) continue;
      waves += (unplaced_[t] + std::max<int64_t>(at_once, 1) - 1) / std::max<int64_t>(at_once, 1);
      if (waves > kMaxWaves)
        return ir::Diagnostics{ir::error(
            "vm.limit",
            fmt::format("the graph's blocks take more than {} waves over its cores (task {} runs "
                        "block_num {}): too many to run block by block",
                        kMaxWaves, t, unplaced_[t]),
            ir::task_pointer(t))};
    }
    return std::nullopt;
  }

  // When a block placed now ends: never while the task blocks in TWAIT for a notifier.
  double block_end(uint32_t t, double now) const {
    return open_notifies_[t] > 0 ? kBlocked : now + o_.task_us;
  }

  // The orchestrator submits while the rings admit the next task.
  bool submit_all() {
    bool moved = false;
    while (next_submit_ < p_.tasks.size()) {
      const auto t = static_cast<uint32_t>(next_submit_);
      if (ring_of_[t] >= 0 && !admit(t)) return moved;
      wire(t);
      state_[t] = State::Pending;
      if (counters_.ready(t)) {
        make_ready(t);
      } else if (pto_ && t < rt_.tasks.size() && ft(t).early) {
        unstaged_.push_back(t);
      }
      ++next_submit_;
      moved = true;
      for (int32_t s : ends_after_[t]) end_scope(s);
    }
    return moved;
  }

  bool admit(uint32_t t) {
    Ring& r = rings_[static_cast<size_t>(ring_of_[t])];
    const int64_t local = r.next;
    const int64_t active = local - r.last_alive + (pto_ ? 1 : 0);
    const int64_t heap = (ft(t).heap + 63) / 64 * 64;
    const int64_t inl = rt_.value(Cap::fanin_inline, ring_of_[t]).value_or(64);
    const int64_t spill = std::max<int64_t>(0, ft(t).fanin - inl);
    int64_t off = -1;
    if (active >= r.window) {
      blocked_on_ = "task window";
    } else if (heap > 0 && (off = place(r, heap)) < 0) {
      blocked_on_ = "heap";
    } else if (r.deps + ft(t).fanin > r.dep_pool) {
      blocked_on_ = "dependency pool";
    } else if (pto_ && r.spills + spill > r.spill) {
      blocked_on_ = "fan-in spill pool";
    } else {
      if (heap > 0) {
        r.blocks.emplace_back(off, heap);
        r.heap_top = off + heap;
        r.heap_used += heap;
      } else {
        r.blocks.emplace_back(r.heap_top, 0);
      }
      r.deps += ft(t).fanin;
      r.spills += spill;
      ++r.next;
      return true;
    }
    ++run_.blocked;
    return false;
  }

  // A submitted task holds its producers until it completes (PTO's fanout count); its scope
  // holds it until the scope ends.
  void wire(uint32_t t) {
    for (uint32_t slot : g_.wait_slots(t))
      for (uint32_t q : g_.producers(slot))
        if (q != t && state_[q] != State::Unsubmitted && !consumed_[q]) {
          ++waiting_on_[q];
          holds_[t].push_back(q);
        }
    if (ring_of_[t] >= 0 && ft(t).scope >= 0 &&
        static_cast<size_t>(ft(t).scope) < scope_open_.size())
      ++waiting_on_[t];
  }

  void make_ready(uint32_t t) {
    state_[t] = State::Running;  // queued for a core
    ready_.push_back(t);
  }

  // Where `size` bytes fit in the ring heap without straddling its end, or -1.
  static int64_t place(const Ring& r, int64_t size) {
    if (r.heap_used == 0)
      return size <= r.heap ? (r.heap_top + size <= r.heap ? r.heap_top : 0) : -1;
    const int64_t top = r.heap_top, tail = r.heap_tail;
    if (top >= tail) {
      if (r.heap - top >= size) return top;
      return tail > size ? 0 : -1;
    }
    return tail - top > size ? top : -1;
  }

  void end_scope(int32_t s) {
    scope_open_[static_cast<size_t>(s)] = 0;
    for (uint32_t t : scope_tasks_[static_cast<size_t>(s)]) release(t);
  }

  void release(uint32_t t) {
    if (--waiting_on_[t] == 0 && state_[t] == State::Completed) consume(t);
  }

  void consume(uint32_t t) {
    consumed_[t] = 1;
    const int32_t r = ring_of_[t];
    if (r < 0) return;
    // The watermark passes consecutive consumed tasks: their slots, heap and entries come back.
    Ring& x = rings_[static_cast<size_t>(r)];
    while (x.last_alive < x.next && consumed_[x.tasks[static_cast<size_t>(x.last_alive)]]) {
      const uint32_t q = x.tasks[static_cast<size_t>(x.last_alive)];
      const auto [off, size] = x.blocks.front();
      x.blocks.pop_front();
      x.heap_used -= size;
      x.heap_tail = off + size;
      if (x.heap_used == 0) x.heap_tail = x.heap_top;
      x.deps -= ft(q).fanin;
      const int64_t inl = rt_.value(Cap::fanin_inline, r).value_or(64);
      x.spills -= std::max<int64_t>(0, ft(q).fanin - inl);
      ++x.last_alive;
    }
  }

  // Early-dispatch tasks whose producers have all started stage their whole cohort on free cores;
  // then ready tasks' blocks go to free cores of their shape (a staged task's are there already),
  // and joins and kernel-less tasks complete at once.
  bool dispatch(double now) {
    bool moved = stage();
    const int64_t cap = rt_.value(Cap::ready_queue).value_or(65536);
    std::array<int64_t, 3> per{};
    for (uint32_t t : ready_) {
      const int32_t k = ring_of_[t] < 0 ? 3 : ft(t).kind;
      if (k >= 0 && k < 3 && ++per[static_cast<size_t>(k)] > cap && !ready_overflow_)
        ready_overflow_ = ir::Diagnostics{ir::error(
            "vm.overflow",
            fmt::format("the {} ready queue overflowed: {} tasks ready at once, it holds {} "
                        "(PTO's push fails when full)",
                        k == 0   ? "MIX"
                        : k == 1 ? "AIC"
                                 : "AIV",
                        per[static_cast<size_t>(k)], cap),
            ir::task_pointer(t))};
    }
    for (size_t k = 0; k < ready_.size();) {
      const uint32_t t = ready_[k];
      const std::array<int64_t, 2> need = per_block(t);
      if (need == std::array<int64_t, 2>{0, 0}) {
        ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(k));
        finish(t);
        moved = true;
        continue;
      }
      const size_t before = running_.size();
      if (staged_[t]) {  // the doorbell: its gated blocks run on the cores they hold
        staged_[t] = 0;
        running_.push_back({block_end(t, now), t, unfinished_[t]});
      }
      // As many of its blocks as free cores take, together (a wave).
      const int64_t k_fit = std::min(unplaced_[t], blocks_in(need, free_));
      if (k_fit > 0) {
        take(need, k_fit);
        unplaced_[t] -= k_fit;
        running_.push_back({block_end(t, now), t, k_fit});
      }
      if (running_.size() > before) {
        started_[t] = 1;
        moved = true;
      }
      if (unplaced_[t] > 0) {
        ++k;
      } else {
        ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(k));
      }
    }
    return moved;
  }

  // An early_dispatch task that is submitted but not ready, whose producers have all started,
  // takes cores for every block at once when they are free (all or nothing).
  bool stage() {
    bool moved = false;
    std::erase_if(unstaged_, [&](uint32_t t) { return state_[t] != State::Pending || staged_[t]; });
    for (uint32_t t : unstaged_) {
      bool started = true;
      for (uint32_t slot : g_.wait_slots(t))
        for (uint32_t q : g_.producers(slot))
          started = started && q != t && state_[q] != State::Unsubmitted &&
                    (started_[q] || state_[q] == State::Completed);
      const std::array<int64_t, 2> need = per_block(t);
      if (!started || blocks_in(need, free_) < unplaced_[t]) continue;
      take(need, unplaced_[t]);
      unplaced_[t] = 0;
      staged_[t] = 1;
      moved = true;
    }
    return moved;
  }

  void finish(uint32_t t) {
    state_[t] = State::Completed;
    for (uint32_t w : waiters_of_[t])  // its TNOTIFY: a waiter's blocks run on once all came
      if (--open_notifies_[w] == 0)
        for (Run& r : running_)
          if (r.task == w && r.end == kBlocked) r.end = now_ + o_.task_us;
    ++completed_;
    counters_.complete(t);
    for (uint32_t w : g_.consumers(t))
      if (state_[w] == State::Pending && counters_.ready(w)) make_ready(w);
    std::vector<uint32_t> holds = std::move(holds_[t]);
    for (uint32_t q : holds) release(q);
    if (waiting_on_[t] == 0) consume(t);
  }

  // Why ready task t has blocks no core takes: the cores of a type it needs are held by staged
  // early_dispatch cohorts that wait for it, or the chip has fewer than one block needs.
  std::string no_core(uint32_t t) const {
    static constexpr std::string_view kCore[] = {"AIC", "AIV"};
    const std::array<int64_t, 2> need = per_block(t);
    const size_t c = free_[0] < need[0] ? 0 : 1;
    std::vector<uint32_t> gated, blocked;
    int64_t held = 0;
    for (uint32_t q : early_)
      if (staged_[q] && per_block(q)[c] > 0) {
        gated.push_back(q);
        held += unfinished_[q] * per_block(q)[c];
      }
    for (const Run& r : running_)
      if (r.end == kBlocked && per_block(r.task)[c] > 0) {
        if (std::find(blocked.begin(), blocked.end(), r.task) == blocked.end())
          blocked.push_back(r.task);
        held += r.blocks * per_block(r.task)[c];
      }
    std::string why =
        fmt::format("{} has {} of {} block(s) left to place and no free {} core", task_name(p_, t),
                    unplaced_[t], std::max<int64_t>(1, ft(t).variant), kCore[c]);
    if (gated.empty() && blocked.empty())
      return why + fmt::format(": a block needs {}, the chip has {}", need[c], total_[c]);
    auto names = [&](const std::vector<uint32_t>& v) {
      std::string s;
      for (size_t k = 0; k < v.size() && k < 3; ++k)
        s += fmt::format("{}{}", k ? ", " : "", task_name(p_, v[k]));
      if (v.size() > 3) s += fmt::format(" and {} more", v.size() - 3);
      return s;
    };
    why += fmt::format(": {} of the {} are held", held, total_[c]);
    if (!blocked.empty())
      why += fmt::format(" by {} blocked in TWAIT for notifications not yet sent (simpler #1798)",
                         names(blocked));
    if (!gated.empty())
      why += fmt::format(
          "{} gated, by the early-dispatch cohorts of {}, staged while it ran and waiting for it "
          "to complete (simpler #2136)",
          blocked.empty() ? "," : "; and", names(gated));
    return why;
  }

  ir::Diagnostics stuck(double now) {
    std::string why;
    size_t at = std::min<size_t>(next_submit_, p_.tasks.size() - 1);  // the task it is about
    if (next_submit_ < p_.tasks.size()) {
      const auto t = static_cast<uint32_t>(next_submit_);
      const int32_t r = ring_of_[t];
      const Ring& x = rings_[static_cast<size_t>(r)];
      why = fmt::format(
          "the orchestrator cannot submit {} on ring {}: the ring's {} is full "
          "(task window {} of {} slots held, heap {} of {} bytes, dependency pool {} "
          "of {} entries)",
          task_name(p_, t), r, blocked_on_, x.next - x.last_alive, x.window, x.heap_used, x.heap,
          x.deps, x.dep_pool);
      if (x.last_alive < x.next) {
        const uint32_t head = x.tasks[static_cast<size_t>(x.last_alive)];
        const int32_t s = ft(head).scope;
        why += fmt::format("; the oldest live task, {}, {}", task_name(p_, head),
                           state_[head] != State::Completed ? "has not run yet"
                           : s >= 0 && scope_open_[static_cast<size_t>(s)]
                               ? fmt::format("is held by scope '{}' (depth {}), still open: its "
                                             "scope_end comes after tasks the blocked "
                                             "orchestrator cannot submit",
                                             rt_.scopes[static_cast<size_t>(s)].site,
                                             rt_.scopes[static_cast<size_t>(s)].depth)
                               : "waits for its consumers");
      }
    } else if (!ready_.empty()) {
      why = no_core(ready_.front());
      at = ready_.front();
    } else if (auto w = std::find_if(running_.begin(), running_.end(),
                                     [](const Run& r) { return r.end == kBlocked; });
               w != running_.end()) {
      const uint32_t t = w->task;
      at = t;
      uint32_t q = t;
      for (uint32_t x : notifiers_of_[t])
        if (state_[x] != State::Completed) q = x;
      why = fmt::format("{} blocks its core in TWAIT for the TNOTIFY of {}, which {}",
                        task_name(p_, t), task_name(p_, q),
                        q == t                        ? "it never sends"
                        : state_[q] == State::Pending ? counters_.why(q)
                                                      : "has not been submitted");
    } else {
      for (uint32_t t = 0; t < p_.tasks.size(); ++t)
        if (state_[t] == State::Pending) {
          why = fmt::format("{} {}", task_name(p_, t), counters_.why(t));
          at = t;
          break;
        }
    }
    return {
        ir::error("vm.deadlock",
                  fmt::format("{} graph stuck after {} of {} tasks (t = {} us): {}",
                              pto_ ? "PTO" : "orchestrated", completed_, p_.tasks.size(), now, why),
                  ir::task_pointer(at))};
  }
};

}  // namespace

ir::Result<ForeignRun> run_rings(const ir::Program& p, const ForeignOptions& o) {
  return Sim(p, o).run();
}

}  // namespace amk::vm::detail
