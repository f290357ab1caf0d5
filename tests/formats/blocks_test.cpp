// A foreign reader's records hold views of their variable-length parts in a block store
// (formats/blocks.h): the views must keep their values while the store grows, moves, and takes
// the blocks of the stores that a parallel read's pieces filled.
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "formats/blocks.h"

namespace amk {
namespace {

using Store = formats::detail::Blocks<int64_t, uint8_t>;

struct Kept {
  std::span<int64_t> wide;
  std::span<uint8_t> narrow;
  int64_t first = 0;
};

// Adds `n` runs of growing length to `s`, each run's values starting at `first` + its index.
std::vector<Kept> fill(Store& s, int n, int64_t first) {
  std::vector<Kept> out;
  for (int i = 0; i < n; ++i) {
    std::vector<int64_t> w(static_cast<size_t>(i % 97));
    std::vector<uint8_t> b(static_cast<size_t>(i % 13));
    for (size_t k = 0; k < w.size(); ++k) w[k] = first + i + static_cast<int64_t>(k);
    for (size_t k = 0; k < b.size(); ++k) b[k] = static_cast<uint8_t>(first + i + k);
    out.push_back(
        {s.add(std::span<const int64_t>(w)), s.add(std::span<const uint8_t>(b)), first + i});
  }
  return out;
}

void expect_intact(const std::vector<Kept>& kept) {
  for (const Kept& k : kept) {
    for (size_t j = 0; j < k.wide.size(); ++j)
      ASSERT_EQ(k.wide[j], k.first + static_cast<int64_t>(j));
    for (size_t j = 0; j < k.narrow.size(); ++j)
      ASSERT_EQ(k.narrow[j], static_cast<uint8_t>(k.first + static_cast<int64_t>(j)));
  }
}

TEST(BlockStore, ViewsKeepTheirValuesAsTheStoreGrowsMovesAndAdoptsOthers) {
  Store a;
  std::vector<Kept> kept = fill(a, 20000, 0);  // ~7.7 MB of int64: many blocks
  ASSERT_GT(a.size<int64_t>(), (256u << 10) / sizeof(int64_t) * 10);
  expect_intact(kept);
  Store b;
  std::vector<Kept> more = fill(b, 5000, 1000000);
  a.adopt(std::move(b));
  EXPECT_EQ(b.size<int64_t>(), 0u);
  std::vector<Kept> after = fill(a, 5000, 2000000);  // into the adopted blocks' spare room too
  Store moved = std::move(a);
  expect_intact(kept);
  expect_intact(more);
  expect_intact(after);
  size_t wide = 0, narrow = 0;
  for (const auto* list : {&kept, &more, &after})
    for (const Kept& k : *list) {
      wide += k.wide.size();
      narrow += k.narrow.size();
    }
  EXPECT_EQ(moved.size<int64_t>(), wide);
  EXPECT_EQ(moved.size<uint8_t>(), narrow);
  EXPECT_TRUE(moved.add(std::span<const int64_t>()).empty());
}

}  // namespace
}  // namespace amk
