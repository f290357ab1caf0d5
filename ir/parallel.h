// Internal: work cut into parts that run on several threads (the caller's among them), with
// every part run (on fewer threads when no more can be started) and its exception passed on.
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>

#include "ir/pool.h"

namespace amk::ir {

/// The most threads a parallel pass uses: the hardware's (1 when unknown), at most 8.
inline size_t max_threads() {
  return std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), 8);
}

/// Runs fn(part, begin, end) for the `parts` consecutive ranges of [0, n) on a Pool of `parts`
/// threads (this one among them); returns when all are done, rethrowing the first exception a
/// part threw.
template <class Fn>
void run_parts(size_t n, size_t parts, Fn&& fn) {
  if (parts <= 1) {
    fn(size_t{0}, size_t{0}, n);
    return;
  }
  Pool pool(parts);
  pool.run(parts, [&](size_t, size_t k) { fn(k, n * k / parts, n * (k + 1) / parts); });
}

}  // namespace amk::ir
