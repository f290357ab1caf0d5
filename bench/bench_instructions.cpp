// Instruction benchmarks on one core. Baseline (same run): simd::sum streaming over 1 GiB, i.e. the
// core's read bandwidth from memory (the L3 here is 260 MB). GEMV tiles of K=2048, N_tile=256
// sweep 1 GiB weight matrices tile after tile, as a decode step streams its weights; each reports
// GB/s of weight bytes and ratio_paired, its ratio to the streaming sum run in alternation with it
// (64 MiB of each in turn: this machine's bandwidth moves by 30% within seconds) over the same
// weight buffer (since 2026-11-30; the figures before that date streamed a buffer of their own,
// which on a VM can read 15-20% faster or slower than the weights by where its pages lie). The
// Cached variants run the same tiles on 512 KiB of weights: the kernels' own speed, without memory.
// AMK_SIMD (avx2, scalar) picks the kernels' path; the baseline always reads on the best one.
// The /threads:2 variants run two threads side by side, each over its own half of the weights,
// against two threads streaming theirs (a decode step on two workers), timed on the wall clock.
// Measured (Zen 5 VM, one core of two shared, load 3-7; ratio_paired min/median/max of 5):
//   AVX-512: F32 0.96/1.00/1.02, BF16 0.94/1.00/1.05, Int8 0.91/1.04/1.09, Int4 0.63/0.69/0.79
//   AVX2:    F32 1.03/1.12/1.18, BF16 1.07/1.11/1.19, Int8 0.79/0.90/0.94, Int4 0.37/0.39/0.41
//   scalar:  F32 1.03/1.04/1.06, BF16 0.66/0.85/0.85, Int8 0.12/0.12/0.13, Int4 0.05/0.05/0.07
// Int4 on AVX-512 is bound by its shifts and permutes (in cache: 16-20 GB/s, the stream ~21).
// Measured (AMD EPYC VM, 2 cores, AVX-512, 2026-11-28; 5 runs each, min/median/max):
//   one thread (stream 23-26 GB/s):  F32 1.00/1.04/1.09, BF16 0.96/0.97/0.98,
//                                    Int8 0.93/0.94/0.94, Int4 0.65/0.66/0.66 (16.1 GB/s)
//   two threads (stream 41-43 GB/s, 3 runs, min-max): F32 1.02-1.04, BF16 0.91-0.99,
//                                    Int8 0.93-0.98, Int4 0.75-0.81
// Measured (Intel Xeon, family 6 model 207, one core of two, stream 12.3-13.0 GB/s; 5 runs):
//   AVX-512: F32 0.96/0.97/1.00, BF16 0.93/0.95/0.96, Int8 0.72/0.79/0.81, Int4 0.56/0.67/0.71
//   AVX2:    F32 0.95/0.96/1.00, BF16 0.93/0.95/0.96, Int8 0.66/0.69/0.76, Int4 0.38/0.39/0.41
//   scalar:  F32 0.55/0.56/0.58, BF16 0.32/0.45/0.46, Int8 0.13/0.15/0.15, Int4 0.05/0.06/0.06
// There the quantised kernels are bound by their unpacking, not by memory: in cache (AVX-512)
// Int8 runs 12.7-15.3 GB/s and Int4 8.6-9.9 GB/s, against that stream (Int4: 23 vector operations
// per 64 bytes, which this core issues on two ports).
// Measured (AMD EPYC Zen 4, family 25 model 17, stream 24-31 GB/s; 5 runs alternating the build
// that prefetched into L1 4 KiB ahead and the one that prefetches into L2 8 KiB ahead (int8 rows
// two steps a trip); ratio_paired median (min-max)):
//   AVX-512 before: F32 0.73 (0.69-0.75), BF16 0.45 (0.44-0.48), Int8 0.41 (0.36-0.42),
//                   Int4 0.35 (0.34-0.37)
//   AVX-512 after:  F32 0.72 (0.65-0.74), BF16 0.78 (0.73-0.82), Int8 0.70 (0.67-0.73),
//                   Int4 0.39 (0.35-0.41)
//   AVX2 before:    F32 0.76 (0.70-0.77), BF16 0.68 (0.62-0.69), Int8 0.54 (0.46-0.62),
//                   Int4 0.32 (0.26-0.35)
//   AVX2 after:     F32 0.72 (0.63-0.75), BF16 0.78 (0.74-0.82), Int8 0.58 (0.56-0.63) with the
//                   prefetch alone, 0.62 (0.60-0.64) with the two steps, Int4 0.30 (0.27-0.31)
// In cache there Int8 runs 21-22 GB/s and Int4 11-12 GB/s (AVX-512): bound by their arithmetic.
// The same Zen 4 against a stream of the same bytes (this file's baseline since 2026-11-30), 5 runs
// alternating c4b39c2 (every row 8 KiB ahead into L2) and the per-CPU prefetch plan (here Split:
// fp32/bf16 rows none, int8/int4 rows as before) with 128-byte aligned loops; median (min-max):
//   AVX-512 before: F32 0.86 (0.85-1.00), BF16 0.76 (0.75-0.80), Int8 0.71 (0.69-0.74),
//                   Int4 0.41 (0.37-0.41)
//   AVX-512 after:  F32 0.97 (0.95-1.22), BF16 0.96 (0.94-1.04), Int8 0.75 (0.69-0.80),
//                   Int4 0.41 (0.40-0.42)
//   AVX2 before:    F32 0.84 (0.82-0.98), BF16 0.76 (0.71-0.77), Int8 0.71 (0.70-0.72),
//                   Int4 0.30 (0.28-0.31)
//   AVX2 after:     F32 0.98 (0.94-1.15), BF16 0.86 (0.84-0.88), Int8 0.73 (0.71-0.75),
//                   Int4 0.30 (0.26-0.30)
// The LongRows variants read rows of K = 8192 (a decode's down projection), where x (32 KiB) no
// longer stays in L1 beside the weights. The same Zen 4, 3 runs alternating the build that read
// every tile row by row (18d3529) and the one that reads such rows in blocks sharing each load of
// x (simd_kernels.inc: by_row_blocks), ratio_paired min-max, before -> after:
//   AVX-512: F32 0.70-0.73 -> 1.02-1.05, BF16 0.44-0.45 -> 0.76-0.82, Int8 0.30-0.33 -> 0.48-0.55,
//            Int4 0.31-0.33 -> 0.29-0.35 (row by row in both)
//   AVX2:    F32 0.65-0.72 -> 0.88-0.92, BF16 0.35-0.40 -> 0.57-0.62, Int8 0.58-0.62 -> 0.61-0.65
//            (row by row in both), Int4 0.28-0.30 -> 0.28-0.37
//   K = 2048 in the same runs: AVX-512 F32 0.94-0.95 -> 0.93-0.97, BF16 0.89-0.93 -> 0.90-0.93,
//            Int8 0.70-0.75 -> 0.72-0.74, Int4 0.38-0.42 -> 0.41-0.43; AVX2 F32 0.95-1.03 ->
//            0.96-0.99, BF16 0.88-0.90 -> 0.82-0.85 (the same loop, instruction for instruction;
//            0.88-0.91 against 0.88-0.92 in 4 runs an hour before), Int8 0.64-0.76 -> 0.68-0.71
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "instructions/kernel.h"
#include "instructions/simd.h"

namespace {

using amk::inst::Tensor;
using amk::ir::DType;

constexpr size_t kBytes = size_t{1} << 30;
constexpr size_t kSlice = size_t{64} << 20;  // of a paired run (it cycles through 2 GiB)
constexpr int64_t kK = 2048, kLongK = 8192, kTile = 256;

// Console output plus a ratio column: each run's weight_GBs (kv_GBs) over the baseline's read_GBs
// of the same statistic (mean over mean, median over median; the paired runs carry their own).
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> copy = runs;
    for (Run& r : copy) {
      const bool paired = r.counters.count("ratio_paired") != 0;
      if (r.counters.count("read_GBs") && !paired)
        stream_[r.aggregate_name] = r.counters.at("read_GBs").value;
      const auto base = stream_.find(r.aggregate_name);
      if (paired || base == stream_.end() || r.aggregate_name == "stddev" ||
          r.aggregate_name == "cv")
        continue;
      for (const char* c : {"weight_GBs", "kv_GBs"})
        if (auto it = r.counters.find(c); it != r.counters.end())
          r.counters["ratio_vs_stream"] = benchmark::Counter(it->second.value / base->second);
    }
    ConsoleReporter::ReportRuns(copy);
  }

 private:
  std::map<std::string, double> stream_;
};

struct Buffer {
  std::unique_ptr<uint8_t[]> p;
  explicit Buffer(size_t n, uint8_t fill) : p(new uint8_t[n]) { std::memset(p.get(), fill, n); }
};

Buffer& stream_buffer() {
  static Buffer buf(kBytes, 0);
  return buf;
}

// The machine's read bandwidth: simd::sum on the best SIMD path, whichever path AMK_SIMD picked
// for the kernels (the scalar sum is slower than memory).
float stream_sum(const float* x, int64_t n) {
  const std::string path = amk::inst::simd::isa();
  amk::inst::simd::use_isa("best");
  const float r = amk::inst::simd::sum(x, n);
  amk::inst::simd::use_isa(path);
  return r;
}

void BM_StreamingSumBaseline(benchmark::State& st) {
  const auto* x = reinterpret_cast<const float*>(stream_buffer().p.get());
  for (auto _ : st) benchmark::DoNotOptimize(stream_sum(x, static_cast<int64_t>(kBytes / 4)));
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * kBytes));
  st.counters["read_GBs"] = benchmark::Counter(static_cast<double>(st.iterations() * kBytes) / 1e9,
                                               benchmark::Counter::kIsRate);
}

// This thread's CPU time in seconds.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// `bytes` of weights in rows of K; kBytes runs paired with the baseline (see below), less stays
// in cache.
// threads > 1 (paired only): that many threads, each over its own part of the weights and of the
// stream, as a decode step's workers read theirs; both sides are then timed on the wall clock.
void gemv(benchmark::State& st, DType wdt, int64_t qdtype, size_t bytes, int threads = 1,
          int64_t K = kK) {
  const bool paired = bytes == kBytes;
  const int64_t cols = qdtype == 7 ? K / 2 : K;
  const size_t elem = static_cast<size_t>(amk::ir::dtype_nbytes(wdt, 1));
  const int64_t rows = static_cast<int64_t>(bytes / (static_cast<size_t>(cols) * elem));
  const int64_t tile = std::min(kTile, rows);
  static std::map<std::pair<int, size_t>, std::unique_ptr<Buffer>> weights;
  auto& wbuf = weights[{static_cast<int>(wdt) * 10 + static_cast<int>(qdtype), bytes}];
  if (!wbuf)
    wbuf = std::make_unique<Buffer>(bytes, wdt == DType::F32 || wdt == DType::BF16 ? 0 : 1);
  const int64_t groups = K / 128;
  std::vector<uint16_t> scales(static_cast<size_t>(rows * groups), 0x3C00);  // 1.0 in F16
  std::vector<float> x(K, 0.5f), out(static_cast<size_t>(rows), 0.0f);
  int64_t xs[] = {1, K}, ws[] = {rows, cols}, ss[] = {rows, groups}, os[] = {1, rows};
  const Tensor in[3] = {Tensor::of(x.data(), DType::F32, xs), Tensor::of(wbuf->p.get(), wdt, ws),
                        Tensor::of(scales.data(), DType::F16, ss)};
  const Tensor o = Tensor::of(out.data(), DType::F32, os);
  const size_t tile_bytes = static_cast<size_t>(tile * cols) * elem;
  // One thread's tiles: rows [first, first + count) in turn, from `next` on.
  struct Tiles {
    amk::ir::Task t;
    amk::inst::Workspace work;
    int64_t first = 0, count = 0, next = 0;
    std::string error;
  };
  const int64_t per_thread = (rows - rows % tile) / threads / tile * tile;
  std::vector<Tiles> part(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) {
    Tiles& p = part[static_cast<size_t>(i)];
    p.t.op = amk::ir::Op::GEMV_TILE;
    p.t.params = {{"K", amk::ir::ParamValue::of_int(K)},
                  {"N_tile", amk::ir::ParamValue::of_int(tile)},
                  {"n_off", amk::ir::ParamValue::of_int(0)}};
    if (qdtype) {
      p.t.params.push_back({"qdtype", amk::ir::ParamValue::of_int(qdtype)});
      p.t.params.push_back({"group", amk::ir::ParamValue::of_int(128)});
    }
    p.first = paired ? i * per_thread : 0;
    p.count = paired ? per_thread : rows - rows % tile;
  }
  auto run_tile = [&](Tiles& p) {
    p.t.params[2].value = amk::ir::ParamValue::of_int(p.first + p.next);
    auto s = amk::inst::run_task(p.t, std::span<const Tensor>(in, qdtype ? 3 : 2),
                                 std::span<const Tensor>(&o, 1), p.work);
    if (!s.ok()) p.error = amk::ir::error_messages(s.diagnostics);
    p.next = (p.next + tile) % p.count;
  };
  if (!paired) {
    for (auto _ : st) run_tile(part[0]);
    if (!part[0].error.empty()) st.SkipWithError(part[0].error.c_str());
    st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * tile_bytes));
    st.counters["cached_GBs"] = benchmark::Counter(
        static_cast<double>(st.iterations() * tile_bytes) / 1e9, benchmark::Counter::kIsRate);
    return;
  }
  // Paired with the baseline: each iteration streams a slice of the weights themselves through
  // simd::sum, then GEMV tiles over as many weight bytes, so both see the same moment of a
  // machine whose bandwidth varies from second to second, and the same memory: on a VM two
  // buffers of the same size can stream 15-20% apart, by where their pages landed, and a
  // separate stream buffer made that gap part of every ratio. The stream reads the slice half a
  // thread's part away from the one the tiles read next (what it leaves in cache is not theirs).
  // One thread times both on its CPU clock; several, on the wall clock (each thread streams a
  // whole slice of its own part, so that starting the threads is a small share of what is timed).
  const auto* stream = reinterpret_cast<const float*>(wbuf->p.get());
  const size_t per_slice = kSlice / tile_bytes;  // each thread's, as its slice of the stream
  const size_t stream_part = kBytes / 4 / static_cast<size_t>(threads);
  const size_t slice_part = kSlice / 4;
  const size_t part_slices = kBytes / kSlice / static_cast<size_t>(threads);
  double stream_s = 0, gemv_s = 0;
  size_t slice = 0;
  auto side_by_side = [&](auto&& work) {
    if (threads == 1) return work(0);
    std::vector<std::jthread> th;
    for (int i = 0; i < threads; ++i) th.emplace_back([&work, i] { work(i); });
  };
  using Wall = std::chrono::steady_clock;
  for (auto _ : st) {
    const double c0 = cpu_seconds();
    const auto w0 = Wall::now();
    side_by_side([&](int i) {
      benchmark::DoNotOptimize(stream_sum(stream + static_cast<size_t>(i) * stream_part +
                                              (slice + part_slices / 2) % part_slices * slice_part,
                                          static_cast<int64_t>(slice_part)));
    });
    const double c1 = cpu_seconds();
    const auto w1 = Wall::now();
    side_by_side([&](int i) {
      for (size_t k = 0; k < per_slice; ++k) run_tile(part[static_cast<size_t>(i)]);
    });
    const double c2 = cpu_seconds();
    const auto w2 = Wall::now();
    if (threads == 1) {
      stream_s += c1 - c0;
      gemv_s += c2 - c1;
    } else {
      stream_s += std::chrono::duration<double>(w1 - w0).count();
      gemv_s += std::chrono::duration<double>(w2 - w1).count();
    }
    slice = (slice + 1) % part_slices;
  }
  for (const Tiles& p : part)
    if (!p.error.empty()) st.SkipWithError(p.error.c_str());
  const double n = static_cast<double>(st.iterations());
  const double read =
      n * static_cast<double>(slice_part * 4 * static_cast<size_t>(threads)) / stream_s / 1e9;
  const double weight =
      n * static_cast<double>(per_slice * tile_bytes * static_cast<size_t>(threads)) / gemv_s / 1e9;
  st.counters["read_GBs"] = read;
  st.counters["weight_GBs"] = weight;
  st.counters["ratio_paired"] = weight / read;
  st.counters["isa"] = std::strcmp(amk::inst::simd::isa(), "avx512") == 0 ? 512 : 256;
}

// The formats: F32, BF16, Int8 (qdtype 6) and Int4 (qdtype 7), each with F16 scales per 128.
struct Format {
  const char* name;
  DType dtype;
  int64_t qdtype;
};
constexpr Format kFormats[] = {{"F32", DType::F32, 0},
                               {"BF16", DType::BF16, 0},
                               {"Int8", DType::I8, 6},
                               {"Int4", DType::U8, 7}};

void BM_Attention_KvLen4096(benchmark::State& st) {
  const int64_t hd = 64, nkv = 8, nh = 32, seq = 4096;
  std::vector<float> q(static_cast<size_t>(nh * hd), 0.01f),
      k(static_cast<size_t>(seq * nkv * hd), 0.01f), v = k, out(static_cast<size_t>(nh * hd));
  int64_t qs[] = {nh, hd}, cs[] = {seq, nkv, hd}, os[] = {1, nh * hd};
  Tensor in[3] = {Tensor::of(q.data(), DType::F32, qs), Tensor::of(k.data(), DType::F32, cs),
                  Tensor::of(v.data(), DType::F32, cs)};
  Tensor o = Tensor::of(out.data(), DType::F32, os);
  amk::inst::Workspace work;
  amk::ir::Task t;
  t.op = amk::ir::Op::ATTENTION_TILE;
  for (auto [key, val] :
       std::initializer_list<std::pair<const char*, int64_t>>{{"head_dim", hd},
                                                              {"kv_start", 0},
                                                              {"kv_len", seq},
                                                              {"n_heads", nh},
                                                              {"n_kv_heads", nkv}})
    t.params.push_back({key, amk::ir::ParamValue::of_int(val)});
  t.params.push_back({"scale", amk::ir::ParamValue::of_float(0.125)});
  for (auto _ : st) {
    auto s = amk::inst::run_task(t, in, std::span<const Tensor>(&o, 1), work);
    if (!s.ok()) st.SkipWithError(amk::ir::error_messages(s.diagnostics).c_str());
  }
  const auto kv_bytes = static_cast<int64_t>(2 * seq * nkv * hd * 4);
  st.SetBytesProcessed(st.iterations() * kv_bytes);
  st.counters["kv_GBs"] = benchmark::Counter(static_cast<double>(st.iterations() * kv_bytes) / 1e9,
                                             benchmark::Counter::kIsRate);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  // The baseline runs first and its bandwidth is the denominator of every ratio below.
  benchmark::RegisterBenchmark("BM_StreamingSumBaseline", BM_StreamingSumBaseline)
      ->Unit(benchmark::kMillisecond)
      ->MinTime(2);
  for (const Format& f : kFormats)
    benchmark::RegisterBenchmark((std::string("BM_GemvTile_") + f.name).c_str(),
                                 [f](benchmark::State& st) { gemv(st, f.dtype, f.qdtype, kBytes); })
        ->MinTime(2);
  // Two threads side by side against two streams (a decode step on two workers).
  for (const Format& f : kFormats)
    benchmark::RegisterBenchmark(
        (std::string("BM_GemvTile_") + f.name + "/threads:2").c_str(),
        [f](benchmark::State& st) { gemv(st, f.dtype, f.qdtype, kBytes, 2); })
        ->UseRealTime()
        ->MinTime(2);
  // Rows of 8192, as a decode's down projection has (x no longer fits in L1 beside them).
  for (const Format& f : kFormats)
    benchmark::RegisterBenchmark(
        (std::string("BM_GemvTileLongRows_") + f.name).c_str(),
        [f](benchmark::State& st) { gemv(st, f.dtype, f.qdtype, kBytes, 1, kLongK); })
        ->MinTime(2);
  // The kernels' ceiling: the same tiles over 512 KiB of weights, which stay in the L2 cache.
  for (const Format& f : kFormats)
    benchmark::RegisterBenchmark(
        (std::string("BM_GemvTileCached_") + f.name).c_str(),
        [f](benchmark::State& st) { gemv(st, f.dtype, f.qdtype, size_t{512} << 10); })
        ->MinTime(1);
  benchmark::RegisterBenchmark("BM_Attention_KvLen4096", BM_Attention_KvLen4096)
      ->Unit(benchmark::kMicrosecond);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
}
