// Validator benchmarks. Full proof (every rule) on generated programs from 1k to 1M tasks, the
// library API's throughput on mutated ~1k-task programs, the incremental proof of a placement
// change against the full proof of it, the image comparison it rests on, and, as baselines
// measured in the same run, one read of every field of the Llama-3.2-1B program and AMK's own RAW
// algorithm (per-task ancestor bitsets in topological order, O(V^2) bits) in C++ on the same
// programs where it fits in memory.
#include <benchmark/benchmark.h>

#include <bit>
#include <cstring>
#include <map>

#include "app/heap.h"
#include "fixtures/gen.h"
#include "ir/graph.h"
#include "ir/json_io.h"
#include "validate/image.h"
#include "validate/validate.h"

namespace {

const amk::ir::Program& program(amk::fixtures::GenShape shape, int64_t tasks) {
  static std::map<std::pair<int, int64_t>, amk::ir::Program> cache;
  auto key = std::make_pair(static_cast<int>(shape), tasks);
  auto it = cache.find(key);
  if (it == cache.end()) {
    amk::fixtures::GenOptions o;
    o.shape = shape;
    o.tasks = static_cast<uint64_t>(tasks);
    o.pages = true;
    it = cache.emplace(key, amk::fixtures::generate(o).program).first;
  }
  return it->second;
}

// Steady state of a reused Validator (its scratch is warm), as a search loop runs it.
void full_proof(benchmark::State& st, amk::fixtures::GenShape shape) {
  const auto& p = program(shape, st.range(0));
  amk::validate::Validator v;
  size_t peak = 0;
  bool ok = v.validate(p).ok;  // warm-up: first touch of the scratch memory
  for (auto _ : st) {
    const size_t before = amk::app::heap_bytes_in_use();
    auto r = v.validate(p);
    const size_t after = amk::app::heap_bytes_in_use();
    peak = std::max(peak, after > before ? after - before : 0);  // a proof may free more
    ok = ok && r.ok;
    benchmark::DoNotOptimize(r);
  }
  if (!ok) st.SkipWithError("generated program rejected");
  st.counters["tasks"] = static_cast<double>(p.tasks.size());
  st.counters["ns_per_task"] = benchmark::Counter(
      static_cast<double>(p.tasks.size()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  st.counters["scratch_MB"] = static_cast<double>(peak) / 1e6;
}

void BM_FullProof_Llama(benchmark::State& st) {
  full_proof(st, amk::fixtures::GenShape::Llama);
}

// AMK's own Llama-3.2-1B program (the conformance corpus), with the thread-local Validator that
// amk.validate uses: the C++ side of bench/python_overhead.py.
void BM_ValidateConformanceLlama1B(benchmark::State& st) {
  auto r = amk::ir::load_program(AMK_CONFORMANCE_DIR "/programs/llama_1B_default.json");
  if (!r) {
    st.SkipWithError("cannot load llama_1B_default.json");
    return;
  }
  for (auto _ : st) benchmark::DoNotOptimize(amk::validate::validate(*r));
  st.counters["tasks"] = static_cast<double>(r->tasks.size());
  st.counters["ns_per_task"] = benchmark::Counter(
      static_cast<double>(r->tasks.size()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  // The memory a proof walks over: the heap blocks of the program (a copy's, with malloc's own
  // bytes), per task.
  const size_t before = amk::app::heap_bytes_in_use();
  const amk::ir::Program copy = *r;
  const size_t after = amk::app::heap_bytes_in_use();
  benchmark::DoNotOptimize(copy);
  st.counters["program_B_per_task"] =
      static_cast<double>(after - before) / static_cast<double>(r->tasks.size());
}
BENCHMARK(BM_ValidateConformanceLlama1B)->Unit(benchmark::kMicrosecond)->MinTime(1);

// The floor under any proof of a program, as a baseline in the same run: one pass that loads every
// field the validator reads of a valid program (each task's op, lists, counters, params' keys and
// int, bool or float values, SM and estimates; each buffer's name, kind, dtype, shape and space;
// each counter's init), folded into a checksum so that none of it is skipped. A proof's time over
// this one's says how far it is from reading its input once.
uint64_t read_every_field(const amk::ir::Program& p) {
  uint64_t h = 0;  // a sum: the fold adds no chain of its own beyond one add a field
  auto mix = [&h](uint64_t v) { h += v; };
  auto mix_bytes = [&](std::string_view s) {  // eight bytes a step
    uint64_t w = s.size();
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t x;
      std::memcpy(&x, s.data() + i, 8);
      w += x;
    }
    for (; i < s.size(); ++i) w += static_cast<unsigned char>(s[i]);
    mix(w);
  };
  for (const amk::ir::Buffer& b : p.buffers) {
    mix_bytes(b.name);
    mix(static_cast<uint64_t>(b.kind) << 16 | static_cast<uint64_t>(b.dtype) << 8 |
        static_cast<uint64_t>(b.space));
    for (int64_t d : b.shape) mix(static_cast<uint64_t>(d));
  }
  for (const amk::ir::Counter& c : p.counters) mix(static_cast<uint64_t>(c.init));
  for (const amk::ir::Task& t : p.tasks) {
    mix(static_cast<uint64_t>(t.op));
    for (int64_t b : t.inputs) mix(static_cast<uint64_t>(b));
    for (int64_t b : t.outputs) mix(static_cast<uint64_t>(b));
    mix(static_cast<uint64_t>(t.out_counter));
    for (const amk::ir::Wait& w : t.waits)
      mix(static_cast<uint64_t>(w.counter) ^ static_cast<uint64_t>(w.threshold) << 32);
    for (const amk::ir::Param& q : t.params) {
      mix_bytes(q.key);
      const amk::ir::ParamValue& v = q.value;  // the member its kind holds
      mix(v.kind == amk::ir::ParamValue::Kind::Float ? std::bit_cast<uint64_t>(v.f)
                                                     : static_cast<uint64_t>(v.i));
    }
    mix(static_cast<uint64_t>(t.sm.value_or(-1)));
    mix(static_cast<uint64_t>(t.est_bytes ^ t.est_flops));
  }
  return h;
}

// The same program as BM_ValidateConformanceLlama1B, read once a time (see read_every_field).
void BM_ReadEveryFieldBaselineLlama1B(benchmark::State& st) {
  auto r = amk::ir::load_program(AMK_CONFORMANCE_DIR "/programs/llama_1B_default.json");
  if (!r) {
    st.SkipWithError("cannot load llama_1B_default.json");
    return;
  }
  for (auto _ : st) benchmark::DoNotOptimize(read_every_field(*r));
  st.counters["ns_per_task"] = benchmark::Counter(
      static_cast<double>(r->tasks.size()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ReadEveryFieldBaselineLlama1B)->Unit(benchmark::kMicrosecond)->MinTime(1);

// A fresh Validator every time: includes allocating and first touching its scratch.
void BM_FullProofCold_Mesh(benchmark::State& st) {
  const auto& p = program(amk::fixtures::GenShape::Mesh, st.range(0));
  for (auto _ : st) {
    amk::validate::Validator v;
    benchmark::DoNotOptimize(v.validate(p));
  }
  st.counters["ns_per_task"] = benchmark::Counter(
      static_cast<double>(p.tasks.size()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
void BM_FullProof_Mesh(benchmark::State& st) {
  full_proof(st, amk::fixtures::GenShape::Mesh);
}

// AMK's step 5 in C++: anc[t] = OR over preds (anc[p] | bit p), then every writer of each read
// buffer must be in anc[reader]. Memory: tasks^2 bits.
void BM_AmkAncestorBitsetsBaseline(benchmark::State& st) {
  const auto& p = program(amk::fixtures::GenShape::Llama, st.range(0));
  const auto g = amk::ir::Graph::build(p);
  const size_t n = p.tasks.size(), words = (n + 63) / 64;
  std::vector<std::vector<uint32_t>> writers(p.buffers.size());
  for (uint32_t t = 0; t < n; ++t)
    for (int64_t b : p.tasks[t].outputs) writers[static_cast<size_t>(b)].push_back(t);
  size_t races = 0;
  for (auto _ : st) {
    std::vector<uint64_t> anc(n * words, 0);
    races = 0;
    for (uint32_t t : g.topo_order()) {
      uint64_t* a = &anc[t * words];
      for (uint32_t s : g.wait_slots(t))
        for (uint32_t q : g.producers(s)) {
          const uint64_t* b = &anc[q * words];
          for (size_t w = 0; w < words; ++w) a[w] |= b[w];
          a[q / 64] |= uint64_t{1} << (q % 64);
        }
      for (int64_t b : p.tasks[t].inputs) {
        if (amk::ir::is_readonly(p.buffers[static_cast<size_t>(b)].kind)) continue;
        for (uint32_t w : writers[static_cast<size_t>(b)])
          if (w != t && !((a[w / 64] >> (w % 64)) & 1)) ++races;
      }
    }
    benchmark::DoNotOptimize(anc.data());
  }
  if (races) st.SkipWithError("baseline found races in a valid program");
  st.counters["tasks"] = static_cast<double>(n);
  st.counters["ns_per_task"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate |
                                                     benchmark::Counter::kInvert);
  st.counters["bitset_MB"] = static_cast<double>(n * words * 8) / 1e6;
}

// The library API as a search loop uses it: one Validator, many slightly different programs
// (AMK's ~5,150 schedules/s was measured on 166-task toy mutants); range(1) 1: the validator is
// incremental (each program differs from the one before in a task or two: the "tasks" path),
// 0: every proof in full (the baseline in the same run).
void BM_LibraryApiMutatedToyPrograms(benchmark::State& st) {
  amk::fixtures::GenOptions o;
  o.tasks = static_cast<uint64_t>(st.range(0));
  o.pages = true;
  const amk::ir::Program base = amk::fixtures::generate(o).program;
  std::vector<amk::ir::Program> variants;
  uint64_t s = 7;
  for (int k = 0; k < 64; ++k) {
    amk::ir::Program p = base;
    s = s * 6364136223846793005ull + 1;
    auto& t = p.tasks[(s >> 33) % p.tasks.size()];
    if (!t.waits.empty() && (s >> 20) % 2) t.waits.pop_back();  // half of them become racy
    variants.push_back(std::move(p));
  }
  amk::validate::Validator v;
  v.set_incremental(st.range(1) != 0);
  size_t i = 0, rejected = 0, tasks_paths = 0;
  for (auto _ : st) {
    auto r = v.validate(variants[i++ % variants.size()]);
    rejected += !r.ok;
    tasks_paths += v.last_path().tasks;
    benchmark::DoNotOptimize(r);
  }
  st.SetItemsProcessed(static_cast<int64_t>(st.iterations()));
  st.counters["tasks"] = static_cast<double>(base.tasks.size());
  st.counters["tasks_path_share"] =
      static_cast<double>(tasks_paths) / static_cast<double>(st.iterations());
  st.counters["rejected_share"] =
      static_cast<double>(rejected) / static_cast<double>(st.iterations());
}

// A search's one-knob step as the incremental proof sees it: a generated Llama program with SMs and
// pages alternates between two SM placements, proved by one Validator, incremental (range(1) 1),
// incremental with one tasks stamp for both (2: as a search's recalled lowering passes them, the
// tasks not compared) or not (0: the full proof, the baseline in the same run).
void BM_PlacementChange(benchmark::State& st) {
  amk::fixtures::GenOptions o;
  o.tasks = static_cast<uint64_t>(st.range(0));
  o.pages = true;
  o.num_sms = 132;
  const amk::ir::Program a = amk::fixtures::generate(o).program;
  amk::ir::Program b = a;
  for (amk::ir::Task& t : b.tasks) t.sm = (t.sm.value_or(0) + 1) % o.num_sms;
  amk::validate::Validator v;
  v.set_incremental(st.range(1) != 0);
  const uint64_t stamp = st.range(1) == 2 ? 1 : 0;  // a and b: the same tasks but for their SMs
  bool ok = v.validate(a, stamp).ok && v.validate(b, stamp).ok, flip = false;
  for (auto _ : st) {
    auto r = v.validate((flip = !flip) ? a : b, stamp);
    ok = ok && r.ok;
    benchmark::DoNotOptimize(r);
  }
  if (!ok) st.SkipWithError("generated program rejected");
  st.SetLabel(amk::validate::name(v.last_path()));
  st.counters["ns_per_task"] = benchmark::Counter(
      static_cast<double>(a.tasks.size()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

BENCHMARK(BM_FullProof_Llama)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1);
BENCHMARK(BM_FullProof_Mesh)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1);
BENCHMARK(BM_FullProofCold_Mesh)->Arg(1000000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AmkAncestorBitsetsBaseline)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(30000)
    ->Unit(benchmark::kMillisecond);
// The word-by-word comparison the incremental proof rests on (ProgramImage::rebuild) of a program
// equal to its image: one program, in cache, or eight in turn, as a search's evaluator keeps the
// last programs of eight structures (none of them in cache when its turn comes).
void BM_ImageRebuild(benchmark::State& st) {
  amk::fixtures::GenOptions o;
  o.tasks = static_cast<uint64_t>(st.range(0));
  o.pages = true;
  o.num_sms = 132;
  std::vector<amk::ir::Program> programs;
  for (int64_t k = 0; k < st.range(1); ++k) {
    o.seed = static_cast<uint64_t>(k + 1);
    programs.push_back(amk::fixtures::generate(o).program);
  }
  std::vector<amk::validate::ProgramImage> images(programs.size());
  for (size_t k = 0; k < programs.size(); ++k) images[k].rebuild(programs[k]);
  size_t i = 0;
  bool same = true;
  for (auto _ : st) {
    const size_t k = i++ % programs.size();
    const auto changes = images[k].rebuild(programs[k]);
    same = same && !changes.core && !changes.sm;
    benchmark::DoNotOptimize(changes);
  }
  if (!same) st.SkipWithError("an image differs from the program it was built of");
  st.counters["ns_per_task"] = benchmark::Counter(
      static_cast<double>(programs[0].tasks.size()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  st.counters["words_per_task"] =
      static_cast<double>(images[0].core.n) / static_cast<double>(programs[0].tasks.size());
}

BENCHMARK(BM_LibraryApiMutatedToyPrograms)
    ->ArgsProduct({{166, 1000}, {0, 1}})
    ->ArgNames({"tasks", "incremental"})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PlacementChange)
    ->ArgsProduct({{5000, 100000}, {0, 1, 2}})
    ->ArgNames({"tasks", "incremental"})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ImageRebuild)
    ->ArgsProduct({{4000}, {1, 8}})
    ->ArgNames({"tasks", "programs"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
