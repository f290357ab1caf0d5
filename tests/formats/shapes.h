// Test shapes for the foreign formats' tests: programs whose PTO or MPK export has the structure
// of the hangs users filed.
#pragma once

#include <fmt/format.h>

#include "formats/formats.h"
#include "ir/program.h"
#include "support.h"

namespace amk::test {

// A chain of n tasks, each reading its predecessor's activation of `bytes`.
inline ir::Program chain(int n, int64_t bytes = 64) {
  ir::Program p;
  int64_t prev = p.add_buffer("x", ir::BufferKind::IO_INPUT, ir::DType::U8, {bytes});
  for (int i = 0; i < n; ++i) {
    const int64_t out =
        p.add_buffer(fmt::format("a{}", i), ir::BufferKind::ACTIVATION, ir::DType::U8, {bytes});
    ir::Task t;
    t.op = ir::Op::COPY;
    t.label = fmt::format("copy{}", i);
    t.inputs = {prev};
    t.outputs = {out};
    t.out_counter = p.add_counter();
    if (i > 0) t.waits.push_back({i - 1, 1, {}});
    p.add_task(std::move(t));
    prev = out;
  }
  return p;
}

// `writers` tasks each write their own buffer; `readers` tasks each wait for all of them.
inline ir::Program fan(int writers, int readers) {
  ir::Program p;
  const int64_t x = p.add_buffer("x", ir::BufferKind::IO_INPUT, ir::DType::U8, {64});
  const int64_t c = p.add_counter("writers");
  std::vector<int64_t> outs;
  for (int i = 0; i < writers; ++i) {
    outs.push_back(
        p.add_buffer(fmt::format("w{}", i), ir::BufferKind::ACTIVATION, ir::DType::U8, {64}));
    ir::Task t;
    t.op = ir::Op::COPY;
    t.inputs = {x};
    t.outputs = {outs.back()};
    t.out_counter = c;
    p.add_task(std::move(t));
  }
  for (int r = 0; r < readers; ++r) {
    ir::Task t;
    t.op = ir::Op::NOP;
    t.out_counter = p.add_counter();
    t.waits.push_back({c, writers, {}});
    p.add_task(std::move(t));
  }
  return p;
}

/// simpler #2136's fanned-out shape as a PTO graph's record gives it: one AIV producer of
/// `blocks` blocks feeding `consumers` AIV tasks of `each` blocks, flagged early_dispatch when
/// `early`.
inline ir::Program fanned_out(int consumers, int32_t blocks, int32_t each, bool early = true) {
  ir::Program p = fan(1, consumers);
  ir::Runtime& rt = p.runtime.emplace();
  rt.kind = ir::RuntimeKind::Pto;
  rt.tasks.resize(p.tasks.size());
  for (size_t t = 0; t < p.tasks.size(); ++t) {
    ir::ForeignTask& f = rt.tasks[t];
    f.id = t;
    f.kind = static_cast<int32_t>(ir::PtoShape::Aiv);
    f.kernels = {-1, t == 0 ? 1 : 2, -1};
    f.variant = t == 0 ? blocks : each;
    f.early = t > 0 && early;
  }
  return p;
}

/// `p` written as PTO's files under `o` and read back (with `launch` overrides).
inline ir::Program via_pto(const ir::Program& p, const formats::PtoExport& o,
                           const std::vector<std::string>& launch = {}) {
  formats::PtoFiles f = must(formats::export_pto(p, o));
  formats::ReadOptions ro;
  ro.origin = "deps.json";
  ro.scope_stats = f.scope_stats;
  for (const std::string& kv : launch) EXPECT_TRUE(ok(ir::apply_launch(ro.launch, kv)));
  return must(formats::read_pto(f.deps, ro));
}

/// Scopes of `per_scope` tasks at `depth` with capacities in scope_stats' header.
inline formats::PtoExport scopes(int depth, int64_t per_scope,
                                 const std::vector<std::string>& launch = {},
                                 int64_t outer_tasks = 0) {
  formats::PtoExport o;
  o.depth = depth;
  o.scope_tasks = per_scope;
  o.outer_tasks = outer_tasks;
  for (const std::string& kv : launch) EXPECT_TRUE(ok(ir::apply_launch(o.launch, kv)));
  return o;
}

/// The MPK example (tests/formats/data) read with `launch` overrides.
inline ir::Program mpk_example(const std::vector<std::string>& launch) {
  formats::ReadOptions o;
  o.origin = "task_graph.json";
  for (const std::string& kv : launch) EXPECT_TRUE(ok(ir::apply_launch(o.launch, kv)));
  return must(formats::read_mpk(
      slurp(source_dir() / "tests" / "formats" / "data" / "mpk" / "task_graph.json"), o));
}

}  // namespace amk::test
