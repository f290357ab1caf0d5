// Proves the search layer's promises: the same seed gives the same trials and best for any number
// of jobs, a resumed search equals an uninterrupted one, the best is never worse than the start,
// every rejection is logged with its rule code, duplicates are never evaluated again, the
// measurement exploit ranks by measurements and survives a failing measurer, and a batch is dealt
// to evaluators by structure.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "ir/fileio.h"
#include "ir/json_io.h"
#include "lower/config.h"
#include "lower/lower.h"
#include "lower_support.h"
#include "search/search.h"
#include "search/space.h"
#include "support.h"
#include "validate/validate.h"

namespace amk::search {
namespace {

namespace ts = lower::test_support;
using test::must;

Space space_for(const lower::ModelSpec& m, const targets::TargetSpec& t, const std::string& text) {
  return must(parse_space(text, "space.json", m, t, lower::default_config()));
}

SearchResult run(const lower::ModelSpec& m, const targets::TargetSpec& t, SearchOptions o,
                 std::optional<Space> space = std::nullopt) {
  Space s =
      space ? *space : must(default_space(m, t, o.start ? *o.start : lower::default_config()));
  return must(Search(m, t, std::move(s), std::move(o)).run());
}

SearchOptions options(int64_t budget, uint64_t seed, Algorithm a, int jobs) {
  SearchOptions o;
  o.budget = budget;
  o.seed = seed;
  o.algorithm = a;
  o.jobs = jobs;
  return o;
}

// What a trial is, without its timings.
std::string identity(const Trial& t) {
  std::string s = std::to_string(t.index) + " " + std::string(name(t.source)) + " " + t.key + " " +
                  std::to_string(t.duplicate_of) + (t.valid ? " valid " : " invalid ") +
                  (std::isfinite(t.score) ? std::to_string(t.score) : "inf");
  for (const ir::Diagnostic& d : t.diagnostics) s += " " + d.code;
  return s;
}

std::vector<std::string> identities(const SearchResult& r) {
  std::vector<std::string> out;
  for (const Trial& t : r.trials) out.push_back(identity(t));
  return out;
}

TEST(Search, TheSameSeedGivesTheSameTrialsAndBestForOneAndTwoJobs) {
  for (const char* model : {"toy-2L", "smollm2-135m"}) {
    const auto m = ts::model(model);
    const auto t = ts::target("a2a3");
    for (Algorithm a : {Algorithm::Descent, Algorithm::Amk}) {
      SearchOptions o = options(120, 7, a, 1);
      const SearchResult one = run(m, t, o);
      o.jobs = 2;
      const SearchResult two = run(m, t, o);
      EXPECT_EQ(identities(one), identities(two)) << model << " " << name(a);
      EXPECT_EQ(one.best, two.best);
      EXPECT_EQ(ir::write_config(one.trials[static_cast<size_t>(one.best)].config),
                ir::write_config(two.trials[static_cast<size_t>(two.best)].config));
      o.seed = 8;
      if (a == Algorithm::Amk) {
        EXPECT_NE(identities(run(m, t, o)), identities(one)) << "the seed matters";
      }
    }
  }
}

// The sizes of the batches a search hands its evaluator (the start's first), evaluated here.
std::vector<size_t> batch_sizes(const lower::ModelSpec& m, const targets::TargetSpec& t,
                                SearchOptions o, SearchResult& out) {
  std::vector<size_t> sizes;
  Evaluator e(m, t, o.lower);
  o.evaluate = [&](const std::vector<Trial*>& batch) -> ir::Status {
    sizes.push_back(batch.size());
    for (Trial* x : batch) e.evaluate(*x, o.objective);
    return {};
  };
  out = run(m, t, std::move(o));
  return sizes;
}

// A descent of toy-2L on h100 (budget 60, one job) under a synthetic objective, no lowering:
// `score` sets a trial's validity, score and diagnostics from its canonical config's JSON. Gives
// the result and the first trial after the start's neighbourhood.
std::pair<SearchResult, std::optional<Trial>> synthetic_descent(
    const std::function<void(Trial&, const nlohmann::json&)>& score) {
  SearchOptions o = options(60, 1, Algorithm::Descent, 1);
  o.evaluate = [&](const std::vector<Trial*>& batch) -> ir::Status {
    for (Trial* x : batch) {
      score(*x, nlohmann::json::parse(ir::config_key(x->config)));
      x->predicted_us = x->score;
    }
    return {};
  };
  SearchResult r = run(ts::model("toy-2L"), ts::target("h100"), o);
  const auto first = std::find_if(r.trials.begin() + 1, r.trials.end(),
                                  [](const Trial& x) { return x.source != Source::Neighbor; });
  std::optional<Trial> after;
  if (first != r.trials.end()) after = *first;
  return {std::move(r), std::move(after)};
}

TEST(Search, DescentTriesTheKnobsThatImprovedAloneTogether) {
  // A separable objective: depth 4, 128 threads and 96 KiB of shared memory each win alone, so
  // the first neighbourhood shows all three and the next trial combines them.
  const auto [r, first] = synthetic_descent([](Trial& x, const nlohmann::json& c) {
    x.valid = true;
    x.score = 100.0 + 10.0 * std::abs(c["pipelining_depth"].get<double>() - 4) +
              (c["threads_per_block"] == 128 ? 0 : 5) +
              (c["smem_bytes_per_block"] == 98304 ? 0 : 3);
  });
  ASSERT_TRUE(first);
  EXPECT_EQ(first->source, Source::Combine) << "right after the first neighbourhood";
  EXPECT_EQ(first->score, 100.0) << first->key;
  EXPECT_EQ(r.best, first->index);
  EXPECT_EQ(parse_source("combine"), Source::Combine);
}

TEST(Search, DescentRepairsANeighbourRefusedForAnotherKnobAtALocalOptimum) {
  // N_tile 16 wins, but only at pipelining depth 0, and depth 0 alone loses: every one-knob
  // neighbour of the start is worse, refused (naming the depth) or equal, a local optimum that a
  // descent of one knob at a time cannot leave; the refused neighbour repaired at depth 0 can.
  const auto [r, first] = synthetic_descent([](Trial& x, const nlohmann::json& c) {
    const bool small = c["tiling"].contains("gemv") && c["tiling"]["gemv"].contains("N_tile") &&
                       c["tiling"]["gemv"]["N_tile"] == 16;
    const double depth = c["pipelining_depth"].get<double>();
    x.valid = !small || depth == 0;
    if (!x.valid)
      x.diagnostics = {
          ir::error("config.invalid", "N_tile 16 needs depth 0", "/config/pipelining_depth")};
    else
      x.score = 110.0 - (small ? 10 : 0) + (depth == 0 ? 5 : 0);
  });
  ASSERT_TRUE(first);
  EXPECT_EQ(first->source, Source::Repair) << "right after the first neighbourhood";
  ASSERT_GE(r.best, 0);
  const Trial& best = r.trials[static_cast<size_t>(r.best)];
  EXPECT_EQ(best.score, 105.0) << best.key;
  EXPECT_EQ(best.source, Source::Repair) << best.key;
  EXPECT_EQ(parse_source("repair"), Source::Repair);
}

TEST(Search, MinBatchWidensEveryDescentBatchAndTheTrialsStillDependOnNoWorkerCount) {
  const auto m = ts::model("smollm2-135m");
  const auto t = ts::target("h100");
  SearchOptions o = options(300, 5, Algorithm::Descent, 1);
  SearchResult natural;
  const std::vector<size_t> narrow = batch_sizes(m, t, o, natural);
  o.min_batch = 40;
  SearchResult wide;
  const std::vector<size_t> sizes = batch_sizes(m, t, o, wide);
  ASSERT_GE(sizes.size(), 4u);
  // Every batch holds at least 40 new configs (duplicates never reach the evaluator), but the
  // start's, its neighbourhood's (no other point to widen it with yet) and those the budget left
  // cuts.
  for (size_t i = 2, done = 1 + sizes[1]; i < sizes.size() && done + 40 <= 300; done += sizes[i++])
    EXPECT_GE(sizes[i], 40u) << "batch " << i;
  EXPECT_EQ(wide.evaluations, 300);
  EXPECT_LT(sizes.size(), narrow.size()) << "wider batches, fewer rounds";
  EXPECT_TRUE(std::any_of(narrow.begin() + 1, narrow.end(), [](size_t n) { return n < 40; }))
      << "without min_batch a neighbourhood is smaller: the test would prove nothing";
  EXPECT_NE(identities(wide), identities(natural));
  EXPECT_LE(wide.trials[static_cast<size_t>(wide.best)].score, wide.trials[0].score);
  // The same trials on one evaluator or the search's own two threads; another min_batch's log
  // only saves evaluations: the trials are this search's.
  o.jobs = 2;
  EXPECT_EQ(identities(run(m, t, o)), identities(wide));
  SearchOptions other = o;
  other.min_batch = 0;
  for (const Trial& x : wide.trials) other.replay.push_back(x);
  EXPECT_EQ(identities(run(m, t, other)), identities(natural));
}

TEST(Search, AffinityChunksKeepEachStructureTogetherAndEvenTheCost) {
  // 20 configs: 9 of one tiling (other knobs differ), 4 of another, 7 structures of their own.
  using json = nlohmann::ordered_json;
  std::vector<ir::ScheduleConfig> configs;
  std::vector<int> structure;
  auto add = [&](int s, json tiling, json fusion, int64_t depth) {
    configs.push_back(ts::config(
        {{"tiling", std::move(tiling)}, {"fusion_grouping", fusion}, {"pipelining_depth", depth}}));
    structure.push_back(s);
  };
  const json none = json::array(), residual = json::parse(R"([["attn_residual", "post_norm"]])");
  for (int64_t i = 0; i < 9; ++i) add(0, {{"gemv", {{"N_tile", 64}}}}, none, i % 5);
  for (int64_t i = 0; i < 4; ++i) add(1, {{"gemv", {{"N_tile", 32}}}}, none, i);
  int s = 2;
  for (int64_t n : {16, 128, 256, 512}) add(s++, {{"gemv", {{"N_tile", n}}}}, none, 2);
  for (int64_t n : {16, 32, 64}) add(s++, {{"gemv", {{"N_tile", n}}}}, residual, 2);
  // Mixed up, as a batch lists them.
  std::vector<size_t> order(configs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = (i * 7) % order.size();
  std::vector<const ir::ScheduleConfig*> batch;
  std::vector<int> of;
  for (size_t i : order) {
    batch.push_back(&configs[i]);
    of.push_back(structure[i]);
  }
  EXPECT_EQ(structure_text(configs[0]), structure_text(configs[1]));
  EXPECT_NE(structure_text(configs[0]), structure_text(configs[17]));  // the fusion differs

  for (size_t parts : {size_t{1}, size_t{2}, size_t{4}, size_t{30}}) {
    const auto chunks = affinity_chunks(batch, parts);
    EXPECT_LE(chunks.size(), std::min(parts, batch.size())) << parts;
    std::vector<size_t> all;
    std::map<int, std::set<size_t>> chunks_of;  // structure -> the chunks holding it
    std::vector<size_t> cost;
    for (size_t c = 0; c < chunks.size(); ++c) {
      EXPECT_FALSE(chunks[c].empty());
      std::set<int> structures;
      for (size_t i : chunks[c]) {
        all.push_back(i);
        chunks_of[of[i]].insert(c);
        structures.insert(of[i]);
      }
      cost.push_back(chunks[c].size() + 2 * structures.size());
    }
    std::sort(all.begin(), all.end());
    for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], i) << parts;  // each config once
    EXPECT_EQ(all.size(), batch.size());
    // A structure is cut only where it holds more than an even share of the batch.
    const size_t share = (batch.size() + parts - 1) / parts;
    for (const auto& [st, in] : chunks_of) {
      const auto n = static_cast<size_t>(std::count(of.begin(), of.end(), st));
      EXPECT_LE(in.size(), (n + share - 1) / share) << "structure " << st << ", " << parts;
    }
    // Costs even within one singleton's (3) where the units allow.
    if (parts == 2) {
      EXPECT_LE(
          *std::max_element(cost.begin(), cost.end()) - *std::min_element(cost.begin(), cost.end()),
          3u);
    }
  }
  const auto units = affinity_units(batch, 2);
  EXPECT_EQ(units.size(), 9u);  // one per structure: none holds more than 10
  EXPECT_EQ(units[0].size(), 9u);
  EXPECT_EQ(affinity_units(batch, 4).size(), 10u);  // 9 > 5: the first is cut in two
}

TEST(Search, TheBestIsNeverPredictedWorseThanTheStartAndIsAValidProgram) {
  const auto t = ts::target("h100");
  for (const char* model : {"toy-2L", "smollm2-135m"}) {
    const auto m = ts::model(model);
    // Starts: the default, and a good point (the best of a short search), from which nothing
    // nearby is better.
    SearchOptions o;
    o.budget = 60;
    const SearchResult first = run(m, t, o);
    for (const ir::ScheduleConfig& start :
         {lower::default_config(), first.trials[static_cast<size_t>(first.best)].config}) {
      for (Algorithm a : {Algorithm::Descent, Algorithm::Amk}) {
        SearchOptions s;
        s.budget = 60;
        s.algorithm = a;
        s.start = start;
        const SearchResult r = run(m, t, s);
        ASSERT_TRUE(r.trials[0].valid);
        EXPECT_EQ(r.trials[0].source, Source::Start);
        EXPECT_EQ(r.trials[0].key, config_key(start));
        const Trial& best = r.trials[static_cast<size_t>(r.best)];
        EXPECT_LE(best.score, r.trials[0].score) << model;
        for (const Trial& x : r.trials) {
          if (x.valid) {
            EXPECT_GE(x.score, best.score) << "the best is the minimum";
          }
        }
        EXPECT_TRUE(validate::validate(r.best_program).ok);
        auto again = lower::lower(m, t, best.config, {});
        ASSERT_TRUE(again);
        EXPECT_EQ(ir::write_program(*again.value), ir::write_program(r.best_program));
      }
    }
  }
}

TEST(Search, ARejectedCandidateIsLoggedWithItsRuleCodeAndTheSearchGoesOn) {
  // Fusing swiglu into down_proj needs down_proj as one task: small N_tiles make the lowering
  // refuse the config (on a2a3, whose runtime runs fused tasks; amk-cuda's space has none).
  const auto m = ts::model("toy-2L");
  const auto t = ts::target("a2a3");
  const Space s = space_for(m, t, R"({"knobs": {
      "tiling.gemv.N_tile": [null, 16, 32, 64],
      "fusion_grouping": {"none": [], "mlp": [["swiglu", "down_proj"]]},
      "pipelining_depth": [0, 1, 2, 3]}})");
  SearchOptions o;
  o.budget = 500;
  std::vector<std::string> lines;
  o.on_trial = [&](const Trial& x) {
    lines.push_back(trial_json(x));
    return true;
  };
  const SearchResult r = run(m, t, o, s);
  EXPECT_EQ(r.evaluations, 32) << "the search goes on to exhaust the space";
  int rejected = 0;
  for (const Trial& x : r.trials) {
    if (x.valid || x.duplicate_of >= 0) continue;
    ++rejected;
    ASSERT_FALSE(x.diagnostics.empty()) << identity(x);
    EXPECT_EQ(x.diagnostics[0].code, "config.invalid");
    EXPECT_EQ(x.diagnostics[0].pointer, "/config/fusion_grouping/0");
    EXPECT_FALSE(std::isfinite(x.score));
    const std::string& line = lines[static_cast<size_t>(x.index)];
    EXPECT_NE(line.find(R"("code":"config.invalid")"), std::string::npos) << line;
    EXPECT_NE(line.find("cannot fuse"), std::string::npos) << line;
  }
  EXPECT_EQ(rejected, 3 * 4) << "N_tile 16, 32 and 64 with the mlp fusion, at every depth";
  EXPECT_EQ(r.valid, 32 - 12);
  const std::string tsv = results_tsv(r);
  EXPECT_NE(tsv.find("\tconfig.invalid: cannot fuse"), std::string::npos);
}

TEST(Search, AStopFlagEndsTheSearchBeforeItsNextEvaluation) {
  // A server's cancel sets the flag from another thread; here the first trial's hook sets it, and
  // nothing after the start is evaluated or reported, with one job or several.
  const auto m = ts::model("toy-2L");
  const auto t = ts::target("h100");
  for (const int jobs : {1, 3}) {
    std::atomic<bool> stop{false};
    SearchOptions o = options(500, 1, Algorithm::Descent, jobs);
    o.stop = &stop;
    int seen = 0;
    o.on_trial = [&](const Trial&) {
      ++seen;
      stop = true;
      return true;
    };
    Space s = must(default_space(m, t, lower::default_config()));
    const ir::Result<SearchResult> r = Search(m, t, std::move(s), std::move(o)).run();
    ASSERT_FALSE(r.ok()) << jobs;
    EXPECT_EQ(r.diagnostics[0].code, "search.cancelled");
    EXPECT_EQ(seen, 1) << "only the start was evaluated";
  }
}

TEST(Search, ADuplicateConfigIsNeverEvaluatedAgain) {
  const auto m = ts::model("toy-2L");
  const auto t = ts::target("a2a3");
  for (Algorithm a : {Algorithm::Descent, Algorithm::Amk}) {
    SearchOptions o;
    o.budget = 150;
    o.algorithm = a;
    const SearchResult r = run(m, t, o);
    std::set<std::string> evaluated;
    int64_t dups = 0;
    for (const Trial& x : r.trials) {
      if (x.duplicate_of >= 0) {
        ++dups;
        const Trial& orig = r.trials[static_cast<size_t>(x.duplicate_of)];
        EXPECT_EQ(orig.key, x.key);
        EXPECT_LT(orig.duplicate_of, 0) << "a duplicate points at the evaluated trial";
        EXPECT_EQ(x.eval_us, 0) << "not evaluated";
        EXPECT_EQ(x.valid, orig.valid);
        EXPECT_EQ(x.score, orig.score);
      } else {
        EXPECT_TRUE(evaluated.insert(x.key).second) << "evaluated twice: " << x.key;
        EXPECT_GT(x.eval_us, 0);
      }
    }
    EXPECT_EQ(static_cast<int64_t>(evaluated.size()), r.evaluations);
    EXPECT_EQ(dups, r.duplicates);
    if (a == Algorithm::Descent) {
      EXPECT_EQ(r.evaluations, o.budget) << "duplicates do not count against the budget";
    } else if (r.evaluations < o.budget) {  // AMK's policy ends at a local optimum whose every
      EXPECT_TRUE(r.exhausted);             // one-knob mutation was tried
    }
    if (a == Algorithm::Amk) {
      EXPECT_GT(dups, 0) << "AMK's mutations repeat themselves";
    }
  }
  // A space of two points: the search stops when it has nothing new to try.
  const Space tiny = space_for(m, t, R"({"knobs": {"pipelining_depth": [1, 2]}})");
  SearchOptions o;
  o.budget = 1000;
  const SearchResult r = run(m, t, o, tiny);
  EXPECT_EQ(r.evaluations, 2);
}

TEST(Search, AResumedSearchEqualsAnUninterruptedOne) {
  const auto m = ts::model("smollm2-135m");
  const auto t = ts::target("h100");
  for (Algorithm a : {Algorithm::Descent, Algorithm::Amk}) {
    const SearchOptions o = options(100, 3, a, 2);
    const SearchResult whole = run(m, t, o);
    // Interrupted after 37 trials; its log read back.
    std::vector<Trial> logged;
    SearchOptions cut = o;
    cut.on_trial = [&](const Trial& x) {
      logged.push_back(must(parse_trial(trial_json(x))));
      return logged.size() < 37;
    };
    const SearchResult part = run(m, t, cut);
    EXPECT_TRUE(part.stopped);
    ASSERT_EQ(logged.size(), 37u);
    SearchOptions resumed = o;
    resumed.replay = logged;
    int64_t evaluated_again = 0;
    resumed.on_trial = [&](const Trial& x) {
      if (x.index < 37 && x.eval_us > 0 && x.duplicate_of < 0 &&
          x.eval_us != logged[static_cast<size_t>(x.index)].eval_us)
        ++evaluated_again;
      return true;
    };
    const SearchResult r = run(m, t, resumed);
    EXPECT_EQ(r.replayed, std::count_if(logged.begin(), logged.end(),
                                        [](const Trial& x) { return x.duplicate_of < 0; }));
    EXPECT_EQ(evaluated_again, 0);
    EXPECT_EQ(identities(r), identities(whole)) << name(a);
    EXPECT_EQ(r.best, whole.best);
    // A log of another search (amk search refuses it by its header) changes no trial.
    SearchOptions other = o;
    other.seed = 4;
    SearchResult alone = run(m, t, other);
    other.replay = logged;
    EXPECT_EQ(identities(run(m, t, other)), identities(alone)) << name(a);
  }
}

TEST(Search, AFinishedSearchExtendedToALargerBudgetEqualsAnUninterruptedOne) {
  // A batch never depends on the budget, and a log's evaluations are taken by config, so a
  // search of budget 40 resumed with budget 90 gives the trials of a search of budget 90, also
  // for AMK's policy, whose random share grows with the budget.
  const auto m = ts::model("smollm2-135m");
  const auto t = ts::target("h100");
  for (Algorithm a : {Algorithm::Descent, Algorithm::Amk}) {
    const SearchResult small = run(m, t, options(40, 7, a, 2));
    const SearchResult whole = run(m, t, options(90, 7, a, 2));
    if (a == Algorithm::Descent) {  // the trials of a budget are a prefix of a larger one's
      ASSERT_LE(small.trials.size(), whole.trials.size());
      for (size_t i = 0; i < small.trials.size(); ++i)
        EXPECT_EQ(identity(small.trials[i]), identity(whole.trials[i])) << i;
    }
    SearchOptions more = options(90, 7, a, 2);
    for (const Trial& x : small.trials) more.replay.push_back(must(parse_trial(trial_json(x))));
    int64_t evaluated = 0;
    more.on_trial = [&](const Trial& x) {
      evaluated += x.duplicate_of < 0 && x.eval_us > 0;  // a replayed trial took no time
      return true;
    };
    const SearchResult r = run(m, t, more);
    EXPECT_EQ(identities(r), identities(whole)) << name(a);
    EXPECT_EQ(r.best, whole.best) << name(a);
    EXPECT_EQ(evaluated + r.replayed, whole.evaluations) << name(a);
    if (a == Algorithm::Descent)  // every logged config is proposed again, and taken
      EXPECT_EQ(r.replayed, small.evaluations);
    else  // AMK's policy proposes other random points in a longer search; the start is one
      EXPECT_GT(r.replayed, 0);
  }
}

TEST(Search, ATrialRoundTripsThroughItsLogLine) {
  const auto m = ts::model("toy-2L");
  const auto t = ts::target("h100");
  const Space s = space_for(m, t, R"({"knobs": {
      "tiling.gemv.N_tile": [null, 16],
      "fusion_grouping": {"none": [], "mlp": [["swiglu", "down_proj"]]}}})");
  SearchOptions o;
  o.budget = 10;
  const SearchResult r = run(m, t, o, s);
  for (const Trial& x : r.trials) {
    const Trial y = must(parse_trial(trial_json(x)));
    EXPECT_EQ(identity(y), identity(x));
    EXPECT_EQ(trial_json(y), trial_json(x));
  }
  auto bad = parse_trial(R"({"index": 0, "source": "sideways", "config": {}, "valid": true})");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.diagnostics[0].pointer, "/source");
  bad =
      parse_trial(R"({"index": 0, "source": "start", "config": {}, "valid": true, "score": "x"})");
  ASSERT_FALSE(bad);
  bad = parse_trial("{\"index\": 0,");
  ASSERT_FALSE(bad);
  EXPECT_GT(bad.diagnostics[0].column, 0);
}

TEST(Search, LogReadingDropsALastLineCutOffByACrashAndRefusesOtherDamage) {
  const auto dir = test::temp_dir();
  const auto m = ts::model("toy-2L");
  const auto t = ts::target("h100");
  SearchOptions o;
  o.budget = 5;
  const SearchResult r = run(m, t, o);
  const Space s = must(default_space(m, t, lower::default_config()));
  std::string text = header_json(header_of(m, t, s, o)) + "\n";
  for (const Trial& x : r.trials) text += trial_json(x) + "\n";
  const std::string whole = text;
  text += trial_json(r.trials[0]).substr(0, 40);  // killed while writing
  const auto path = (dir / "log.jsonl").string();
  ASSERT_TRUE(test::ok(ir::write_file_atomic(path, text)));
  const Log log = must(read_log(path));
  ASSERT_TRUE(log.header);
  EXPECT_EQ(log.header->model, "toy-2L");
  EXPECT_EQ(log.trials.size(), r.trials.size());
  EXPECT_EQ(log.complete, whole.size());
  ASSERT_EQ(log.warnings.size(), 1u);
  EXPECT_EQ(log.warnings[0].line, static_cast<int>(r.trials.size()) + 2);
  // The same damage in the middle is an error with the file and the line.
  ASSERT_TRUE(test::ok(ir::write_file_atomic(path, text + "\n" + trial_json(r.trials[0]) + "\n")));
  auto bad = read_log(path);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.diagnostics[0].file, path);
  EXPECT_EQ(bad.diagnostics[0].line, static_cast<int>(r.trials.size()) + 2);
}

TEST(Search, MeasurementsRankTheTopKAndAFailingMeasurementKeepsThePrediction) {
  const auto m = ts::model("toy-2L");
  const auto t = ts::target("h100");
  SearchOptions o;
  o.budget = 40;
  o.measure_top_k = 3;
  // A "device" on which more tasks run faster: the opposite of the prediction's ranking.
  o.measure = [](const ir::Program& p, const Trial&) -> ir::Result<double> {
    return 1e6 / static_cast<double>(p.tasks.size());
  };
  std::vector<int64_t> measured;
  o.on_measured = [&](const Trial& x) { measured.push_back(x.index); };
  const SearchResult r = run(m, t, o);
  ASSERT_EQ(measured.size(), 4u) << "the top 3 and the start";
  EXPECT_EQ(measured.back(), 0);
  int64_t most_tasks = -1;
  for (int64_t i : measured) {
    const Trial& x = r.trials[static_cast<size_t>(i)];
    ASSERT_TRUE(x.measured_us);
    EXPECT_EQ(x.score, *x.measured_us);
    if (most_tasks < 0 || x.tasks > r.trials[static_cast<size_t>(most_tasks)].tasks) most_tasks = i;
  }
  EXPECT_EQ(r.best, most_tasks);
  EXPECT_TRUE(r.trials[static_cast<size_t>(r.best)].measured_us);

  // A measurer that fails: every trial keeps its prediction, with a warning saying why.
  SearchOptions f = o;
  f.measure = [](const ir::Program&, const Trial&) -> ir::Result<double> {
    return ir::error("search.measure", "--measure: 'bench' exited with status 3");
  };
  measured.clear();
  const SearchResult g = run(m, t, f);
  ASSERT_EQ(measured.size(), 4u);
  for (int64_t i : measured) {
    const Trial& x = g.trials[static_cast<size_t>(i)];
    EXPECT_FALSE(x.measured_us);
    ASSERT_FALSE(x.diagnostics.empty());
    EXPECT_EQ(x.diagnostics.back().severity, ir::Severity::Warning);
    EXPECT_EQ(x.score, x.predicted_us);
  }
  SearchOptions p = o;
  p.measure = {};
  p.measure_top_k = 0;
  p.on_measured = {};
  EXPECT_EQ(g.best, run(m, t, p).best) << "the prediction's ranking";
}

TEST(Space, ABadSpaceIsAnErrorWithAPointer) {
  const auto m = ts::model("toy-2L");
  const auto t = ts::target("h100");
  auto err = [&](const std::string& text) {
    auto s = parse_space(text, "s.json", m, t, lower::default_config());
    EXPECT_FALSE(s) << text;
    return s ? ir::Diagnostic{} : s.diagnostics.front();
  };
  EXPECT_EQ(err(R"({"knobs": {"tiling.gemv.M_tile": [1]}})").pointer, "/knobs/tiling.gemv.M_tile");
  EXPECT_EQ(err(R"({"knobs": {"pipelining_depth": []}})").pointer, "/knobs/pipelining_depth");
  EXPECT_EQ(err(R"({"knobs": {"pipelining_depth": [1, "two"]}})").pointer,
            "/knobs/pipelining_depth/1");
  EXPECT_EQ(err(R"({"knobs": {"threads_per_block": [4096]}})").pointer,
            "/knobs/threads_per_block/0");
  const ir::Diagnostic fusion =
      err(R"({"knobs": {"fusion_grouping": {"x": [["nope", "swiglu"]]}}})");
  EXPECT_EQ(fusion.pointer, "/knobs/fusion_grouping");
  EXPECT_NE(fusion.message.find("preset x: no layer has all of its ops"), std::string::npos)
      << fusion.message;
  const ir::Diagnostic syntax = err("{\"knobs\": {\n  \"pipelining_depth\": [1,]}}");
  EXPECT_EQ(syntax.line, 2);
  EXPECT_GT(syntax.column, 0);
  EXPECT_EQ(syntax.file, "s.json");
}

TEST(Space, TheBuiltInSpaceIsBoundedByTheTargetAndCanonicalises) {
  const auto m = ts::model("llama-3.2-1b");
  auto h100 = must(default_space(m, ts::target("h100"), lower::default_config()));
  const auto t4 = must(default_space(m, ts::target("t4"), lower::default_config()));
  auto knob = [](const Space& s, const std::string& path) -> const Knob& {
    for (const Knob& k : s.knobs)
      if (k.path == path) return k;
    throw std::runtime_error("no knob " + path);
  };
  EXPECT_EQ(knob(h100, "smem_bytes_per_block").values.size(), 4u);
  EXPECT_EQ(knob(t4, "smem_bytes_per_block").values.size(), 3u) << "98304 B is more than a T4 has";
  EXPECT_GT(h100.size(), 5e4);
  // The runtime bounds what its launch takes: amk-cuda's loader no more than 256 threads, and
  // its VM runs no FUSED task, so the space has no fusion.
  EXPECT_EQ(knob(h100, "threads_per_block").labels.back(), "256");
  EXPECT_EQ(knob(h100, "fusion_grouping").labels, std::vector<std::string>{"none"});
  const targets::Runtime* mpk = targets::builtin_runtime("mpk");
  ASSERT_NE(mpk, nullptr);
  const auto under_mpk = must(default_space(m, ts::target("h100"), lower::default_config(), mpk));
  EXPECT_EQ(knob(under_mpk, "threads_per_block").labels.back(), "512");
  EXPECT_GT(knob(under_mpk, "fusion_grouping").labels.size(), 1u);
  EXPECT_GT(under_mpk.size(), 1e5);
  auto bad = parse_space(
      R"({"knobs": {"threads_per_block": [128]}, "bounds": {"threads_per_block": ["runtime.nope"]}})",
      "s.json", m, ts::target("h100"), lower::default_config());
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.diagnostics.front().pointer, "/bounds/threads_per_block");
  // Equal programs have equal configs: base_width is left out beside an N_tile.
  Point p = h100.point_of(lower::default_config());
  const Knob& base_width = knob(h100, "tiling.gemv.base_width");
  const size_t bw = static_cast<size_t>(&base_width - h100.knobs.data());
  Point q = p;
  q[bw] = static_cast<uint16_t>((p[bw] + 1) % base_width.values.size());
  EXPECT_EQ(config_key(h100.config(p, lower::default_config())),
            config_key(h100.config(q, lower::default_config())));
  EXPECT_EQ(config_key(h100.config(p, lower::default_config())),
            config_key(lower::default_config()));
}

}  // namespace
}  // namespace amk::search
