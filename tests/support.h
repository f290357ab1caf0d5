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
/// The AMK conformance corpus the repository carries (tests/conformance: programs, numerics).
inline std::filesystem::path conformance_dir() {
  return source_dir() / "tests" / "conformance";
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

