// Imported graphs run as timed no-ops under their runtime's placement and capacities: what the
// capacity rules reject ends stuck (naming the full queue or ring), what they accept completes,
// at every worker count.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "formats/corpus.h"
#include "formats/shapes.h"
#include "validate/validate.h"
#include "vm/foreign.h"
#include "vm/orchestrator.h"

namespace amk {
namespace {

using test::chain;
using test::fan;
using test::mpk_example;
using test::scopes;
using test::via_pto;

bool capacity_rejected(const ir::Program& p) {
  for (const ir::Diagnostic& d : validate::validate(p).errors)
    if (d.code.starts_with("capacity.")) return true;
  return false;
}

TEST(ForeignRun, AScopeThatFillsItsRingIsStuckNamingTheRingAndTheOpenScope) {
  const ir::Program bad = via_pto(chain(208), scopes(1, 16, {"task_window=16"}));
  ir::Result<vm::ForeignRun> r = vm::run_foreign(bad);
  ASSERT_FALSE(r.ok());
  const ir::Diagnostic& d = r.diagnostics[0];
  EXPECT_EQ(d.code, "vm.deadlock");
  EXPECT_NE(d.message.find("ring 1: the ring's task window is full (task window 15 of 16"),
            std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("held by scope 'export.cpp:1' (depth 1), still open"), std::string::npos)
      << d.message;
  const ir::Program ok = via_pto(chain(208), scopes(1, 15, {"task_window=16"}));
  ir::Result<vm::ForeignRun> done = vm::run_foreign(ok);
  ASSERT_TRUE(done.ok()) << test::text(done.diagnostics);
  EXPECT_EQ(done->tasks_run, 208u);
  EXPECT_GT(done->blocked, 0u);  // back-pressure: the orchestrator waited for reclaim
}

TEST(ForeignRun, MpkWorkersThatAreNeverResidentLeaveTheGraphStuck) {
  ir::Result<vm::ForeignRun> r =
      vm::run_foreign(mpk_example({"sms=132", "workers=130", "schedulers=16"}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics[0].code, "vm.deadlock");
  EXPECT_NE(
      r.diagnostics[0].message.find("workers 128..129 never resident: 130 worker and 4 scheduler "
                                    "block(s) need 134 SMs at once, the chip has 132"),
      std::string::npos)
      << r.diagnostics[0].message;
}

TEST(ForeignRun, AnMpkWorkerQueueTooShortForItsDealOverflows) {
  ir::Result<vm::ForeignRun> r =
      vm::run_foreign(mpk_example({"sms=2", "workers=1", "schedulers=1", "worker_queue=400"}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics[0].code, "vm.overflow");
  EXPECT_NE(r.diagnostics[0].message.find("worker 0's queue overflowed: 466 task(s)"),
            std::string::npos);
}

TEST(ForeignRun, EarlyDispatchCohortsThatGateEveryCoreLeaveTheirProducerStuck) {
  // simpler #2136: 48 blocks of the producer run, then twelve early-dispatch consumers of four
  // blocks stage on the 48 freed AIV cores before its last block is placed.
  ir::Result<vm::ForeignRun> r =
      vm::run_foreign(via_pto(test::fanned_out(12, 49, 4), scopes(1, 0), {"cores_aiv=48"}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics[0].code, "vm.deadlock");
  EXPECT_THAT(
      r.diagnostics[0].message,
      testing::HasSubstr("has 1 of 49 block(s) left to place and no free AIV core: 48 of "
                         "the 48 are held, gated, by the early-dispatch cohorts of task 1"));
  // Eleven leave it four cores; without the flag nothing is staged; a one-block producer has
  // nothing left to place once it runs.
  for (const ir::Program& p : {test::fanned_out(11, 49, 4), test::fanned_out(12, 49, 4, false),
                               test::fanned_out(12, 1, 4)}) {
    ir::Result<vm::ForeignRun> done = vm::run_foreign(via_pto(p, scopes(1, 0), {"cores_aiv=48"}));
    ASSERT_TRUE(done.ok()) << test::text(done.diagnostics);
    EXPECT_EQ(done->tasks_run, p.tasks.size());
  }
}

// fan(8, 1) on PTO ring 1 with writers 0..3 blocking in TWAIT for writers 4..7, on `cores` AIV.
ir::Program twaits(int cores) {
  std::vector<std::string> launch{fmt::format("cores_aiv={}", cores)};
  for (uint64_t i = 0; i < 4; ++i)
    launch.push_back(
        fmt::format("twait={}:{}", uint64_t{1} << 32 | i, uint64_t{1} << 32 | (i + 4)));
  return via_pto(fan(8, 1), scopes(1, 0), launch);
}

TEST(ForeignRun, WaitersBlockedInTwaitOnEveryCoreLeaveTheirNotifiersStuck) {
  // simpler #1798: the four waiters come first and take the four cores; their notifiers find none.
  ir::Result<vm::ForeignRun> r = vm::run_foreign(twaits(4));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics[0].code, "vm.deadlock");
  EXPECT_EQ(r.diagnostics[0].pointer, "/tasks/4");
  EXPECT_THAT(
      r.diagnostics[0].message,
      testing::AllOf(testing::HasSubstr("has 1 of 1 block(s) left to place and no free AIV "
                                        "core: 4 of the 4 are held by task 0"),
                     testing::HasSubstr("blocked in TWAIT for notifications not yet sent")));
  ir::Result<vm::ForeignRun> done = vm::run_foreign(twaits(5));
  ASSERT_TRUE(done.ok()) << test::text(done.diagnostics);
  EXPECT_EQ(done->tasks_run, 9u);
}

TEST(ForeignRun, BlocksRunInWavesAndAGraphOfTooManyWavesIsRefusedNotStepped) {
  formats::PtoExport o = scopes(1, 0);
  o.block_num = 100;  // three waves of 48, 48 and 4 on 48 AIV cores
  ir::Result<vm::ForeignRun> r = vm::run_foreign(via_pto(chain(2), o, {"cores_aiv=48"}));
  ASSERT_TRUE(r.ok()) << test::text(r.diagnostics);
  EXPECT_DOUBLE_EQ(r->makespan_us, 6 * vm::ForeignOptions{}.task_us);
  o.block_num = INT32_MAX;  // 44.7M waves: refused at once
  r = vm::run_foreign(via_pto(chain(2), o, {"cores_aiv=48"}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics[0].code, "vm.limit");
  EXPECT_EQ(r.diagnostics[0].pointer, "/tasks/0");
}

TEST(ForeignRun, TheMpkExampleCompletesAtEveryWorkerCount) {
  for (int w : {1, 2, 3, 4, 8}) {
    const ir::Program p =
        mpk_example({fmt::format("workers={}", w), "schedulers=1", fmt::format("sms={}", w + 1)});
    EXPECT_FALSE(capacity_rejected(p));
    ir::Result<vm::ForeignRun> r = vm::run_foreign(p);
    ASSERT_TRUE(r.ok()) << w << ": " << test::text(r.diagnostics);
    EXPECT_EQ(r->tasks_run, 468u);
  }
}

TEST(ForeignRun, StaticVerdictAndRunAgreeOnCapacityCases) {
  // Each case beside its sibling: the rules' verdict and the run's.
  struct Case {
    const char* name;
    ir::Program p;
  };
  formats::PtoExport heap = scopes(1, 0, {"heap=400000"});
  heap.runtime_outputs = true;
  formats::PtoExport heap_ok = scopes(1, 0, {"heap=600000"});
  heap_ok.runtime_outputs = true;
  const Case cases[] = {
      {"window", via_pto(chain(64), scopes(1, 16, {"task_window=16"}))},
      {"window-ok", via_pto(chain(64), scopes(1, 15, {"task_window=16"}))},
      {"nested", via_pto(chain(40), scopes(4, 8, {"task_window=16"}, 8))},
      {"nested-ok", via_pto(chain(40), scopes(4, 8, {"task_window=64"}, 8))},
      {"heap", via_pto(chain(8, 64 * 1024), heap)},
      {"heap-ok", via_pto(chain(8, 64 * 1024), heap_ok)},
      {"deps", via_pto(fan(256, 4), scopes(1, 0, {"dep_pool=1000"}))},
      {"deps-ok", via_pto(fan(256, 4), scopes(1, 0, {"dep_pool=1024"}))},
      {"spill", via_pto(fan(256, 4), scopes(1, 0, {"dep_pool=2048"}), {"fanin_spill=700"})},
      {"spill-ok", via_pto(fan(256, 4), scopes(1, 0, {"dep_pool=2048"}), {"fanin_spill=768"})},
      {"ready", via_pto(fan(300, 1), scopes(1, 0), {"ready_queue=256"})},
      {"ready-ok", via_pto(fan(300, 1), scopes(1, 0), {"ready_queue=512"})},
      {"early", via_pto(test::fanned_out(12, 49, 4), scopes(1, 0), {"cores_aiv=48"})},
      {"early-ok", via_pto(test::fanned_out(11, 49, 4), scopes(1, 0), {"cores_aiv=48"})},
      {"twait", twaits(4)},
      {"twait-ok", twaits(5)},
      {"coresidency", mpk_example({"sms=132", "workers=130", "schedulers=16"})},  // 466 tasks
      {"coresidency-ok", mpk_example({"sms=132", "workers=128", "schedulers=16"})},
      {"queue", mpk_example({"sms=2", "workers=1", "schedulers=1", "worker_queue=466"})},
      {"queue-ok", mpk_example({"sms=2", "workers=1", "schedulers=1", "worker_queue=467"})},
  };
  for (const Case& c : cases) {
    const bool rejected = capacity_rejected(c.p);
    ir::Result<vm::ForeignRun> r = vm::run_foreign(c.p);
    EXPECT_EQ(rejected, !r.ok()) << c.name << ": static " << (rejected ? "rejects" : "accepts")
                                 << ", run " << (r.ok() ? "completes" : test::text(r.diagnostics));
    EXPECT_EQ(std::string_view(c.name).ends_with("-ok"), !rejected) << c.name;
  }
}

TEST(ForeignRun, StaticVerdictAndRunAgreeOnEveryCorpusCase) {
  for (const auto& dir : test::corpus_cases()) {
    const ir::Program p = test::must(test::corpus_program(dir));
    const bool rejected = capacity_rejected(p);
    ir::Result<vm::ForeignRun> r = vm::run_foreign(p);
    EXPECT_EQ(rejected, !r.ok()) << dir.filename() << ": static "
                                 << (rejected ? "rejects" : "accepts") << ", run "
                                 << (r.ok() ? "completes" : test::text(r.diagnostics));
  }
}

// Eight tasks in one scope under a `window`-slot task ring: the run's status and its record.
std::pair<ir::Status, ir::Program> orchestrate(uint32_t window) {
  vm::OrchestratorOptions o;
  o.rings.task_window = window;
  o.machine.clusters = 1;
  vm::Orchestrator orch(o);
  static std::vector<float> data(9 * 8, 1.0f);
  const int64_t x = orch.tensor("x", ir::DType::F32, {8}, data.data(), ir::BufferKind::IO_INPUT);
  ir::Status st;
  {
    vm::Scope s(orch);
    for (int i = 0; i < 8 && st.ok(); ++i) {
      const int64_t y = orch.tensor(fmt::format("y{}", i), ir::DType::F32, {8},
                                    data.data() + 8 * (i + 1), ir::BufferKind::IO_OUTPUT);
      st = orch.submit(ir::Op::MUL, vm::CoreType::Aiv,
                       {{x, vm::ArgDir::Input, {}}, {y, vm::ArgDir::Output, {}}},
                       {{"scale", ir::ParamValue::of_float(1.0)}});
    }
  }
  ir::Status fin = orch.finish();
  if (st.ok()) st = fin;
  return {st, test::must(orch.record())};
}

TEST(ForeignRun, ARecordedOrchestrationGetsTheSameProofAgainstItsRings) {
  // Recorded under a 16-slot ring, the orchestration keeps its scopes and ring sizes: proved
  // clean, and with the ring cut to 4 slots proved to deadlock, which is what the orchestrator's
  // run-time detector (the backstop) reports when it runs with 4.
  auto [ok, p] = orchestrate(16);
  ASSERT_TRUE(ok.ok()) << test::text(ok.diagnostics);
  ASSERT_TRUE(p.runtime);
  EXPECT_EQ(p.runtime->scopes.size(), 1u);
  validate::Result v = validate::validate(p);
  EXPECT_TRUE(v.ok) << v.report();
  p.runtime->set(ir::Cap::task_window, {4});
  v = validate::validate(p);
  ASSERT_FALSE(v.ok);
  EXPECT_EQ(v.errors[0].code, "capacity.task-window") << v.report();
  EXPECT_FALSE(vm::run_foreign(p).ok());
  auto [stuck, q] = orchestrate(4);
  ASSERT_FALSE(stuck.ok());
  EXPECT_EQ(stuck.diagnostics[0].code, "orch.deadlock") << test::text(stuck.diagnostics);
}

}  // namespace
}  // namespace amk
