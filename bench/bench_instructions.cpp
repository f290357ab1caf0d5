// Instruction benchmarks on one core. Baseline (same run): simd::sum streaming over 1 GiB, i.e. the
// core's read bandwidth from memory (the L3 here is 260 MB). GEMV tiles of K=2048, N_tile=256
// sweep 1 GiB weight matrices tile after tile, as a decode step streams its weights; each reports
// GB/s of weight bytes and the ratio to the streaming sum.
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "instructions/kernel.h"
#include "instructions/simd.h"

namespace {

using amk::inst::Tensor;
using amk::ir::DType;

constexpr size_t kBytes = size_t{1} << 30;
constexpr int64_t kK = 2048, kTile = 256;

// Console output plus a ratio column: each run's weight_GBs over the baseline's read_GBs.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> copy = runs;
    for (Run& r : copy) {
      if (r.counters.count("read_GBs")) stream_ = r.counters.at("read_GBs").value;
      auto it = r.counters.find("weight_GBs");
      if (it != r.counters.end() && stream_ > 0)
        r.counters["ratio_vs_stream"] = benchmark::Counter(it->second.value / stream_);
      it = r.counters.find("kv_GBs");
      if (it != r.counters.end() && stream_ > 0)
        r.counters["ratio_vs_stream"] = benchmark::Counter(it->second.value / stream_);
    }
    ConsoleReporter::ReportRuns(copy);
  }

 private:
  double stream_ = 0;
};

struct Buffer {
  std::unique_ptr<uint8_t[]> p;
  explicit Buffer(size_t n, uint8_t fill) : p(new uint8_t[n]) { std::memset(p.get(), fill, n); }
};

void BM_StreamingSumBaseline(benchmark::State& st) {
  static Buffer buf(kBytes, 0);
  const auto* x = reinterpret_cast<const float*>(buf.p.get());
  for (auto _ : st)
    benchmark::DoNotOptimize(amk::inst::simd::sum(x, static_cast<int64_t>(kBytes / 4)));
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * kBytes));
  st.counters["read_GBs"] = benchmark::Counter(static_cast<double>(st.iterations() * kBytes) / 1e9,
                                               benchmark::Counter::kIsRate);
}

void gemv(benchmark::State& st, DType wdt, int64_t qdtype) {
  const int64_t cols = qdtype == 7 ? kK / 2 : kK;
  const size_t elem = static_cast<size_t>(amk::ir::dtype_nbytes(wdt, 1));
  const int64_t rows = static_cast<int64_t>(kBytes / (static_cast<size_t>(cols) * elem));
  static std::map<int, std::unique_ptr<Buffer>> weights;
  auto& wbuf = weights[static_cast<int>(wdt) * 10 + static_cast<int>(qdtype)];
  if (!wbuf)
    wbuf = std::make_unique<Buffer>(kBytes, wdt == DType::F32 || wdt == DType::BF16 ? 0 : 1);
  const int64_t groups = kK / 128;
  std::vector<uint16_t> scales(static_cast<size_t>(rows * groups), 0x3C00);  // 1.0 in F16
  std::vector<float> x(kK, 0.5f), out(static_cast<size_t>(rows), 0.0f);
  int64_t xs[] = {1, kK}, ws[] = {rows, cols}, ss[] = {rows, groups}, os[] = {1, rows};
  Tensor in[3] = {Tensor::of(x.data(), DType::F32, xs), Tensor::of(wbuf->p.get(), wdt, ws),
                  Tensor::of(scales.data(), DType::F16, ss)};
  Tensor o = Tensor::of(out.data(), DType::F32, os);
  amk::inst::Workspace work;
  amk::ir::Task t;
  t.op = amk::ir::Op::GEMV_TILE;
  t.params = {{"K", amk::ir::ParamValue::of_int(kK)},
              {"N_tile", amk::ir::ParamValue::of_int(kTile)},
              {"n_off", amk::ir::ParamValue::of_int(0)}};
  if (qdtype) {
    t.params.push_back({"qdtype", amk::ir::ParamValue::of_int(qdtype)});
    t.params.push_back({"group", amk::ir::ParamValue::of_int(128)});
  }
  const size_t tile_bytes = static_cast<size_t>(kTile * cols) * elem;
  int64_t n_off = 0;
  for (auto _ : st) {
    t.params[2].value = amk::ir::ParamValue::of_int(n_off);
    auto s = amk::inst::run_task(t, std::span<const Tensor>(in, qdtype ? 3 : 2),
                                 std::span<const Tensor>(&o, 1), work);
    if (!s.ok()) st.SkipWithError(amk::ir::error_messages(s.diagnostics).c_str());
    n_off = (n_off + kTile) % (rows - rows % kTile);
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * tile_bytes));
  st.counters["weight_GBs"] = benchmark::Counter(
      static_cast<double>(st.iterations() * tile_bytes) / 1e9, benchmark::Counter::kIsRate);
  st.counters["isa"] = std::strcmp(amk::inst::simd::isa(), "avx512") == 0 ? 512 : 256;
}

void BM_GemvTile_F32(benchmark::State& st) {
  gemv(st, DType::F32, 0);
}
void BM_GemvTile_BF16(benchmark::State& st) {
  gemv(st, DType::BF16, 0);
}
void BM_GemvTile_Int8(benchmark::State& st) {
  gemv(st, DType::I8, 6);
}
void BM_GemvTile_Int4(benchmark::State& st) {
  gemv(st, DType::U8, 7);
}

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
  benchmark::RegisterBenchmark("BM_GemvTile_F32", BM_GemvTile_F32)->MinTime(2);
  benchmark::RegisterBenchmark("BM_GemvTile_BF16", BM_GemvTile_BF16)->MinTime(2);
  benchmark::RegisterBenchmark("BM_GemvTile_Int8", BM_GemvTile_Int8)->MinTime(2);
  benchmark::RegisterBenchmark("BM_GemvTile_Int4", BM_GemvTile_Int4)->MinTime(2);
  benchmark::RegisterBenchmark("BM_Attention_KvLen4096", BM_Attention_KvLen4096)
      ->Unit(benchmark::kMicrosecond);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
}
