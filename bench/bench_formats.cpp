// Foreign-format benchmarks: import plus full proof of a 100k-task MPK task_graph.json and of a
// 100k-task PTO deps.json (+ scope_stats.jsonl), each written by the exporters from one generated
// program, against the baseline of amk's own reader and proof of that same program. Each
// iteration runs the baseline and the foreign format back to back (wall clock: the readers and
// the proof use several threads), so both see the same moment of a loaded machine; `x_amk` is
// the foreign time over the baseline's. The import and the proof are also reported apart.
// It runs under the allocator settings the `amk` command runs under (app/heap.h).
// bench/formats_whole_process.sh measures the same files as whole `amk validate` processes.
// Measured (2-core VM, 9-10 iterations): MPK 204 ms (import 163) against amk's 113 ms (import
// 79), x_amk 1.80; PTO 197 ms (import 164) against 107 ms, x_amk 1.84. Before the block store,
// the two-thread reference checks and the producer groups in an IdIndex (same session): x_amk 2.11
// and 2.07 (MPK 272 ms, PTO 270 ms).
#include <benchmark/benchmark.h>

#include <chrono>
#include <functional>
#include <string>

#include "fixtures/gen.h"
#include "formats/formats.h"
#include "ir/json_io.h"
#include "validate/validate.h"

namespace {

constexpr uint64_t kTasks = 100000;

struct Files {
  std::string amk, mpk;
  amk::formats::PtoFiles pto;
};

// The program `amk gen --tasks 100000` writes, and its MPK and PTO exports (as `amk export`).
const Files& files() {
  static const Files f = [] {
    amk::fixtures::GenOptions o;
    o.tasks = kTasks;
    const amk::ir::Program p = amk::fixtures::generate(o).program;
    Files out;
    out.amk = amk::ir::write_program(p);
    out.mpk = *amk::formats::export_mpk(p);
    out.pto = *amk::formats::export_pto(p, amk::formats::PtoExport{});
    return out;
  }();
  return f;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Seconds spent importing and proving one format, summed over the iterations.
struct Timing {
  double import_s = 0, proof_s = 0;
  size_t tasks = 0;
  bool read = true;
};

// Imports with `read`, then proves the program with a fresh Validator (as `amk validate` does);
// the program's destruction is not timed (the command keeps it to the end).
void import_and_prove(Timing& t, const std::function<amk::ir::Result<amk::ir::Program>()>& read) {
  const double t0 = now_s();
  amk::ir::Result<amk::ir::Program> r = read();
  const double t1 = now_s();
  t.import_s += t1 - t0;
  if (!r) {
    t.read = false;
    return;
  }
  amk::validate::Validator v;
  benchmark::DoNotOptimize(v.validate(*r));
  t.proof_s += now_s() - t1;
  t.tasks = r->tasks.size();
}

amk::ir::Result<amk::ir::Program> read_amk() {
  return amk::ir::parse_program(files().amk);
}
amk::ir::Result<amk::ir::Program> read_mpk() {
  amk::formats::ReadOptions o;
  o.origin = "task_graph.json";
  return amk::formats::read_mpk(files().mpk, o);
}
amk::ir::Result<amk::ir::Program> read_pto() {
  amk::formats::ReadOptions o;
  o.origin = "deps.json";
  o.scope_stats = files().pto.scope_stats;
  o.scope_stats_origin = "scope_stats/scope_stats.jsonl";
  return amk::formats::read_pto(files().pto.deps, o);
}

// One foreign format against the baseline, paired iteration by iteration.
void paired(benchmark::State& st, const std::string& foreign, size_t bytes,
            amk::ir::Result<amk::ir::Program> (*read)()) {
  Timing base, mine;
  for (auto _ : st) {
    import_and_prove(base, read_amk);
    import_and_prove(mine, read);
  }
  if (!base.read || !mine.read) {
    st.SkipWithError("a file did not import");
    return;
  }
  const auto n = static_cast<double>(st.iterations());
  st.counters["amk_ms"] = (base.import_s + base.proof_s) / n * 1e3;
  st.counters["amk_import_ms"] = base.import_s / n * 1e3;
  st.counters[foreign + "_ms"] = (mine.import_s + mine.proof_s) / n * 1e3;
  st.counters[foreign + "_import_ms"] = mine.import_s / n * 1e3;
  st.counters["x_amk"] = (mine.import_s + mine.proof_s) / (base.import_s + base.proof_s);
  st.counters["tasks"] = static_cast<double>(mine.tasks);
  st.counters["file_MB"] = static_cast<double>(bytes) / 1e6;
}

void BM_ImportProve_Mpk(benchmark::State& st) {
  paired(st, "mpk", files().mpk.size(), read_mpk);
}
void BM_ImportProve_Pto(benchmark::State& st) {
  paired(st, "pto", files().pto.deps.size(), read_pto);
}

BENCHMARK(BM_ImportProve_Mpk)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3);
BENCHMARK(BM_ImportProve_Pto)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3);

}  // namespace
