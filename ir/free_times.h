// Workers' free times with a list scheduler's earliest-free query in O(log workers): a min
// segment tree over the workers (padded with +inf leaves).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <limits>
#include <vector>

namespace amk::ir {

/// The free time of each of n workers (0 at first) and the earliest-free query of a list
/// schedule.
class FreeTimes {
 public:
  /// n workers, all free at 0.
  explicit FreeTimes(size_t sms) : leaves_(std::bit_ceil(std::max<size_t>(sms, 1))) {
    tree_.assign(2 * leaves_, std::numeric_limits<double>::infinity());
    for (size_t s = 0; s < sms; ++s) tree_[leaves_ + s] = 0.0;
    for (size_t i = leaves_ - 1; i >= 1; --i) tree_[i] = std::min(tree_[2 * i], tree_[2 * i + 1]);
  }
  /// Worker s's free time.
  double at(size_t s) const { return tree_[leaves_ + s]; }
  /// Sets worker s's free time.
  void set(size_t s, double t) {
    size_t i = leaves_ + s;
    tree_[i] = t;
    for (i /= 2; i >= 1; i /= 2) {  // an ancestor whose minimum stays leaves those above as well
      const double m = std::min(tree_[2 * i], tree_[2 * i + 1]);
      if (tree_[i] == m) break;
      tree_[i] = m;
    }
  }
  /// The worker where a task ready at `ready` starts first, the lowest index among ties: the
  /// first worker free by `ready`, else the first of the earliest free.
  size_t earliest(double ready) const {
    const double bound = tree_[1] <= ready ? ready : tree_[1];
    size_t i = 1;
    while (i < leaves_) i = tree_[2 * i] <= bound ? 2 * i : 2 * i + 1;
    return i - leaves_;
  }

 private:
  size_t leaves_;
  std::vector<double>
      tree_;  // heap order: node i has children 2i, 2i+1; leaves at [leaves_, 2 leaves_)
};

}  // namespace amk::ir
