// Shared test helpers: data paths and small file utilities.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace amk::test {

/// The repository root.
inline std::filesystem::path source_dir() {
  return AMK_SOURCE_DIR;
}
/// ../shared/conformance, or an empty path when it is not there (tests then skip).
inline std::filesystem::path conformance_dir() {
  std::filesystem::path p = AMK_CONFORMANCE_DIR;
  return std::filesystem::is_directory(p / "programs") ? p : std::filesystem::path();
}
/// The amk executable under test.
inline std::string amk_binary() {
  return AMK_BINARY;
}
/// A fresh empty temporary directory unique to the calling test.
std::filesystem::path temp_dir();
/// Reads a whole file (throws on failure: a broken fixture is a test bug).
std::string slurp(const std::filesystem::path& p);

/// Exit code and captured streams of a finished process.
struct RunResult {
  int rc = -1;
  std::string out, err;
};
/// Runs `amk ARGS...` with stdin from /dev/null and captures stdout and stderr.
RunResult run_amk(const std::vector<std::string>& args);

}  // namespace amk::test

#define AMK_REQUIRE_CONFORMANCE()             \
  if (::amk::test::conformance_dir().empty()) \
  GTEST_SKIP() << "../shared/conformance is absent: conformance tests skipped (CI has it)"
