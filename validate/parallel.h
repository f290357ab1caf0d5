// Internal: a pass over a big program's tasks on several threads. The tasks are cut into
// consecutive ranges; each runs on its own thread (the first on the caller's), and the caller
// merges the parts in range order, so the result is the one a single thread gives.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

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

/// Runs fn(part, begin, end) for the `parts` consecutive ranges of [0, n), part 0 on this thread;
/// returns when all are done, rethrowing the first exception a part threw.
template <class Fn>
void run_parts(size_t n, size_t parts, Fn&& fn) {
  std::vector<std::exception_ptr> failed(parts);
  auto one = [&](size_t k) {
    try {
      fn(k, n * k / parts, n * (k + 1) / parts);
    } catch (...) {
      failed[k] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(parts);
  for (size_t k = 1; k < parts; ++k) {
    try {
      threads.emplace_back(one, k);
    } catch (const std::system_error&) {  // no thread to be had: this one runs it
      one(k);
    }
  }
  one(0);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
}

}  // namespace amk::validate
