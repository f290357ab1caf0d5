// The schedule-graph toolkit: a frozen directed graph over dense ids (successors and predecessors
// as flat arrays split by offsets), its Kahn order and longest paths, and the graph of a program's
// counter dependencies plus (optionally) its SM queues. Every analysis that orders tasks uses it.
#pragma once

#include <cstdint>
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
  /// Number of edges.
  size_t edge_count() const { return succ_.size(); }
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

/// Which SM-queue edges a schedule graph adds to the counter dependencies.
enum class QueueEdges : uint8_t {
  None,      ///< dependencies only
  Assigned,  ///< each SM's serial queue: consecutive tasks with that `sm` (any value), in list
             ///< order; unassigned tasks are in none
  Loader,    ///< as AMK's loader and cost model run a placed program: an unassigned (or negative)
             ///< SM counts as SM 0
};

/// The tasks' schedule graph: an edge producer -> waiter for every counter a task waits on (AMK's
/// dependency edges, once per pair), and the SM-queue edges `queues` asks for. A task's
/// predecessors list its queue predecessor first, then producers by wait; its successors ascend.
Digraph schedule_graph(const Program& p, const Graph& g, QueueEdges queues);
/// Each task's successor in its SM's queue (as QueueEdges::Assigned orders them), or -1.
std::vector<int64_t> queue_successors(const Program& p);

/// Longest paths through an acyclic digraph: finish[v] = cost[v] + the largest finish of its
/// predecessors; `prev` names that predecessor (the first in Kahn order among equals).
template <class Cost>
struct LongestPath {
  std::vector<Cost> finish;
  std::vector<uint32_t> prev;  ///< UINT32_MAX where a path starts
  uint32_t end = UINT32_MAX;   ///< the lowest node with the largest finish (none when empty)
  bool acyclic = true;         ///< false: a cycle; nothing else is filled
  /// The longest path, first node to `end`.
  std::vector<uint32_t> path() const {
    std::vector<uint32_t> out;
    for (uint32_t v = end; v != UINT32_MAX; v = prev[v]) out.push_back(v);
    return {out.rbegin(), out.rend()};
  }
  /// The largest finish (Cost{} when empty).
  Cost length() const { return end == UINT32_MAX ? Cost{} : finish[end]; }
};

/// Longest paths by `cost` (any type with + and <: a time, a task count, a pair).
template <class Cost>
LongestPath<Cost> longest_path(const Digraph& d, std::span<const Cost> cost) {
  LongestPath<Cost> r;
  const std::vector<uint32_t> order = d.topo_order();
  if (order.size() != d.size()) {
    r.acyclic = false;
    return r;
  }
  r.finish.assign(cost.begin(), cost.end());
  r.prev.assign(d.size(), UINT32_MAX);
  for (uint32_t v : order)
    for (uint32_t s : d.succs(v))
      if (const Cost c = r.finish[v] + cost[s]; r.finish[s] < c) {
        r.finish[s] = c;
        r.prev[s] = v;
      }
  for (uint32_t v = 0; v < d.size(); ++v)
    if (r.end == UINT32_MAX || r.finish[r.end] < r.finish[v]) r.end = v;
  return r;
}

/// The longest path from each node to a sink, its own cost included (a list scheduler's upward
/// rank); empty when the graph has a cycle.
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

/// The longest dependency chain by task count (ties: the most est_bytes along it).
struct CriticalPath {
  uint64_t tasks = 0;
  int64_t est_bytes = 0;
  std::vector<uint32_t> path;  ///< first task to last; empty for no tasks or a cycle
};
/// The critical path of a program (none when its graph has a cycle).
CriticalPath critical_path(const Program& p, const Graph& g);

}  // namespace amk::ir
