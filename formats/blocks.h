// Internal: the variable-length parts of a foreign file's records (a PTO task's arguments and
// their extents, an MPK task's tensors) kept in blocks, so that a record holds views of them and
// a file of n records costs an allocation per block rather than one or two per record.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <tuple>
#include <vector>

namespace amk::formats::detail {

/// Values of the types T... in blocks that each keep their first allocation: a view that add()
/// returns stays valid as long as the store (moved or not) lives.
template <class... T>
class Blocks {
 public:
  Blocks() = default;
  Blocks(Blocks&&) = default;
  Blocks& operator=(Blocks&&) = default;
  Blocks(const Blocks&) = delete;  // its views point into this one
  Blocks& operator=(const Blocks&) = delete;

  /// A copy of `v` here.
  template <class U>
  std::span<U> add(std::span<const U> v) {
    if (v.empty()) return {};
    auto& blocks = std::get<std::vector<std::vector<U>>>(blocks_);
    if (blocks.empty() || blocks.back().capacity() - blocks.back().size() < v.size())
      blocks.emplace_back().reserve(std::max(v.size(), kBlockBytes / sizeof(U)));
    std::vector<U>& b = blocks.back();
    const size_t at = b.size();
    b.insert(b.end(), v.begin(), v.end());  // within its capacity: nothing moves
    return {b.data() + at, v.size()};
  }
  /// How many values of type U it holds.
  template <class U>
  size_t size() const {
    size_t n = 0;
    for (const std::vector<U>& b : std::get<std::vector<std::vector<U>>>(blocks_)) n += b.size();
    return n;
  }
  /// Takes the blocks of `o`, whose views stay valid.
  void adopt(Blocks&& o) {
    auto take = [](auto& mine, auto& theirs) {
      for (auto& b : theirs) mine.push_back(std::move(b));
      theirs.clear();
    };
    (take(std::get<std::vector<std::vector<T>>>(blocks_),
          std::get<std::vector<std::vector<T>>>(o.blocks_)),
     ...);
  }

 private:
  static constexpr size_t kBlockBytes = 256u << 10;
  std::tuple<std::vector<std::vector<T>>...> blocks_;
};

}  // namespace amk::formats::detail
