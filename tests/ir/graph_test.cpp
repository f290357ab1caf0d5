// Proves the factored CSR adjacency is exactly AMK's dependency_edges() and its Kahn order.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "fixtures/gen.h"
#include "ir/digraph.h"
#include "ir/graph.h"
#include "ir/json_io.h"
#include "ir/rng.h"
#include "support.h"

namespace amk::ir {
using namespace amk::fixtures;  // the seeded programs these tests run on
namespace {

namespace fs = std::filesystem;

// AMK's definition, written the naive way: a sorted set of (producer, waiter) pairs.
std::set<std::pair<uint32_t, uint32_t>> naive_edges(const Program& p) {
  std::set<std::pair<uint32_t, uint32_t>> e;
  for (uint32_t t = 0; t < p.tasks.size(); ++t)
    for (const Wait& w : p.tasks[t].waits)
      for (uint32_t q = 0; q < p.tasks.size(); ++q)
        if (p.tasks[q].out_counter == w.counter) e.emplace(q, t);
  return e;
}

// AMK's Kahn over the naive edges (FIFO, successors ascending); with `queues`, each task's loader
// queue successor (the next task on its SM, list order) is visited after its successors.
std::vector<uint32_t> naive_kahn(const Program& p, bool queues = false) {
  auto edges = naive_edges(p);
  std::vector<std::vector<uint32_t>> adj(p.tasks.size());
  std::vector<int> indeg(p.tasks.size());
  for (auto [a, b] : edges) {
    adj[a].push_back(b);
    ++indeg[b];
  }
  if (queues) {
    std::map<int64_t, uint32_t> last;  // per SM (none: SM 0), its last task so far
    for (uint32_t t = 0; t < p.tasks.size(); ++t) {
      const int64_t sm = std::max<int64_t>(0, p.tasks[t].sm.value_or(0));
      if (auto it = last.find(sm); it != last.end()) {
        adj[it->second].push_back(t);  // after its successors: pushed last
        ++indeg[t];
      }
      last[sm] = t;
    }
  }
  std::deque<uint32_t> ready;
  for (uint32_t t = 0; t < p.tasks.size(); ++t)
    if (!indeg[t]) ready.push_back(t);
  std::vector<uint32_t> order;
  while (!ready.empty()) {
    uint32_t n = ready.front();
    ready.pop_front();
    order.push_back(n);
    for (uint32_t m : adj[n])
      if (--indeg[m] == 0) ready.push_back(m);
  }
  return order;
}

void expect_same_as_naive(const Program& p, const std::string& what) {
  Graph g = Graph::build(p);
  auto edges = naive_edges(p);
  std::set<std::pair<uint32_t, uint32_t>> got;
  for (uint32_t t = 0; t < g.num_tasks(); ++t)
    for (uint32_t c : g.consumers(t)) got.emplace(t, c);
  EXPECT_EQ(got, edges) << what;
  EXPECT_EQ(g.edge_count(), edges.size()) << what;
  EXPECT_EQ(g.topo_order(), naive_kahn(p)) << what;
}

TEST(Graph, EdgeCountAndAcyclicityEqualAmkStatsOnConformancePrograms) {
  auto manifest = nlohmann::json::parse(test::slurp(test::conformance_dir() / "manifest.json"));
  int n = 0;
  for (const auto& e : manifest) {
    if (e["ok"].is_null()) continue;
    auto r = load_program((test::conformance_dir() / e["file"].get<std::string>()).string());
    ASSERT_TRUE(r.ok()) << e["file"];
    Graph g = Graph::build(*r.value);
    EXPECT_EQ(g.edge_count(), e["stats"]["edges"].get<uint64_t>()) << e["file"];
    EXPECT_EQ(g.acyclic(), e["stats"]["acyclic"].get<bool>()) << e["file"];
    ++n;
  }
  EXPECT_EQ(n, 35);
}

TEST(Graph, FactoredAdjacencyEqualsNaiveEdgesAndKahnOrderOnSmallPrograms) {
  for (const auto& e : fs::directory_iterator(test::conformance_dir() / "programs")) {
    auto r = load_program(e.path().string());
    if (!r.ok() || r.value->tasks.size() > 2000) continue;
    expect_same_as_naive(*r.value, e.path().filename().string());
  }
}

TEST(Graph, FactoredAdjacencyEqualsNaiveEdgesOnGeneratedPrograms) {
  const GenShape shapes[] = {GenShape::Llama, GenShape::Mesh, GenShape::Chain, GenShape::Fan};
  const GenDefect defects[] = {GenDefect::None, GenDefect::Cycle, GenDefect::SelfWait,
                               GenDefect::MissingBuffer};
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    GenOptions o;
    o.shape = shapes[seed % 4];
    o.defect = defects[(seed / 4) % 4];
    o.seed = seed;
    o.tasks = 300;
    expect_same_as_naive(generate(o).program, "seed " + std::to_string(seed));
  }
}

// Counters shared by many producers in runs and interleaved, waits on counters nobody
// increments, on missing ids and on the task's own counter, repeated waits, cycles: the slot-wise
// Kahn and the run-wise counting sorts must give AMK's edges and order on any of them.
TEST(Graph, FactoredAdjacencyEqualsNaiveEdgesAndKahnOrderOnRandomCounterGraphs) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    Rng rng = Rng::seeded(seed, 7);
    Program p;
    const auto counters = static_cast<int64_t>(1 + rng.below(12));
    for (int64_t c = 0; c < counters; ++c) p.add_counter();
    const size_t n = 1 + rng.below(60);
    int64_t run_counter = 0;
    for (size_t t = 0; t < n; ++t) {
      Task task;
      if (!rng.chance(70)) run_counter = static_cast<int64_t>(rng.below(counters + 3)) - 1;
      task.out_counter = run_counter;  // often the last task's, sometimes none of the counters
      const uint64_t waits = rng.below(4);
      for (uint64_t w = 0; w < waits; ++w) {
        // Mostly a counter of earlier tasks (acyclic), sometimes any (a cycle or a self-wait).
        const int64_t c = rng.chance(85) && t > 0
                              ? p.tasks[rng.below(t)].out_counter
                              : static_cast<int64_t>(rng.below(counters + 3)) - 1;
        task.waits.push_back({c, 1, {}});
      }
      p.tasks.push_back(std::move(task));
    }
    expect_same_as_naive(p, "seed " + std::to_string(seed));
  }
}

TEST(Graph, MissingCountersStillConnectProducersAndWaiters) {
  Program p;
  Task a;
  a.out_counter = 99;  // names no counter
  Task b;
  b.waits.push_back({99, 1, {}});
  b.out_counter = -4;
  Task c;
  c.waits.push_back({-4, 1, {}});
  c.waits.push_back({-4, 1, {}});  // a duplicate wait is one edge
  p.tasks = {a, b, c};
  Graph g = Graph::build(p);
  EXPECT_EQ(g.edge_count(), 2u);
  ASSERT_EQ(g.consumers(0).size(), 1u);
  EXPECT_EQ(g.consumers(0)[0], 1u);
  EXPECT_FALSE(g.slot_exists(g.out_slot(0)));
  EXPECT_EQ(g.slot_counter(g.out_slot(1)), -4);
  EXPECT_TRUE(g.acyclic());
}

TEST(Graph, SelfEdgeMakesTheGraphCyclic) {
  Program p;
  p.add_counter();
  Task a;
  a.out_counter = 0;
  a.waits.push_back({0, 1, {}});
  p.tasks = {a};
  Graph g = Graph::build(p);
  EXPECT_EQ(g.edge_count(), 1u);
  EXPECT_FALSE(g.acyclic());
}

}  // namespace
}  // namespace amk::ir

namespace amk::ir {
namespace {

// The naive longest path: relax every naive edge (plus the SM-queue edges the loader runs) in a
// Kahn order computed from them, and the naive queue edges.
std::vector<double> naive_finish(const Program& p, const std::vector<double>& cost, bool queues) {
  auto edges = naive_edges(p);
  if (queues) {
    std::map<int64_t, uint32_t> last;
    for (uint32_t t = 0; t < p.tasks.size(); ++t) {
      const int64_t sm = std::max<int64_t>(0, p.tasks[t].sm.value_or(0));
      if (last.count(sm)) edges.emplace(last[sm], t);
      last[sm] = t;
    }
  }
  std::vector<std::vector<uint32_t>> preds(p.tasks.size());
  for (auto [a, b] : edges) preds[b].push_back(a);
  std::vector<double> fin(p.tasks.size(), -1);
  bool changed = true;
  while (changed) {  // Bellman-style to a fixed point (the graph is acyclic)
    changed = false;
    for (uint32_t t = 0; t < p.tasks.size(); ++t) {
      double start = 0;
      bool ready = true;
      for (uint32_t q : preds[t]) {
        if (fin[q] < 0) ready = false;
        start = std::max(start, fin[q]);
      }
      if (ready && fin[t] != start + cost[t]) {
        fin[t] = start + cost[t];
        changed = true;
      }
    }
  }
  return fin;
}

TEST(ScheduleGraph, LongestPathsAndLengthsFoldedThroughCountersEqualTheNaiveEdgeRelaxation) {
  const GenShape shapes[] = {GenShape::Llama, GenShape::Mesh, GenShape::Chain, GenShape::Fan};
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    GenOptions o;
    o.shape = shapes[seed % 4];
    o.seed = seed;
    o.tasks = 200;
    o.num_sms = seed % 3 == 0 ? 7 : 0;  // with and without SM queues
    const Program p = generate(o).program;
    const Graph g = Graph::build(p);
    std::vector<double> cost(p.tasks.size());
    for (size_t t = 0; t < cost.size(); ++t) cost[t] = 1.0 + static_cast<double>((t * 37) % 11);
    for (bool queues : {false, true}) {
      const ScheduleGraph sg(p, g, queues ? QueueEdges::Loader : QueueEdges::None);
      ASSERT_TRUE(sg.acyclic()) << seed;
      const auto lp = longest_path<double>(sg, cost);
      EXPECT_EQ(lp.finish, naive_finish(p, cost, queues))
          << "seed " << seed << " queues " << queues;
      // The path is a chain of real predecessors ending at the longest finish.
      const auto path = lp.path();
      ASSERT_FALSE(path.empty());
      EXPECT_EQ(lp.finish[path.back()], lp.length());
      double sum = 0;
      for (uint32_t t : path) sum += cost[t];
      EXPECT_DOUBLE_EQ(sum, lp.length()) << seed;
      // The lengths alone, for two costs in one walk (the second with zeros and ties), are those
      // of longest_path; a cost that is not finite is handed to it.
      std::vector<double> ties(cost.size());
      for (size_t t = 0; t < ties.size(); ++t) ties[t] = static_cast<double>((t * 7) % 3);
      const auto lens = longest_lengths<2>(sg, {std::span<const double>(cost), ties});
      ASSERT_TRUE(lens.has_value()) << seed;
      EXPECT_EQ((*lens)[0], lp.length()) << seed;
      EXPECT_EQ((*lens)[1], longest_path<double>(sg, ties).length()) << seed;
      std::vector<double> odd = ties;
      odd[seed % odd.size()] = seed % 2 ? std::nan("") : HUGE_VAL;
      const double want = longest_path<double>(sg, odd).length();
      const double got = (*longest_lengths<1>(sg, {std::span<const double>(odd)}))[0];
      EXPECT_TRUE(got == want || (std::isnan(got) && std::isnan(want))) << got << " " << want;
      // The order is Kahn's over the naive edges (FIFO, successors ascending, then the queue
      // successor), and positions() its inverse; without queue edges it is the counter graph's.
      EXPECT_EQ(sg.order(), naive_kahn(p, queues)) << seed;
      if (!queues) {
        EXPECT_EQ(sg.order(), g.topo_order()) << seed;
      }
      for (size_t k = 0; k < sg.order().size(); ++k)
        EXPECT_EQ(sg.positions()[sg.order()[k]], k) << seed;
    }
  }
}

TEST(ScheduleGraph, AQueueOrderAgainstTheDependenciesIsACycle) {
  Program p;
  p.add_counter();
  p.add_counter();
  Task a;  // SM 0, first in the queue, waits for b
  a.out_counter = 0;
  a.waits.push_back({1, 1, {}});
  a.sm = 0;
  Task b;  // SM 0, after a in the queue
  b.out_counter = 1;
  b.sm = 0;
  p.tasks = {a, b};
  const Graph g = Graph::build(p);
  EXPECT_TRUE(ScheduleGraph(p, g, QueueEdges::None).acyclic());
  const ScheduleGraph q(p, g, QueueEdges::Assigned);
  EXPECT_FALSE(q.acyclic());
  EXPECT_EQ(q.queue_next(0), 1);
  EXPECT_EQ(q.queue_prev(1), 0);
  EXPECT_FALSE(longest_path<double>(q, std::vector<double>{1, 1}).acyclic);
  const std::vector<double> ones{1, 1};
  EXPECT_FALSE(longest_lengths<1>(q, {std::span<const double>(ones)}).has_value());
}

TEST(ScheduleGraph, EveryTaskPlacedOnlyWhereEachTaskHasAnSmOfZeroOrMore) {
  Program p;
  p.add_counter();
  Task a;
  a.out_counter = 0;
  a.sm = 1;
  Task b = a;
  b.sm = 0;
  p.tasks = {a, b};
  const Graph g = Graph::build(p);
  ScheduleGraph q(p, g, QueueEdges::Assigned);
  EXPECT_TRUE(q.every_task_placed());
  EXPECT_TRUE(ScheduleGraph(p, g, QueueEdges::Loader).every_task_placed());
  EXPECT_FALSE(ScheduleGraph(p, g, QueueEdges::None).every_task_placed());
  for (const std::optional<int64_t> sm : {std::optional<int64_t>(), std::optional<int64_t>(-1)}) {
    p.tasks[1].sm = sm;
    q.assign(p, QueueEdges::Assigned);  // built again, in place
    EXPECT_FALSE(q.every_task_placed());
  }
  p.tasks[1].sm = 2;
  q.assign(p, QueueEdges::Assigned);
  EXPECT_TRUE(q.every_task_placed());
}

TEST(Digraph, KahnOrderAndUpwardRanks) {
  const std::pair<uint32_t, uint32_t> edges[] = {{0, 2}, {1, 2}, {2, 3}, {1, 3}};
  const Digraph d = Digraph::from_edges(4, edges);
  EXPECT_EQ(d.topo_order(), (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(longest_tail<double>(d, std::vector<double>{1, 2, 3, 4}),
            (std::vector<double>{8, 9, 7, 4}));
  const std::pair<uint32_t, uint32_t> cyc[] = {{0, 1}, {1, 0}};
  EXPECT_TRUE(longest_tail<double>(Digraph::from_edges(2, cyc), std::vector<double>{1, 1}).empty());
}

}  // namespace
}  // namespace amk::ir
