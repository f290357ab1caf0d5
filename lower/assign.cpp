#include "lower/assign.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "ir/digraph.h"
#include "targets/cost.h"

namespace amk::lower {

namespace {

// What a list schedule sees of the plan. Emit makes a consumer wait for every task of each
// producer group (all-join counters), so readiness is per group, exactly as the cost model
// charges it: a task starts when all of its producer groups and its SM's previous task are done.
struct Dag {
  std::vector<int64_t> group;     // task -> its counter group (index of Plan::group_notes)
  std::vector<uint32_t> off, in;  // CSR: the producer groups of each task (not its own)
  std::vector<double> time;       // the cost model's per-SM task time
  size_t groups = 0;
};

Dag build_dag(const Plan& p) {
  Dag d;
  const size_t n = p.tasks.size();
  d.groups = p.group_notes.size();
  d.group.resize(n);
  d.time.resize(n);
  d.off.assign(1, 0);
  d.off.reserve(n + 1);
  for (size_t i = 0; i < n; ++i) {
    d.group[i] = p.tasks[i].group;
    d.time[i] =
        targets::task_time_sm_us(p.program, p.tasks[i].task, p.target->record, p.knobs.depth);
    const size_t first = d.in.size();
    for (uint32_t dep : p.deps(i)) {
      const auto g = static_cast<uint32_t>(p.tasks[dep].group);
      if (static_cast<int64_t>(g) == d.group[i] ||
          std::find(d.in.begin() + static_cast<std::ptrdiff_t>(first), d.in.end(), g) != d.in.end())
        continue;
      d.in.push_back(g);
    }
    d.off.push_back(static_cast<uint32_t>(d.in.size()));
  }
  return d;
}

// The SMs' free times, with the earliest-free query of a list schedule in O(log SMs): a min
// segment tree over the SMs (padded with +inf leaves).
class FreeTimes {
 public:
  explicit FreeTimes(size_t sms) : leaves_(std::bit_ceil(std::max<size_t>(sms, 1))) {
    tree_.assign(2 * leaves_, std::numeric_limits<double>::infinity());
    for (size_t s = 0; s < sms; ++s) tree_[leaves_ + s] = 0.0;
    for (size_t i = leaves_ - 1; i >= 1; --i) tree_[i] = std::min(tree_[2 * i], tree_[2 * i + 1]);
  }
  double at(size_t s) const { return tree_[leaves_ + s]; }
  void set(size_t s, double t) {
    size_t i = leaves_ + s;
    tree_[i] = t;
    for (i /= 2; i >= 1; i /= 2) {  // an ancestor whose minimum stays leaves those above as well
      const double m = std::min(tree_[2 * i], tree_[2 * i + 1]);
      if (tree_[i] == m) break;
      tree_[i] = m;
    }
  }
  // The SM where a task ready at `ready` starts first, the lowest index among ties: the first SM
  // free by `ready`, else the first of the earliest free.
  size_t earliest(double ready) const {
    const double bound = tree_[1] <= ready ? ready : tree_[1];
    size_t i = 1;
    while (i < leaves_) i = tree_[2 * i] <= bound ? 2 * i : 2 * i + 1;
    return i - leaves_;
  }

 private:
  size_t leaves_;
  std::vector<double>
      tree_;  // heap order: node i has children 2i, 2i+1; leaves at [leaves_, 2 leaves_)
};

// Earliest-finish list scheduling of `order` (each SM runs its tasks in this order); `fixed[i]`
// >= 0 pins task i. Writes each task's SM and returns the makespan, which is the cost model's
// per-SM queue prediction for the emitted program.
double list_schedule(const Dag& d, const std::vector<uint32_t>& order,
                     const std::vector<int64_t>& fixed, size_t sms, std::vector<int64_t>& sm) {
  FreeTimes avail(sms);
  std::vector<double> group_fin(d.groups, 0.0);
  sm.assign(order.size(), 0);
  double makespan = 0;
  for (uint32_t i : order) {
    double ready = 0;
    for (uint32_t k = d.off[i]; k < d.off[i + 1]; ++k) ready = std::max(ready, group_fin[d.in[k]]);
    const size_t best = fixed[i] >= 0 ? static_cast<size_t>(fixed[i]) : avail.earliest(ready);
    const double fin = std::max(ready, avail.at(best)) + d.time[i];
    avail.set(best, fin);
    double& gf = group_fin[static_cast<size_t>(d.group[i])];
    gf = std::max(gf, fin);
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
  const Dag d = build_dag(p);
  std::vector<uint32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0u);
  std::vector<int64_t> sm, other;
  double best = list_schedule(d, ids, fixed, sms, sm);
  const char* how = "earliest finish in task order";
  std::vector<uint32_t> order;
  if (p.knobs.sm == Knobs::Sm::LoadBalance) {
    // load_balance keeps the best of three list schedules under the cost model, so it never
    // predicts worse than round_robin: earliest finish in task order, round robin, and
    // earliest finish in critical-path order (which renumbers the tasks).
    std::vector<int64_t> rr(n);
    for (size_t i = 0; i < n; ++i) rr[i] = static_cast<int64_t>(i % sms);
    if (const double t = list_schedule(d, ids, rr, sms, other); t < best) {
      best = t;
      sm.swap(other);
      how = "round robin";
    }
    std::vector<uint32_t> ranked = rank_order(d);
    if (!ranked.empty() && ranked != ids) {
      if (const double t = list_schedule(d, ranked, fixed, sms, other); t < best) {
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
