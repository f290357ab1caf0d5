// RegionMap plans its tensors and wires its tasks on several threads: the program must be the
// one that one thread builds, for any count, on accesses that exercise every path (tiles of a
// class, writes that split and merge classes, reads of prior contents, pages shared by
// overlapping classes, strides that fit no layout, tasks that touch a tensor twice).
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "formats/regions.h"
#include "ir/rng.h"

namespace amk {
namespace {

using formats::detail::ElemType;
using formats::detail::RegionMap;

constexpr int64_t kRows = 16, kCols = 64;

// An access to a kRows x kCols tensor: a rectangle, the whole tensor, or (rarely) a strided
// run that fits no row-major layout.
void random_access(ir::Rng& rng, RegionMap& rm, uint32_t task, int32_t tensor, bool write) {
  if (rng.chance(10)) {
    const int64_t dims[] = {kRows, kCols}, strides[] = {kCols, 1};
    rm.access(task, tensor, write, 0, dims, strides);
    return;
  }
  if (rng.chance(3)) {
    const int64_t dims[] = {static_cast<int64_t>(1 + rng.below(8))}, strides[] = {3};
    rm.access(task, tensor, write, static_cast<int64_t>(rng.below(kCols)), dims, strides);
    return;
  }
  const auto r0 = static_cast<int64_t>(rng.below(kRows)),
             c0 = static_cast<int64_t>(rng.below(kCols));
  const int64_t h = 1 + static_cast<int64_t>(rng.below(static_cast<uint64_t>(kRows - r0)));
  const int64_t w = 1 + static_cast<int64_t>(rng.below(static_cast<uint64_t>(kCols - c0)));
  const int64_t dims[] = {h, w}, strides[] = {kCols, 1};
  rm.access(task, tensor, write, r0 * kCols + c0, dims, strides);
}

// `tasks` tasks over `tensors` tensors (a few of them hot, so that some tensors have thousands
// of accesses and the accesses span several parts), the same for the same seed.
RegionMap random_map(uint64_t seed, uint32_t tasks, int32_t tensors) {
  ir::Rng rng = ir::Rng::seeded(seed, 0x7e9);
  RegionMap rm;
  for (int32_t t = 0; t < tensors; ++t)
    rm.tensor("t" + std::to_string(t), ElemType{t % 2 ? ir::DType::F16 : ir::DType::F32, 16});
  auto pick = [&] {
    return static_cast<int32_t>(rng.chance(50) ? rng.below(4)
                                               : rng.below(static_cast<uint64_t>(tensors)));
  };
  for (uint32_t task = 0; task < tasks; ++task) {
    const uint64_t reads = rng.below(4), writes = rng.below(3);
    for (uint64_t k = 0; k < reads; ++k) random_access(rng, rm, task, pick(), false);
    for (uint64_t k = 0; k < writes; ++k) random_access(rng, rm, task, pick(), true);
  }
  return rm;
}

ir::Program built(const RegionMap& rm, uint32_t tasks, size_t threads) {
  ir::Program p;
  p.tasks.resize(tasks);
  for (uint32_t t = 0; t < tasks; t += 7)  // a param before the tile params
    p.tasks[t].params.push_back({"k", ir::ParamValue::of_int(t)});
  RegionMap copy = rm;
  copy.build(p, threads);
  return p;
}

TEST(RegionMap, TheProgramIsTheOneThreadBuildForAnyNumberOfThreads) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE(seed);
    constexpr uint32_t kTasks = 6000;
    const RegionMap rm = random_map(seed, kTasks, 300);
    const ir::Program one = built(rm, kTasks, 1);
    ASSERT_GT(one.buffers.size(), 300u);
    ASSERT_TRUE(one.pages.has_value());
    size_t tiles = 0;
    for (const ir::Task& t : one.tasks) tiles += t.int_param("M_tile").has_value();
    ASSERT_GT(tiles, 0u);
    for (size_t threads : {2u, 3u, 8u}) {
      SCOPED_TRACE(threads);
      EXPECT_TRUE(built(rm, kTasks, threads) == one);
    }
  }
}

}  // namespace
}  // namespace amk
