// Proves `amk search`'s contract: outputs, a log that resumes to the uninterrupted result, the
// --measure exploit with commands that print, fail and hang, and exit 2 with a pointer for bad
// space and config files.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "search/search.h"
#include "support.h"

namespace amk {
namespace {

namespace fs = std::filesystem;
using test::run_amk;

void write(const fs::path& p, const std::string& text, bool executable = false) {
  std::ofstream(p) << text;
  if (executable) fs::permissions(p, fs::perms::owner_all, fs::perm_options::add);
}

// The log's trials without their timings, one per line.
std::string trials_of(const fs::path& log) {
  std::string out;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    if (!j.contains("index")) continue;
    for (const search::TrialField& f : search::trial_results())
      if (f.timing) j.erase(std::string(f.name));
    out += j.dump() + "\n";
  }
  return out;
}

TEST(SearchCli, WritesTheBestConfigProgramTsvAndAJsonSummary) {
  const fs::path dir = test::temp_dir();
  auto r = run_amk({"search", "toy-2L", "--target", "h100", "--budget", "40", "--json", "-o",
                    (dir / "best.json").string(), "--program", (dir / "best.amk.json").string(),
                    "--tsv", (dir / "results.tsv").string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["evaluations"], 40);
  EXPECT_LE(j["best"]["score"].get<double>(), j["start"]["score"].get<double>());
  // The written config lowers to the written program, which validates.
  const fs::path again = dir / "again.amk.json";
  ASSERT_EQ(run_amk({"lower", "toy-2L", "--target", "h100", "--config",
                     (dir / "best.json").string(), "-o", again.string()})
                .rc,
            0);
  EXPECT_EQ(test::slurp(again), test::slurp(dir / "best.amk.json"));
  EXPECT_EQ(run_amk({"validate", again.string()}).rc, 0);
  const std::string tsv = test::slurp(dir / "results.tsv");
  EXPECT_TRUE(tsv.starts_with("trial\tsource\tvalid\tscore_us"));
  EXPECT_GE(std::count(tsv.begin(), tsv.end(), '\n'), 41);
}

TEST(SearchCli, AnInterruptedLogResumesToTheUninterruptedResult) {
  const fs::path dir = test::temp_dir();
  const std::vector<std::string> base = {"search", "smollm2-135m", "--target", "a2a3",   "--budget",
                                         "60",     "--seed",       "5",        "--jobs", "2"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return run_amk(a);
  };
  const fs::path whole = dir / "whole.jsonl";
  ASSERT_EQ(with({"--log", whole.string(), "-o", (dir / "a.json").string()}).rc, 0);
  // A crash: the header, 25 trials and half a line survive.
  std::ifstream in(whole);
  std::string cut, line;
  int evaluated = 0;  // of the 25 (a duplicate's result is its original's)
  for (int n = 0; n < 26 && std::getline(in, line); ++n) {
    cut += line + "\n";
    if (n > 0) evaluated += nlohmann::json::parse(line)["duplicate_of"] == -1;
  }
  std::getline(in, line);
  cut += line.substr(0, line.size() / 2);
  const fs::path log = dir / "cut.jsonl";
  write(log, cut);
  auto r = with(
      {"--resume", log.string(), "--log", log.string(), "-o", (dir / "b.json").string(), "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("incomplete"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["replayed"], evaluated);
  EXPECT_EQ(test::slurp(dir / "a.json"), test::slurp(dir / "b.json"));
  EXPECT_EQ(trials_of(log), trials_of(whole)) << "every trial once, as in one run";
  // A log of another search is refused, naming the field.
  r = run_amk({"search", "smollm2-135m", "--target", "a2a3", "--budget", "60", "--seed", "6",
               "--resume", log.string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("/search/seed"), std::string::npos) << r.err;
  // min_batch is part of what the trials depend on: a log written with it resumes only with it.
  const fs::path wide = dir / "wide.jsonl";
  ASSERT_EQ(with({"--min-batch", "24", "--log", wide.string()}).rc, 0);
  r = with({"--resume", wide.string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("/search/min_batch"), std::string::npos) << r.err;
  r = with({"--min-batch", "24", "--resume", wide.string(), "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json resumed = nlohmann::json::parse(r.out);
  EXPECT_EQ(resumed["replayed"], resumed["evaluations"]) << "every evaluation from the log";
  EXPECT_EQ(resumed["min_batch"], 24);
}

TEST(SearchCli, MeasureRanksByTheCommandAndFallsBackWhenItFailsOrHangs) {
  const fs::path dir = test::temp_dir();
  const fs::path bytes = dir / "bytes.sh", fails = dir / "fails.sh", hangs = dir / "hangs.sh";
  // Latency from the program's size: any deterministic number will do.
  write(bytes, "#!/bin/sh\necho \"latency: $(wc -c < \"$1\") us\"\n", true);
  write(fails, "#!/bin/sh\necho 'no device' >&2\nexit 3\n", true);
  write(hangs, "#!/bin/sh\nsleep 30\necho 1\n", true);
  const std::vector<std::string> base = {"search", "toy-2L",  "--target", "h100",  "--budget",
                                         "30",     "--top-k", "2",        "--json"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return run_amk(a);
  };
  auto r = with({"--measure", bytes.string(), "--log", (dir / "m.jsonl").string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j["best"]["measured_us"].is_number()) << r.out;
  EXPECT_EQ(j["best"]["score"], j["best"]["measured_us"]);
  EXPECT_NE(test::slurp(dir / "m.jsonl").find("{\"measured\":"), std::string::npos);

  r = with({"--measure", fails.string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("exited with status 3: no device"), std::string::npos) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["best"]["measured_us"].is_null());
  EXPECT_EQ(j["best"]["score"], j["best"]["predicted_us"]);

  const auto t0 = std::chrono::steady_clock::now();
  r = with({"--measure", hangs.string(), "--measure-timeout", "0.5"});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("did not finish within 0.5 s"), std::string::npos) << r.err;
  EXPECT_LT(took, 20) << "three timed-out runs, not three sleeps of 30 s";
  EXPECT_TRUE(nlohmann::json::parse(r.out)["best"]["measured_us"].is_null());
}

TEST(SearchCli, BadSpaceStartAndOptionsExitTwoNamingTheFileAndPointer) {
  const fs::path dir = test::temp_dir();
  const fs::path space = dir / "space.json", start = dir / "start.json";
  write(space, "{\"knobs\": {\"pipelining_depth\": [1, \"deep\"]}}\n");
  auto r = run_amk({"search", "toy-2L", "--target", "h100", "--space", space.string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("space.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/knobs/pipelining_depth/1"), std::string::npos) << r.err;
  write(space, "{\"knobs\": {\n\"pipelining_depth\": [1,\n}}\n");
  r = run_amk({"search", "toy-2L", "--target", "h100", "--space", space.string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("space.json:3:"), std::string::npos) << r.err;
  write(start, "{\"pipelining_depth\": -1}\n");
  r = run_amk({"search", "toy-2L", "--target", "h100", "--start", start.string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("start.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/pipelining_depth"), std::string::npos) << r.err;
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--budget", "0"},
                                              {"--jobs", "0"},
                                              {"--algo", "annealing"},
                                              {"--objective", "joules"},
                                              {"--time", "-1"},
                                              {"--min-batch", "-1"}}) {
    std::vector<std::string> a = {"search", "toy-2L", "--target", "h100"};
    a.insert(a.end(), bad.begin(), bad.end());
    r = run_amk(a);
    EXPECT_EQ(r.rc, 2) << bad[0];
    EXPECT_NE(r.err.find(bad[0]), std::string::npos) << r.err;
  }
  r = run_amk({"search", "toy-2L", "--target", "h100", "--algo", "amk", "--min-batch", "8"});
  EXPECT_EQ(r.rc, 2) << "amk's search proposes one config at a time";
  EXPECT_NE(r.err.find("min_batch applies to the descent algorithm"), std::string::npos) << r.err;
  // A start config the model cannot lower: exit 1 (no valid candidate), saying why.
  write(start,
        "{\"fusion_grouping\": [[\"swiglu\", \"down_proj\"]], "
        "\"tiling\": {\"gemv\": {\"N_tile\": 16}}}\n");
  r = run_amk({"search", "toy-2L", "--target", "h100", "--start", start.string(), "--space",
               (dir / "tiny.json").string()});
  EXPECT_EQ(r.rc, 2) << "no such space file";
  write(dir / "tiny.json", "{\"knobs\": {\"pipelining_depth\": [1, 2]}}\n");
  r = run_amk({"search", "toy-2L", "--target", "h100", "--start", start.string(), "--space",
               (dir / "tiny.json").string()});
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find("cannot fuse"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace amk
