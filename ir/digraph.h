// The schedule-graph toolkit: the order and longest paths of a program's tasks over counter
// dependencies plus (optionally) SM-queue order, factored through counters as ir::Graph stores
// them (an all-join of n producers and m waiters costs n + m, never n x m), and a small frozen
// directed graph over dense ids for other DAGs (the lowering's counter groups).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/program.h"

namespace amk::ir {

/// A directed graph frozen at construction. Each node's successors keep the order their edges
/// were given in, and so do its predecessors.
class Digraph {
 public:
  /// Builds from (from, to) edges over nodes [0, n); parallel edges are kept.
  static Digraph from_edges(uint32_t n, std::span<const std::pair<uint32_t, uint32_t>> edges);
  /// Number of nodes.
  uint32_t size() const { return static_cast<uint32_t>(succ_off_.size() - 1); }
  /// Successors of `v`.
  std::span<const uint32_t> succs(uint32_t v) const {
    return {succ_.data() + succ_off_[v], succ_off_[v + 1] - succ_off_[v]};
  }
  /// Predecessors of `v`.
  std::span<const uint32_t> preds(uint32_t v) const {
    return {pred_.data() + pred_off_[v], pred_off_[v + 1] - pred_off_[v]};
  }
  /// Kahn order (FIFO seeded with the zero-indegree nodes ascending, successors appended in their
  /// order); shorter than size() when the graph has a cycle.
  std::vector<uint32_t> topo_order() const;

 private:
  std::vector<uint32_t> succ_off_{0}, succ_, pred_off_{0}, pred_;
};

/// The longest path from each node of a Digraph to a sink, its own cost included (a list
/// scheduler's upward rank); empty when the graph has a cycle.
template <class Cost>
std::vector<Cost> longest_tail(const Digraph& d, std::span<const Cost> cost) {
  const std::vector<uint32_t> order = d.topo_order();
  if (order.size() != d.size()) return {};
  std::vector<Cost> tail(d.size());
  for (size_t k = order.size(); k-- > 0;) {
    const uint32_t v = order[k];
    Cost below{};
    for (uint32_t s : d.succs(v))
      if (below < tail[s]) below = tail[s];
    tail[v] = cost[v] + below;
  }
  return tail;
}

/// Which SM-queue edges a schedule graph adds to the counter dependencies.
enum class QueueEdges : uint8_t {
  None,      ///< dependencies only
  Assigned,  ///< each SM's serial queue: consecutive tasks with that `sm` (any value), in list
             ///< order; unassigned tasks are in none
  Loader,    ///< as AMK's loader and cost model run a placed program: an unassigned (or negative)
             ///< SM counts as SM 0
};

/// The tasks of a program as a schedule: an edge producer -> waiter for every counter a task waits
/// on (AMK's dependency edges, read from the program's ir::Graph) and the SM-queue edges `queues`
/// asks for, with the Kahn order over both.
class ScheduleGraph {
 public:
  /// `g` must be the graph of `p` and outlive this object.
  ScheduleGraph(const Program& p, const Graph& g, QueueEdges queues);
  /// Builds again in place, reusing the memory, for `p` whose graph is now `graph()`.
  void assign(const Program& p, QueueEdges queues);
  /// Kahn order (FIFO seeded with ascending zero-indegree tasks; a task's consumers ascending,
  /// then its queue successor); shorter than the task count on a cycle. Without queue edges it is
  /// the counter graph's own order (the same Kahn run), not computed again.
  const std::vector<uint32_t>& order() const {
    return kind_ != QueueEdges::None ? order_ : g_.topo_order();
  }
  /// Position of each task in order() (UINT32_MAX for a task not in it).
  const std::vector<uint32_t>& positions() const {
    return kind_ != QueueEdges::None ? pos_ : g_.topo_pos();
  }
  /// True when every task is in order().
  bool acyclic() const { return order().size() == g_.num_tasks(); }
  /// The queue edges it was built with.
  QueueEdges queues() const { return kind_; }
  /// Whether every task has an SM >= 0, where its queues then stand for both kinds (false for
  /// QueueEdges::None).
  bool every_task_placed() const { return placed_; }
  /// A task's predecessor in its SM's queue, or -1.
  int64_t queue_prev(uint32_t t) const { return prev_.empty() ? -1 : prev_[t]; }
  /// A task's successor in its SM's queue, or -1.
  int64_t queue_next(uint32_t t) const { return next_.empty() ? -1 : next_[t]; }
  /// Calls f(q) for every predecessor of t: its queue predecessor first, then the producers of
  /// each counter it waits on (in wait order, each producer in list order).
  template <class F>
  void for_each_pred(uint32_t t, F&& f) const {
    if (const int64_t q = queue_prev(t); q >= 0) f(static_cast<uint32_t>(q));
    for (uint32_t s : g_.wait_slots(t))
      for (uint32_t q : g_.producers(s)) f(q);
  }
  /// The program's counter graph.
  const Graph& graph() const { return g_; }

 private:
  const Graph& g_;
  QueueEdges kind_;
  bool placed_ = false;
  std::vector<int64_t> prev_, next_;
  std::vector<uint32_t> order_, pos_;
  KahnScratch kahn_;
};

/// Longest paths: finish[v] = cost[v] + the largest finish of its predecessors; `prev` names
/// that predecessor (the earliest in Kahn order among equals).
template <class Cost>
struct LongestPath {
  std::vector<Cost> finish;
  std::vector<uint32_t> prev;  ///< UINT32_MAX where a path starts
  uint32_t end = UINT32_MAX;   ///< the lowest task with the largest finish (none when empty)
  bool acyclic = true;         ///< false: a cycle; nothing else is filled
  /// The longest path, first task to `end`.
  std::vector<uint32_t> path() const {
    std::vector<uint32_t> out;
    for (uint32_t v = end; v != UINT32_MAX; v = prev[v]) out.push_back(v);
    return {out.rbegin(), out.rend()};
  }
  /// The largest finish (Cost{} when empty).
  Cost length() const { return end == UINT32_MAX ? Cost{} : finish[end]; }
};

/// Longest paths through a schedule graph by `cost` (any type with + and <: a time, a task
/// count, a pair), in O(tasks + waits): a counter's producers are folded into their best finish.
template <class Cost>
LongestPath<Cost> longest_path(const ScheduleGraph& sg, std::span<const Cost> cost) {
  LongestPath<Cost> r;
  if (!sg.acyclic()) {
    r.acyclic = false;
    return r;
  }
  const Graph& g = sg.graph();
  const std::vector<uint32_t>& order = sg.order();
  const std::vector<uint32_t>& pos = sg.positions();
  const size_t n = order.size();
  // Per counter slot: its best producer so far (the earliest in Kahn order among equals).
  std::vector<uint32_t> best(g.num_slots(), UINT32_MAX);
  r.finish.assign(cost.begin(), cost.end());
  r.prev.assign(n, UINT32_MAX);
  auto better = [&](uint32_t a, uint32_t b) {  // a's finish beats b's (ties: earlier in order)
    return b == UINT32_MAX || r.finish[b] < r.finish[a] ||
           (!(r.finish[a] < r.finish[b]) && pos[a] < pos[b]);
  };
  for (uint32_t v : order) {
    uint32_t from = UINT32_MAX;
    if (const int64_t q = sg.queue_prev(v); q >= 0) from = static_cast<uint32_t>(q);
    for (uint32_t s : g.wait_slots(v))
      if (best[s] != UINT32_MAX && better(best[s], from)) from = best[s];
    if (from != UINT32_MAX) {
      r.finish[v] = r.finish[from] + cost[v];
      r.prev[v] = from;
    }
    uint32_t& b = best[g.out_slot(v)];
    if (better(v, b)) b = v;
  }
  for (uint32_t v = 0; v < n; ++v)
    if (r.end == UINT32_MAX || r.finish[r.end] < r.finish[v]) r.end = v;
  return r;
}

/// The longest path's length for each of N costs in one walk of the order (what a cost model
/// reads: no path, no ties to break); nullopt on a cycle. Each is longest_path(sg,
/// costs[k]).length(); costs that are not all finite are handed to longest_path itself.
template <size_t N>
std::optional<std::array<double, N>> longest_lengths(
    const ScheduleGraph& sg, const std::array<std::span<const double>, N>& costs) {
  if (!sg.acyclic()) return std::nullopt;
  std::array<double, N> out{};
  for (const std::span<const double>& c : costs)
    if (!std::all_of(c.begin(), c.end(), [](double x) { return std::isfinite(x); })) {
      for (size_t k = 0; k < N; ++k) out[k] = longest_path<double>(sg, costs[k]).length();
      return out;
    }
  const Graph& g = sg.graph();
  constexpr double kNone = -std::numeric_limits<double>::infinity();  // finishes are finite
  std::array<double, N> none;
  none.fill(kNone);
  std::vector<std::array<double, N>> finish(g.num_tasks()), best(g.num_slots(), none);
  out.fill(kNone);
  for (uint32_t v : sg.order()) {
    std::array<double, N> from = none;  // the largest finish of v's predecessors
    if (const int64_t q = sg.queue_prev(v); q >= 0) from = finish[static_cast<size_t>(q)];
    for (uint32_t s : g.wait_slots(v))
      for (size_t k = 0; k < N; ++k) from[k] = std::max(from[k], best[s][k]);
    std::array<double, N>& f = finish[v];
    std::array<double, N>& b = best[g.out_slot(v)];
    for (size_t k = 0; k < N; ++k) {
      f[k] = from[k] == kNone ? costs[k][v] : from[k] + costs[k][v];
      b[k] = std::max(b[k], f[k]);
      out[k] = std::max(out[k], f[k]);
    }
  }
  if (sg.order().empty()) out.fill(0.0);
  return out;
}

/// The longest dependency chain by task count (ties: the most est_bytes along it).
struct CriticalPath {
  uint64_t tasks = 0;
  int64_t est_bytes = 0;
  std::vector<uint32_t> path;  ///< first task to last; empty for no tasks or a cycle
};
/// The critical path of a program (none when its graph has a cycle).
CriticalPath critical_path(const Program& p, const Graph& g);

}  // namespace amk::ir
