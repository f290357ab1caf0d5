// Shared test helpers: data paths and small file utilities.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "ir/diagnostic.h"
#include "ir/result.h"

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
/// A fresh empty temporary directory unique to the calling test; removed when the test ends
/// unless it failed (kept to look at).
std::filesystem::path temp_dir();
/// Every diagnostic rendered as the CLI prints it (file, line:column, pointer, code, message).
std::string text(const ir::Diagnostics& d);
/// The value of a result that must succeed (throws with the diagnostics otherwise: gtest reports
/// the test as failed with them).
template <class T>
T must(ir::Result<T> r) {
  if (!r) throw std::runtime_error(text(r.diagnostics));
  return std::move(*r.value);
}
/// Success, or a failure that prints the diagnostics: ASSERT_TRUE(test::ok(st)).
inline ::testing::AssertionResult ok(const ir::Status& st) {
  if (st.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << text(st.diagnostics);
}
/// The error messages of a failure, joined by "; ".
inline std::string errors(const ir::Diagnostics& d) {
  return ir::error_messages(d);
}
/// Whether two long texts (programs) are equal; a failure shows the first line that differs
/// (EXPECT_EQ's diff of two megabyte texts takes memory quadratic in their lines).
::testing::AssertionResult same_text(const std::string& a, const std::string& b);
/// Reads a whole file (throws on failure: a broken fixture is a test bug).
std::string slurp(const std::filesystem::path& p);

/// Exit code and captured streams of a finished process.
struct RunResult {
  int rc = -1;
  std::string out, err;
};
/// Runs `amk ARGS...` with stdin from `stdin_path` and captures stdout and stderr.
RunResult run_amk(const std::vector<std::string>& args,
                  const std::string& stdin_path = "/dev/null");

}  // namespace amk::test
