// Proves each rule fires on its defect (tests/validate/invalid: every file rejected with exactly
// the expected codes and pointers), accepted programs stay accepted (tests/validate/valid), and
// every AMK conformance program gets AMK's verdict, messages and stats.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ir/json_io.h"
#include "support.h"
#include "validate/validate.h"

namespace amk::validate {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> expected_lines(const fs::path& json) {
  std::vector<std::string> out;
  std::istringstream in(test::slurp(fs::path(json).replace_extension(".expected")));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

std::vector<std::string> actual_lines(const Result& r) {
  std::vector<std::string> out;
  auto ptr = [](const std::string& p) { return p.empty() ? std::string("\"\"") : p; };
  for (const auto& e : r.errors) out.push_back("error " + e.code + " " + ptr(e.pointer));
  for (const auto& w : r.warnings) out.push_back("warning " + w.code + " " + ptr(w.pointer));
  return out;
}

std::vector<fs::path> files(const char* dir) {
  std::vector<fs::path> v;
  for (const auto& e : fs::directory_iterator(test::source_dir() / "tests/validate" / dir))
    if (e.path().extension() == ".json") v.push_back(e.path());
  std::sort(v.begin(), v.end());
  return v;
}

ir::Program load(const fs::path& p) {
  auto r = ir::load_program(p.string());
  EXPECT_TRUE(r.ok()) << p;
  return r.ok() ? *r.value : ir::Program{};
}

TEST(InvalidCorpus, EveryDefectIsRejectedWithExactlyTheExpectedDiagnostics) {
  auto all = files("invalid");
  EXPECT_GE(all.size(), 40u);
  for (const auto& f : all) {
    SCOPED_TRACE(f.filename().string());
    Result r = validate(load(f));
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(actual_lines(r), expected_lines(f)) << r.report();
  }
}

TEST(ValidCorpus, AcceptedProgramsStayAcceptedWithTheirWarnings) {
  for (const auto& f : files("valid")) {
    SCOPED_TRACE(f.filename().string());
    Result r = validate(load(f));
    EXPECT_TRUE(r.ok) << r.report();
    EXPECT_EQ(actual_lines(r), expected_lines(f)) << r.report();
  }
}

TEST(ParallelProof, EveryCorpusVerdictIsTheSameOnAnyNumberOfThreads) {
  // set_threads(n) splits the per-task passes into n ranges even for these small programs: the
  // merged diagnostics must be the single thread's, in its order, with its notes and stats.
  for (const char* dir : {"invalid", "valid"}) {
    for (const auto& f : files(dir)) {
      SCOPED_TRACE(f.filename().string());
      const ir::Program p = load(f);
      Validator one;
      one.set_threads(1);
      const Result serial = one.validate(p);
      for (unsigned n : {2u, 3u, 7u}) {
        Validator v;
        v.set_threads(n);
        const Result r = v.validate(p);
        EXPECT_EQ(r.to_json(), serial.to_json()) << n << " threads";
      }
    }
  }
}

TEST(RuleCoverage, EveryErrorRuleIsExercisedByTheCorpus) {
  std::set<std::string> seen;
  for (const char* dir : {"invalid", "valid"})
    for (const auto& f : files(dir))
      for (const auto& line : expected_lines(f))
        seen.insert(line.substr(line.find(' ') + 1, line.rfind(' ') - line.find(' ') - 1));
  // The capacity rules' cases are MPK and PTO graphs (tests/formats/corpus, run by the formats
  // tests): their `expected` files count here too.
  for (const auto& e : fs::directory_iterator(test::source_dir() / "tests/formats/corpus")) {
    if (!e.is_directory()) continue;
    std::istringstream in(test::slurp(e.path() / "expected"));
    for (std::string line; std::getline(in, line);)
      if (!line.empty())
        seen.insert(line.substr(line.find(' ') + 1, line.rfind(' ') - line.find(' ') - 1));
  }
  // Rules that cannot be written in a file (the reader refuses NaN) are covered in memory below.
  const std::set<std::string> in_memory = {"param.finite"};
  for (const Rule& r : rules())
    if (!in_memory.count(std::string(r.code))) {
      EXPECT_TRUE(seen.count(std::string(r.code))) << r.code << " has no corpus case";
    }
}

TEST(RuleCoverage, NonFiniteParamsAreRejectedInMemory) {
  ir::Program p = load(test::source_dir() / "tests/validate/valid/base_pipeline.json");
  p.tasks[1].set_param("eps", ir::ParamValue::of_float(std::numeric_limits<double>::quiet_NaN()));
  Result r = validate(p);
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.errors[0].code, "param.finite");
  EXPECT_EQ(r.errors[0].pointer, "/tasks/1/params/eps");
}

TEST(Conformance, VerdictsMessagesStatsAndWarningsEqualAmks) {
  auto manifest = nlohmann::json::parse(test::slurp(test::conformance_dir() / "manifest.json"));
  int checked = 0;
  for (const auto& e : manifest) {
    std::string file = e["file"];
    SCOPED_TRACE(file);
    auto lr = ir::load_program((test::conformance_dir() / file).string());
    if (e["ok"].is_null()) {
      EXPECT_FALSE(lr.ok());  // AMK refuses it at load: exit 2
      continue;
    }
    ASSERT_TRUE(lr.ok());
    Result r = validate(*lr.value);
    EXPECT_EQ(r.ok, e["ok"].get<bool>()) << r.report();
    std::vector<std::string> ours;
    for (const auto& d : r.errors) ours.push_back(d.message);
    for (const auto& m : e["errors"])
      EXPECT_NE(std::find(ours.begin(), ours.end(), m.get<std::string>()), ours.end())
          << "AMK's message missing: " << m;
    EXPECT_EQ(r.warnings.size(), e["n_warnings"].get<size_t>());
    if (!e["first_warning"].is_null()) {
      EXPECT_EQ(r.warnings[0].message, e["first_warning"]);
    }
    const auto& st = e["stats"];
    EXPECT_EQ(r.stats.tasks, st["tasks"].get<uint64_t>());
    EXPECT_EQ(r.stats.buffers, st["buffers"].get<uint64_t>());
    EXPECT_EQ(r.stats.counters, st["counters"].get<uint64_t>());
    EXPECT_EQ(r.stats.edges, st["edges"].get<uint64_t>());
    EXPECT_EQ(r.stats.acyclic, st["acyclic"].get<bool>());
    EXPECT_DOUBLE_EQ(r.stats.weight_mb, st["weight_MB"].get<double>());
    EXPECT_EQ(r.stats.sm_assigned, st["sm_assigned"].get<bool>());
    ++checked;
  }
  EXPECT_EQ(checked, 35);
}

TEST(Conformance, ReportKeepsAmksShape) {
  Result r =
      validate(load(test::conformance_dir() / "programs/bad_read_without_happens_before.json"));
  std::string rep = r.report(false);
  EXPECT_EQ(rep,
            "[REJECTED] {'tasks': 27, 'buffers': 37, 'counters': 22, 'edges': 32, 'acyclic': True, "
            "'weight_MB': 0.28, 'sm_assigned': False}\n"
            "  ERROR: task 13 (L0.attn_residual) reads buffer #20 ('L0.o') but writer task(s) [12] "
            "are NOT ordered before it, data RACE");
  auto j = nlohmann::json::parse(r.to_json("x.json"));
  EXPECT_EQ(j["errors"][0]["code"], "race.raw");
  EXPECT_EQ(j["errors"][0]["pointer"], "/tasks/13/inputs/1");
  EXPECT_EQ(j["errors"][0]["notes"][0]["pointer"], "/tasks/12");
}

}  // namespace
}  // namespace amk::validate
