// Proves what the `amk` command does with hostile and careless files: devices, FIFOs and
// directories are refused up front (exit 2, the kind named), an input past the size ceiling or a
// stream cut at it is a clear error, running out of memory names the input, a JSON file that is
// not a program is refused by validate, info and diff; `-o /dev/stdout` writes where stdout stands
// in every command that takes -o; sizes that do not fit in 64 bits are a diagnostic, never a
// negative figure; a defect gen cannot plant is exit 1.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "support.h"

namespace amk {
namespace {

namespace fs = std::filesystem;
using test::run_amk;

// `cmd` run by the shell in `dir` with the built amk first on PATH: exit status and what it
// printed (stdout and stderr together).
test::RunResult sh(const fs::path& dir, const std::string& cmd) {
  const fs::path log = dir / "sh.log";
  const std::string full = "cd '" + dir.string() + "' && PATH='" +
                           fs::path(test::amk_binary()).parent_path().string() +
                           "':\"$PATH\" && (" + cmd + ") >'" + log.string() + "' 2>&1";
  const int st = std::system(full.c_str());
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, test::slurp(log), ""};
}

TEST(CliInputs, ADeviceAFifoAndADirectoryAreRefusedNamingTheirKindNotAsABug) {
  const fs::path dir = test::temp_dir();
  ASSERT_EQ(::mkfifo((dir / "pipe.json").c_str(), 0600), 0);  // nobody writes: open() would block
  const std::pair<std::string, std::string> cases[] = {{"/dev/zero", "character device"},
                                                       {"/dev/urandom", "character device"},
                                                       {(dir / "pipe.json").string(), "FIFO"},
                                                       {dir.string(), "directory"}};
  for (const auto& [path, kind] : cases) {
    for (const char* cmd : {"validate", "info", "fmt"}) {
      const auto r = run_amk({cmd, path});
      EXPECT_EQ(r.rc, 2) << cmd << " " << path;
      EXPECT_NE(r.err.find("io.not-a-file"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(kind), std::string::npos) << r.err;
      EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
    }
  }
  const auto r = run_amk({"lower", "toy-1L", "-c", "/dev/zero", "-o", (dir / "o.json").string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("io.not-a-file"), std::string::npos) << r.err;
}

TEST(CliInputs, TheSizeCeilingCutsAStreamRefusesABigFileAndIsSetByTheEnvironment) {
  const fs::path dir = test::temp_dir();
  ASSERT_EQ(run_amk({"gen", "--tasks", "200", "-o", (dir / "p.json").string()}).rc, 0);
  auto r = sh(dir, "head -c 3000000 /dev/zero | AMK_MAX_INPUT_BYTES=1M amk validate -");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("io.too-large"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1048576 bytes"), std::string::npos) << r.out;
  r = sh(dir, "AMK_MAX_INPUT_BYTES=2k amk validate p.json");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("'p.json': it is "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("over the 2048 bytes"), std::string::npos) << r.out;
  r = sh(dir, "AMK_MAX_INPUT_BYTES=lots amk validate p.json");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("io.limit"), std::string::npos) << r.out;
  EXPECT_EQ(sh(dir, "AMK_MAX_INPUT_BYTES=1G amk validate p.json").rc, 0);
}

TEST(CliInputs, RunningOutOfMemoryOnAnInputIsAnErrorNamingItNotABug) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's shadow memory does not fit under ulimit -v";
#endif
  // 200 MB of address space for a 300 MB stream the ceiling allows.
  const auto r = sh(test::temp_dir(),
                    "ulimit -v 200000; head -c 300000000 /dev/zero | AMK_SMALL_PAGES=1 "
                    "AMK_MAX_INPUT_BYTES=1G amk validate -");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("-: error[io.out-of-memory]: out of memory reading '-'"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("internal error"), std::string::npos) << r.out;
}

TEST(CliInputs, AJsonFileThatIsNotAProgramIsRefusedByValidateInfoAndDiff) {
  const fs::path dir = test::temp_dir();
  std::ofstream(dir / "a.json") << R"({"name":"pkg","version":"1.0"})";
  std::ofstream(dir / "b.json") << R"({"name":"pkg","version":"2.0"})";
  for (const std::vector<std::string>& args : {std::vector<std::string>{"validate", "a.json"},
                                               {"info", "a.json"},
                                               {"diff", "a.json", "b.json"},
                                               {"diff", "a.json", "a.json"}}) {
    std::string cmd = "amk";
    for (const std::string& a : args) cmd += " " + a;
    const auto r = sh(dir, cmd);
    EXPECT_EQ(r.rc, 2) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("a.json:1:1: error[ir.not-a-program]: not a program: it has no "
                         "'buffers', 'counters' or 'tasks'"),
              std::string::npos)
        << cmd << ": " << r.out;
  }
}

TEST(CliOutputs, DevStdoutIsWrittenWhereStdoutStandsInEveryCommandThatTakesO) {
  const fs::path dir = test::temp_dir();
  const fs::path fix = test::source_dir() / "tests/cli/merge";
  ASSERT_EQ(run_amk({"lower", "toy-1L", "-o", (dir / "p.json").string()}).rc, 0);
  const std::string commands[] = {"amk gen --tasks 20 -o /dev/stdout",
                                  "amk lower toy-1L -o /dev/stdout",
                                  "amk fmt p.json -o /dev/stdout",
                                  "amk show p.json -o /dev/stdout",
                                  "amk plot p.json -o /dev/stdout",
                                  "amk gen-weights p.json -o /dev/stdout",
                                  "amk merge '" + (fix / "base.amk.json").string() + "' '" +
                                      (fix / "base.amk.json").string() + "' '" +
                                      (fix / "base.amk.json").string() + "' -o /dev/stdout"};
  for (const std::string& c : commands) {
    std::ofstream(dir / "log.txt") << "kept\n";
    const auto appended = sh(dir, c + " >> log.txt");
    ASSERT_EQ(appended.rc, 0) << c << ": " << appended.out;
    const std::string log = test::slurp(dir / "log.txt");
    EXPECT_EQ(log.rfind("kept\n", 0), 0u) << c << " replaced the file stdout appends to";
    EXPECT_GT(log.size(), 100u) << c;
    const auto piped = sh(dir, c + " | wc -c > n.txt");
    ASSERT_EQ(piped.rc, 0) << c << ": " << piped.out;
    EXPECT_GT(std::atol(test::slurp(dir / "n.txt").c_str()), 100) << c << " into a pipe";
  }
}

TEST(CliSizes, ValuesThatDoNotFitIn64BitsAreDiagnosticsNeverNegativeFigures) {
  const fs::path inv = test::source_dir() / "tests/validate/invalid";
  const std::pair<std::string, std::string> cases[] = {
      {"weight_bytes_overflow.json", "buffer.size"}, {"est_bytes_overflow.json", "task.estimate"}};
  for (const auto& [file, code] : cases) {
    const std::string path = (inv / file).string();
    const auto v = run_amk({"validate", path});
    EXPECT_EQ(v.rc, 1) << v.out << v.err;
    EXPECT_NE(v.out.find(code), std::string::npos) << v.out;
    const auto info = run_amk({"info", path, "--json", "--unsafe", "--target", "h100"});
    EXPECT_EQ(info.rc, 1) << info.err;
    std::vector<std::string> negative;
    auto walk = [&](const nlohmann::json& j, const std::string& at, auto& self) -> void {
      if (j.is_number() && j.get<double>() < 0) negative.push_back(at);
      if (j.is_structured())
        for (const auto& [k, x] : j.items()) self(x, at + "/" + k, self);
    };
    walk(nlohmann::json::parse(info.out), "", walk);
    EXPECT_TRUE(negative.empty()) << file << ": " << negative.front();
    const auto text = run_amk({"info", path, "--unsafe", "--target", "h100"});
    EXPECT_FALSE(std::regex_search(text.out, std::regex(R"(\s-\d)"))) << text.out;
  }
}

TEST(CliGen, ADefectThatCannotBePlantedExitsOneAndWritesNothing) {
  const fs::path out = test::temp_dir() / "p.json";
  auto r = run_amk({"gen", "--shape", "chain", "--defect", "share-page", "-o", out.string()});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("cannot plant the defect 'share-page'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  r = run_amk({"gen", "--nop", "--defect", "drop-wait", "-o", out.string()});
  EXPECT_EQ(r.rc, 1);
  EXPECT_FALSE(fs::exists(out));
  for (const char* seed : {"1", "2", "3", "4", "5"}) {
    r = run_amk({"gen", "--shape", "mesh", "--tasks", "200", "--seed", seed, "--defect", "cycle",
                 "-o", out.string()});
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(run_amk({"validate", out.string()}).rc, 1) << "seed " << seed;
  }
}

}  // namespace
}  // namespace amk
