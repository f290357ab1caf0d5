#include "support.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace amk::test {

std::string text(const ir::Diagnostics& d) {
  std::string out;
  for (const ir::Diagnostic& x : d) out += ir::format_diagnostic(x, "") + "\n";
  return out;
}

namespace {

// The directory temp_dir() gives the test `info` (nullptr: outside a test).
std::filesystem::path dir_of(const ::testing::TestInfo* info) {
  std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "amk";
  for (char& c : name)
    if (c == '/') c = '_';
  return std::filesystem::temp_directory_path() /
         ("amk-test-" + std::to_string(::getpid()) + "-" + name);
}

// Removes a test's directory when the test ends without failing; a failed test's is kept to
// look at.
class RemoveTempDirs : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed()) return;
    std::error_code ec;
    std::filesystem::remove_all(dir_of(&info), ec);
  }
};

}  // namespace

std::filesystem::path temp_dir() {
  static const bool removing = [] {  // the listeners own it
    ::testing::UnitTest::GetInstance()->listeners().Append(new RemoveTempDirs);
    return true;
  }();
  (void)removing;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path dir = dir_of(info);
  static std::string fresh;  // wipe once per test, so helpers may call this again
  if (fresh != dir.string()) {
    std::filesystem::remove_all(dir);
    fresh = dir.string();
  }
  std::filesystem::create_directories(dir);
  return dir;
}

::testing::AssertionResult same_text(const std::string& a, const std::string& b) {
  if (a == b) return ::testing::AssertionSuccess();
  const size_t at = static_cast<size_t>(
      std::mismatch(a.begin(),
                    a.begin() + static_cast<std::ptrdiff_t>(std::min(a.size(), b.size())),
                    b.begin())
          .first -
      a.begin());
  const size_t line_start = at == 0 ? 0 : a.rfind('\n', at - 1) + 1;  // npos + 1 == 0
  auto line = [&](const std::string& s) {
    const size_t end = s.find('\n', line_start);
    return s.substr(line_start, end == std::string::npos ? std::string::npos : end - line_start);
  };
  return ::testing::AssertionFailure()
         << "the texts differ first on line "
         << std::count(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(line_start), '\n') + 1
         << " (sizes " << a.size() << " and " << b.size() << "):\n  " << line(a) << "\n  "
         << line(b);
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + p.string());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

RunResult run_amk(const std::vector<std::string>& args, const std::string& stdin_path) {
  auto dir = temp_dir() / "run";
  std::filesystem::create_directories(dir);
  auto quote = [](const std::string& a) {
    std::string q = "'";
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  std::string cmd = quote(amk_binary());
  for (const auto& a : args) cmd += " " + quote(a);
  cmd += " <" + quote(stdin_path) + " >" + quote((dir / "out").string()) + " 2>" +
         quote((dir / "err").string());
  int status = std::system(cmd.c_str());
  RunResult r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  return r;
}

}  // namespace amk::test
