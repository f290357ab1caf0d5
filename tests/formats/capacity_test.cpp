// The capacity rules on graphs of the shapes that hung in users' hands (simpler #277, #1610,
// #264, #729, #448; MPK #761, #464), each beside a sibling that fits, written as the runtimes
// write them by amk's exporters and read back.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/formats.h"
#include "formats/shapes.h"
#include "ir/json_io.h"
#include "support.h"
#include "validate/validate.h"

namespace amk {
namespace {

using test::chain;
using test::fan;
using test::mpk_example;
using test::scopes;
using test::via_pto;
using testing::AllOf;
using testing::HasSubstr;

std::vector<std::string> codes(const validate::Result& r) {
  std::vector<std::string> out;
  for (const auto& d : r.errors) out.push_back(d.code);
  for (const auto& d : r.warnings) out.push_back(d.code);
  return out;
}

TEST(CapacityRules, TheSeedsSixteenSlotRingHolds208TasksInScopesOfFifteenButNotSixteen) {
  // pto2-runtime-design §4.4: window 16, 208 tasks; a scope pins its tasks until scope_end.
  const ir::Program p = chain(208);
  validate::Result ok = validate::validate(via_pto(p, scopes(1, 15, {"task_window=16"})));
  EXPECT_TRUE(ok.ok) << ok.report();
  validate::Result bad = validate::validate(via_pto(p, scopes(1, 16, {"task_window=16"})));
  ASSERT_EQ(codes(bad), std::vector<std::string>(13, "capacity.task-window")) << bad.report();
  const ir::Diagnostic& d = bad.errors[0];
  EXPECT_NE(d.message.find("ring 1: scope 'export.cpp:1' (depth 1) keeps 16 task(s) from being "
                           "reclaimed while it is open"),
            std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("needs task_window = 17, the runtime provides 16"), std::string::npos);
  EXPECT_EQ(d.pointer, "/tasks/15");  // the task that is never admitted
}

TEST(CapacityRules, NestedScopesOnRingThreePinTogether) {
  // simpler #1610: depth 4 and its enclosing depth 3 share ring 3. The depth-3 scope's own first
  // 8 tasks stay pinned while its inner scopes run, so the watermark cannot pass them and every
  // later task on the ring holds its slot: 40 at once, though each inner scope alone fits.
  const ir::Program p = chain(40);
  validate::Result nested =
      validate::validate(via_pto(p, scopes(4, 8, {"task_window=16"}, /*outer_tasks=*/8)));
  EXPECT_EQ(codes(nested), std::vector<std::string>{"capacity.task-window"}) << nested.report();
  EXPECT_NE(nested.errors[0].message.find(
                "ring 3: scope 'export.cpp:3' (depth 3) keeps 40 task(s) from being reclaimed"),
            std::string::npos)
      << nested.errors[0].message;
  // One level up the outer scope is on ring 2: the rings reclaim apart.
  validate::Result apart =
      validate::validate(via_pto(p, scopes(3, 8, {"task_window=16"}, /*outer_tasks=*/8)));
  EXPECT_TRUE(apart.ok) << apart.report();
  // Without tasks of its own, the outer scope pins nothing.
  EXPECT_TRUE(validate::validate(via_pto(p, scopes(4, 8, {"task_window=16"}))).ok);
}

TEST(CapacityRules, HeapCountsTheOutputsAScopePinsAndTheWrapItCannotStraddle) {
  // 8 outputs of 64 KB in one scope; deps.json knows the 7 that a consumer names (the last
  // output's size is in no edge).
  const ir::Program p = chain(8, 64 * 1024);
  formats::PtoExport o = scopes(1, 0, {"heap=524288"});
  o.runtime_outputs = true;
  validate::Result bad = validate::validate(via_pto(p, o));
  EXPECT_EQ(codes(bad), std::vector<std::string>{"capacity.heap"}) << bad.report();
  EXPECT_NE(bad.errors[0].message.find("458752 output bytes, plus up to 65536"), std::string::npos);
  o = scopes(1, 0, {"heap=524289"});
  o.runtime_outputs = true;
  EXPECT_TRUE(validate::validate(via_pto(p, o)).ok);
}

TEST(CapacityRules, DependencyPoolAndFaninSpillCountTheEntriesAScopeKeepsAlive) {
  // simpler #264: entries alive in the window past the pool; #729: 256 writers feeding
  // whole-tensor readers fill the spill pool with 192 entries per reader.
  const ir::Program p = fan(256, 4);
  validate::Result pool = validate::validate(via_pto(p, scopes(1, 0, {"dep_pool=1000"})));
  EXPECT_EQ(codes(pool), (std::vector<std::string>{"capacity.dep-pool"})) << pool.report();
  EXPECT_NE(pool.errors[0].message.find("1024 dependency entries"), std::string::npos);
  validate::Result spill =
      validate::validate(via_pto(p, scopes(1, 0, {"dep_pool=2048"}), {"fanin_spill=700"}));
  EXPECT_EQ(codes(spill), std::vector<std::string>{"capacity.fanin-spill"}) << spill.report();
  EXPECT_NE(spill.errors[0].message.find("768 fan-in entries past the 64 inline slots"),
            std::string::npos);
  EXPECT_TRUE(validate::validate(via_pto(p, scopes(1, 0, {"dep_pool=2048"}))).ok);
}

TEST(CapacityRules, ABlockNumAboveTheCoresOfItsShapeIsAWarning) {
  // simpler #448: require_sync_start with block_num past the cores never starts; deps.json does
  // not say which tasks require it, so the rule warns.
  formats::PtoExport o = scopes(1, 0);
  o.block_num = 49;
  const ir::Program p = chain(3);
  validate::Result r = validate::validate(via_pto(p, o, {"cores_aiv=48"}));
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(codes(r), std::vector<std::string>{"capacity.block-num"}) << r.report();
  o.block_num = 48;
  EXPECT_TRUE(codes(validate::validate(via_pto(p, o, {"cores_aiv=48"}))).empty());
}

TEST(CapacityRules, EarlyDispatchCohortsMustLeaveTheirProducerACore) {
  // simpler #2136: twelve early-dispatch consumers of four AIV blocks each may gate all 48 AIV
  // cores while their 49-block producer still has a block to place; eleven leave it four.
  const auto read = [](const ir::Program& p) {
    return validate::validate(via_pto(p, scopes(1, 0), {"cores_aiv=48"}));
  };
  validate::Result bad = read(test::fanned_out(12, 49, 4));
  EXPECT_EQ(codes(bad), (std::vector<std::string>{"capacity.early-dispatch", "capacity.block-num"}))
      << bad.report();
  ASSERT_FALSE(bad.errors.empty());
  EXPECT_EQ(bad.errors[0].pointer, "/tasks/0");
  EXPECT_THAT(bad.errors[0].message,
              AllOf(HasSubstr("early-dispatch consumers (task 1, 2, 3, ... (12 in all)) may gate "
                              "48 AIV core(s)"),
                    HasSubstr("needs cores_aiv = 49, the runtime provides 48")));
  EXPECT_TRUE(read(test::fanned_out(11, 49, 4)).ok);
  // Not flagged, nothing to gate, or a producer with no block left once it runs.
  EXPECT_TRUE(read(test::fanned_out(12, 49, 4, false)).ok);
  EXPECT_TRUE(codes(read(test::fanned_out(12, 1, 4))).empty());
  // A chip of unknown core counts: not checked, and the verdict says so.
  validate::Result unknown = validate::validate(via_pto(test::fanned_out(12, 49, 4), scopes(1, 0)));
  EXPECT_TRUE(unknown.ok);
  ASSERT_EQ(codes(unknown), std::vector<std::string>{"capacity.early-dispatch"})
      << unknown.report();
  EXPECT_THAT(unknown.warnings[0].message,
              HasSubstr("needs cores_aiv = 49, and the chip's count is unknown, so this is not "
                        "checked (give --target or --launch cores_aiv=N)"));
  // The smallest safe AIV core count is what the cohorts and one producer block take.
  const ir::Program p = via_pto(test::fanned_out(12, 40, 4), scopes(1, 0));
  int64_t aiv = 0;
  for (const validate::CapacityNeed& x : validate::smallest_safe_capacities(p))
    if (x.key == ir::Cap::cores_aiv) aiv = x.needed;
  EXPECT_EQ(aiv, 49);
}

// fan(8, 1) as PTO tasks on ring 1: writers 0..7 (AIV), the reader 8; PTO task id of position t.
std::string pto_id(int t) {
  return std::to_string((uint64_t{1} << 32) | static_cast<uint64_t>(t));
}

TEST(CapacityRules, ABlockingWaitUnorderedWithItsNotifierMustLeaveItACore) {
  // simpler #1798: writers 0..3 block in TWAIT for writers 4..7, which no edge orders first: on
  // four AIV cores the waiters may hold all four; five leave each notifier one.
  std::vector<std::string> launch;
  for (int i = 0; i < 4; ++i) launch.push_back("twait=" + pto_id(i) + ":" + pto_id(i + 4));
  const auto read = [&](const char* cores, std::vector<std::string> extra = {}) {
    std::vector<std::string> l = launch;
    l.push_back(cores);
    l.insert(l.end(), extra.begin(), extra.end());
    return validate::validate(via_pto(fan(8, 1), scopes(1, 0), l));
  };
  validate::Result bad = read("cores_aiv=4");
  EXPECT_EQ(codes(bad), std::vector<std::string>(4, "capacity.twait")) << bad.report();
  EXPECT_EQ(bad.errors[0].pointer, "/tasks/4");
  EXPECT_THAT(bad.errors[0].message,
              AllOf(HasSubstr("the waiters unordered with their notifiers (task 0, 1, 2, ... (4 in "
                              "all)) may hold 4 AIV core(s) at once"),
                    HasSubstr("needs cores_aiv = 5, the runtime provides 4")));
  EXPECT_TRUE(read("cores_aiv=5").ok) << read("cores_aiv=5").report();
  // A notifier the graph runs first (the reader waits for writer 0 by an edge) needs nothing.
  launch = {"twait=" + pto_id(8) + ":" + pto_id(0)};
  EXPECT_TRUE(read("cores_aiv=1").ok) << read("cores_aiv=1").report();
  // A notifier that runs only after its waiter, the waiter itself, or no task: an error at any
  // core count.
  for (const std::string& pair : {"twait=" + pto_id(0) + ":" + pto_id(8),
                                  "twait=" + pto_id(3) + ":" + pto_id(3), "twait=7:" + pto_id(1)}) {
    launch = {pair};
    validate::Result r = read("cores_aiv=64");
    ASSERT_EQ(codes(r), std::vector<std::string>{"capacity.twait"}) << pair;
    EXPECT_TRUE(r.errors[0].message.find("waits forever") != std::string::npos ||
                r.errors[0].message.find("no task has id 7") != std::string::npos)
        << r.errors[0].message;
  }
  // Pairs given to a runtime without blocking waits are refused, not ignored.
  validate::Result mpk = validate::validate(mpk_example({"twait=1:2"}));
  ASSERT_FALSE(mpk.ok);
  EXPECT_EQ(mpk.errors[0].code, "capacity.twait");
  EXPECT_EQ(mpk.errors[0].pointer, "/runtime/twaits");
  // Through amk's JSON (`amk import`) the pairs and the verdict stay.
  launch = {};
  for (int i = 0; i < 4; ++i) launch.push_back("twait=" + pto_id(i) + ":" + pto_id(i + 4));
  const ir::Program p = via_pto(fan(8, 1), scopes(1, 0), [&] {
    std::vector<std::string> l = launch;
    l.push_back("cores_aiv=4");
    return l;
  }());
  const ir::Program q = test::must(ir::parse_program(ir::write_program(p)));
  EXPECT_EQ(q.runtime->twaits, p.runtime->twaits);
  EXPECT_EQ(codes(validate::validate(q)), codes(bad));
}

TEST(CapacityRules, ReadyQueuesBoundWhatTheWindowsKeepAlive) {
  const ir::Program p = fan(300, 1);
  validate::Result r = validate::validate(via_pto(p, scopes(1, 0), {"ready_queue=256"}));
  EXPECT_EQ(codes(r), std::vector<std::string>{"capacity.ready-queue"}) << r.report();
  EXPECT_TRUE(validate::validate(via_pto(p, scopes(1, 0), {"ready_queue=512"})).ok);
}

TEST(CapacityRules, MpkWorkersAndSchedulerBlocksMustAllBeResident) {
  // mirage #761: 130 workers and 16 scheduler warps (4 CTAs) on 132 SMs.
  validate::Result bad =
      validate::validate(mpk_example({"sms=132", "workers=130", "schedulers=16"}));
  EXPECT_EQ(codes(bad), std::vector<std::string>{"capacity.coresidency"}) << bad.report();
  EXPECT_NE(bad.errors[0].message.find("needs sms = 134, the runtime provides 132"),
            std::string::npos);
  EXPECT_TRUE(validate::validate(mpk_example({"sms=132", "workers=128", "schedulers=16"})).ok);
}

TEST(CapacityRules, AnMpkWorkerQueueHoldsEveryTaskDealtToItInAnIteration) {
  // mirage #464: one worker is dealt all 466 tasks the example's launch event queues.
  validate::Result bad =
      validate::validate(mpk_example({"sms=2", "workers=1", "schedulers=1", "worker_queue=400"}));
  EXPECT_EQ(codes(bad), std::vector<std::string>{"capacity.worker-queue"}) << bad.report();
  EXPECT_NE(bad.errors[0].message.find("worker 0 is dealt 466 task(s)"), std::string::npos);
  EXPECT_TRUE(
      validate::validate(mpk_example({"sms=2", "workers=1", "schedulers=1", "worker_queue=467"}))
          .ok);
}

TEST(CapacityRules, AmksOwnKernelNeedsItsBlockToFitAnSm) {
  ir::Program p = chain(2);
  ir::Target t;
  t.name = "h100";
  t.sm_arch = ir::Number::of(90);
  t.num_sms = ir::Number::of(132);
  t.max_threads_per_sm = ir::Number::of(2048);
  t.smem_bytes_per_block_optin = ir::Number::of(232448);
  p.target = t;
  p.config = ir::ScheduleConfig::defaults();
  EXPECT_TRUE(validate::validate(p).ok);
  p.config->smem_bytes_per_block = ir::JsonValue(nlohmann::ordered_json(300000));
  p.config->threads_per_block = ir::JsonValue(nlohmann::ordered_json(2048));
  validate::Result r = validate::validate(p);
  EXPECT_EQ(codes(r), (std::vector<std::string>{"capacity.coresidency", "capacity.coresidency"}))
      << r.report();
}

TEST(CapacityRules, SmallestSafeCapacitiesAreWhatEachRingNeeds) {
  const ir::Program p = via_pto(chain(40), scopes(1, 10));
  const std::vector<validate::CapacityNeed> caps = validate::smallest_safe_capacities(p);
  auto find = [&](ir::Cap k, int ring) -> const validate::CapacityNeed* {
    for (const auto& c : caps)
      if (c.key == k && c.ring == ring) return &c;
    return nullptr;
  };
  ASSERT_TRUE(find(ir::Cap::task_window, 1));
  EXPECT_EQ(find(ir::Cap::task_window, 1)->needed, 11);
  EXPECT_EQ(find(ir::Cap::dep_pool, 1)->needed, 10);  // 10 tasks waiting on one producer each
  EXPECT_EQ(find(ir::Cap::task_window, 1)->capacity, 16384);
}

TEST(RoundTrip, ImportedGraphsKeepTheirVerdictThroughAmksJson) {
  for (const char* cfg : {"ok", "bad"}) {
    const ir::Program p = via_pto(
        chain(40), scopes(4, 8, {cfg == std::string("ok") ? "task_window=64" : "task_window=16"}));
    const ir::Program q = test::must(ir::parse_program(ir::write_program(p)));
    EXPECT_EQ(codes(validate::validate(p)), codes(validate::validate(q))) << cfg;
  }
  formats::ReadOptions o;
  o.origin = "task_graph.json";
  const std::string mpk = test::must(formats::export_mpk(chain(30)));
  const ir::Program m = test::must(formats::read_mpk(mpk, o));
  EXPECT_TRUE(validate::validate(m).ok) << validate::validate(m).report();
  EXPECT_EQ(m.tasks.size(), 32u);
}

TEST(RoundTrip, AnImportedPtoGraphExportsItsTasksKernelsBlocksAndEarlyDispatch) {
  // deps.json -> amk -> deps.json: what PTO schedules by (the shape from kernel_ids, block_num,
  // early_dispatch) is the file's, not amk's defaults; --block-num still overrides it.
  const ir::Program p = via_pto(test::fanned_out(3, 7, 2), scopes(1, 0));
  const ir::Program q = via_pto(p, scopes(1, 0));
  ASSERT_TRUE(q.runtime && p.runtime);
  EXPECT_EQ(q.runtime->tasks, p.runtime->tasks);
  EXPECT_EQ(q.runtime->tasks[0].variant, 7);
  EXPECT_TRUE(q.runtime->tasks[1].early);
  formats::PtoExport o = scopes(1, 0);
  o.block_num = 5;
  const ir::Program r = via_pto(p, o);
  for (const ir::ForeignTask& f : r.runtime->tasks) EXPECT_EQ(f.variant, 5);
}

}  // namespace
}  // namespace amk
