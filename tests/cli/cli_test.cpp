// Proves the `amk` command's contract: exit codes, byte-identical fmt, atomic outputs, JSON modes
// and helpful errors for unknown commands and options.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "support.h"

namespace amk {
namespace {

namespace fs = std::filesystem;
using test::run_amk;

TEST(CliFmt, RewritesEveryConformanceProgramToAmksExactBytes) {
  AMK_REQUIRE_CONFORMANCE();
  fs::path out = test::temp_dir() / "o.json";
  int n = 0;
  for (const auto& e : fs::directory_iterator(test::conformance_dir() / "programs")) {
    if (e.path().filename() == "bad_ir_major_version.json") continue;
    auto r = run_amk({"fmt", e.path().string(), "-o", out.string()});
    ASSERT_EQ(r.rc, 0) << e.path() << r.err;
    EXPECT_EQ(test::slurp(out), test::slurp(e.path())) << e.path();
    ++n;
  }
  EXPECT_EQ(n, 35);
}

TEST(CliFmt, CheckReportsNonCanonicalFilesAndInPlaceRewriteFixesThem) {
  fs::path dir = test::temp_dir();
  fs::path f = dir / "p.json";
  ASSERT_EQ(run_amk({"gen", "--tasks", "30", "-o", f.string()}).rc, 0);
  std::string canonical = test::slurp(f);
  EXPECT_EQ(run_amk({"fmt", "--check", f.string()}).rc, 0);
  auto j = nlohmann::ordered_json::parse(canonical);
  std::string messy = j.dump(1) + "\n";
  {
    std::FILE* fp = std::fopen(f.c_str(), "w");
    std::fwrite(messy.data(), 1, messy.size(), fp);
    std::fclose(fp);
  }
  auto r = run_amk({"fmt", "--check", f.string()});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("not canonical"), std::string::npos);
  EXPECT_EQ(test::slurp(f), messy) << "--check writes nothing";
  EXPECT_EQ(run_amk({"fmt", f.string()}).rc, 0);
  EXPECT_EQ(test::slurp(f), canonical);
}

TEST(CliFmt, MalformedInputExitsTwoAndNamesFileAndPointer) {
  fs::path bad = test::source_dir() / "tests/ir/malformed/threshold_string.json";
  fs::path out = test::temp_dir() / "keep.json";
  {
    std::FILE* fp = std::fopen(out.c_str(), "w");
    std::fputs("previous", fp);
    std::fclose(fp);
  }
  auto r = run_amk({"fmt", bad.string(), "-o", out.string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("threshold_string.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/tasks/0/waits/0/threshold"), std::string::npos) << r.err;
  EXPECT_EQ(test::slurp(out), "previous") << "a failed run leaves existing files as they were";
}

TEST(CliInfo, JsonModeIsOneDocumentAndUnreadableIsExitTwo) {
  AMK_REQUIRE_CONFORMANCE();
  auto r = run_amk(
      {"info", (test::conformance_dir() / "programs/llama_1B_default.json").string(), "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tasks"], 4098);
  EXPECT_EQ(j["edges"], 7905);
  EXPECT_EQ(j["weight_MB"], 4943.26);
  EXPECT_TRUE(j["critical_path"]["tasks"].get<int>() > 100);
  r = run_amk(
      {"info", "--json", (test::source_dir() / "tests/ir/malformed/unknown_dtype.json").string()});
  EXPECT_EQ(r.rc, 2);
  auto e = nlohmann::json::parse(r.out);
  EXPECT_EQ(e["errors"][0]["pointer"], "/buffers/0/dtype");
}

TEST(CliDiff, ExitCodesAreSameDifferentUnreadable) {
  AMK_REQUIRE_CONFORMANCE();
  auto p = [](const char* n) { return (test::conformance_dir() / "programs" / n).string(); };
  EXPECT_EQ(run_amk({"diff", p("toy_1L_default.json"), p("toy_1L_default.json")}).rc, 0);
  auto r = run_amk({"diff", p("toy_1L_default.json"), p("toy_1L_auto.json")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("~ task L0.q_proj[t0]"), std::string::npos) << r.out;
  EXPECT_EQ(run_amk({"diff", p("toy_1L_default.json"), p("bad_ir_major_version.json")}).rc, 2);
  r = run_amk({"diff", "--json", p("toy_2L_default.json"), p("toy_1L_default.json")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_FALSE(nlohmann::json::parse(r.out)["same"].get<bool>());
}

TEST(CliGen, WritesDeterministicProgramsAndRejectsUnknownNames) {
  fs::path dir = test::temp_dir();
  ASSERT_EQ(run_amk({"gen", "--shape", "mesh", "--tasks", "200", "--seed", "9", "-o",
                     (dir / "a.json").string()})
                .rc,
            0);
  ASSERT_EQ(run_amk({"gen", "--shape", "mesh", "--tasks", "200", "--seed", "9", "-o",
                     (dir / "b.json").string()})
                .rc,
            0);
  EXPECT_EQ(test::slurp(dir / "a.json"), test::slurp(dir / "b.json"));
  EXPECT_EQ(run_amk({"gen", "--shape", "tree", "-o", (dir / "c.json").string()}).rc, 2);
  auto r = run_amk({"gen", "--defect", "cycle", "-o", (dir / "d.json").string()});
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.err.find("defect:"), std::string::npos);
}

TEST(CliDispatch, UnknownCommandsAndOptionsSuggestTheClosestName) {
  auto r = run_amk({"fromat"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("did you mean 'fmt'"), std::string::npos) << r.err;
  r = run_amk({"info", "--jsn", "x.json"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("did you mean '--json'"), std::string::npos) << r.err;
  r = run_amk({"--version"});
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.out.find("IR 0.2.0, ABI 0.2"), std::string::npos);
  EXPECT_EQ(run_amk({"fmt", "--help"}).rc, 0);
  EXPECT_EQ(run_amk({"--help"}).rc, 0);
}

}  // namespace
}  // namespace amk
