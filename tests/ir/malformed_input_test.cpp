// Proves malformed input never crashes and is explained: every file in tests/ir/malformed is
// unreadable with exactly the expected error codes and JSON pointers (and line:col where given).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "ir/json_io.h"
#include "support.h"

namespace amk::ir {
namespace {

namespace fs = std::filesystem;

struct Expected {
  std::string code;
  std::optional<std::string> pointer;
  int line = 0, column = 0;
};

std::vector<Expected> read_expected(const fs::path& p) {
  std::vector<Expected> out;
  std::istringstream in(test::slurp(p));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream ls(line);
    Expected e;
    std::string ptr, at;
    ls >> e.code >> ptr >> at;
    if (!ptr.empty() && ptr[0] == '@') std::swap(ptr, at);
    if (ptr == "\"\"") {
      e.pointer = "";
    } else if (!ptr.empty()) {
      e.pointer = ptr;
    }
    if (!at.empty()) std::sscanf(at.c_str(), "@%d:%d", &e.line, &e.column);
    out.push_back(e);
  }
  return out;
}

std::vector<fs::path> corpus() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(test::source_dir() / "tests/ir/malformed"))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(MalformedInput, CorpusHasAtLeastThirtyCases) {
  EXPECT_GE(corpus().size(), 30u);
}

TEST(MalformedInput, EveryCaseIsUnreadableWithTheExpectedPointers) {
  for (const fs::path& f : corpus()) {
    SCOPED_TRACE(f.filename().string());
    auto expected = read_expected(fs::path(f).replace_extension(".expected"));
    auto r = load_program(f.string());
    EXPECT_FALSE(r.ok());
    std::vector<Diagnostic> errors;
    for (const auto& d : r.diagnostics)
      if (d.severity == Severity::Error) errors.push_back(d);
    ASSERT_EQ(errors.size(), expected.size()) << (errors.empty() ? "" : errors[0].message);
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(errors[i].code, expected[i].code) << errors[i].message;
      if (expected[i].pointer) {
        EXPECT_EQ(errors[i].pointer, *expected[i].pointer) << errors[i].message;
      }
      if (expected[i].line) {
        EXPECT_EQ(errors[i].line, expected[i].line);
        EXPECT_EQ(errors[i].column, expected[i].column);
      }
      EXPECT_GT(errors[i].line, 0) << "every load diagnostic carries a position";
      EXPECT_FALSE(errors[i].message.empty());
    }
  }
}

TEST(MalformedInput, TruncationAtEveryByteNeverCrashes) {
  std::string text = test::slurp(test::conformance_dir() / "programs/toy_1L_pages_ok.json");
  for (size_t n = 0; n < text.size(); n += 7) {
    auto r = parse_program(std::string_view(text).substr(0, n));
    ASSERT_FALSE(r.ok()) << n;
    ASSERT_FALSE(r.diagnostics.empty());
  }
}

TEST(MalformedInput, ByteFlipsNeverCrash) {
  std::string text = test::slurp(test::conformance_dir() / "programs/toy_1L_splitkv_pos63.json");
  uint64_t s = 12345;
  for (int i = 0; i < 3000; ++i) {
    std::string t = text;
    for (int k = 0; k < 3; ++k) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      t[(s >> 20) % t.size()] = static_cast<char>(s >> 56);
    }
    auto r = parse_program(t);
    if (!r.ok()) {
      ASSERT_TRUE(has_errors(r.diagnostics));
    }
  }
}

TEST(MalformedInput, ManyErrorsStopAtACapWithAFinalNote) {
  std::string text = R"({"buffers": [)";
  for (int i = 0; i < 300; ++i)
    text += std::string(i ? "," : "") +
            R"({"id": 0, "name": 1, "kind": 2, "dtype": 3, "shape": 4, "space": 5})";
  text += R"(], "counters": [], "tasks": []})";
  auto r = parse_program(text);
  ASSERT_FALSE(r.ok());
  EXPECT_LE(r.diagnostics.size(), 102u);
  EXPECT_EQ(r.diagnostics.back().code, "json.too-many-errors");
}

TEST(MalformedInput, ByteOrderMarkIsAcceptedWithAWarning) {
  auto r = parse_program("\xEF\xBB\xBF{\"buffers\": [], \"counters\": [], \"tasks\": []}");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].code, "json.bom");
}

TEST(MalformedInput, DuplicateKeysWarnAndTheLastWins) {
  auto r = parse_program(
      R"({"buffers": [], "counters": [{"id": 0, "note": "a", "note": "b"}], "tasks": []})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value->counters[0].note, "b");
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].code, "json.duplicate-key");
  EXPECT_EQ(r.diagnostics[0].pointer, "/counters/0/note");
}

TEST(MalformedInput, MissingFileIsAnIoDiagnostic) {
  auto r = load_program("/nonexistent/amk/program.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics[0].code, "io.read");
  EXPECT_NE(r.diagnostics[0].message.find("/nonexistent/amk/program.json"), std::string::npos);
}

}  // namespace
}  // namespace amk::ir
