// Proves the git integration with real git in temporary repositories: amk git-setup, the textconv
// view and the external diff, the merge driver (knob-level for configs, task-level and proven for
// programs) and the pre-commit hook.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/fileio.h"
#include "ir/json_io.h"
#include "support.h"

namespace amk {
namespace {

namespace fs = std::filesystem;
using test::run_amk;

// A shell command run in `dir` with git's identity and HOME set to the test's own folder.
struct Sh {
  int rc = -1;
  std::string out;
};
Sh sh(const fs::path& dir, const std::string& cmd) {
  const fs::path log = dir.parent_path() / "sh.log";
  const std::string full =
      "cd '" + dir.string() + "' && export HOME='" + dir.parent_path().string() +
      "' GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com "
      "GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com PATH='" +
      fs::path(test::amk_binary()).parent_path().string() + "':\"$PATH\" && (" + cmd + ") >'" +
      log.string() + "' 2>&1";
  const int st = std::system(full.c_str());
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, test::slurp(log)};
}

// A fresh repository with amk's drivers set up and one commit of `files`.
fs::path repo(const std::vector<std::pair<std::string, std::string>>& files) {
  const fs::path dir = test::temp_dir() / "repo";
  fs::create_directories(dir);
  EXPECT_EQ(sh(dir, "git init -q -b main").rc, 0);
  EXPECT_EQ(sh(dir, "amk git-setup").rc, 0);
  for (const auto& [name, text] : files) std::ofstream(dir / name) << text;
  const Sh c = sh(dir, "git add -A && git commit -q -m base");
  EXPECT_EQ(c.rc, 0) << c.out;
  return dir;
}

// Commits `text` as c.schedule.json on a new branch off main, then goes back to main.
Sh commit_config_on(const fs::path& dir, const std::string& branch, const std::string& text) {
  if (Sh r = sh(dir, "git checkout -q main && git checkout -q -b " + branch); r.rc != 0) return r;
  std::ofstream(dir / "c.schedule.json") << text;
  return sh(dir, "git commit -qam " + branch + " && git checkout -q main");
}

// Two branches off main (c.schedule.json at N_tile 64, load_balance) change different knobs: git
// merges them through amk's driver, on a branch "merged", keeping both changes.
void expect_different_knobs_merge(const fs::path& dir) {
  ASSERT_EQ(
      commit_config_on(dir, "tile",
                       R"({"tiling": {"gemv": {"N_tile": 32}}, "sm_assignment": "load_balance"})")
          .rc,
      0);
  ASSERT_EQ(
      commit_config_on(dir, "place",
                       R"({"tiling": {"gemv": {"N_tile": 64}}, "sm_assignment": "round_robin"})")
          .rc,
      0);
  const Sh m = sh(dir, "git checkout -q -b merged tile && git merge -q --no-edit place");
  ASSERT_EQ(m.rc, 0) << m.out;
  const std::string merged = test::slurp(dir / "c.schedule.json");
  EXPECT_NE(merged.find("\"N_tile\": 32"), std::string::npos) << merged;
  EXPECT_NE(merged.find("\"round_robin\""), std::string::npos) << merged;
}

TEST(GitSetup, WritesAttributesAndConfigOnceAndPrintsWhatItWould) {
  const fs::path dir = repo({});
  ASSERT_EQ(sh(dir, "amk git-setup && amk git-setup").rc, 0) << "idempotent";
  const std::string attrs = test::slurp(dir / ".gitattributes");
  EXPECT_EQ(attrs, "*.amk.json diff=amk merge=amk\n*.schedule.json diff=amk merge=amk\n");
  const Sh cfg = sh(dir, "git config --get merge.amk.driver && git config --get diff.amk.textconv");
  EXPECT_NE(cfg.out.find(" merge %O %A %B\n"), std::string::npos) << cfg.out;
  EXPECT_NE(cfg.out.find(" show --\n"), std::string::npos) << cfg.out;
  const Sh print = sh(dir, "amk git-setup --print");
  EXPECT_NE(print.out.find("(already there)"), std::string::npos) << print.out;
  EXPECT_NE(print.out.find("git config diff.amk.command"), std::string::npos) << print.out;
  const fs::path outside = test::temp_dir() / "outside";  // its parent is the test's own folder
  fs::create_directories(outside);
  EXPECT_NE(sh(outside, "amk git-setup").rc, 0) << "outside a repository";
}

TEST(GitDiff, TextconvShowsLabelledLinesAndTheExternalDiffIsSemantic) {
  const fs::path tmp = test::temp_dir();
  const std::string a = (tmp / "a.json").string(), b = (tmp / "b.json").string();
  ASSERT_EQ(run_amk({"lower", "toy-1L", "-o", a}).rc, 0);
  ASSERT_EQ(run_amk({"lower", "toy-1L", "-c", R"({"tiling":{"gemv":{"N_tile":32}}})", "-o", b}).rc,
            0);
  const fs::path dir = repo({{"p.amk.json", test::slurp(a)}});
  fs::copy_file(b, dir / "p.amk.json", fs::copy_options::overwrite_existing);
  const Sh ext = sh(dir, "git diff");
  ASSERT_EQ(ext.rc, 0) << ext.out;
  EXPECT_NE(ext.out.find("diff --amk a/p.amk.json b/p.amk.json"), std::string::npos) << ext.out;
  EXPECT_NE(ext.out.find("config.tiling.gemv.N_tile: 64 -> 32"), std::string::npos) << ext.out;
  const Sh conv = sh(dir, "git diff --no-ext-diff");
  EXPECT_NE(conv.out.find("+task L0.q_proj[t1]: GEMV_TILE"), std::string::npos) << conv.out;
  EXPECT_EQ(conv.out.find("\"id\""), std::string::npos) << "the view, not the JSON";
  // An added file: git passes /dev/null.
  std::ofstream(dir / "c.schedule.json") << R"({"tiling": {"gemv": {"N_tile": 16}}})";
  const Sh added = sh(dir, "git add c.schedule.json && git diff --cached -- c.schedule.json");
  EXPECT_EQ(added.rc, 0) << added.out;
  EXPECT_NE(added.out.find("new file"), std::string::npos) << added.out;
}

TEST(GitMerge, DifferentKnobsMergeCleanlyAndTheSameKnobConflicts) {
  const fs::path dir =
      repo({{"c.schedule.json",
             R"({"tiling": {"gemv": {"N_tile": 64}}, "sm_assignment": "load_balance"})"}});
  expect_different_knobs_merge(dir);
  ASSERT_EQ(
      commit_config_on(dir, "retile",
                       R"({"tiling": {"gemv": {"N_tile": 16}}, "sm_assignment": "load_balance"})")
          .rc,
      0);
  Sh m = sh(dir, "git checkout -q -b clash tile && git merge -q --no-edit retile");
  EXPECT_NE(m.rc, 0) << "the same knob changed two ways";
  EXPECT_NE(m.out.find("/tiling/gemv/N_tile: error[merge.conflict]: changed two ways: ours 32, "
                       "theirs 16 (base 64)"),
            std::string::npos)
      << m.out;
  EXPECT_NE(test::slurp(dir / "c.schedule.json").find("\"N_tile\": 32"), std::string::npos)
      << "ours untouched";
}

TEST(GitMerge, ProgramEditsThatAreEachValidButRaceTogetherAreRefusedNamingTheRule) {
  const fs::path fix = test::source_dir() / "tests/cli/merge";
  const fs::path dir = repo({{"p.amk.json", test::slurp(fix / "base.amk.json")}});
  auto branch = [&](const std::string& name, const fs::path& file) {
    fs::copy_file(file, dir / "p.amk.json", fs::copy_options::overwrite_existing);
    return sh(dir, "git checkout -q -b " + name + " main && git commit -qam " + name +
                       " && git checkout -q main");
  };
  ASSERT_EQ(branch("ours", fix / "ours.amk.json").rc, 0);
  ASSERT_EQ(branch("theirs", fix / "theirs.amk.json").rc, 0);
  for (const char* f : {"base", "ours", "theirs"})
    EXPECT_EQ(run_amk({"validate", (fix / (std::string(f) + ".amk.json")).string()}).rc, 0) << f;
  const Sh m = sh(dir, "git checkout -q ours && git merge -q --no-edit theirs");
  EXPECT_NE(m.rc, 0);
  EXPECT_NE(m.out.find("error[merge.unsafe]"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("error[race.raw]: task 2 (C) reads buffer #1 ('a')"), std::string::npos)
      << m.out;
  EXPECT_EQ(test::slurp(dir / "p.amk.json"), test::slurp(fix / "ours.amk.json"))
      << "nothing written";
  // Disjoint edits that stay safe combine: ours re-estimates task A, theirs places task C.
  ir::Program base = test::must(ir::load_program((fix / "base.amk.json").string()));
  ir::Program ours = base, theirs = base;
  ours.tasks[0].est_bytes = 4096;
  theirs.tasks[2].sm = 1;
  const fs::path tmp = test::temp_dir();
  for (auto [name, p] : {std::pair{"o.amk.json", &ours}, {"t.amk.json", &theirs}})
    ASSERT_TRUE(test::ok(ir::write_file_atomic((tmp / name).string(), ir::write_program(*p))));
  auto r = run_amk({"merge", (fix / "base.amk.json").string(), (tmp / "o.amk.json").string(),
                    (tmp / "t.amk.json").string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  const ir::Program merged = test::must(ir::load_program((tmp / "o.amk.json").string()));
  EXPECT_EQ(merged.tasks[0].est_bytes, 4096);
  EXPECT_EQ(merged.tasks[2].sm, 1);
  EXPECT_EQ(merged.tasks.size(), 3u);
}

TEST(GitHooks, PreCommitRefusesAnUnsafeProgramAndRewritesANonCanonicalOne) {
  const fs::path dir = repo({});
  const std::string hook = (test::source_dir() / "scripts/git-hooks/pre-commit").string();
  ASSERT_EQ(sh(dir, "cp '" + hook + "' .git/hooks/pre-commit").rc, 0);
  const fs::path bad = test::conformance_dir() / "programs/bad_sm_queue_order.json";
  fs::copy_file(bad, dir / "bad.amk.json");
  Sh c = sh(dir, "git add bad.amk.json && git commit -q -m bad");
  EXPECT_NE(c.rc, 0) << c.out;
  EXPECT_NE(c.out.find("amk-validate: bad.amk.json is rejected"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("sm.queue-order"), std::string::npos) << c.out;
  ASSERT_EQ(sh(dir, "git rm -q --cached bad.amk.json && rm bad.amk.json").rc, 0);
  // A valid program in non-canonical bytes: the hook rewrites it and stops the commit once.
  const std::string good = test::slurp(test::source_dir() / "tests/cli/merge/base.amk.json");
  std::ofstream(dir / "good.amk.json") << good << "\n\n";
  c = sh(dir, "git add good.amk.json && git commit -q -m good");
  EXPECT_NE(c.rc, 0) << c.out;
  EXPECT_NE(c.out.find("amk-fmt: good.amk.json was not in canonical bytes"), std::string::npos)
      << c.out;
  EXPECT_EQ(test::slurp(dir / "good.amk.json"), good);
  c = sh(dir, "git add good.amk.json && git commit -q -m good");
  EXPECT_EQ(c.rc, 0) << c.out;
}

TEST(GitSetup, ABinaryPathWithASpaceADashAndABarWorksForDiffTextconvAndMerge) {
  // git runs the configured values through the shell: an unquoted path breaks at the space (and
  // pipes at the `|`).
  const fs::path tmp = test::temp_dir();
  const fs::path bin = tmp / "-my tools|x" / "amk";
  fs::create_directories(bin.parent_path());
  fs::copy_file(test::amk_binary(), bin);
  const std::string amk = "'" + bin.string() + "'";
  const std::string a = (tmp / "a.json").string(), b = (tmp / "b.json").string();
  ASSERT_EQ(run_amk({"lower", "toy-1L", "-o", a}).rc, 0);
  ASSERT_EQ(run_amk({"lower", "toy-1L", "-c", R"({"tiling":{"gemv":{"N_tile":32}}})", "-o", b}).rc,
            0);
  const fs::path dir = tmp / "repo";
  fs::create_directories(dir);
  ASSERT_EQ(sh(dir, "git init -q -b main && " + amk + " git-setup").rc, 0);
  const std::string name = "-p x|y.amk.json";  // a file name that is no option and no pipe either
  fs::copy_file(a, dir / name);
  std::ofstream(dir / "c.schedule.json")
      << R"({"tiling": {"gemv": {"N_tile": 64}}, "sm_assignment": "load_balance"})";
  ASSERT_EQ(sh(dir, "git add -A && git commit -q -m base").rc, 0);
  fs::copy_file(b, dir / name, fs::copy_options::overwrite_existing);
  const Sh ext = sh(dir, "git diff");
  ASSERT_EQ(ext.rc, 0) << ext.out;
  EXPECT_NE(ext.out.find("config.tiling.gemv.N_tile: 64 -> 32"), std::string::npos) << ext.out;
  const Sh conv = sh(dir, "git diff --no-ext-diff");
  ASSERT_EQ(conv.rc, 0) << conv.out;
  EXPECT_NE(conv.out.find("+task L0.q_proj[t1]: GEMV_TILE"), std::string::npos) << conv.out;
  ASSERT_EQ(sh(dir, "git checkout -q -- .").rc, 0);
  expect_different_knobs_merge(dir);
}

TEST(GitHooks, NamesWithALeadingDashASpaceAndABarAreFilesAndTheValidatorsErrorsAreShown) {
  const fs::path dir = repo({});
  const std::string hook = (test::source_dir() / "scripts/git-hooks/pre-commit").string();
  ASSERT_EQ(sh(dir, "cp '" + hook + "' .git/hooks/pre-commit").rc, 0);
  const std::string bad = "-bad x|y.amk.json";
  fs::copy_file(test::conformance_dir() / "programs/bad_sm_queue_order.json", dir / bad);
  Sh c = sh(dir, "git add -- '" + bad + "' && git commit -q -m bad");
  EXPECT_NE(c.rc, 0) << c.out;
  EXPECT_NE(c.out.find("amk-validate: " + bad + " is rejected"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("[sm.queue-order] at /tasks/0/sm"), std::string::npos)
      << "the validator's errors are shown: " << c.out;
  ASSERT_EQ(sh(dir, "git rm -q --cached -- '" + bad + "' && rm -- '" + bad + "'").rc, 0);
  // A JSON file that is not a program is refused too, the error naming the file as staged.
  const std::string pkg = "-pkg x|y.amk.json";
  std::ofstream(dir / pkg) << R"({"name":"pkg","version":"1.0"})";
  c = sh(dir, "git add -- '" + pkg + "' && git commit -q -m pkg");
  EXPECT_NE(c.rc, 0) << c.out;
  EXPECT_NE(c.out.find(pkg + ":1:1: error[ir.not-a-program]"), std::string::npos) << c.out;
  ASSERT_EQ(sh(dir, "git rm -q --cached -- '" + pkg + "' && rm -- '" + pkg + "'").rc, 0);
  // A non-canonical valid program with such a name is rewritten, not taken for an option.
  const std::string good = test::slurp(test::source_dir() / "tests/cli/merge/base.amk.json");
  const std::string name = "-good x|y.amk.json";
  std::ofstream(dir / name) << good << "\n\n";
  c = sh(dir, "git add -- '" + name + "' && git commit -q -m good");
  EXPECT_NE(c.rc, 0) << c.out;
  EXPECT_NE(c.out.find("amk-fmt: " + name + " was not in canonical bytes; rewrote it"),
            std::string::npos)
      << c.out;
  EXPECT_EQ(test::slurp(dir / name), good);
  c = sh(dir, "git add -- '" + name + "' && git commit -q -m good");
  EXPECT_EQ(c.rc, 0) << c.out;
}

TEST(GitHooks, ThePreCommitFrameworksEntriesTakeANameWithALeadingDashAsAFile) {
  // pre-commit runs `entry FILE...` without a shell: each entry must end its options.
  const fs::path dir = test::temp_dir() / "work";  // sh() logs into its parent
  fs::create_directories(dir);
  const std::string name = "-p x|y.amk.json";
  fs::copy_file(test::source_dir() / "tests/cli/merge/base.amk.json", dir / name);
  std::istringstream yaml(test::slurp(test::source_dir() / ".pre-commit-hooks.yaml"));
  int entries = 0;
  for (std::string line; std::getline(yaml, line);) {
    const size_t at = line.find("entry: ");
    if (at == std::string::npos) continue;
    ++entries;
    const Sh r = sh(dir, line.substr(at + 7) + " '" + name + "'");
    EXPECT_EQ(r.rc, 0) << line << ": " << r.out;
  }
  EXPECT_EQ(entries, 2);
}

TEST(GitLog, EveryRevisionIsProvenAndScoredAndARegressionIsMarked) {
  const fs::path tmp = test::temp_dir();
  const std::string fast = (tmp / "fast.json").string(), slow = (tmp / "slow.json").string();
  ASSERT_EQ(
      run_amk({"lower", "toy-2L", "--target", "a2a3", "-c",
               R"({"tiling":{"gemv":{"N_tile":16}},"sm_assignment":"round_robin"})", "-o", fast})
          .rc,
      0);
  ASSERT_EQ(run_amk({"lower", "toy-2L", "--target", "a2a3", "-o", slow}).rc, 0);
  const fs::path dir = repo({{"p.amk.json", test::slurp(fast)}});
  auto commit = [&](const fs::path& from, const std::string& subject) {
    fs::copy_file(from, dir / "p.amk.json", fs::copy_options::overwrite_existing);
    return sh(dir, "git commit -qam '" + subject + "'").rc;
  };
  ASSERT_EQ(commit(slow, "back to the default tiling"), 0);
  ASSERT_EQ(commit(test::conformance_dir() / "programs/bad_sm_queue_order.json", "hand edit"), 0);
  ASSERT_EQ(sh(dir, "mkdir s && git mv p.amk.json s/q.amk.json && git commit -qm moved").rc, 0);
  const Sh log = sh(dir, "amk log s/q.amk.json --target a2a3 --svg h.svg");
  ASSERT_EQ(log.rc, 0) << log.out;
  std::vector<std::string> lines;
  std::istringstream in(log.out);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 4u) << log.out;
  EXPECT_NE(lines[0].find("REJECTED (sm.queue-order) moved"), std::string::npos) << log.out;
  EXPECT_NE(lines[1].find("REJECTED (sm.queue-order) hand edit"), std::string::npos) << log.out;
  // Each revision is scored by the cost model, as `amk info` scores the program.
  auto predicted = [](const std::string& file) {
    const test::RunResult r = run_amk({"info", file, "--target", "a2a3", "--json"});
    return nlohmann::json::parse(r.out)["cost"]["predicted_us"].get<double>();
  };
  const double base_us = predicted(fast), slow_us = predicted(slow);
  ASSERT_GT(slow_us, base_us * 1.01) << "the default tiling must be the slower revision";
  EXPECT_NE(lines[2].find(fmt::format("48 tasks {:>9.1f} us {:>+6.1f}%  VALID      back to the "
                                      "default tiling  << REGRESSION",
                                      slow_us, 100 * (slow_us / base_us - 1))),
            std::string::npos)
      << log.out;
  EXPECT_NE(lines[3].find(fmt::format("106 tasks {:>9.1f} us", base_us)), std::string::npos)
      << log.out;
  EXPECT_EQ(lines[3].find("REGRESSION"), std::string::npos);
  const std::string svg = test::slurp(dir / "h.svg");
  size_t points = 0;
  for (size_t at = svg.find("class=\"revision\""); at != std::string::npos;
       at = svg.find("class=\"revision\"", at + 1))
    ++points;
  EXPECT_EQ(points, 4u);
  // A ScheduleConfig's history, lowered for a model at every revision.
  std::ofstream(dir / "c.schedule.json") << R"({"tiling": {"gemv": {"N_tile": 32}}})";
  ASSERT_EQ(sh(dir, "git add c.schedule.json && git commit -qm cfg").rc, 0);
  const Sh cfg = sh(dir, "amk log c.schedule.json --model toy-2L --json");
  ASSERT_EQ(cfg.rc, 0) << cfg.out;
  EXPECT_NE(cfg.out.find("\"tasks\": 66"), std::string::npos) << cfg.out;
  EXPECT_NE(cfg.out.find("\"valid\": true"), std::string::npos) << cfg.out;
}

}  // namespace
}  // namespace amk
