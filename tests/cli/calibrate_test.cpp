// amk calibrate from the command line: it fits a runtime to the published measurements the
// repository carries (bench/published), writes a profile amk reads back with its fit report, and
// refuses bad measurements with exit 2 and a stable code.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "support.h"

namespace amk {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::run_amk;

const std::string published() {
  return (test::source_dir() / "bench" / "published" / "amk-h100.jsonl").string();
}

TEST(Calibrate, FitsAMisplacedLaunchBackToAmksPublishedPoints) {
  const fs::path dir = test::temp_dir();
  // amk-cuda-paper with its launch cost a quarter of what AMK's runs hold.
  const test::RunResult shown = run_amk({"runtimes", "amk-cuda-paper"});
  ASSERT_EQ(shown.rc, 0) << shown.err;
  json start = json::parse(shown.out);
  const double fitted_launch = start["launch_us"].get<double>();
  start["launch_us"] = fitted_launch / 4;
  start.erase("fit");
  const std::string start_file = (dir / "start.json").string(),
                    out = (dir / "fitted.json").string();
  std::ofstream(start_file) << start.dump(2) << "\n";

  const test::RunResult r = run_amk({"calibrate", published(), "--runtime", start_file, "--fit",
                                     "launch_us", "--json", "-o", out});
  ASSERT_EQ(r.rc, 0) << r.err;
  const json report = json::parse(r.out);
  ASSERT_EQ(report["points"].size(), 4u);
  for (const json& p : report["points"]) {
    EXPECT_GT(std::abs(p["before_us"].get<double>() / p["measured_us"].get<double>() - 1), 0.15)
        << p.dump() << ": the misplaced start must be visibly off";
    EXPECT_LE(std::abs(p["error_percent"].get<double>()), 15.0) << p.dump();
  }
  EXPECT_LT(report["rms_log_error"]["after"].get<double>(),
            report["rms_log_error"]["before"].get<double>() / 4);
  ASSERT_TRUE(report["moved"].contains("launch_us"));
  EXPECT_NEAR(report["moved"]["launch_us"]["after"].get<double>() / fitted_launch, 1.0, 0.1);

  // The fitted profile is a runtime amk takes, and it carries its report.
  const test::RunResult again = run_amk({"runtimes", out});
  ASSERT_EQ(again.rc, 0) << again.err;
  EXPECT_EQ(json::parse(again.out)["fit"]["measurements"], 4);
  const std::string program = (dir / "p.json").string();
  ASSERT_EQ(run_amk({"lower", "toy-1L", "--target", "h100", "-o", program}).rc, 0);
  const test::RunResult info = run_amk({"info", program, "--runtime", out, "--json"});
  ASSERT_EQ(info.rc, 0) << info.err;
  EXPECT_EQ(json::parse(info.out)["cost"]["runtime"], "amk-cuda-paper");
}

// The published points under a runtime: their errors in percent.
std::vector<double> predicted_errors(const std::string& file, const std::string& runtime) {
  const test::RunResult r =
      run_amk({"calibrate", file, "--runtime", runtime, "--predict", "--json"});
  EXPECT_EQ(r.rc, 0) << r.err;
  std::vector<double> out;
  const json report = json::parse(r.out);
  for (const json& p : report["points"]) out.push_back(p["error_percent"]);
  return out;
}

TEST(Calibrate, PredictShowsEachPublishedPointWithinFifteenPercentUnderItsRuntime) {
  const std::string hazy = (test::source_dir() / "bench" / "published" / "hazy.jsonl").string();
  for (const auto& [file, runtime, other] : {std::tuple{published(), "amk-cuda-paper", "hazy"},
                                             std::tuple{hazy, "hazy", "amk-cuda-paper"}}) {
    const std::vector<double> own = predicted_errors(file, runtime);
    ASSERT_FALSE(own.empty());
    for (double e : own) EXPECT_LE(std::abs(e), 15.0) << file << " under " << runtime;
    // Who runs the program matters: the other executor is far off on every point.
    for (double e : predicted_errors(file, other)) EXPECT_GT(std::abs(e), 50.0) << file;
  }
  EXPECT_EQ(run_amk({"calibrate", published(), "--predict", "-o", "x.json"}).rc, 2);
}

// The H100 runs of AMK's VM that amk-cuda was not fitted to (bench/measured/): its predictions
// keep their order and stay near them, where the profile fitted to AMK's published figures is
// far off (most points 1.5-11x too slow).
TEST(Calibrate, AmkCudaPredictsTheH100RunsItWasNotFittedTo) {
  // The held-out half of round 1, round 3, round 5 (int8 weights), round 6 (an H200, a chip the
  // profile was not fitted on), round 8 (int4 weights), rounds 9 and 10 (int8 and int4 at
  // depths 0-2; configs whose predictions were recorded before they ran): each point within its
  // bound, their order kept. Rounds 8 and 9 hold pairs that ran within noise of each other: round
  // 8's small-4L int4 at depth 2 ran 3% faster than at depth 0 (875 and 902 us), where round 10
  // ran the same two configs 4% slower (906 and 871 us), and round 9's depths 1 and 2 ran within
  // 1%; their rank bounds allow that one swap.
  struct Set {
    const char* file;
    size_t points;
    double bound_percent, rms;
    const char* quant = "none";
    double rank = 0.95;
  };
  for (const Set& set : {Set{"amk-cuda-h100.held-out.jsonl", 17, 25.0, 0.15},
                         Set{"amk-cuda-h100.round3.jsonl", 15, 30.0, 0.2},
                         Set{"amk-cuda-h100.round5.jsonl", 14, 25.0, 0.15, "int8"},
                         Set{"amk-cuda-h200.round6.jsonl", 15, 30.0, 0.2},
                         Set{"amk-cuda-h100.round8.jsonl", 10, 25.0, 0.2, "int4", 0.93},
                         Set{"amk-cuda-h100.round9.jsonl", 8, 15.0, 0.1, "int8", 0.9},
                         Set{"amk-cuda-h100.round10.jsonl", 8, 25.0, 0.2, "int4"}}) {
    const std::string file = (test::source_dir() / "bench" / "measured" / set.file).string();
    auto predict = [&](const char* runtime) {
      const test::RunResult r = run_amk(
          {"calibrate", file, "--runtime", runtime, "--quant", set.quant, "--predict", "--json"});
      if (r.rc != 0) {
        ADD_FAILURE() << runtime << ": " << r.err;
        return json{{"points", json::array()}, {"rms_log_error", 1e9}, {"rank_correlation", 0}};
      }
      return json::parse(r.out);
    };
    const json report = predict("amk-cuda");
    ASSERT_EQ(report["points"].size(), set.points) << set.file;
    for (const json& p : report["points"])
      EXPECT_LE(std::abs(p["error_percent"].get<double>()), set.bound_percent) << p.dump();
    EXPECT_LT(report["rms_log_error"].get<double>(), set.rms) << set.file;
    EXPECT_GT(report["rank_correlation"].get<double>(), set.rank) << set.file;
    EXPECT_GT(predict("amk-cuda-paper")["rms_log_error"].get<double>(), 0.5) << set.file;
  }
}

TEST(Calibrate, ATraceListMeasuresTheFastestRunsSpanOfTasks) {
  const fs::path dir = test::temp_dir();
  ASSERT_EQ(run_amk({"lower", "toy-1L", "--target", "host", "-o", (dir / "p.json").string()}).rc,
            0);
  // Two runs: task events spanning 300 us and 180 us (metadata events do not count).
  auto trace = [&](const char* name, double second_end) {
    json t = {{"traceEvents",
               {{{"ph", "M"}, {"name", "thread_name"}, {"pid", 1}, {"tid", 0}},
                {{"ph", "X"}, {"name", "a"}, {"ts", 1000.0}, {"dur", 20.0}, {"pid", 1}, {"tid", 0}},
                {{"ph", "X"},
                 {"name", "b"},
                 {"ts", 1050.0},
                 {"dur", second_end - 1050.0},
                 {"pid", 1},
                 {"tid", 1}}}}};
    std::ofstream(dir / name) << t.dump();
  };
  trace("slow.json", 1300);
  trace("fast.json", 1180);
  std::ofstream(dir / "m.jsonl")
      << R"({"program": "p.json", "target": "host", "trace": ["slow.json", "fast.json"]})"
      << "\n";
  const test::RunResult r =
      run_amk({"calibrate", (dir / "m.jsonl").string(), "--predict", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const json report = json::parse(r.out);
  EXPECT_DOUBLE_EQ(report["points"][0]["measured_us"].get<double>(), 180.0);
  EXPECT_EQ(report["runtime"], "host");
}

TEST(Calibrate, ASearchLogsMeasuredTrialsAreMeasurements) {
  const fs::path dir = test::temp_dir();
  // A "device" that runs every program 1.5 times slower than amk-cuda predicts.
  const fs::path measure = dir / "measure.sh";
  std::ofstream(measure) << "#!/bin/sh\n"
                         << test::amk_binary() << " info \"$1\" --runtime amk-cuda --json | "
                         << "sed -n 's/.*\"predicted_us\": *\\([0-9.e+]*\\).*/\\1/p' | "
                         << "awk '{ print $1 * 1.5 }'\n";
  fs::permissions(measure, fs::perms::owner_all);
  const std::string log = (dir / "trials.jsonl").string();
  const test::RunResult s = run_amk({"search", "toy-2L", "--target", "h100", "--budget", "20",
                                     "--measure", measure.string(), "--top-k", "3", "--log", log});
  ASSERT_EQ(s.rc, 0) << s.err;
  const test::RunResult r =
      run_amk({"calibrate", log, "--runtime", "amk-cuda", "--predict", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const json report = json::parse(r.out);
  ASSERT_GE(report["points"].size(), 3u) << r.out;  // the top 3 and the start
  // Each trial's config lowered again is the program that was measured.
  for (const json& p : report["points"])
    EXPECT_NEAR(p["measured_us"].get<double>() / p["predicted_us"].get<double>(), 1.5, 1e-4)
        << p.dump();
}

TEST(Calibrate, BadMeasurementsAreErrorsWithExitTwo) {
  const fs::path dir = test::temp_dir();
  struct Case {
    std::string line, code;
  };
  const Case cases[] = {
      {R"({"model": "toy-1L"})", "calibrate.measurement"},
      {R"({"model": "toy-1L", "measured_us": -3})", "calibrate.measurement"},
      {R"({"model": "toy-1L", "program": "p.json", "measured_us": 3})", "calibrate.measurement"},
      {R"({"model": "nope", "measured_us": 3})", "model.unknown"},
      {R"({"model": "toy-1L", "trace": []})", "calibrate.measurement"},
      {R"({"model": "toy-1L", "trace": "missing.json"})", ""},
      {R"(not json)", ""},
  };
  for (const Case& c : cases) {
    const std::string file = (dir / "m.jsonl").string();
    std::ofstream(file) << c.line << "\n";
    const test::RunResult r = run_amk({"calibrate", file, "-o", (dir / "o.json").string()});
    EXPECT_EQ(r.rc, 2) << c.line << "\n" << r.err;
    EXPECT_NE(r.err.find(c.code), std::string::npos) << c.line << "\n" << r.err;
    EXPECT_FALSE(fs::exists(dir / "o.json")) << c.line;
  }
  const test::RunResult fit =
      run_amk({"calibrate", published(), "--fit", "staging", "-o", (dir / "o.json").string()});
  EXPECT_EQ(fit.rc, 2);
  EXPECT_NE(fit.err.find("runtime.fit"), std::string::npos) << fit.err;
}

}  // namespace
}  // namespace amk
