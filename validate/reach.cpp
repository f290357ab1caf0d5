#include "validate/reach.h"

#include <algorithm>
#include <numeric>

namespace amk::validate {

void Reach::bind(const ir::Graph& g) {
  g_ = &g;
  cmask_.assign(g.num_slots(), 0);
  vmask_.resize(g.num_tasks());
  bit_.assign(g.num_tasks(), 0);
  clear();
}

void Reach::clear() {
  qsrc_.clear();
  qdst_.clear();
  ans_.clear();
}

void Reach::solve() {
  if (qsrc_.empty()) {  // nothing asked (most proofs' race checks): no sort over the tasks
    ans_.clear();
    work_ = 0;
    return;
  }
  const ir::Graph& g = *g_;
  const auto& pos = g.topo_pos();
  const auto& topo = g.topo_order();
  const size_t n = qsrc_.size();
  ans_.assign(n, 0);
  work_ = 0;
  // Counting sort of the queries by their source's topological position: O(queries + tasks).
  order_.resize(n);
  count_.assign(g.num_tasks() + 1, 0);
  for (size_t q = 0; q < n; ++q) ++count_[pos[qsrc_[q]] + 1];
  for (size_t p = 0; p < g.num_tasks(); ++p) count_[p + 1] += count_[p];
  for (size_t q = 0; q < n; ++q) order_[count_[pos[qsrc_[q]]]++] = static_cast<uint32_t>(q);
  size_t i = 0;
  while (i < n) {
    // Gather queries until 64 distinct sources are in the batch.
    batch_src_.clear();
    uint32_t lo = pos[qsrc_[order_[i]]], hi = 0;
    size_t j = i;
    for (; j < n; ++j) {
      uint32_t s = qsrc_[order_[j]];
      if (!bit_[s]) {
        if (batch_src_.size() == 64) break;
        batch_src_.push_back(s);
        bit_[s] = static_cast<uint8_t>(batch_src_.size());
      }
      hi = std::max(hi, pos[qdst_[order_[j]]]);
    }
    if (hi > lo) {
      // The sweep reads the arrays through locals: its stores (touched_ included) would
      // otherwise make the compiler load every vector's data pointer again at each step.
      const uint32_t* const topo_at = topo.data();
      const uint32_t* const woff = g.wait_slot_offsets().data();
      const uint32_t* const wlist = g.wait_slot_list().data();
      const uint32_t* const out_slot = g.out_slots().data();
      const uint8_t* const bit = bit_.data();
      uint64_t* const cmask = cmask_.data();
      uint64_t* const vmask = vmask_.data();
      for (uint32_t p = lo; p <= hi; ++p) {
        const uint32_t v = topo_at[p];
        uint64_t m = 0;
        for (uint32_t k = woff[v]; k < woff[v + 1]; ++k) m |= cmask[wlist[k]];
        vmask[v] = m;
        const uint64_t out = m | (bit[v] ? uint64_t{1} << (bit[v] - 1) : 0);
        if (out) {
          const uint32_t s = out_slot[v];
          if (!cmask[s]) touched_.push_back(s);
          cmask[s] |= out;
        }
      }
      work_ += hi - lo + 1;
      for (size_t k = i; k < j; ++k) {
        uint32_t q = order_[k];
        uint32_t s = qsrc_[q], d = qdst_[q];
        if (pos[d] > pos[s]) ans_[q] = static_cast<uint8_t>((vmask_[d] >> (bit_[s] - 1)) & 1);
      }
      for (uint32_t s : touched_) cmask_[s] = 0;
      touched_.clear();
    }
    for (uint32_t s : batch_src_) bit_[s] = 0;
    i = j;
  }
}

}  // namespace amk::validate
