#include "ir/digraph.h"

#include <algorithm>
#include <unordered_map>

#include "ir/checked.h"
#include "ir/csr.h"

namespace amk::ir {
namespace {

// CSR of `edges` keyed by `key` (stable: a node's entries keep the edges' order).
void csr(uint32_t n, std::span<const std::pair<uint32_t, uint32_t>> edges, bool by_from,
         std::vector<uint32_t>& off, std::vector<uint32_t>& list) {
  std::vector<uint32_t> fill;
  build_csr(
      n,
      [&](auto emit) {
        for (const auto& [a, b] : edges) by_from ? emit(a, b) : emit(b, a);
      },
      off, list, fill);
}

// The latest task seen on each SM: dense for the SM ids a chip has, a map for absurd ones.
class LastOnSm {
 public:
  int64_t& operator[](int64_t sm) {
    if (sm >= 0 && sm < kDense) {
      const auto s = static_cast<size_t>(sm);
      if (dense_.size() <= s) dense_.resize(std::max(s + 1, 2 * dense_.size()), -1);
      return dense_[s];
    }
    return sparse_.try_emplace(sm, -1).first->second;
  }

 private:
  static constexpr int64_t kDense = 1 << 16;
  std::vector<int64_t> dense_;
  std::unordered_map<int64_t, int64_t> sparse_;
};

}  // namespace

Digraph Digraph::from_edges(uint32_t n, std::span<const std::pair<uint32_t, uint32_t>> edges) {
  Digraph d;
  csr(n, edges, true, d.succ_off_, d.succ_);
  csr(n, edges, false, d.pred_off_, d.pred_);
  return d;
}

std::vector<uint32_t> Digraph::topo_order() const {
  const uint32_t n = size();
  std::vector<uint32_t> indeg(n), order;
  order.reserve(n);
  for (uint32_t v = 0; v < n; ++v) {
    indeg[v] = pred_off_[v + 1] - pred_off_[v];
    if (!indeg[v]) order.push_back(v);
  }
  for (size_t head = 0; head < order.size(); ++head)
    for (uint32_t s : succs(order[head]))
      if (--indeg[s] == 0) order.push_back(s);
  return order;
}

ScheduleGraph::ScheduleGraph(const Program& p, const Graph& g, QueueEdges queues)
    : g_(g), kind_(queues) {
  assign(p, queues);
}

void ScheduleGraph::assign(const Program& p, QueueEdges queues) {
  kind_ = queues;
  placed_ = false;
  prev_.clear();
  next_.clear();
  order_.clear();
  pos_.clear();
  if (queues == QueueEdges::None) return;  // the counter graph's Kahn order is this one's
  const Graph& g = g_;
  const uint32_t n = g.num_tasks();
  prev_.assign(n, -1);
  next_.assign(n, -1);
  LastOnSm last;
  placed_ = true;
  for (uint32_t t = 0; t < n; ++t) {
    const auto& sm = p.tasks[t].sm;
    placed_ = placed_ && sm && *sm >= 0;
    if (queues == QueueEdges::Assigned && !sm) continue;
    int64_t& q = last[queues == QueueEdges::Loader ? std::max<int64_t>(0, sm.value_or(0)) : *sm];
    if (q >= 0) {
      prev_[t] = q;
      next_[static_cast<size_t>(q)] = t;
    }
    q = t;
  }
  kahn_order(g, prev_, next_, kahn_, order_);
  pos_.assign(n, UINT32_MAX);
  for (size_t k = 0; k < order_.size(); ++k) pos_[order_[k]] = static_cast<uint32_t>(k);
}

namespace {

// A chain's length in tasks, then its bytes (compared in that order).
struct Chain {
  uint64_t tasks = 0;
  int64_t bytes = 0;
  Chain operator+(const Chain& o) const {
    return {tasks + o.tasks, saturating_add(bytes, o.bytes)};
  }
  bool operator<(const Chain& o) const {
    return tasks != o.tasks ? tasks < o.tasks : bytes < o.bytes;
  }
};

}  // namespace

CriticalPath critical_path(const Program& p, const Graph& g) {
  CriticalPath cp;
  if (!g.acyclic() || p.tasks.empty()) return cp;
  std::vector<Chain> cost(p.tasks.size());
  for (size_t t = 0; t < p.tasks.size(); ++t) cost[t] = {1, p.tasks[t].est_bytes};
  const auto lp = longest_path<Chain>(ScheduleGraph(p, g, QueueEdges::None), cost);
  cp.tasks = lp.length().tasks;
  cp.est_bytes = lp.length().bytes;
  cp.path = lp.path();
  return cp;
}

}  // namespace amk::ir
