// Batched happens-before queries over the topological order, in O(range) bit-parallel sweeps.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace amk::validate {

/// Answers "is `src` a strict ancestor of `dst`?" for a batch of queries on an acyclic graph.
/// Sources are taken 64 at a time in topological order; each batch is one forward sweep over the
/// positions between its first source and its last destination, OR-ing per-counter bit masks
/// (a task inherits the masks of the counters it waits on). Memory is O(tasks + counters).
class Reach {
 public:
  /// Binds the graph (sized once; memory is reused across programs).
  void bind(const ir::Graph& g);
  /// Drops all queries.
  void clear();
  /// Adds a query; returns its index.
  size_t add(uint32_t src, uint32_t dst) {
    qsrc_.push_back(src);
    qdst_.push_back(dst);
    return qsrc_.size() - 1;
  }
  /// Answers every pending query (with none, it returns at once: then it may run unbound).
  void solve();
  /// The answer of query i (after solve()).
  bool answer(size_t i) const { return ans_[i] != 0; }
  /// Number of queries.
  size_t size() const { return qsrc_.size(); }
  /// Sweep steps done by the last solve() (for benchmarks).
  uint64_t work() const { return work_; }

 private:
  const ir::Graph* g_ = nullptr;
  std::vector<uint32_t> qsrc_, qdst_, order_;
  std::vector<uint8_t> ans_;
  std::vector<uint64_t> cmask_, vmask_;
  std::vector<uint8_t> bit_;  // per task: 1 + bit index in the current batch, 0 when not a source
  std::vector<uint32_t> touched_, batch_src_, count_;
  uint64_t work_ = 0;
};

}  // namespace amk::validate
