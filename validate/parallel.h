// Internal: a pass over a big program's tasks on several threads. The tasks are cut into
// consecutive ranges; each runs on its own thread (the first on the caller's), and the caller
// merges the parts in range order, so the result is the one a single thread gives.
#pragma once

#include <algorithm>
#include <cstddef>

#include "ir/parallel.h"

namespace amk::validate {

/// How many ranges a pass over `n` items uses: `threads` (at most n) when set, else (0) one below
/// a size where threads pay off and ir::max_threads() above it.
inline size_t parallel_parts(size_t n, unsigned threads) {
  if (threads > 0) return std::max<size_t>(1, std::min<size_t>(threads, n));
  constexpr size_t kMinItems = 1u << 15;  // below this, starting a thread costs what it saves
  if (n < 2 * kMinItems) return 1;
  return std::min(ir::max_threads(), n / kMinItems);
}

using ir::run_parts;

}  // namespace amk::validate
