// Compressed sparse rows by counting sort: the one builder of amk's flat adjacency lists (a
// buffer's tasks, a counter's producers and waiters, a node's successors).
#pragma once

#include <cstdint>
#include <span>
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

/// build_csr for the entries (keys[i], value_of(i)) in index order, whose equal keys come in runs
/// (a counter's producers and waiters are runs of consecutive tasks): the count pass finds the
/// runs once and keeps where each ends (`run_ends`, scratch), and each pass keeps a run's count or
/// place in a register and writes it back once, instead of once an entry.
template <class ValueOf>
void build_csr_runs(size_t n_keys, std::span<const uint32_t> keys, ValueOf&& value_of,
                    std::vector<uint32_t>& off, std::vector<uint32_t>& list,
                    std::vector<uint32_t>& fill, std::vector<uint32_t>& run_ends) {
  off.assign(n_keys + 1, 0);
  run_ends.clear();
  for (size_t i = 0, j = 0; i < keys.size(); i = j) {
    for (j = i + 1; j < keys.size() && keys[j] == keys[i];) ++j;
    off[keys[i] + 1] += static_cast<uint32_t>(j - i);
    run_ends.push_back(static_cast<uint32_t>(j));
  }
  for (size_t k = 0; k < n_keys; ++k) off[k + 1] += off[k];
  list.resize(off[n_keys]);
  fill.assign(off.begin(), off.end() - 1);
  size_t i = 0;
  for (const uint32_t j : run_ends) {
    const uint32_t k = keys[i];
    uint32_t at = fill[k];
    for (; i < j; ++i) list[at++] = value_of(i);
    fill[k] = at;
  }
}

/// Task ids per buffer as CSR, in task order, each as often as the task names the buffer.
struct BufferTasks {
  std::vector<uint32_t> off, list, fill;  // `fill`: scratch
  /// The tasks of buffer `b` (a valid id).
  std::span<const uint32_t> of(int64_t b) const {
    const auto i = static_cast<size_t>(b);
    return {list.data() + off[i], off[i + 1] - off[i]};
  }
};
/// Fills, in one pass over the tasks, any of: the tasks that read each buffer (`readers`), that
/// write it (`writers`), that read or write it (`users`: a task's reads before its writes).
/// Buffer ids out of range are skipped.
void index_buffer_tasks(const Program& p, BufferTasks* readers, BufferTasks* writers,
                        BufferTasks* users);

}  // namespace amk::ir
