// The frozen producer -> consumer adjacency (AMK's dependency_edges), factored through counters.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ir/program.h"

namespace amk::ir {

/// The memory kahn_order works in (kept to reuse it).
struct KahnScratch {
  std::vector<uint32_t> left, pending;
};

/// CSR adjacency built once per program. Edges p -> t exist for every task t waiting on a counter
/// that p increments (self-edges kept). Each task's consumers are the sorted unique waiters of its
/// out_counter, so the edge set is stored in O(tasks + waits) even for wide all-joins. Counter ids
/// that name no counter get their own "slot" so they still connect producers and waiters.
class Graph {
 public:
  /// Builds the adjacency and AMK's Kahn order (FIFO, seeded with ascending zero-indegree ids).
  static Graph build(const Program& p);
  /// Rebuilds in place for another program, reusing the memory already allocated.
  void assign(const Program& p);

  /// Number of tasks.
  uint32_t num_tasks() const { return static_cast<uint32_t>(out_slot_.size()); }
  /// Number of counter slots: the program's counters, then one per missing id referenced.
  uint32_t num_slots() const { return static_cast<uint32_t>(slot_id_.size()); }
  /// The counter id a slot stands for.
  int64_t slot_counter(uint32_t slot) const { return slot_id_[slot]; }
  /// True when the slot is one of the program's counters.
  bool slot_exists(uint32_t slot) const { return slot < num_counters_; }
  /// The slot of a task's out_counter.
  uint32_t out_slot(uint32_t task) const { return out_slot_[task]; }
  /// Tasks incrementing a slot, in list order.
  std::span<const uint32_t> producers(uint32_t slot) const { return span(prod_off_, prod_, slot); }
  /// Tasks waiting on a slot, ascending, each once.
  std::span<const uint32_t> waiters(uint32_t slot) const { return span(wait_off_, waiters_, slot); }
  /// Consumers of a task (AMK's adj[task]): the waiters of its out_counter.
  std::span<const uint32_t> consumers(uint32_t task) const { return waiters(out_slot_[task]); }
  /// Distinct slots a task waits on, in the order of its first wait on each.
  std::span<const uint32_t> wait_slots(uint32_t task) const { return span(tw_off_, tw_, task); }
  /// Every task's out slot, by task.
  std::span<const uint32_t> out_slots() const { return out_slot_; }
  /// wait_slots of every task as one CSR: the offsets (num_tasks() + 1 of them) into the list.
  std::span<const uint32_t> wait_slot_offsets() const { return tw_off_; }
  /// wait_slots of every task, one after another (see wait_slot_offsets).
  std::span<const uint32_t> wait_slot_list() const { return tw_; }
  /// Number of producer -> consumer edges (unique pairs, self-edges included).
  uint64_t edge_count() const { return edges_; }
  /// Kahn order; shorter than num_tasks() when the graph has a cycle.
  const std::vector<uint32_t>& topo_order() const { return topo_; }
  /// True when every task is in topo_order().
  bool acyclic() const { return topo_.size() == out_slot_.size(); }
  /// Position of each task in topo_order() (UINT32_MAX for tasks on or behind a cycle).
  const std::vector<uint32_t>& topo_pos() const { return topo_pos_; }

 private:
  static std::span<const uint32_t> span(const std::vector<uint32_t>& off,
                                        const std::vector<uint32_t>& v, uint32_t i) {
    return {v.data() + off[i], off[i + 1] - off[i]};
  }
  uint32_t num_counters_ = 0;
  std::vector<int64_t> slot_id_;
  std::vector<uint32_t> out_slot_;
  std::vector<uint32_t> prod_off_, prod_;
  std::vector<uint32_t> wait_off_, waiters_;
  std::vector<uint32_t> tw_off_, tw_;
  std::vector<uint32_t> topo_, topo_pos_;
  std::vector<uint32_t> tw_task_;  // the task of each tw_ entry (scratch)
  KahnScratch kahn_;
  std::vector<uint32_t> fill_, run_ends_;  // build_csr_runs' scratch
  uint64_t edges_ = 0;
};

/// AMK's Kahn order (a FIFO queue seeded by ascending zero-indegree ids; a popped task's consumers
/// visited in order, then its queue successor) over `g`'s edges and the queue edges
/// prev[t] -> t -> next[t] (-1: none; empty spans: no queue edges), into `order`; shorter than
/// the tasks when there is a cycle.
void kahn_order(const Graph& g, std::span<const int64_t> prev, std::span<const int64_t> next,
                KahnScratch& s, std::vector<uint32_t>& order);

}  // namespace amk::ir
