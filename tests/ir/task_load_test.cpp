// Proves ir::task_load, which reads a task's params in one pass, reads each as Task::int_param
// defines it, on random tasks: every opcode that has a load, est_bytes/est_flops set or not, keys
// named twice, holding floats or bools; and its formulas on tasks worked by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string>

#include "ir/program.h"
#include "ir/rng.h"

namespace amk::ir {
namespace {

// The params task_load reads, as Task::int_param defines each (a key's first param decides,
// nullopt when it holds no int): the same task with just those, each once, as ints.
Task as_lookups_read(const Task& t) {
  Task c = t;
  c.params.clear();
  for (const char* key : {"K", "N_tile", "M_tile", "head_dim", "n_heads", "kv_len", "qdtype"})
    if (const auto v = t.int_param(key)) c.params.push_back({key, ParamValue::of_int(*v)});
  return c;
}

Program buffers() {
  Program p;
  const std::array<BufferKind, 3> kinds = {BufferKind::WEIGHT, BufferKind::KV_CACHE,
                                           BufferKind::ACTIVATION};
  for (size_t b = 0; b < 9; ++b) {
    Buffer buf;
    buf.kind = kinds[b % 3];
    buf.dtype = b % 2 ? DType::BF16 : DType::I8;
    buf.shape = b % 4 == 3 ? std::vector<int64_t>{int64_t(b), 4, 8} : std::vector<int64_t>{16, 8};
    p.buffers.push_back(buf);
  }
  return p;
}

TEST(TaskLoad, OnePassOverTheParamsEqualsOneLookupPerKey) {
  const Program p = buffers();
  constexpr std::array<const char*, 10> kKeys = {
      "K", "N_tile", "M_tile", "head_dim", "n_heads", "kv_len", "qdtype", "N", "scale", "recipe"};
  constexpr std::array<Op, 5> kOps = {Op::GEMV_TILE, Op::GEMM_TILE, Op::ATTENTION_TILE, Op::RMSNORM,
                                      Op::NOP};
  Rng rng = Rng::seeded(46, 0x10ad);
  size_t differs_from_last_wins = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    Task t;
    t.op = kOps[rng.below(kOps.size())];
    for (uint64_t k = rng.below(4); k > 0; --k)
      t.inputs.push_back(static_cast<int64_t>(rng.below(11)) - 1);  // -1 and 9: out of range
    if (rng.chance(20)) t.est_bytes = static_cast<int64_t>(rng.below(1000));
    if (rng.chance(20)) t.est_flops = static_cast<int64_t>(rng.below(1000));
    for (uint64_t k = rng.below(9); k > 0; --k) {
      const std::string key = kKeys[rng.below(kKeys.size())];
      const auto v = static_cast<int64_t>(rng.below(300)) - 20;
      switch (rng.below(5)) {
        case 0:
          t.params.push_back({key, ParamValue::of_float(static_cast<double>(v) + 0.5)});
          break;
        case 1:
          t.params.push_back({key, ParamValue::of_bool(v % 2 != 0)});
          break;
        default:
          t.params.push_back({key, ParamValue::of_int(v)});
      }
    }
    ASSERT_EQ(task_load(p, t), task_load(p, as_lookups_read(t))) << "trial " << trial;
    // The trials include tasks whose later params of a key would give another load.
    Task reversed = t;
    std::reverse(reversed.params.begin(), reversed.params.end());
    differs_from_last_wins += !(task_load(p, t) == task_load(p, as_lookups_read(reversed)));
  }
  EXPECT_GT(differs_from_last_wins, 100u);
}

TEST(TaskLoad, GemvAndAttentionByHand) {
  const Program p = buffers();  // buffer 0: an I8 [16, 8] weight; 3: a BF16 [3, 4, 8] one
  Task gemv;
  gemv.op = Op::GEMV_TILE;
  gemv.params = {{"M_tile", ParamValue::of_int(2)},
                 {"K", ParamValue::of_int(8)},
                 {"N_tile", ParamValue::of_int(4)},
                 {"qdtype", ParamValue::of_int(6)}};
  TaskLoad l = task_load(p, gemv);  // no weight input: K * N_tile bf16 values
  EXPECT_EQ(l.flops, 2 * 2 * 8 * 4);
  EXPECT_EQ(l.bytes, 8 * 4 * 2);
  EXPECT_TRUE(l.dequant);
  gemv.inputs = {5, 0};  // an activation and the I8 weight
  EXPECT_EQ(task_load(p, gemv).bytes, 16 * 8);
  Task att;
  att.op = Op::ATTENTION_TILE;
  att.inputs = {3};  // a rank-3 query of 3 sequences
  att.params = {{"n_heads", ParamValue::of_int(4)},
                {"kv_len", ParamValue::of_int(10)},
                {"head_dim", ParamValue::of_int(8)}};
  l = task_load(p, att);
  EXPECT_EQ(l.heads, 4);
  EXPECT_EQ(l.steps, 3 * 10);
  EXPECT_EQ(l.width, 8);
  EXPECT_EQ(l.flops, 4.0 * 4 * 10 * 8);
}

}  // namespace
}  // namespace amk::ir
