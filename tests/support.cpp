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

std::filesystem::path temp_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "amk";
  for (char& c : name)
    if (c == '/') c = '_';
  auto dir = std::filesystem::temp_directory_path() /
             ("amk-test-" + std::to_string(::getpid()) + "-" + name);
  static std::string fresh;  // wipe once per test, so helpers may call this again
  if (fresh != name) {
    std::filesystem::remove_all(dir);
    fresh = name;
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
