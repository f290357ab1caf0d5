// The one fill rule of amk's keyed caches that are bounded by the size of what they keep (the
// lowering's structures, a search evaluator's per-structure slots).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace amk::ir {

/// The entry of `entries` (each with a `used` stamp) a cache fills for a new key: a new one while
/// fewer than `max` are kept and their sizes (`size(entry)`), with one more of their average, stay
/// within `budget`, or fewer than `min` are kept; else the least recently used one.
template <class T, class Size>
T& entry_to_fill(std::vector<T>& entries, size_t min, size_t max, size_t budget, Size size) {
  size_t kept = 0;
  for (const T& e : entries) kept += size(e);
  const size_t n = entries.size();
  if (n < max && (n < min || kept + kept / n <= budget)) return entries.emplace_back();
  return *std::min_element(entries.begin(), entries.end(),
                           [](const T& a, const T& b) { return a.used < b.used; });
}

}  // namespace amk::ir
