// Compressed sparse rows by counting sort: the one builder of amk's flat adjacency lists (a
// buffer's tasks, a counter's producers and waiters, a node's successors).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/program.h"

namespace amk::ir {

/// Fills `off` (n_keys + 1 offsets) and `list` with the entries `each(emit)` gives, grouped by
/// key: `each` calls emit(key, value) for every entry, keys in [0, n_keys), in the same order
/// both times it is called (twice: count, then place), and a key's entries keep that order.
/// `fill` is scratch (kept to reuse its memory).
template <class Each>
void build_csr(size_t n_keys, Each&& each, std::vector<uint32_t>& off, std::vector<uint32_t>& list,
               std::vector<uint32_t>& fill) {
  off.assign(n_keys + 1, 0);
  each([&](size_t key, uint32_t) { ++off[key + 1]; });
  for (size_t k = 0; k < n_keys; ++k) off[k + 1] += off[k];
  list.resize(off[n_keys]);
  fill.assign(off.begin(), off.end() - 1);
  each([&](size_t key, uint32_t value) { list[fill[key]++] = value; });
}

/// Task ids per buffer as CSR (off, list) in task order: the tasks that read (`reads`) and/or
/// write (`writes`) each buffer, a task's reads before its writes, each as often as it names the
/// buffer; buffer ids out of range are skipped. `fill` is scratch.
void index_buffer_tasks(const Program& p, bool reads, bool writes, std::vector<uint32_t>& off,
                        std::vector<uint32_t>& list, std::vector<uint32_t>& fill);

}  // namespace amk::ir
