// The warm cost model of a search (targets::Estimator): over sequences of lowered programs like a
// search's (random configs and their one-knob neighbours, on several targets and runtimes, one
// estimator throughout), every estimate equals the cold estimate() of the same program, whether it
// was walked or recalled.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/digraph.h"
#include "ir/graph.h"
#include "ir/json_io.h"
#include "lower/lower.h"
#include "lower/random_config.h"
#include "lower_support.h"
#include "targets/cost.h"
#include "targets/runtime.h"

namespace amk::lower {
namespace {

using test_support::model;
using test_support::target;
using json = nlohmann::ordered_json;

// Every field of two estimates, bit for bit.
void expect_same(const targets::CostEstimate& warm, const targets::CostEstimate& cold,
                 const std::string& what) {
  EXPECT_EQ(warm.makespan_us, cold.makespan_us) << what;
  EXPECT_EQ(warm.amk_makespan_us, cold.amk_makespan_us) << what;
  EXPECT_EQ(warm.queue_us, cold.queue_us) << what;
  EXPECT_EQ(warm.critical_path_us, cold.critical_path_us) << what;
  EXPECT_EQ(warm.total_us, cold.total_us) << what;
  EXPECT_EQ(warm.runtime, cold.runtime) << what;
  EXPECT_TRUE(warm == cold) << what << ": another field differs";
}

// A config with one knob of `c` set to `v` (a search's neighbour).
ir::ScheduleConfig with(ir::ScheduleConfig c, const char* knob, const json& v) {
  json j = json::parse(ir::config_key(c));
  j[knob] = v;
  return test_support::config(j);
}

TEST(Estimator, EqualsAColdEstimateOverManyConfigsTargetsAndRuntimes) {
  struct Case {
    const char* model;
    const char* target;
    const char* runtime;
  };
  const Case cases[] = {{"toy-2L", "h100", "amk-cuda"}, {"toy-2L", "a2a3", "pto"},
                        {"toy-2L", "tx8", "tx8"},       {"toy-1L", "b200", "hazy"},
                        {"toy-2L", "h100", "mpk"},      {"small-4L", "h100", "amk-cuda"}};
  targets::Estimator warm;  // one for every case: what a case left must not answer another
  size_t programs = 0, same = 0;
  // The tasks (their SMs cleared) and buffers of the program the estimator took last: a program
  // with the same ones is said to have the same tasks, as a search says it.
  std::vector<ir::Task> last_tasks;
  std::vector<ir::Buffer> last_buffers;
  auto same_tasks = [&](const ir::Program& p) {
    std::vector<ir::Task> tasks = p.tasks;
    for (ir::Task& task : tasks) task.sm.reset();
    const bool is_same = tasks == last_tasks && p.buffers == last_buffers;
    last_tasks = std::move(tasks);
    last_buffers = p.buffers;
    same += is_same;
    return is_same;
  };
  for (const Case& k : cases) {
    const ModelSpec m = model(k.model);
    const targets::TargetSpec t = target(k.target);
    const targets::Runtime& rt = *targets::builtin_runtime(k.runtime);
    LowerOptions o;
    o.runtime = &rt;
    Lowerer lowerer(m, t, o);
    for (uint64_t seed = 0; seed < 12; ++seed) {
      const ir::ScheduleConfig base = random_config(seed, m, t);
      // The config, then neighbours in knobs a runtime may not read, then the config again.
      const std::vector<ir::ScheduleConfig> configs = {base,
                                                       with(base, "page_allocation", "none"),
                                                       with(base, "threads_per_block", 512),
                                                       with(base, "smem_bytes_per_block", 49152),
                                                       with(base, "pipelining_depth", 0),
                                                       base};
      for (size_t i = 0; i < configs.size(); ++i) {
        const std::string what = std::string(k.model) + "/" + k.target + "/" + k.runtime +
                                 " seed " + std::to_string(seed) + " step " + std::to_string(i);
        LowerResult lr = lowerer.run(configs[i]);
        ASSERT_FALSE(ir::has_errors(lr.diagnostics)) << what;
        const ir::Program& p = lowerer.program();
        const ir::Graph g = ir::Graph::build(p);
        const ir::ScheduleGraph queues(p, g, ir::QueueEdges::Loader);
        const targets::CostEstimate cold = targets::estimate(p, t.record, rt);
        expect_same(warm(p, t.record, rt, g, i % 2 ? &queues : nullptr, same_tasks(p)), cold, what);
        // The same program under the target's other runtime: never the first one's estimate.
        const targets::Runtime& other = targets::default_runtime(t.record);
        expect_same(warm(p, t.record, other, g, nullptr, same_tasks(p)),
                    targets::estimate(p, t.record, other), what + " on " + other.name);
        ++programs;
      }
    }
  }
  EXPECT_GT(warm.recalled(), programs / 4) << "the sequences hold programs the estimator recalls";
  EXPECT_LT(warm.recalled(), 2 * programs) << "and programs it walks";
  EXPECT_GT(same, programs) << "and programs with the tasks of the one before";
  EXPECT_LT(same, 2 * programs) << "and programs with others";
}

// The walks an estimator keeps are recalled only for the program part (counter slots, task loads)
// they were walked with: programs whose tasks are placed alike and take as long by AMK's formula,
// but load otherwise, are walked each time they come back; a program back with the same tasks
// (the caller says only SMs changed) is recalled.
TEST(Estimator, RecallsAWalkOnlyForTheTasksItWalked) {
  const ModelSpec m = model("toy-2L");
  const targets::TargetSpec t = target("h100");
  const targets::Runtime& rt = targets::default_runtime(t.record);
  Lowerer lowerer(m, t, {});
  ASSERT_FALSE(ir::has_errors(lowerer.run(random_config(3, m, t)).diagnostics));
  const ir::Program a = lowerer.program();
  // The same placement, bytes and flops (so the same AMK task times), but attention tiles that
  // walk a KV window twice as long: other loads, another walk.
  ir::Program other = a;
  size_t longer = 0;
  for (ir::Task& task : other.tasks)
    if (const auto kv = task.int_param("kv_len"); kv && task.op == ir::Op::ATTENTION_TILE) {
      task.set_param("kv_len", ir::ParamValue::of_int(2 * *kv + 64));
      ++longer;
    }
  ASSERT_GT(longer, 0u);
  ir::Program moved = a;  // the same tasks, each on the next SM
  for (ir::Task& task : moved.tasks) task.sm = (task.sm.value_or(0) + 1) % 4;
  const ir::Graph g = ir::Graph::build(a);  // the same counter graph for all three
  targets::Estimator warm;
  struct Step {
    const ir::Program* p;
    bool same_tasks;
    const char* what;
  };
  const Step steps[] = {{&a, false, "a"},
                        {&other, false, "other"},
                        {&a, false, "a again"},
                        {&other, false, "other again"},
                        {&a, false, "a"},
                        {&moved, true, "moved (same tasks)"},
                        {&a, true, "a (same tasks)"},
                        {&moved, true, "moved again (same tasks)"}};
  for (const Step& s : steps)
    expect_same(warm(*s.p, t.record, rt, g, nullptr, s.same_tasks),
                targets::estimate(*s.p, t.record, rt), s.what);
  EXPECT_NE(targets::estimate(a, t.record, rt).queue_us,
            targets::estimate(other, t.record, rt).queue_us)
      << "the two loads give two walks";
  EXPECT_GE(warm.recalled(), 2u) << "a and moved, each back with the same tasks";
}

}  // namespace
}  // namespace amk::lower
