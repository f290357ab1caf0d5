// Proves the command line and serve take MPK task_graph.json and PTO deps.json files like amk's
// own programs: detected or forced with --format, sized with --launch, imported with the same
// verdict, malformed ones refused with exit 2 and file:line:column plus a JSON pointer, capacity
// problems reported by `amk info` as the smallest safe sizes and reproduced by `amk run`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support.h"

namespace amk {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

fs::path corpus(const std::string& name) {
  return test::source_dir() / "tests/formats/corpus" / name;
}

// A corpus case's graph file and its `args` (--launch KEY=VALUE ...), as the amk command takes
// them.
std::vector<std::string> case_args(const std::string& name) {
  const fs::path dir = corpus(name);
  std::vector<std::string> a;
  a.push_back(fs::exists(dir / "task_graph.json") ? (dir / "task_graph.json").string()
                                                  : (dir / "deps.json").string());
  std::istringstream in(test::slurp(dir / "args"));
  for (std::string w; in >> w;) a.push_back(w);
  return a;
}

std::vector<std::string> with(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

const char* const kCases[] = {"pto-277-scope-window", "pto-277-scope-window-ok",
                              "mpk-464-worker-queue", "mpk-464-worker-queue-ok",
                              "mpk-761-coresidency",  "pto-264-dep-pool-ok"};

TEST(CliFormats, ImportWritesAnAmkProgramWithTheVerdictOfTheFileItself) {
  for (const std::string name : kCases) {
    SCOPED_TRACE(name);
    const fs::path out = test::temp_dir() / (name + ".json");
    const test::RunResult direct = test::run_amk(with({"validate", "--json"}, case_args(name)));
    const test::RunResult imp =
        test::run_amk(with({"import", "-o", out.string()}, case_args(name)));
    ASSERT_EQ(imp.rc, 0) << imp.err;
    const test::RunResult again = test::run_amk({"validate", "--json", out.string()});
    EXPECT_EQ(again.rc, direct.rc) << direct.out << again.out;
    EXPECT_EQ(direct.rc, name.ends_with("-ok") ? 0 : 1) << direct.out;
    const json a = json::parse(direct.out)["files"][0], b = json::parse(again.out)["files"][0];
    EXPECT_EQ(a["errors"], b["errors"]);
  }
}

TEST(CliFormats, MalformedForeignFilesExitTwoWithFileLineColumnAndPointer) {
  std::string s = test::slurp(test::source_dir() / "tests/formats/data/mpk/task_graph.json");
  const size_t at = s.find("\"task_type\": ") + 13;
  s.replace(at, s.find(',', at) - at, "\"x\"");
  const fs::path bad = test::temp_dir() / "task_graph.json";
  std::ofstream(bad) << s;
  for (const char* cmd : {"validate", "info", "show", "simulate", "run", "import"}) {
    SCOPED_TRACE(cmd);
    const test::RunResult r = test::run_amk({cmd, bad.string(), "-o", "/dev/null"});
    const test::RunResult r2 = test::run_amk({cmd, bad.string()});
    const test::RunResult& x = std::string(cmd) == "import" ? r : r2;
    EXPECT_EQ(x.rc, 2) << x.out << x.err;
    EXPECT_NE(x.err.find(bad.string() + ":"), std::string::npos) << x.err;
    EXPECT_NE(x.err.find("/all_tasks/0/task_type"), std::string::npos) << x.err;
  }
  // Forced to a format it is not, a file is refused rather than guessed.
  const fs::path mpk = test::source_dir() / "tests/formats/data/mpk/task_graph.json";
  EXPECT_EQ(test::run_amk({"validate", "--format", "amk", mpk.string()}).rc, 2);
  EXPECT_EQ(test::run_amk({"validate", "--format", "nope", mpk.string()}).rc, 2);
  EXPECT_EQ(test::run_amk({"validate", "--launch", "task_window=x", mpk.string()}).rc, 2);
}

TEST(CliFormats, InfoReportsTheSmallestSafeCapacitiesAndLaunchOverridesTheRuntime) {
  const std::vector<std::string> c = case_args("pto-277-scope-window");
  const test::RunResult r = test::run_amk(with({"info", "--json"}, c));
  ASSERT_EQ(r.rc, 1) << r.err;  // the graph is rejected (the ring is too small)
  const json caps = json::parse(r.out)["runtime"]["smallest_safe_capacities"];
  int64_t window = 0;
  for (const json& x : caps)
    if (x["key"] == "task_window") {
      window = x["needed"].get<int64_t>();
      EXPECT_FALSE(x["ok"].get<bool>()) << x.dump();
      EXPECT_EQ(x["capacity"], 16);
    }
  ASSERT_GT(window, 16);
  // Sized as amk info says, the same graph is accepted; one slot fewer, rejected.
  EXPECT_EQ(
      test::run_amk({"validate", c[0], "--launch", "task_window=" + std::to_string(window)}).rc, 0);
  EXPECT_EQ(
      test::run_amk({"validate", c[0], "--launch", "task_window=" + std::to_string(window - 1)}).rc,
      1);
  const test::RunResult text = test::run_amk({"info", c[0]});
  EXPECT_NE(text.out.find("smallest safe capacities"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("TOO SMALL"), std::string::npos) << text.out;
}

TEST(CliFormats, RunReproducesACapacityDeadlockAndCompletesItsSibling) {
  for (const std::string name : kCases) {
    SCOPED_TRACE(name);
    const test::RunResult r = test::run_amk(with({"run"}, case_args(name)));
    EXPECT_EQ(r.rc, name.ends_with("-ok") ? 0 : 3) << r.out << r.err;
  }
  const test::RunResult stuck = test::run_amk(with({"run"}, case_args("pto-277-scope-window")));
  EXPECT_NE(stuck.err.find("task window is full"), std::string::npos) << stuck.err;
}

TEST(CliFormats, EveryCommandThatTakesAProgramTakesAForeignGraph) {
  const std::string mpk = (test::source_dir() / "tests/formats/data/mpk/task_graph.json").string();
  const std::string pto = (test::source_dir() / "tests/formats/data/pto/deps.json").string();
  const std::string svg = (test::temp_dir() / "t.svg").string();
  for (const std::string& f : {mpk, pto}) {
    SCOPED_TRACE(f);
    for (const std::vector<std::string>& a : std::vector<std::vector<std::string>>{
             {"validate", f}, {"info", f}, {"show", f}, {"diff", f, f}}) {
      const test::RunResult r = test::run_amk(a);
      EXPECT_EQ(r.rc, 0) << a[0] << ": " << r.out << r.err;
    }
  }
  EXPECT_EQ(test::run_amk({"simulate", pto, "--seeds", "2"}).rc, 0);
  EXPECT_EQ(test::run_amk({"plot", pto, "--target", "a2a3", "-o", svg}).rc, 0);
  // MPK's scheduler-run tasks are in no worker's queue (not on SM 0 as AMK's loader would put
  // them, which made the cost model see a cycle).
  EXPECT_EQ(test::run_amk({"plot", mpk, "--target", "h100", "-o", svg}).rc, 0);
  // MPK's tiles write disjoint rectangles of one tensor: the adversarial simulation sees no race.
  EXPECT_EQ(test::run_amk({"simulate", mpk, "--seeds", "2"}).rc, 0);
}

TEST(CliFormats, ALoweredModelExportedAsMpkAndPtoIsAcceptedRunsAndIsSizedByItsRing) {
  const fs::path dir = test::temp_dir();
  const std::string prog = (dir / "toy.json").string(), mpk = (dir / "task_graph.json").string();
  ASSERT_EQ(test::run_amk({"lower", "toy-1L", "--target", "h100", "-o", prog}).rc, 0);
  ASSERT_EQ(test::run_amk({"export", prog, "--format", "mpk", "-o", mpk}).rc, 0);
  ASSERT_EQ(test::run_amk({"export", prog, "--format", "pto", "-o", (dir / "pto").string()}).rc, 0);
  const std::string pto = (dir / "pto" / "deps.json").string();
  for (const std::string& f : {mpk, pto}) {
    SCOPED_TRACE(f);
    EXPECT_EQ(test::run_amk({"validate", f}).rc, 0);
    const test::RunResult r = test::run_amk({"run", f});
    EXPECT_EQ(r.rc, 0) << r.out << r.err;
  }
  // One scope holds all 27 tasks: a ring of 8 slots is rejected, and the run is stuck on it.
  EXPECT_EQ(test::run_amk({"validate", pto, "--launch", "task_window=8"}).rc, 1);
  EXPECT_EQ(test::run_amk({"run", pto, "--launch", "task_window=8"}).rc, 3);
}

TEST(CliFormats, ServeValidatesAForeignGraphWithItsLaunchOverrides) {
  const std::string f = (corpus("pto-277-scope-window-ok") / "deps.json").string();
  const fs::path in = test::temp_dir() / "requests.jsonl";
  {
    std::ofstream o(in);
    o << json({{"id", 1}, {"op", "validate"}, {"path", f}}).dump() << "\n";
    o << json({{"id", 2}, {"op", "validate"}, {"path", f}, {"launch", {"task_window=8"}}}).dump()
      << "\n";
    o << json({{"id", 3}, {"op", "validate"}, {"path", f}, {"format", "amk"}}).dump() << "\n";
    // A task blocking in TWAIT for the next one in the chain, which runs only after it.
    o << json({{"id", 4},
               {"op", "validate"},
               {"path", f},
               {"launch", {"cores_aiv=1", "twait=4294967297:4294967298"}}})
             .dump()
      << "\n";
  }
  const test::RunResult r = test::run_amk({"serve", "--stdio"}, in.string());
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<json> out;
  std::istringstream s(r.out);
  for (std::string l; std::getline(s, l);) out.push_back(json::parse(l));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_TRUE(out[0]["result"]["ok"].get<bool>()) << out[0].dump();
  EXPECT_FALSE(out[1]["result"]["ok"].get<bool>()) << out[1].dump();
  EXPECT_EQ(out[1]["result"]["errors"][0]["code"], "capacity.task-window") << out[1].dump();
  EXPECT_FALSE(out[2]["ok"].get<bool>()) << out[2].dump();
  EXPECT_EQ(out[3]["result"]["errors"][0]["code"], "capacity.twait") << out[3].dump();
}

}  // namespace
}  // namespace amk
