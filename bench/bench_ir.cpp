// IR benchmarks: load + parse of a 100k-task program against nlohmann::json::parse of the same
// bytes (the baseline, measured in the same run), heap bytes the model keeps per file byte, and
// the canonical write. It runs under the allocator settings the `amk` command runs under
// (app/heap.h; AMK_SMALL_PAGES=1 for glibc's defaults).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/heap.h"
#include "fixtures/gen.h"
#include "ir/fileio.h"
#include "ir/graph.h"
#include "ir/json_io.h"

namespace {

const std::string& program_text(int64_t tasks) {
  static std::map<int64_t, std::string> cache;
  auto& s = cache[tasks];
  if (s.empty()) {
    amk::fixtures::GenOptions o;
    o.tasks = static_cast<uint64_t>(tasks);
    o.pages = true;
    s = amk::ir::write_program(amk::fixtures::generate(o).program);
  }
  return s;
}

// Heap bytes held by a value built by `make` (measured once, outside the timed loop).
template <typename F>
double heap_ratio(const std::string& text, F make) {
  size_t before = amk::app::heap_bytes_in_use();
  auto v = make();
  size_t after = amk::app::heap_bytes_in_use();
  benchmark::DoNotOptimize(v);
  return static_cast<double>(after - before) / static_cast<double>(text.size());
}

void BM_ParseAmk(benchmark::State& st) {
  const std::string& text = program_text(st.range(0));
  for (auto _ : st) {
    auto r = amk::ir::parse_program(text);
    if (!r.ok()) st.SkipWithError("parse failed");
    benchmark::DoNotOptimize(r);
    st.PauseTiming();  // the model's destruction is not part of loading it
    r = {};
    st.ResumeTiming();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * text.size()));
  st.counters["file_MB"] = static_cast<double>(text.size()) / 1e6;
  st.counters["model_heap_x_file"] = heap_ratio(text, [&] { return amk::ir::parse_program(text); });
}

// Load = read the file from disk + parse (the figure the 0.3 s target is about).
void BM_LoadFromDisk(benchmark::State& st) {
  const std::string& text = program_text(st.range(0));
  std::string path = "/tmp/amk-bench-load.json";
  if (!amk::ir::write_file_atomic(path, text)) st.SkipWithError("cannot write temp file");
  for (auto _ : st) {
    auto r = amk::ir::load_program(path);
    benchmark::DoNotOptimize(r);
    st.PauseTiming();
    r = {};
    st.ResumeTiming();
  }
  std::remove(path.c_str());
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * text.size()));
}

// The baseline of "memory speed": streaming through a buffer of the file's size (summing its
// words), what no parser of it can beat.
void BM_MemoryStreamRead(benchmark::State& st) {
  const std::string& text = program_text(st.range(0));
  std::vector<uint64_t> words(text.size() / sizeof(uint64_t));
  std::memcpy(words.data(), text.data(), words.size() * sizeof(uint64_t));
  for (auto _ : st) {
    uint64_t sum = 0;
    for (uint64_t w : words) sum += w;
    benchmark::DoNotOptimize(sum);
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * text.size()));
}

void BM_ParseNlohmannBaseline(benchmark::State& st) {
  const std::string& text = program_text(st.range(0));
  for (auto _ : st) {
    auto j = nlohmann::json::parse(text);
    benchmark::DoNotOptimize(j);
    st.PauseTiming();
    j = {};
    st.ResumeTiming();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * text.size()));
  st.counters["dom_heap_x_file"] = heap_ratio(text, [&] { return nlohmann::json::parse(text); });
}

void BM_WriteCanonical(benchmark::State& st) {
  const std::string& text = program_text(st.range(0));
  auto r = amk::ir::parse_program(text);
  for (auto _ : st) {
    std::string out = amk::ir::write_program(*r.value);
    benchmark::DoNotOptimize(out);
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * text.size()));
}

void BM_BuildGraph(benchmark::State& st) {
  amk::fixtures::GenOptions o;
  o.tasks = static_cast<uint64_t>(st.range(0));
  auto p = amk::fixtures::generate(o).program;
  for (auto _ : st) benchmark::DoNotOptimize(amk::ir::Graph::build(p));
  st.counters["ns_per_task"] = benchmark::Counter(
      static_cast<double>(p.tasks.size()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// The loads read on several threads: their rates are of the wall clock, not one thread's CPU.
BENCHMARK(BM_ParseAmk)->Arg(100000)->Unit(benchmark::kMillisecond)->MinTime(2)->UseRealTime();
BENCHMARK(BM_LoadFromDisk)->Arg(100000)->Unit(benchmark::kMillisecond)->MinTime(2)->UseRealTime();
BENCHMARK(BM_MemoryStreamRead)->Arg(100000)->Unit(benchmark::kMillisecond)->MinTime(1);
BENCHMARK(BM_ParseNlohmannBaseline)->Arg(100000)->Unit(benchmark::kMillisecond)->MinTime(2);
BENCHMARK(BM_WriteCanonical)->Arg(100000)->Unit(benchmark::kMillisecond)->MinTime(2);
BENCHMARK(BM_BuildGraph)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

}  // namespace
