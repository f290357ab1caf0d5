// Internal: work cut into parts that run on several threads, the first on the caller's, with
// every part run (inline when no thread can be started) and its exception passed on.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace amk::ir {

/// The most threads a parallel pass uses: the hardware's (1 when unknown), at most 8.
inline size_t max_threads() {
  return std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), 8);
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

}  // namespace amk::ir
