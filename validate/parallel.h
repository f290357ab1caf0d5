// Internal: a pass over a big program's tasks on several threads. The tasks are cut into
// consecutive ranges; each runs on its own thread (the first on the caller's), and the caller
// merges the parts in range order, so the result is the one a single thread gives.
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>

#include "ir/parallel.h"

namespace amk::validate {

/// How many ranges a pass over `n` items uses: `threads` (at most n) when set, else (0) one below
/// a size where threads pay off and the hardware's threads (at most 8) above it.
inline size_t parallel_parts(size_t n, unsigned threads) {
  if (threads > 0) return std::max<size_t>(1, std::min<size_t>(threads, n));
  constexpr size_t kMinItems = 1u << 15;  // below this, starting a thread costs what it saves
  if (n < 2 * kMinItems) return 1;
  const size_t hw = std::max(1u, std::thread::hardware_concurrency());
  return std::min({hw, n / kMinItems, size_t{8}});
}

using ir::run_parts;

}  // namespace amk::validate
