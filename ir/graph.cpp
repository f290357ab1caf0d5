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
          g.tw_.end())
        g.tw_.push_back(s);
    }
    g.tw_off_[t + 1] = static_cast<uint32_t>(g.tw_.size());
  }
  const uint32_t n_slots = g.num_slots();

  // Producers per slot (list order).
  build_csr(
      n_slots,
      [&](auto emit) {
        for (uint32_t t = 0; t < n_tasks; ++t) emit(g.out_slot_[t], t);
      },
      g.prod_off_, g.prod_, g.fill_);
  // Waiters per slot: tasks visited ascending, each slot once per task -> sorted and unique.
  build_csr(
      n_slots,
      [&](auto emit) {
        for (uint32_t t = 0; t < n_tasks; ++t)
          for (uint32_t s : g.wait_slots(t)) emit(s, t);
      },
      g.wait_off_, g.waiters_, g.fill_);

  // In-degrees (= AMK's indeg) and the edge count.
  std::vector<uint64_t>& indeg = g.indeg_;
  indeg.assign(n_tasks, 0);
  for (uint32_t t = 0; t < n_tasks; ++t)
    for (uint32_t s : g.wait_slots(t)) indeg[t] += g.prod_off_[s + 1] - g.prod_off_[s];
  for (uint64_t d : indeg) g.edges_ += d;

  // Kahn with a FIFO queue seeded by ascending zero-indegree ids (AMK's topological_order).
  g.topo_.reserve(n_tasks);
  for (uint32_t t = 0; t < n_tasks; ++t)
    if (indeg[t] == 0) g.topo_.push_back(t);
  for (size_t head = 0; head < g.topo_.size(); ++head) {
    uint32_t n = g.topo_[head];
    for (uint32_t m : g.consumers(n))
      if (--indeg[m] == 0) g.topo_.push_back(m);
  }
  g.topo_pos_.assign(n_tasks, std::numeric_limits<uint32_t>::max());
  for (uint32_t i = 0; i < g.topo_.size(); ++i) g.topo_pos_[g.topo_[i]] = i;
}

}  // namespace amk::ir
