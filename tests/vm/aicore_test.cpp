// AICore mode: the opcode -> core type table, tasks running only on cores of their type, the
// per-task override, a topology lacking a core type, PTO's stall classes in the stuck report, and
// one trace lane per core and per AICPU scheduler thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "ir/program.h"
#include "support.h"
#include "vm/vm.h"

namespace amk::vm {
namespace {

ir::Task task(ir::Op op, int64_t counter, std::string label) {
  ir::Task t;
  t.op = op;
  t.out_counter = counter;
  t.label = std::move(label);
  return t;
}

// A NOP fan: `n` independent tasks, then one joining them.
ir::Program fan(int n) {
  ir::Program p;
  p.add_counter("leaves");
  p.add_counter("join");
  for (int i = 0; i < n; ++i) p.add_task(task(ir::Op::NOP, 0, "leaf" + std::to_string(i)));
  ir::Task j = task(ir::Op::NOP, 1, "join");
  j.waits.push_back({0, n, {}});
  p.add_task(std::move(j));
  return p;
}

RunOptions aicore(int schedulers, int core_threads, int64_t clusters = 4) {
  RunOptions o;
  o.mode = Mode::Aicore;
  o.aicore.clusters = clusters;
  o.aicore.schedulers = schedulers;
  o.aicore.core_threads = core_threads;
  return o;
}

TEST(AicoreCoreTypes, MatrixWorkGoesToAicEverythingElseToAiv) {
  for (int k = 0; k < ir::kOpCount; ++k) {
    ir::Task t;
    t.op = static_cast<ir::Op>(k);
    const bool matrix =
        t.op == ir::Op::GEMV_TILE || t.op == ir::Op::GEMM_TILE || t.op == ir::Op::ATTENTION_TILE;
    EXPECT_EQ(core_type_of(t, default_aic_ops()), matrix ? CoreType::Aic : CoreType::Aiv)
        << ir::name(t.op);
  }
  auto fused = [](int first_op) {
    ir::Task t;
    t.op = ir::Op::FUSED;
    t.inputs = {0, 1, 2};
    nlohmann::json steps =
        nlohmann::json::array({{{"op", first_op}, {"args", {{{"in", 0}}, {{"in", 1}}}}, {"out", 0}},
                               {{"op", static_cast<int>(ir::Op::ADD)},
                                {"args", {{{"s", 0}}, {{"in", 2}}}},
                                {"out", "final"}}});
    t.params.push_back(
        {"recipe", ir::ParamValue::of_json(ir::JsonValue(nlohmann::json{{"steps", steps}}))});
    return t;
  };
  EXPECT_EQ(core_type_of(fused(static_cast<int>(ir::Op::GEMV_TILE)), default_aic_ops()),
            CoreType::Aic);
  EXPECT_EQ(core_type_of(fused(static_cast<int>(ir::Op::MUL)), default_aic_ops()), CoreType::Aiv);
}

TEST(AicoreTopology, EveryTaskRunsOnACoreOfItsTypeOwnedByTheSchedulerThatDispatchedIt) {
  // Leaves alternate GEMV-typed (forced by override, NOP kernels) and AIV tasks.
  ir::Program p = fan(40);
  auto m = test::must(Vm::load(p, {}));
  for (auto [sched, cthreads] : {std::pair{1, 0}, {3, 0}, {2, 2}, {4, 1}}) {
    RunOptions o = aicore(sched, cthreads);
    for (int64_t t = 0; t < 40; t += 2) o.aicore.overrides.emplace_back(t, CoreType::Aic);
    TraceRecorder rec;
    o.observer = &rec;
    RunResult r = m->run(o);
    ASSERT_TRUE(r.ok()) << test::errors(r.diagnostics);
    ASSERT_EQ(rec.events().size(), 41u);
    EXPECT_EQ(rec.lanes(), r.lanes);
    // 4 clusters: AIC cores 0..3, AIV cores 4..11 (cluster i: AIV 4+2i, 5+2i); then schedulers.
    ASSERT_EQ(r.lanes.size(), 12u + static_cast<size_t>(sched));
    EXPECT_EQ(r.lanes[0], "AIC 0 (cluster 0)");
    EXPECT_EQ(r.lanes[5], "AIV 1 (cluster 0)");
    EXPECT_EQ(r.lanes[12], "AICPU scheduler 0");
    for (const TraceEvent& e : rec.events()) {
      const bool aic = e.task < 40 && e.task % 2 == 0;
      EXPECT_EQ(e.worker < 4, aic) << "task " << e.task << " ran on core " << e.worker;
      const int64_t cluster = e.worker < 4 ? e.worker : (e.worker - 4) / 2;
      EXPECT_EQ(cluster % sched, e.scheduler) << "task " << e.task;  // clusters never split
      EXPECT_LE(e.ready_ns, e.dispatch_ns);
      EXPECT_LE(e.dispatch_ns, e.start_ns);
      EXPECT_LE(e.end_ns, e.retire_ns);
    }
  }
}

TEST(AicoreTopology, ATaskWhoseCoreTypeTheChipLacksIsAClearError) {
  auto m = test::must(Vm::load(fan(3), {}));
  RunOptions o = aicore(1, 0);
  o.aicore.aiv_per_cluster = 0;
  RunResult r = m->run(o);
  EXPECT_EQ(r.status, RunResult::Status::KernelError);
  EXPECT_EQ(test::errors(r.diagnostics),
            "task 0 (leaf0) runs on an AIV core and the topology has none");
  o.aicore.overrides = {{7, CoreType::Aic}};
  r = m->run(o);
  EXPECT_EQ(test::errors(r.diagnostics), "core-type override for task 7: the program has 4 tasks");
}

inst::Status hanging_kernel(const inst::KernelArgs& a) {
  if (a.task && a.task->label == "leaf2")
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  return {};
}
inst::Kernel hanging_registry(ir::Op) {
  return hanging_kernel;
}

TEST(AicoreStalls, AKernelThatNeverFinishesIsReportedAsRunningStalled) {
  auto m = test::must(Vm::load(fan(4), {}));
  for (auto [sched, cthreads] : {std::pair{2, 0}, {1, 2}}) {
    RunOptions o = aicore(sched, cthreads);
    o.watchdog_ms = 60;
    o.kernel_for = hanging_registry;
    RunResult r = m->run(o);
    ASSERT_EQ(r.status, RunResult::Status::Stuck);
    EXPECT_EQ(r.stall_class, StallClass::RunningStalled);
    // Task 2 holds its core (ACK, no FIN). Cores multiplexed on the OS thread stuck in it may
    // hold tasks too (dispatched, or finished and not yet retired), never a running one.
    ASSERT_FALSE(r.busy.empty());
    for (const BusyCore& b : r.busy)
      EXPECT_EQ(b.state == BusyCore::State::Running, b.task == 2) << "task " << b.task;
    EXPECT_TRUE(std::any_of(r.busy.begin(), r.busy.end(), [](auto& b) { return b.task == 2; }));
    const std::string rep = stuck_report(m->program(), r);
    EXPECT_NE(rep.find("watchdog: no progress for 60 ms"), std::string::npos) << rep;
    EXPECT_NE(rep.find("task 2 (leaf2, NOP) acknowledged (ACK) and never finished (no FIN)"),
              std::string::npos)
        << rep;
    EXPECT_NE(rep.find("task 4 (join, NOP) never became ready; waits on counter 0 'leaves' >= 4 "),
              std::string::npos)
        << rep;
    EXPECT_NE(rep.find("producers that never ran:"), std::string::npos) << rep;
    EXPECT_NE(rep.find(" 2 (leaf2)"), std::string::npos) << rep;
  }
}

TEST(AicoreTrace, OneLanePerCoreAndPerSchedulerThread) {
  auto m = test::must(Vm::load(fan(6), {}));
  TraceRecorder rec;
  RunOptions o = aicore(2, 0, 2);
  o.observer = &rec;
  RunResult r = m->run(o);
  ASSERT_TRUE(r.ok()) << test::errors(r.diagnostics);
  const auto doc = nlohmann::json::parse(chrome_trace(m->program(), rec));
  int lanes = 0, slices = 0, dispatches = 0, retires = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M") ++lanes;
    if (e["ph"] == "X" && e["cat"] == "task") ++slices;
    if (e["ph"] == "i" && e["name"].get<std::string>().starts_with("dispatch")) ++dispatches;
    if (e["ph"] == "i" && e["name"].get<std::string>().starts_with("retire")) ++retires;
    if (e["ph"] == "M" && e["tid"] == 6) {
      EXPECT_EQ(e["args"]["name"], "AICPU scheduler 0");
    }
  }
  EXPECT_EQ(lanes, 2 * 3 + 2);
  EXPECT_EQ(slices, 7);
  EXPECT_EQ(dispatches, 7);
  EXPECT_EQ(retires, 7);
}

TEST(AicoreDeterministic, TheSameSeedReplaysTheSameCoreAssignment) {
  auto m = test::must(Vm::load(fan(30), {}));
  auto cores_of = [&](uint64_t seed) {
    RunOptions o = aicore(1, 0);
    o.aicore.deterministic = true;
    o.seed = seed;
    TraceRecorder rec;
    o.observer = &rec;
    RunResult r = m->run(o);
    EXPECT_TRUE(r.ok()) << test::errors(r.diagnostics);
    std::vector<int32_t> c(31, -1);
    for (const TraceEvent& e : rec.events()) c[static_cast<size_t>(e.task)] = e.worker;
    return c;
  };
  EXPECT_EQ(cores_of(9), cores_of(9));
  EXPECT_NE(cores_of(9), cores_of(10));
}

}  // namespace
}  // namespace amk::vm
