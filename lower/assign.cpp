#include "lower/assign.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/assert.h"
#include "ir/digraph.h"
#include "ir/free_times.h"
#include "targets/cost.h"

namespace amk::lower {

// What a list schedule sees of the plan. Emit makes a consumer wait for every task of each
// producer group (all-join counters), so readiness is per group, exactly as the cost model
// charges it: a task starts when all of its producer groups and its SM's previous task are done.
// Its structure part (groups, producers, loads, the walk's program part) is a structure's and is
// built once for it; the times and the machine are the knobs' and are worked out for each run.
struct PlacementDag {
  bool built = false;              // the structure part is filled
  std::vector<int64_t> group;      // task -> its counter group (index of Plan::group_notes)
  std::vector<uint32_t> off, in;   // CSR: the producer groups of each task (not its own)
  std::vector<ir::TaskLoad> load;  // by task
  size_t groups = 0;
  std::vector<double> time;  // the runtime's time of a task by itself
  double cross = 0;          // a dependency across workers arrives this much later (the runtime's)
  double lag = 0;            // a task that waits on one starts this much after it
  // The runtime model's walk of the plan (its groups as counters), which scores placements.
  targets::WalkInput walk;
  std::optional<targets::Machine> machine;
  targets::Simulator sim;  // one walk's memory for all the placements scored
  // The makespan the runtime model predicts for the tasks on `sm` emitted in `order` (empty:
  // task order), as estimate() will for the emitted program.
  double score(const std::vector<int64_t>& sm, const std::vector<uint32_t>& order) {
    walk.worker.assign(sm.begin(), sm.end());
    if (order.empty()) {
      walk.order.resize(sm.size());
      std::iota(walk.order.begin(), walk.order.end(), 0u);
    } else {
      walk.order = order;
    }
    // The walk's program part is the structure's for the life of this object.
    return sim.run(walk, *machine, false, /*program_version=*/1).makespan;
  }
};

std::shared_ptr<PlacementDag> new_placement_dag() {
  return std::make_shared<PlacementDag>();
}

namespace {

using Dag = PlacementDag;

// Fills `d` for the plan: its structure part once, the times at the knobs' depth and threads.
void build_dag(const Plan& p, Dag& d) {
  const size_t n = p.tasks.size();
  if (!d.built) {
    d.groups = p.group_notes.size();
    d.group.resize(n);
    d.load.resize(n);
    d.off.assign(1, 0);
    d.off.reserve(n + 1);
    d.in.clear();
    targets::WalkInput& w = d.walk;
    w.slots = static_cast<uint32_t>(d.groups);
    w.resize_loads(n);
    w.out.clear();
    for (size_t i = 0; i < n; ++i) {
      const ir::Task& task = p.tasks[i].task;
      d.group[i] = p.tasks[i].group;
      d.load[i] = ir::task_load(p.program, task);
      w.set_load(i, d.load[i], task);
      w.out.push_back(static_cast<uint32_t>(d.group[i]));
      const size_t first = d.in.size();
      for (uint32_t dep : p.deps(i)) {
        const auto g = static_cast<uint32_t>(p.tasks[dep].group);
        if (static_cast<int64_t>(g) == d.group[i] ||
            std::find(d.in.begin() + static_cast<std::ptrdiff_t>(first), d.in.end(), g) !=
                d.in.end())
          continue;
        d.in.push_back(g);
      }
      d.off.push_back(static_cast<uint32_t>(d.in.size()));
    }
    w.waits = d.in;
    w.wait_off = d.off;
    d.built = true;
  }
  AMK_ASSERT(d.group.size() == n && d.groups == p.group_notes.size(),
             "assign_workers: a placement view of another structure");
  // Tasks are weighed by the runtime at the config's depth and threads (an attention tile's chain
  // depends on its warps; shared memory scales every stream alike, so the placement does not
  // read it).
  ir::ScheduleConfig knobs = ir::ScheduleConfig::defaults();
  knobs.pipelining_depth = ir::JsonValue(nlohmann::ordered_json(p.knobs.depth));
  knobs.threads_per_block = ir::JsonValue(nlohmann::ordered_json(p.knobs.threads));
  const targets::TaskCoster cost(
      p.program, p.target->record,
      p.opt.runtime ? *p.opt.runtime : targets::default_runtime(*p.target), &knobs);
  d.cross = cost.machine().remote;
  d.lag = cost.machine().poll_half + cost.machine().wait;
  d.machine = cost.machine();
  d.time.resize(n);
  for (size_t i = 0; i < n; ++i) d.time[i] = cost(d.load[i]);
}

// Earliest-finish list scheduling of `order` (each SM runs its tasks in this order) as the
// runtime model walks it: a task waits for its producer groups, each arriving `cross` later on
// another SM than the one that finished it last. `fixed[i]` >= 0 pins task i. Writes each task's
// SM and returns the makespan.
double list_schedule(const Dag& d, const std::vector<uint32_t>& order,
                     const std::vector<int64_t>& fixed, size_t sms, std::vector<int64_t>& sm) {
  ir::FreeTimes avail(sms);
  std::vector<targets::LatestFinish> group_fin(d.groups);
  sm.assign(order.size(), 0);
  double makespan = 0;
  // When task i could finish on SM s.
  auto finish_on = [&](uint32_t i, size_t s) {
    double ready = -std::numeric_limits<double>::infinity();
    for (uint32_t k = d.off[i]; k < d.off[i + 1]; ++k)
      ready = std::max(ready, group_fin[d.in[k]].ready_on(static_cast<uint32_t>(s), d.cross));
    return std::max(avail.at(s), ready + d.lag) + d.time[i];
  };
  for (uint32_t i : order) {
    size_t best;
    double fin;
    if (fixed[i] >= 0) {
      best = static_cast<size_t>(fixed[i]);
      fin = finish_on(i, best);
    } else {  // the first SM free when every producer's signal arrives, or the latest one's SM
      double arrive = 0, latest = -1;
      size_t near = 0;
      for (uint32_t k = d.off[i]; k < d.off[i + 1]; ++k) {
        const targets::LatestFinish& g = group_fin[d.in[k]];
        if (g.t1 == targets::LatestFinish::kNoTask) continue;
        arrive = std::max(arrive, g.f1 + d.cross + d.lag);
        if (g.f1 > latest) {
          latest = g.f1;
          near = g.w1;
        }
      }
      best = avail.earliest(arrive);
      fin = finish_on(i, best);
      if (latest >= 0 && near != best)
        if (const double f = finish_on(i, near); f < fin) {
          fin = f;
          best = near;
        }
    }
    avail.set(best, fin);
    group_fin[static_cast<size_t>(d.group[i])].add(fin, static_cast<uint32_t>(best), i);
    makespan = std::max(makespan, fin);
    sm[i] = static_cast<int64_t>(best);
  }
  return makespan;
}

// Critical-path priority order: groups by upward rank (the longest chain of group times from a
// group to the end), highest first; a group's tasks keep their relative order. Every producer
// group ranks above its consumers, so the order is topological. Empty on a group cycle.
std::vector<uint32_t> rank_order(const Dag& d) {
  const size_t n = d.group.size();
  std::vector<double> slowest(d.groups, 0.0);        // a group's longest task
  std::vector<std::pair<uint32_t, uint32_t>> edges;  // producer group -> consumer group
  for (size_t i = 0; i < n; ++i) {
    const auto g = static_cast<uint32_t>(d.group[i]);
    slowest[g] = std::max(slowest[g], d.time[i]);
    for (uint32_t k = d.off[i]; k < d.off[i + 1]; ++k) edges.emplace_back(d.in[k], g);
  }
  const ir::Digraph groups = ir::Digraph::from_edges(static_cast<uint32_t>(d.groups), edges);
  const std::vector<double> rank = ir::longest_tail<double>(groups, slowest);
  if (rank.empty()) return {};
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return rank[static_cast<size_t>(d.group[a])] > rank[static_cast<size_t>(d.group[b])];
  });
  return order;
}

}  // namespace

ir::Status assign_workers(Plan& p) {
  if (p.opt.amk_compat || p.opt.reference) return {};
  const size_t n = p.tasks.size();
  const auto sms = static_cast<size_t>(p.target->num_workers());
  if (p.knobs.sm == Knobs::Sm::RoundRobin) {
    p.sm.resize(n);
    for (size_t i = 0; i < n; ++i) p.sm[i] = static_cast<int64_t>(i % sms);
    return {};
  }
  std::vector<int64_t> fixed(n, -1);
  for (auto [task, sm] : p.knobs.sm_map) {
    if (task >= static_cast<int64_t>(n))
      return ir::error("config.invalid",
                       fmt::format("task {} does not exist (the program has {} tasks)", task, n),
                       fmt::format("/config/sm_assignment/{}", task));
    fixed[static_cast<size_t>(task)] = sm;
  }
  std::optional<Dag> own;  // without a view kept for the structure
  Dag& d = p.dag ? *p.dag : own.emplace();
  build_dag(p, d);
  std::vector<uint32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0u);
  std::vector<int64_t> sm, other;
  double best = list_schedule(d, ids, fixed, sms, sm);
  const char* how = "earliest finish in task order";
  std::vector<uint32_t> order;
  if (p.knobs.sm == Knobs::Sm::LoadBalance) {
    // load_balance keeps the best of three placements by the runtime model's prediction, so it
    // never predicts worse than round_robin: earliest finish in task order, round robin, and
    // earliest finish in critical-path order (which renumbers the tasks).
    best = d.score(sm, {});
    std::vector<int64_t> rr(n);
    for (size_t i = 0; i < n; ++i) rr[i] = static_cast<int64_t>(i % sms);
    if (const double t = d.score(rr, {}); t < best) {
      best = t;
      sm = rr;
      how = "round robin";
    }
    std::vector<uint32_t> ranked = rank_order(d);
    if (!ranked.empty() && ranked != ids) {
      list_schedule(d, ranked, fixed, sms, other);
      if (const double t = d.score(other, ranked); t < best) {
        best = t;
        sm.swap(other);
        how = "earliest finish in critical-path order";
        order = std::move(ranked);
      }
    }
  }
  p.sm = std::move(sm);
  if (!order.empty()) {
    p.pos.resize(n);
    for (size_t k = 0; k < n; ++k) p.pos[order[k]] = static_cast<uint32_t>(k);
    p.order = std::move(order);
  }
  p.log.push_back(fmt::format("  assign: {}, SM queues {:.1f} us", how, best));
  return {};
}

}  // namespace amk::lower
