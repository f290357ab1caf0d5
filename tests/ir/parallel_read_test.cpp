// Proves the fast load of big programs: the tasks, buffers and counters arrays read by several
// threads (cut at guessed element boundaries) and a mapped file released behind the reader give
// exactly the sequential read's program, and exactly its diagnostics (pointer, line:column) when
// something is wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "fixtures/gen.h"
#include "ir/json_io.h"
#include "ir/json_lexer.h"
#include "support.h"

namespace amk::ir {
using namespace amk::fixtures;  // the seeded programs these tests run on
namespace {

// A canonical program whose tasks array is well over the size read in pieces (4 MiB).
const std::string& big_text() {
  static const std::string text = [] {
    GenOptions o;
    o.shape = GenShape::Mesh;
    o.tasks = 40000;
    return write_program(generate(o).program);
  }();
  return text;
}

// The same program with long buffer names and counter notes: its buffers and counters arrays are
// big enough to be read in pieces too.
const std::string& big_records_text() {
  static const std::string text = [] {
    GenOptions o;
    o.shape = GenShape::Mesh;
    o.tasks = 40000;
    Program p = generate(o).program;
    for (Buffer& b : p.buffers) b.name += std::string(200, 'b');
    for (Counter& c : p.counters) c.note += std::string(200, 'c');
    return write_program(p);
  }();
  return text;
}

// Parses canonical `text` into a program that writes `text` back byte for byte (every record,
// in order, every field), and loads the same program from a file named `name` (mapped, and
// released behind the reader); returns it.
Program reads_back_exactly(const std::string& text, const char* name) {
  Result<Program> p = parse_program(text);
  EXPECT_TRUE(p.ok()) << test::text(p.diagnostics);
  if (!p.ok()) return {};
  EXPECT_EQ(write_program(*p), text);
  const auto path = test::temp_dir() / name;
  std::ofstream(path, std::ios::binary) << text;
  Result<Program> q = load_program(path.string());
  EXPECT_TRUE(q.ok()) << test::text(q.diagnostics);
  if (q.ok()) {
    EXPECT_TRUE(*q == *p);
  }
  return std::move(*p);
}

// The line (1-based) of byte `off`.
int line_of(const std::string& s, size_t off) {
  return 1 + static_cast<int>(std::count(s.begin(), s.begin() + static_cast<long>(off), '\n'));
}

TEST(ParallelRead, ABigProgramReadInPiecesIsTheSequentialReadByteForByte) {
  const std::string& text = big_text();
  ASSERT_GT(text.size(), 16u << 20);
  const Program p = reads_back_exactly(text, "big.json");
  EXPECT_EQ(p.tasks.size(), 40000u - 1);
}

TEST(ParallelRead, AnErrorDeepInABigProgramIsReportedAsTheSequentialReadReportsIt) {
  std::string text = big_text();
  // Task 30000's out_counter becomes a string.
  const size_t task = text.find("\"id\": 30000,\n      \"op\"");
  ASSERT_NE(task, std::string::npos);
  const size_t field = text.find("\"out_counter\": ", task) + 15;
  text.insert(field, "\"");
  text.insert(text.find(',', field), "\"");
  Result<Program> p = parse_program(text);
  ASSERT_FALSE(p.ok());
  ASSERT_EQ(p.diagnostics.size(), 1u) << test::text(p.diagnostics);
  EXPECT_EQ(p.diagnostics[0].code, "json.type");
  EXPECT_EQ(p.diagnostics[0].pointer, "/tasks/30000/out_counter");
  EXPECT_EQ(p.diagnostics[0].line, line_of(text, field));
}

TEST(ParallelRead, IdsOutOfPlaceAcrossPiecesAreReportedAtTheirPositions) {
  std::string text = big_text();
  const size_t at = text.find("\"id\": 25000,\n      \"op\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 11, "\"id\": 25001");
  Result<Program> p = parse_program(text);
  ASSERT_FALSE(p.ok());
  ASSERT_EQ(p.diagnostics.size(), 1u) << test::text(p.diagnostics);
  EXPECT_EQ(p.diagnostics[0].code, "json.id-position");
  EXPECT_EQ(p.diagnostics[0].pointer, "/tasks/25000/id");
}

TEST(ParallelRead, BigBuffersAndCountersArraysReadInPiecesAreTheSequentialReadByteForByte) {
  const std::string& text = big_records_text();
  const size_t buffers = text.find("\"buffers\": ["), counters = text.find("\"counters\": ["),
               tasks = text.find("\"tasks\": [");
  ASSERT_GT(counters - buffers, 8u << 20);
  ASSERT_GT(tasks - counters, 8u << 20);
  reads_back_exactly(text, "big-records.json");
}

TEST(ParallelRead, ErrorsDeepInBigBuffersAndCountersArraysAreReportedAsTheSequentialReadDoes) {
  std::string text = big_records_text();
  // Buffer 30000's dtype becomes unknown, and counter 20000 claims id 20001.
  const size_t buffer = text.find("\"id\": 30000,\n      \"name\"");
  ASSERT_NE(buffer, std::string::npos);
  const size_t dtype = text.find("\"dtype\": \"", buffer) + 9;
  text.replace(dtype, 5, "\"F99\"");
  const size_t counter = text.find("\"id\": 20000,\n      \"init\"");
  ASSERT_NE(counter, std::string::npos);
  text.replace(counter, 11, "\"id\": 20001");
  Result<Program> p = parse_program(text);
  ASSERT_FALSE(p.ok());
  ASSERT_EQ(p.diagnostics.size(), 2u) << test::text(p.diagnostics);
  EXPECT_EQ(p.diagnostics[0].pointer, "/buffers/30000/dtype");
  EXPECT_EQ(p.diagnostics[0].line, line_of(text, dtype));
  EXPECT_EQ(p.diagnostics[1].code, "json.id-position");
  EXPECT_EQ(p.diagnostics[1].pointer, "/counters/20000/id");
}

TEST(ParallelRead, ATinyFirstTaskBeforeLongOnesReadsRight) {
  // The first task's size sizes the reservation of the whole array: here it is far too small,
  // so the guess is far too big; the result must not care.
  GenOptions o;
  o.shape = GenShape::Mesh;
  o.tasks = 12000;
  Program g = generate(o).program;
  g.tasks[0].label.clear();
  for (size_t i = 1; i < g.tasks.size(); ++i) g.tasks[i].label = std::string(1000, 'x');
  const std::string text = write_program(g);
  ASSERT_GT(text.size(), 8u << 20);
  reads_back_exactly(text, "tiny-first.json");
}

TEST(ParallelRead, ACompactProgramWhoseStringsLookLikeElementBoundariesReadsRight) {
  // Compact JSON: the separator between tasks is ",{", which every label below contains too, so
  // most guessed cuts fall inside strings; only cuts the reading confirms may count.
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(big_text());
  for (auto& t : j["tasks"]) t["label"] = "x\",{\"id\": 7},{" + t["label"].get<std::string>();
  const std::string compact = j.dump();
  ASSERT_GT(compact.size(), 8u << 20);
  Result<Program> p = parse_program(compact);
  ASSERT_TRUE(p.ok()) << test::text(p.diagnostics);
  Result<Program> canonical = parse_program(write_program(*p));
  ASSERT_TRUE(canonical.ok()) << test::text(canonical.diagnostics);
  EXPECT_TRUE(*canonical == *p);
  ASSERT_EQ(p->tasks.size(), 40000u - 1);
  for (size_t i = 0; i < p->tasks.size(); i += 997)
    EXPECT_EQ(p->tasks[i].label, j["tasks"][i]["label"].get<std::string>()) << i;
}

TEST(ParallelFind, FindsTheFirstMatchWhereverBlocksAreCut) {
  // 26 MiB of filler (several 4 MiB blocks) with matches planted at block edges, across them, at
  // the start, in the short last block, and more than one at once: always string_view::find's
  // answer.
  const std::string needle = "}\n  ]";
  std::string text(26u << 20, ' ');
  for (size_t i = 0; i < text.size(); i += 61) text[i] = '}';  // the needle's first byte, often
  const size_t block = 4u << 20;
  const size_t from = 12345;
  auto plant = [&](std::string& t, size_t at) { t.replace(at, needle.size(), needle); };
  auto check = [&](const std::string& t, size_t start) {
    const std::string_view v = t;
    EXPECT_EQ(detail::find_in_parallel(v, needle, start), v.find(needle, start)) << start;
  };
  check(text, from);             // none
  check(text, text.size() - 3);  // too short to search in parallel
  for (size_t at : {from, from + block - 2, from + block - needle.size(), from + block,
                    from + 3 * block + 1, text.size() - needle.size()}) {
    std::string t = text;
    plant(t, at);
    check(t, from);
    check(t, at);
    check(t, at + 1);
    plant(t, at + block + 7 < t.size() - needle.size() ? at + block + 7 : from + 5);
    check(t, from);
    check(t, at + 1);
  }
}

}  // namespace
}  // namespace amk::ir
