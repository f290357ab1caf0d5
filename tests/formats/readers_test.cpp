// The MPK and PTO readers on the runtimes' own example files and on malformed variants of them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "formats/formats.h"
#include "ir/json_cursor.h"
#include "ir/json_io.h"
#include "support.h"
#include "validate/validate.h"

namespace amk {
namespace {

std::filesystem::path data() {
  return test::source_dir() / "tests" / "formats" / "data";
}

std::string mpk_example() {
  static const std::string text = test::slurp(data() / "mpk" / "task_graph.json");
  return text;
}
std::string pto_example() {
  static const std::string text = test::slurp(data() / "pto" / "deps.json");
  return text;
}
std::string scope_stats_example() {
  static const std::string text = test::slurp(data() / "pto" / "scope_stats" / "scope_stats.jsonl");
  return text;
}

ir::Result<ir::Program> mpk(std::string_view text, int64_t sms = 108) {
  formats::ReadOptions o;
  o.origin = "task_graph.json";
  o.num_sms = sms;
  return formats::read_mpk(text, o);
}

ir::Result<ir::Program> pto(std::string_view deps, std::optional<std::string> stats) {
  formats::ReadOptions o;
  o.origin = "deps.json";
  o.scope_stats = std::move(stats);
  o.scope_stats_origin = "scope_stats.jsonl";
  return formats::read_pto(deps, o);
}

// `text` with the first occurrence of `from` (after `after`) replaced.
std::string edit(std::string text, std::string_view from, std::string_view to,
                 std::string_view after = {}) {
  const size_t start = after.empty() ? 0 : text.find(after);
  const size_t at = text.find(from, start);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// The one error of a failed read.
ir::Diagnostic first_error(const ir::Result<ir::Program>& r) {
  EXPECT_FALSE(r.ok());
  for (const ir::Diagnostic& d : r.diagnostics)
    if (d.severity == ir::Severity::Error) return d;
  return {};
}

TEST(MpkReader, TheRuntimesOwnExampleIsAValidProgramWithItsPlacement) {
  ir::Program p = test::must(mpk(mpk_example()));
  ASSERT_EQ(p.tasks.size(), 468u);
  ASSERT_TRUE(p.runtime);
  const ir::Runtime& rt = *p.runtime;
  EXPECT_EQ(rt.kind, ir::RuntimeKind::Mpk);
  // An A100 (108 SMs): MPK's 96 workers and 4 x 12 scheduler warps.
  EXPECT_EQ(rt.given(ir::Cap::workers), 96);
  EXPECT_EQ(rt.given(ir::Cap::schedulers), 48);
  // One counter per event, and the tasks' foreign kinds kept.
  EXPECT_EQ(p.counters.size(), 165u);  // 164 events + the tasks that trigger none
  EXPECT_EQ(rt.tasks[3].kind, 119);
  EXPECT_EQ(p.tasks[3].label, "RMS_NORM v0");
  // Task 3 waits on event 2 (one trigger), task 11 on event 3 (eight: num_triggers x 1).
  ASSERT_EQ(p.tasks[3].waits.size(), 1u);
  EXPECT_EQ(p.tasks[3].waits[0].counter, 2);
  EXPECT_EQ(p.tasks[3].waits[0].threshold, 1);
  EXPECT_EQ(p.tasks[11].waits[0].counter, 3);
  EXPECT_EQ(p.tasks[11].waits[0].threshold, 8);
  // Scheduler 0 (workers 0, 1) queued BEGIN_TASK_GRAPH on worker 0 and dealt on from worker 1;
  // scheduler 1 deals its columns 2, 3 to workers 2, 3.
  EXPECT_EQ(p.tasks[1].sm, 0);
  EXPECT_EQ(p.tasks[2].sm, 1);
  EXPECT_EQ(p.tasks[3].sm, 0);
  EXPECT_EQ(p.tasks[4].sm, 2);
  EXPECT_EQ(p.tasks[5].sm, 3);
  EXPECT_EQ(p.tasks[2 + 96].sm, 1);
  // TERMINATE is the graph's last task: it waits for END_OF_TASK_GRAPH.
  EXPECT_EQ(p.tasks[0].waits[0].counter, 163);
  validate::Result v = validate::validate(p);
  EXPECT_TRUE(v.ok) << v.report();
}

TEST(MpkReader, ANameWrittenWithEscapesIsTheSameTensor) {
  // Every "rmsnorm_out" spelled with JSON escapes: the same buffers, the same program.
  std::string escaped = mpk_example();
  for (size_t at = 0; (at = escaped.find("\"rmsnorm_out\"", at)) != std::string::npos;)
    escaped.replace(at, 13, "\"rms\\u006eorm\\u005fout\"");
  ASSERT_NE(escaped, mpk_example());
  EXPECT_TRUE(test::must(mpk(escaped)) == test::must(mpk(mpk_example())));
}

TEST(MpkReader, TensorRegionsBecomeBuffersWhoseRacesTheProofChecks) {
  ir::Program p = test::must(mpk(mpk_example()));
  // rmsnorm_out is written three times (input norm, post-attention norm, final norm): three
  // buffers on one page, whose reuse the page rule proves ordered.
  std::vector<int64_t> norm;
  for (size_t b = 0; b < p.buffers.size(); ++b)
    if (p.buffers[b].name.starts_with("rmsnorm_out")) norm.push_back(static_cast<int64_t>(b));
  ASSERT_EQ(norm.size(), 3u);
  ASSERT_TRUE(p.pages);
  int64_t page = -1;
  for (const auto& [b, pg] : p.pages->buffer_to_page)
    if (b == norm[0]) page = pg;
  ASSERT_GE(page, 0);
  for (const auto& [b, pg] : p.pages->buffer_to_page) {
    if (b == norm[1] || b == norm[2]) {
      EXPECT_EQ(pg, page);
    }
  }
  // A norm task writes one row of it: a tile.
  EXPECT_EQ(p.tasks[4].int_param("m_off"), 1);
  EXPECT_EQ(p.tasks[4].int_param("M_tile"), 1);
  // Moving the second input norm onto the first's row makes two writers of one row that nothing
  // orders (the second overwrites the first: a clobbered page) and leaves row 1 unwritten.
  nlohmann::ordered_json g = nlohmann::ordered_json::parse(mpk_example());
  g["all_tasks"][4]["outputs"][0]["offset"] = 0;
  validate::Result v = validate::validate(test::must(mpk(g.dump(2))));
  EXPECT_FALSE(v.ok);
  std::vector<std::string> codes;
  for (const ir::Diagnostic& d : v.errors) codes.push_back(d.code);
  EXPECT_EQ(codes, (std::vector<std::string>{"tile.coverage", "page.clobber"})) << v.report();
  EXPECT_NE(v.errors[1].message.find("rmsnorm_out"), std::string::npos);
}

TEST(MpkReader, MalformedFilesGetTheFilePointerAndLineColumn) {
  {  // a syntax error
    ir::Diagnostic d =
        first_error(mpk(edit(mpk_example(), "\"last_task_id\": 75,", "\"last_task_id\": 75")));
    EXPECT_EQ(d.code, "json.syntax");
    EXPECT_EQ(d.file, "task_graph.json");
    EXPECT_GT(d.line, 1);
  }
  {  // a wrong type: where and what
    ir::Diagnostic d =
        first_error(mpk(edit(mpk_example(), "\"task_type\": 119", "\"task_type\": \"rms\"")));
    EXPECT_EQ(d.code, "json.type");
    EXPECT_EQ(d.pointer, "/all_tasks/3/task_type");
    const auto [line, col] =
        ir::line_column(mpk_example(), mpk_example().find("\"task_type\": 119"));
    EXPECT_EQ(d.line, line);
    EXPECT_EQ(d.column, col + 13);
  }
  {  // a missing field
    ir::Diagnostic d = first_error(
        mpk(edit(mpk_example(),
                 "\"num_triggers\": 1\n    },\n    {\n      \"event_type\": 900,\n      "
                 "\"first_task_id\": 3,\n      \"last_task_id\": 11,\n      \"num_triggers\": 1",
                 "\"num_triggers\": 1\n    },\n    {\n      \"event_type\": 900,\n      "
                 "\"first_task_id\": 3,\n      \"last_task_id\": 11")));
    EXPECT_EQ(d.code, "json.missing-field");
    EXPECT_EQ(d.pointer, "/all_events/2");
  }
  {  // an event that does not exist
    ir::Diagnostic d =
        first_error(mpk(edit(mpk_example(), "\"trigger_event\": 3,", "\"trigger_event\": 999,")));
    EXPECT_EQ(d.code, "mpk.event-ref");
    EXPECT_EQ(d.pointer, "/all_tasks/3/trigger_event");
    EXPECT_GT(d.line, 1);
  }
  {  // the runtime's fixed layout
    ir::Diagnostic d =
        first_error(mpk(edit(mpk_example(), "\"task_type\": 10,", "\"task_type\": 119,")));
    EXPECT_EQ(d.code, "mpk.layout");
  }
  {  // an event past the tasks
    ir::Diagnostic d =
        first_error(mpk(edit(mpk_example(), "\"last_task_id\": 468", "\"last_task_id\": 469")));
    EXPECT_EQ(d.code, "mpk.event-range");
    EXPECT_EQ(d.pointer, "/all_events/1");
  }
  {  // not an object at all, and an empty file
    EXPECT_EQ(first_error(mpk("[1, 2]")).code, "json.type");
    EXPECT_EQ(first_error(mpk("")).code, "json.syntax");
    EXPECT_EQ(first_error(mpk("{\"all_tasks\": []}")).code, "json.missing-field");
  }
}

// A region is formed in 64-bit arithmetic: an access whose far end does not fit is refused at
// its pointer, never proved with a wrapped offset; a list value out of range is the one error
// shown (not a count mismatch that follows from it).
TEST(MpkReader, ARegionPast64BitsIsRefusedAtItsTensor) {
  nlohmann::ordered_json g = nlohmann::ordered_json::parse(mpk_example());
  nlohmann::ordered_json& x = g["all_tasks"][3]["inputs"][0];
  x["dims"] = {2147483647, 2147483647, 4};  // about 2^63 elements, less 2^34
  x["strides"] = {2147483647, 2147483647, 1};
  x["offset"] = int64_t{1} << 62;  // bytes: 2^61 bf16 elements more
  ir::Diagnostic d = first_error(mpk(g.dump(2)));
  EXPECT_EQ(d.code, "mpk.tensor");
  EXPECT_EQ(d.pointer, "/all_tasks/3/inputs/0");
  EXPECT_NE(d.message.find("2^63"), std::string::npos) << d.message;
  x["offset"] = 0;  // the same extents from the start of the tensor fit
  EXPECT_TRUE(mpk(g.dump(2)).ok());
  x["dims"] = {-1, 1024};
  const ir::Result<ir::Program> r = mpk(g.dump(2));
  ASSERT_FALSE(r.ok());
  for (const ir::Diagnostic& e : r.diagnostics) EXPECT_NE(e.code, "mpk.tensor") << e.message;
  EXPECT_EQ(first_error(r).pointer, "/all_tasks/3/inputs/0/dims/0");
}

TEST(PtoReader, ARegionPast64BitsIsRefusedAtItsArgument) {
  for (const char* start : {"9223372036854775800", "18446744073709551615"}) {
    ir::Diagnostic d = first_error(pto(edit(pto_example(), "\"start_offset\":\"0\"",
                                            std::string("\"start_offset\":\"") + start + "\""),
                                       {}));
    EXPECT_EQ(d.code, "pto.arg-shape");
    EXPECT_EQ(d.pointer, "/tasks/0/args/0");
    EXPECT_NE(d.message.find(start), std::string::npos) << d.message;
  }
}

TEST(PtoReader, TheRuntimesOwnExampleIsAValidProgramWithItsScopes) {
  ir::Program p = test::must(pto(pto_example(), scope_stats_example()));
  ASSERT_EQ(p.tasks.size(), 5u);
  const ir::Runtime& rt = *p.runtime;
  EXPECT_EQ(rt.kind, ir::RuntimeKind::Pto);
  // The header's capacities per ring.
  EXPECT_EQ(rt.given(ir::Cap::task_window, 2), 16384);
  EXPECT_EQ(rt.given(ir::Cap::tensormap), 65536);
  // The root scope on ring 0 and the example's scope on ring 1, holding its four tasks.
  ASSERT_EQ(rt.scopes.size(), 2u);
  EXPECT_EQ(rt.scopes[1].site, "example_orchestration.cpp:77");
  EXPECT_EQ(rt.scopes[1].parent, 0);
  EXPECT_EQ(rt.scopes[1].end - rt.scopes[1].begin, 4);
  EXPECT_EQ(rt.tasks[0].scope, 0);
  EXPECT_EQ(rt.tasks[4].scope, 1);
  // 64-bit ids from strings, kernel ids and each runtime-allocated output's bytes.
  EXPECT_EQ(rt.tasks[1].id, 4294967296u);
  EXPECT_EQ(rt.tasks[3].kernels[1], 2);
  EXPECT_EQ(rt.tasks[0].heap, 65536);
  EXPECT_EQ(rt.tasks[4].heap, 0);  // OUTPUT_EXISTING: no heap
  EXPECT_EQ(p.tasks[1].label, "r1.0 aiv:1");
  // Edges: task r1.2 waits for both r1.0 and r1.1 (one counter, threshold 2); r1.3 for r0.0
  // and r1.2.
  ASSERT_EQ(p.tasks[3].waits.size(), 1u);
  EXPECT_EQ(p.tasks[3].waits[0].threshold, 2);
  EXPECT_EQ(p.tasks[4].waits.size(), 2u);
  validate::Result v = validate::validate(p);
  EXPECT_TRUE(v.ok) << v.report();
}

TEST(PtoReader, WithoutScopeStatsEachRingIsOneDerivedScope) {
  ir::Program p = test::must(pto(pto_example(), std::nullopt));
  const ir::Runtime& rt = *p.runtime;
  ASSERT_EQ(rt.scopes.size(), 2u);
  EXPECT_EQ(rt.scopes[1].site, "(derived)");
  EXPECT_EQ(rt.scopes[1].end, 4);
  EXPECT_TRUE(rt.caps[static_cast<size_t>(ir::Cap::task_window)].empty());  // defaults apply
  EXPECT_EQ(rt.value(ir::Cap::task_window, 1), 16384);
}

TEST(PtoReader, MalformedFilesGetTheFilePointerAndLineColumn) {
  {  // a 64-bit value that is not a string
    ir::Diagnostic d =
        first_error(pto(edit(pto_example(), "\"task_id\":\"0\"", "\"task_id\":0"), {}));
    EXPECT_EQ(d.code, "json.type");
    EXPECT_EQ(d.pointer, "/tasks/0/task_id");
    EXPECT_EQ(d.line, 1);
    EXPECT_EQ(d.column, static_cast<int>(pto_example().find("\"0\"") + 1));
  }
  {  // an edge to a task the dump does not list
    ir::Diagnostic d = first_error(
        pto(edit(pto_example(), "\"succ\":\"4294967297\"", "\"succ\":\"4294967300\""), {}));
    EXPECT_EQ(d.code, "pto.edge-ref");
    EXPECT_EQ(d.pointer, "/edges/1/succ");
  }
  {  // an edge against submission order
    ir::Diagnostic d =
        first_error(pto(edit(pto_example(), "{\"pred\":\"0\",\"succ\":\"4294967296\"",
                             "{\"pred\":\"4294967299\",\"succ\":\"4294967296\""),
                        {}));
    EXPECT_EQ(d.code, "pto.edge-order");
    EXPECT_EQ(d.pointer, "/edges/0");
  }
  {  // a duplicate task
    ir::Diagnostic d = first_error(
        pto(edit(pto_example(), "\"task_id\":\"4294967297\"", "\"task_id\":\"4294967296\""), {}));
    EXPECT_EQ(d.code, "pto.task-id");
  }
  {  // a broken scope_stats line: the jsonl line, in that file
    ir::Diagnostic d =
        first_error(pto(pto_example(), edit(scope_stats_example(), "\"depth\": 1, \"ring\": 1,",
                                            "\"depth\": \"one\", \"ring\": 1,")));
    EXPECT_EQ(d.file, "scope_stats.jsonl");
    EXPECT_EQ(d.line, 3);
    EXPECT_EQ(d.pointer, "/depth");
  }
}

TEST(RuntimeRecord, SurvivesTheProgramJsonAndLeavesOrdinaryProgramsAlone) {
  ir::Program p = test::must(pto(pto_example(), scope_stats_example()));
  const std::string text = ir::write_program(p);
  ir::Program q = test::must(ir::parse_program(text));
  EXPECT_TRUE(q.runtime);
  EXPECT_EQ(q, p);
  EXPECT_EQ(ir::write_program(q), text);
  // A "runtime" field that is not amk's record stays an unknown field.
  const std::string lists = "\"buffers\": [], \"counters\": [], \"tasks\": []";
  ir::Program plain =
      test::must(ir::parse_program("{\"ir_version\": \"0.2.0\", " + lists + ", \"runtime\": 3}"));
  EXPECT_FALSE(plain.runtime);
  EXPECT_TRUE(plain.extra.json().contains("runtime"));
  // A malformed record is an error with its pointer.
  auto bad = ir::parse_program("{\"ir_version\": \"0.2.0\", " + lists +
                               ", \"runtime\": {\"kind\": \"pto\", \"heap\": -1}}");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.diagnostics[0].pointer, "/runtime/heap");
}

}  // namespace
}  // namespace amk
