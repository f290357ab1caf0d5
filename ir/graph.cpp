#include "ir/graph.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "ir/csr.h"

namespace amk::ir {

Graph Graph::build(const Program& p) {
  Graph g;
  g.assign(p);
  return g;
}

void Graph::assign(const Program& p) {
  Graph& g = *this;
  g.tw_.clear();
  g.tw_task_.clear();
  g.topo_.clear();
  g.edges_ = 0;
  const auto n_tasks = static_cast<uint32_t>(p.tasks.size());
  g.num_counters_ = static_cast<uint32_t>(p.counters.size());
  g.slot_id_.resize(g.num_counters_);
  for (uint32_t c = 0; c < g.num_counters_; ++c) g.slot_id_[c] = c;
  std::unordered_map<int64_t, uint32_t> virt;
  auto slot_of = [&](int64_t id) -> uint32_t {
    if (id >= 0 && id < static_cast<int64_t>(g.num_counters_)) return static_cast<uint32_t>(id);
    auto [it, fresh] = virt.try_emplace(id, static_cast<uint32_t>(g.slot_id_.size()));
    if (fresh) g.slot_id_.push_back(id);
    return it->second;
  };

  // Out slots and each task's distinct wait slots.
  g.out_slot_.resize(n_tasks);
  g.tw_off_.assign(n_tasks + 1, 0);
  for (uint32_t t = 0; t < n_tasks; ++t) {
    const Task& task = p.tasks[t];
    g.out_slot_[t] = slot_of(task.out_counter);
    size_t start = g.tw_.size();
    for (const Wait& w : task.waits) {
      uint32_t s = slot_of(w.counter);
      if (std::find(g.tw_.begin() + static_cast<std::ptrdiff_t>(start), g.tw_.end(), s) ==
          g.tw_.end()) {
        g.tw_.push_back(s);
        g.tw_task_.push_back(t);
      }
    }
    g.tw_off_[t + 1] = static_cast<uint32_t>(g.tw_.size());
  }
  const uint32_t n_slots = g.num_slots();

  // Producers per slot in list order, and waiters per slot ascending and unique (tw_ holds each
  // task's distinct wait slots, task after task).
  build_csr_runs(
      n_slots, g.out_slot_, [](size_t t) { return static_cast<uint32_t>(t); }, g.prod_off_, g.prod_,
      g.fill_, g.run_ends_);
  build_csr_runs(
      n_slots, g.tw_, [&](size_t e) { return g.tw_task_[e]; }, g.wait_off_, g.waiters_, g.fill_,
      g.run_ends_);

  // The edges: each waiter of a slot from each of its producers (AMK's indeg summed).
  for (uint32_t k = 0; k < n_slots; ++k)
    g.edges_ +=
        uint64_t{g.prod_off_[k + 1] - g.prod_off_[k]} * (g.wait_off_[k + 1] - g.wait_off_[k]);

  kahn_order(g, {}, {}, g.kahn_, g.topo_);
  g.topo_pos_.assign(n_tasks, std::numeric_limits<uint32_t>::max());
  for (uint32_t i = 0; i < g.topo_.size(); ++i) g.topo_pos_[g.topo_[i]] = i;
}

void kahn_order(const Graph& g, std::span<const int64_t> prev, std::span<const int64_t> next,
                KahnScratch& s, std::vector<uint32_t>& order) {
  // Slot by slot: a task's in-degree reaches zero when the last producer of the last of its
  // slots to complete is popped (or its queue predecessor, after that), so counting the producers
  // each slot has left and the slots (with producers) each task still waits on pushes the same
  // tasks in the same order as AMK's edge-by-edge count, in O(tasks + waits) instead of O(edges).
  const uint32_t n = g.num_tasks(), n_slots = g.num_slots();
  std::vector<uint32_t>& left = s.left;
  left.resize(n_slots);
  for (uint32_t k = 0; k < n_slots; ++k) left[k] = static_cast<uint32_t>(g.producers(k).size());
  std::vector<uint32_t>& pending = s.pending;
  pending.assign(n, 0);
  for (uint32_t t = 0; t < n; ++t) {
    for (uint32_t slot : g.wait_slots(t)) pending[t] += left[slot] != 0;
    if (!prev.empty() && prev[t] >= 0) ++pending[t];
  }
  order.clear();
  order.reserve(n);
  for (uint32_t t = 0; t < n; ++t)
    if (pending[t] == 0) order.push_back(t);
  for (size_t head = 0; head < order.size(); ++head) {
    const uint32_t v = order[head];
    if (--left[g.out_slot(v)] == 0)
      for (uint32_t m : g.waiters(g.out_slot(v)))
        if (--pending[m] == 0) order.push_back(m);
    if (!next.empty() && next[v] >= 0 && --pending[static_cast<size_t>(next[v])] == 0)
      order.push_back(static_cast<uint32_t>(next[v]));
  }
}

}  // namespace amk::ir
