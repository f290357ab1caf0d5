// Proves the machinery under the rules: Reach equals naive reachability, the counter simulation
// equals AMK's list-order sweeps, the adversarial simulation has no KV_APPEND false positive, the
// library API is reusable and thread-safe, and there is no task-count cap.
#include <gtest/gtest.h>

#include <bitset>
#include <filesystem>
#include <thread>

#include "fixtures/gen.h"
#include "ir/graph.h"
#include "ir/json_io.h"
#include "support.h"
#include "validate/reach.h"
#include "validate/simulate.h"
#include "validate/validate.h"

namespace amk::validate {
namespace {

namespace fs = std::filesystem;

TEST(Reach, AnswersEqualNaiveTransitiveClosureOnRandomDags) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    fixtures::GenOptions o;
    o.shape = seed % 2 ? fixtures::GenShape::Mesh : fixtures::GenShape::Llama;
    o.seed = seed;
    o.tasks = 700;
    ir::Program p = fixtures::generate(o).program;
    ir::Graph g = ir::Graph::build(p);
    ASSERT_TRUE(g.acyclic());
    const uint32_t n = g.num_tasks();
    ASSERT_LE(n, 1024u);
    std::vector<std::bitset<1024>> desc(n);  // strict descendants, by reverse topological order
    for (auto it = g.topo_order().rbegin(); it != g.topo_order().rend(); ++it)
      for (uint32_t c : g.consumers(*it)) {
        desc[*it].set(c);
        desc[*it] |= desc[c];
      }
    Reach r;
    r.bind(g);
    uint64_t s = seed;
    std::vector<std::pair<uint32_t, uint32_t>> qs;
    for (int k = 0; k < 20000; ++k) {
      s = s * 6364136223846793005ull + 1;
      qs.emplace_back(static_cast<uint32_t>((s >> 20) % n), static_cast<uint32_t>((s >> 40) % n));
      r.add(qs.back().first, qs.back().second);
    }
    r.solve();
    for (size_t k = 0; k < qs.size(); ++k)
      ASSERT_EQ(r.answer(k), desc[qs[k].first].test(qs[k].second))
          << "seed " << seed << " query " << qs[k].first << " -> " << qs[k].second;
  }
}

// AMK's simulate_counters, written the naive way.
std::pair<std::vector<uint32_t>, uint64_t> naive_sweeps(const ir::Program& p) {
  std::map<int64_t, int64_t> cval;
  for (size_t c = 0; c < p.counters.size(); ++c) cval[static_cast<int64_t>(c)] = p.counters[c].init;
  std::vector<bool> done(p.tasks.size());
  std::vector<uint32_t> order;
  uint64_t sweeps = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (uint32_t t = 0; t < p.tasks.size(); ++t) {
      if (done[t]) continue;
      bool ok = true;
      for (const auto& w : p.tasks[t].waits) ok = ok && cval[w.counter] >= w.threshold;
      if (!ok) continue;
      done[t] = true;
      ++cval[p.tasks[t].out_counter];
      order.push_back(t);
      progress = true;
    }
    sweeps += progress;
  }
  return {order, sweeps};
}

TEST(CounterSimulation, FireOrderAndSweepsEqualAmksSweepsIncludingReversedLists) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    fixtures::GenOptions o;
    o.shape = seed % 2 ? fixtures::GenShape::Mesh : fixtures::GenShape::Llama;
    o.seed = seed;
    o.tasks = 300;
    o.defect = seed % 4 == 0 ? fixtures::GenDefect::Cycle : fixtures::GenDefect::None;
    ir::Program p = fixtures::generate(o).program;
    if (seed % 3 == 0) {  // reverse the list (ids stay positional): needs many sweeps
      std::reverse(p.tasks.begin(), p.tasks.end());
    }
    ir::Graph g = ir::Graph::build(p);
    CounterSim cs = simulate_counters(p, g);
    auto [order, sweeps] = naive_sweeps(p);
    EXPECT_EQ(cs.order, order) << seed;
    EXPECT_EQ(cs.sweeps, sweeps) << seed;
    EXPECT_EQ(cs.order.size() + cs.stuck.size(), p.tasks.size());
  }
}

TEST(AdversarialSimulation, LoweredProgramsAreCleanAndKvAppendIsNoFalsePositive) {
  for (const char* f : {"toy_1L_default.json", "toy_2L_default.json", "toy_1L_splitkv_pos63.json",
                        "toy_1L_B4.json", "toy_1L_sm_lpt.json", "toy_1L_pages_ok.json"}) {
    auto r = ir::load_program((test::conformance_dir() / "programs" / f).string());
    ASSERT_TRUE(r.ok());
    ir::Graph g = ir::Graph::build(*r.value);
    AdversarialOptions o;
    o.seeds = 64;
    Adversarial a = simulate_adversarial(*r.value, g, o);
    EXPECT_TRUE(a.races.empty()) << f << ": " << (a.races.empty() ? "" : a.races[0].message);
    EXPECT_TRUE(a.stuck.empty()) << f;
  }
}

TEST(AdversarialSimulation, FindsEachRaceClassAndReplaysFromItsSeed) {
  for (const char* f : {"bad_read_without_happens_before.json", "bad_kv_read_before_append.json",
                        "bad_waw_overlapping_tiles.json", "bad_page_clobber.json",
                        "bad_partial_wait_shared_counter.json"}) {
    auto r = ir::load_program((test::conformance_dir() / "programs" / f).string());
    ASSERT_TRUE(r.ok());
    ir::Graph g = ir::Graph::build(*r.value);
    Adversarial a = simulate_adversarial(*r.value, g, {});
    ASSERT_FALSE(a.races.empty()) << f;
    AdversarialOptions one;
    one.seeds = 1;
    one.first_seed = a.races[0].seed;
    Adversarial again = simulate_adversarial(*r.value, g, one);
    ASSERT_FALSE(again.races.empty()) << f;
    EXPECT_EQ(again.races[0].message, a.races[0].message) << f;
  }
}

TEST(LibraryApi, ReusedValidatorAgreesWithFreshOnesAndThreadsAgreeWithSequential) {
  std::vector<ir::Program> programs;
  for (uint64_t s = 1; s <= 24; ++s) {
    fixtures::GenOptions o;
    o.shape = s % 2 ? fixtures::GenShape::Llama : fixtures::GenShape::Mesh;
    o.seed = s;
    o.tasks = 200 + s * 13;
    o.pages = s % 3 == 0;
    o.defect = static_cast<fixtures::GenDefect>(s % 11);
    programs.push_back(fixtures::generate(o).program);
  }
  std::vector<std::string> sequential;
  Validator reused;
  for (const auto& p : programs) {
    Result a = reused.validate(p);
    Result b = Validator().validate(p);
    EXPECT_EQ(a.report(), b.report());
    sequential.push_back(a.report());
  }
  std::vector<std::string> parallel(programs.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = static_cast<size_t>(t); i < programs.size(); i += 4)
        parallel[i] = validate(programs[i]).report();  // thread-local validators
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(parallel, sequential);
}

TEST(NoTaskCap, ARaceDeepInsideALargeProgramIsFound) {
  // AMK skips RAW/WAW/page proofs above 8,000 tasks; amk must not.
  fixtures::GenOptions o;
  o.tasks = 60000;
  o.pages = true;
  ir::Program p = fixtures::generate(o).program;
  ASSERT_GT(p.tasks.size(), 50000u);
  Validator v;
  Result clean = v.validate(p);
  ASSERT_TRUE(clean.ok) << clean.report();
  // Drop the wait of one of the last projection tiles: a RAW race near the end.
  size_t victim = p.tasks.size() - 30;
  while (p.tasks[victim].op != ir::Op::GEMV_TILE) --victim;
  p.tasks[victim].waits.clear();
  Result r = v.validate(p);
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.errors[0].code, "race.raw");
  EXPECT_EQ(r.errors[0].pointer, ir::task_pointer(victim, "inputs/0"));
  EXPECT_TRUE(r.warnings.empty()) << "no 'checks skipped' warning at any size";
}

TEST(ParallelProof, CappedRulesAndRacesAcrossThreadRangesMergeAsOneThreadReportsThem) {
  // More than the cap of one rule, spread over every range, plus races whose happens-before
  // queries come from every range: 1 to 8 threads give the same result, cap summary included.
  fixtures::GenOptions o;
  o.tasks = 24000;
  ir::Program p = fixtures::generate(o).program;
  for (size_t t = 3; t < p.tasks.size(); t += 7)
    if (!p.tasks[t].waits.empty()) p.tasks[t].waits[0].threshold = 1000;  // wait.unsatisfiable
  for (size_t t = 1000; t + 700 < p.tasks.size(); t += 2500) {
    if (p.tasks[t].op == ir::Op::GEMV_TILE) p.tasks[t].waits.clear();  // race.raw
    // A read of an output from layers before: ordered, but only through a path (a query that
    // holds, between queries that fail).
    p.tasks[t + 700].inputs.push_back(p.tasks[t - 900].outputs[0]);
  }
  Validator one;
  one.set_threads(1);
  const Result serial = one.validate(p);
  ASSERT_FALSE(serial.ok);
  size_t unsatisfiable = 0;
  for (const auto& e : serial.errors) unsatisfiable += e.code == "wait.unsatisfiable";
  ASSERT_EQ(unsatisfiable, 1001u) << "the cap's 1000 and one summary";
  for (unsigned n : {2u, 3u, 8u}) {
    Validator v;
    v.set_threads(n);
    const Result r = v.validate(p);
    EXPECT_EQ(r.report(), serial.report()) << n << " threads";
    EXPECT_EQ(r.to_json(), serial.to_json()) << n << " threads";
  }
}

TEST(CycleWitness, LongCyclesNeedNoRecursionAndStartAtTheLowestTask) {
  fixtures::GenOptions o;
  o.shape = fixtures::GenShape::Chain;
  o.tasks = 200000;
  ir::Program p = fixtures::generate(o).program;
  p.tasks[5].waits.push_back({p.tasks[150000].out_counter, 1, {}});  // close a 150k-task loop
  Result r = validate(p);
  ASSERT_FALSE(r.ok);
  ASSERT_EQ(r.errors[0].code, "graph.cycle");
  EXPECT_NE(r.errors[0].message.find("cycle: 5:c5 -> 6:c6"), std::string::npos);
  EXPECT_EQ(r.errors[0].notes[0].message.rfind("from its lowest task: t5:c5 -> t6:c6", 0), 0u);
}

}  // namespace
}  // namespace amk::validate
