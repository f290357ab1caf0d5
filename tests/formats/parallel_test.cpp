// The readers read a big graph's arrays in pieces on several threads (ir/json_read_parallel.h):
// the program and the diagnostics must be exactly those of the read one element after the other,
// which a warning before the arrays forces (a piece is tried only while nothing is reported).
#include <gtest/gtest.h>

#include <string>

#include "fixtures/gen.h"
#include "formats/formats.h"
#include "support.h"

namespace amk {
namespace {

// A program whose MPK and PTO exports have arrays well over the size read in pieces (4 MiB).
const ir::Program& big_program() {
  static const ir::Program p = [] {
    fixtures::GenOptions o;
    o.tasks = 30000;
    return fixtures::generate(o).program;
  }();
  return p;
}

ir::Result<ir::Program> read(bool mpk, std::string_view text) {
  formats::ReadOptions o;
  o.origin = mpk ? "task_graph.json" : "deps.json";
  return mpk ? formats::read_mpk(text, o) : formats::read_pto(text, o);
}

// `text` with an unknown first member, which each reader warns about.
std::string with_unknown_member(const std::string& text) {
  return "{\"zz_unknown\": 0, " + text.substr(text.find('{') + 1);
}

TEST(ForeignParallelRead, BigGraphsReadInPiecesAreTheSequentialRead) {
  const std::string mpk = test::must(formats::export_mpk(big_program()));
  const std::string pto = test::must(formats::export_pto(big_program(), {})).deps;
  for (const auto& [is_mpk, text] : {std::pair{true, mpk}, std::pair{false, pto}}) {
    SCOPED_TRACE(is_mpk ? "mpk" : "pto");
    ASSERT_GT(text.size(), 16u << 20);
    const ir::Program pieces = test::must(read(is_mpk, text));
    ir::Result<ir::Program> sequential = read(is_mpk, with_unknown_member(text));
    ASSERT_TRUE(sequential.ok());
    ASSERT_EQ(sequential.diagnostics.size(), 1u);
    EXPECT_TRUE(sequential.diagnostics[0].code.ends_with(".unknown-field"));
    EXPECT_TRUE(*sequential == pieces);
  }
}

TEST(ForeignParallelRead, AnErrorDeepInABigDumpIsReportedAsTheSequentialReadReportsIt) {
  // PTO's dump is one line: task 20000's block_num becomes a string, edge 40000's arg 1.5.
  std::string text = test::must(formats::export_pto(big_program(), {})).deps;
  const size_t task = text.find("{\"task_id\":\"" + std::to_string((uint64_t{1} << 32) + 20000));
  ASSERT_NE(task, std::string::npos);
  const size_t block = text.find("\"block_num\":", task) + 12;
  text.insert(block, "\"");
  text.insert(text.find(',', block), "\"");
  size_t edge = text.find("\"edges\":[");
  for (int k = 0; k <= 40000; ++k) edge = text.find("{\"pred\"", edge + 1);  // edge 40000
  const size_t arg = text.find("\"arg\":", edge) + 6;
  text.replace(arg, text.find(',', arg) - arg, "1.5");
  ir::Result<ir::Program> r = read(false, text);
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.diagnostics.size(), 2u) << test::text(r.diagnostics);
  EXPECT_EQ(r.diagnostics[0].code, "json.type");
  EXPECT_EQ(r.diagnostics[0].pointer, "/tasks/20000/block_num");
  EXPECT_EQ(r.diagnostics[0].line, 1);
  EXPECT_EQ(r.diagnostics[0].column, static_cast<int>(block) + 1);
  EXPECT_EQ(r.diagnostics[1].code, "json.type");
  EXPECT_EQ(r.diagnostics[1].pointer, "/edges/40000/arg");
  EXPECT_EQ(r.diagnostics[1].column, static_cast<int>(arg) + 1);
}

TEST(ForeignParallelCheck, ProblemsInABigDumpComeInTheFilesOrder) {
  // The references of a big dump are checked on two threads (tensors beside task ids, then
  // arguments beside edges); problems found there must still come as one pass reports them:
  // tensors, then each task's id and its arguments, then edges. Tensor 5 gets an unknown dtype,
  // task 100's first argument an unknown type, and task 25000 the id of task 24999.
  std::string text = test::must(formats::export_pto(big_program(), {})).deps;
  size_t tensor = text.find("\"tensors\":[");
  for (int k = 0; k <= 5; ++k) tensor = text.find("{\"tensor_id\"", tensor + 1);
  const size_t dtype = text.find("\"dtype\":\"", tensor) + 9;
  text.insert(text.find('"', dtype), "99");
  auto task_at = [&](uint64_t local) {
    return text.find("{\"task_id\":\"" + std::to_string((uint64_t{1} << 32) + local) + "\"");
  };
  const size_t type = text.find("\"type\":\"", task_at(100)) + 8;
  text.insert(text.find('"', type), "X");
  const size_t id = task_at(25000) + 12;
  const std::string before = std::to_string((uint64_t{1} << 32) + 24999);
  text.replace(id, before.size(), before);
  ir::Result<ir::Program> r = read(false, text);
  ASSERT_FALSE(r.ok());
  ASSERT_GE(r.diagnostics.size(), 3u) << test::text(r.diagnostics);
  EXPECT_EQ(r.diagnostics[0].code, "pto.dtype");
  EXPECT_EQ(r.diagnostics[0].pointer, "/tensors/5/dtype");
  EXPECT_EQ(r.diagnostics[1].code, "pto.arg-type");
  EXPECT_EQ(r.diagnostics[1].pointer, "/tasks/100/args/0");
  EXPECT_EQ(r.diagnostics[2].code, "pto.task-id");
  EXPECT_EQ(r.diagnostics[2].pointer, "/tasks/25000/task_id");
  int64_t last_edge = -1;  // then the edges that named task 25000, in their order
  for (size_t k = 3; k < r.diagnostics.size(); ++k) {
    const std::string& ptr = r.diagnostics[k].pointer;
    ASSERT_TRUE(ptr.starts_with("/edges/")) << ptr;
    const int64_t edge = std::stoll(ptr.substr(7));
    EXPECT_GT(edge, last_edge);
    last_edge = edge;
  }
}

}  // namespace
}  // namespace amk
