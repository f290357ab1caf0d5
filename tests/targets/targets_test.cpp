// Targets as data: every built-in record parses, round-trips, matches AMK's values and names its
// workers; malformed target files are errors with a pointer, never crashes. The cost model's
// prediction for a cyclic program.
#include "targets/target.h"

#include <gtest/gtest.h>

#include "targets/cost.h"

#include "ir/json_io.h"
#include "support.h"

namespace amk::targets {
namespace {

TargetSpec must_load(const std::string& name) {
  auto t = load_target(name);
  if (!t) throw std::runtime_error(test::text(t.diagnostics));
  return *t;
}

TEST(Targets, EveryBuiltinParsesAndItsWorkersAddUpToNumSms) {
  const auto names = builtin_target_names();
  for (const char* want :
       {"rtx5090", "b200", "h100", "a100", "l4", "t4", "a10g", "l40s", "a2a3", "a5", "tx8"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  for (const auto& n : names) {
    TargetSpec t = must_load(n);
    EXPECT_EQ(t.record.name, n);
    EXPECT_EQ(t.num_workers(), t.record.num_sms.i) << n;
    EXPECT_GT(t.record.hbm_bandwidth_gbs.as_double(), 0) << n;
  }
}

TEST(Targets, RoundTripThroughTheFileFormatIsIdentity) {
  for (const auto& n : builtin_target_names()) {
    TargetSpec t = must_load(n);
    auto back = parse_target_spec(write_target_spec(t), "roundtrip");
    ASSERT_TRUE(back) << test::text(back.diagnostics);
    EXPECT_EQ(*back, t) << n;
  }
}

TEST(Targets, GpuRecordsCarryAmksValues) {
  TargetSpec h = must_load("h100");
  EXPECT_EQ(h.record.num_sms.i, 132);
  EXPECT_EQ(h.record.sm_arch.i, 90);
  EXPECT_EQ(h.record.hbm_bandwidth_gbs.as_double(), 3350.0);
  EXPECT_EQ(h.record.measured_bw_gbs.as_double(), 3089.0);
  EXPECT_EQ(h.count_of("sm"), 132);
  TargetSpec t4 = must_load("t4");
  EXPECT_EQ(t4.record.num_sms.i, 40);
  EXPECT_EQ(t4.record.max_threads_per_sm.i, 1024);
  EXPECT_EQ(t4.record.l2_bytes.i, 4 << 20);
}

TEST(Targets, AscendAndTx8DescribeTheirTopology) {
  TargetSpec a = must_load("a2a3");
  EXPECT_EQ(a.clusters, 24);
  EXPECT_EQ(a.count_of("aic"), 24);
  EXPECT_EQ(a.count_of("aiv"), 48);
  EXPECT_EQ(a.aicpu_threads, 4);
  EXPECT_EQ(a.record.num_sms.i, 72);
  // The core type of each opcode is data: the cube (AIC) opcodes, every other one on AIV.
  const std::vector<ir::Op> cube = {ir::Op::GEMV_TILE, ir::Op::GEMM_TILE, ir::Op::ATTENTION_TILE};
  EXPECT_EQ(a.aic_ops, cube);
  TargetSpec a5 = must_load("a5");
  EXPECT_EQ(a5.clusters, 36);
  EXPECT_EQ(a5.aic_ops, cube);
  EXPECT_TRUE(must_load("h100").aic_ops.empty());
  TargetSpec x = must_load("tx8");
  EXPECT_EQ(x.mesh, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(x.count_of("tile"), 16);
}

TEST(Targets, Rtx5090RecordIsByteIdenticalToAmksEmbeddedOne) {
  auto lr = ir::load_program((test::conformance_dir() / "programs/toy_1L_default.json").string());
  ASSERT_TRUE(lr.ok());
  EXPECT_EQ(ir::write_target(must_load("rtx5090").record), ir::write_target(*lr.value->target));
}

TEST(Targets, MalformedFilesAreErrorsWithPointers) {
  const std::string base = write_target_spec(must_load("h100"));
  struct Case {
    std::string from, to, expect;
  };
  const Case cases[] = {
      {"\"count\": 132", "\"count\": 131", "/num_sms"},
      {"\"family\": \"gpu\"", "\"family\": 7", "/amk/family"},
      {"\"amk\": {", "\"amk2\": 1, \"amk\": {", "/amk2"},
      {"\"scratch_bytes\": 52428800", "\"scratch_bytes\": -1", "/amk/scratch_bytes"},
      {"\"num_sms\": 132", "\"num_sms\": \"many\"", "/num_sms"},
      {"\"workers\": [", "\"mesh\": [0], \"workers\": [", "/amk/mesh"},
      {"\"workers\": [", "\"aic_ops\": [\"GEMV\"], \"workers\": [", "/amk/aic_ops/0"},
  };
  for (const Case& c : cases) {
    std::string text = base;
    const auto at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.from;
    text.replace(at, c.from.size(), c.to);
    auto r = parse_target_spec(text, "t.json");
    EXPECT_FALSE(r) << c.to;
    const std::string err = test::text(r.diagnostics);
    EXPECT_NE(err.find("t.json"), std::string::npos) << err;
    EXPECT_NE(err.find(c.expect), std::string::npos) << err;
  }
  EXPECT_FALSE(parse_target_spec("[1]", "t.json"));
  auto unterminated = parse_target_spec("{\"name\": \"x\"", "t.json");
  ASSERT_FALSE(unterminated);
  EXPECT_EQ(unterminated.diagnostics[0].file, "t.json");
  EXPECT_GT(unterminated.diagnostics[0].line, 0);  // a syntax error names line:column
  auto unknown = load_target("h1000");
  EXPECT_FALSE(unknown);
  EXPECT_NE(test::text(unknown.diagnostics).find("h100"), std::string::npos);  // the built-ins
  EXPECT_FALSE(load_target("/nonexistent/t.json"));
}

// Two tasks that each move 1 MB; `b_waits_a` makes a -> b a dependency, `a_waits_b` b -> a.
ir::Program two_tasks(bool a_waits_b, bool b_waits_a, std::optional<int64_t> sm) {
  ir::Program p;
  p.add_counter();
  p.add_counter();
  for (int64_t i = 0; i < 2; ++i) {
    ir::Task t;
    t.out_counter = i;
    t.est_bytes = 1'000'000;
    t.sm = sm;
    if (i == 0 ? a_waits_b : b_waits_a) t.waits.push_back({1 - i, 1, {}});
    p.tasks.push_back(t);
  }
  return p;
}

TEST(Cost, ACycleMakesTheMakespansTheSumOfTheTaskTimes) {
  const ir::Target h = must_load("h100").record;
  const Runtime& rt = default_runtime(h);
  // A chain a -> b: its critical path is both tasks, and nothing is cyclic.
  const CostEstimate chain = estimate(two_tasks(false, true, std::nullopt), h);
  EXPECT_FALSE(chain.cyclic);
  EXPECT_GT(chain.total_us, 0);
  EXPECT_DOUBLE_EQ(chain.critical_path_us, chain.total_us);
  // A dependency cycle never finishes: AMK's makespan is the sum of its task times, amk's the
  // sum of the runtime's (the tasks one after another).
  const ir::Program cyclic = two_tasks(true, true, std::nullopt);
  const CostEstimate dep = estimate(cyclic, h);
  const TaskCoster alone(cyclic, h, rt, nullptr);
  EXPECT_TRUE(dep.cyclic);
  EXPECT_DOUBLE_EQ(dep.total_us, chain.total_us);
  EXPECT_DOUBLE_EQ(dep.amk_makespan_us, dep.total_us);
  EXPECT_DOUBLE_EQ(dep.queue_us, alone(cyclic.tasks[0]) + alone(cyclic.tasks[1]));
  EXPECT_DOUBLE_EQ(dep.makespan_us, std::max(dep.queue_us, rt.launch_us + dep.bandwidth_us));
  EXPECT_EQ(dep.critical_path_us, 0);
  // a waits for b, but SM 0 runs a first: the dependencies alone are a chain b -> a, the queue
  // closes the cycle. Both makespans are sums again.
  const CostEstimate queue = estimate(two_tasks(true, false, 0), h);
  EXPECT_TRUE(queue.cyclic);
  EXPECT_DOUBLE_EQ(queue.critical_path_us, chain.total_us);
  EXPECT_DOUBLE_EQ(queue.amk_makespan_us, queue.total_us);
  EXPECT_DOUBLE_EQ(queue.queue_us, dep.queue_us);
  // On SM 0 in the order of the chain, the queue agrees with it.
  const CostEstimate placed = estimate(two_tasks(false, true, 0), h);
  EXPECT_FALSE(placed.cyclic);
  EXPECT_DOUBLE_EQ(placed.amk_makespan_us, placed.total_us);
}

}  // namespace
}  // namespace amk::targets
