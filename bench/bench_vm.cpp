// VM benchmarks. (1) Scheduling overhead on NOP programs (chain, fan-out/fan-in, Llama-like,
// random mesh from `amk gen`) against a oneTBB flow::graph of the same DAG in the same run; each
// reports ns/task and the ratio TBB/VM. (2) A decode step of the Llama-3.2-1B-shaped conformance
// program with random fp32 and bf16 weights on all cores, against the machine's read bandwidth
// (streaming sum on every core) measured in the same run; reports GB/s, the ratio and tokens/s.
#include <benchmark/benchmark.h>

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "instructions/simd.h"
#include "ir/gen.h"
#include "ir/graph.h"
#include "ir/json_io.h"
#include "vm/vm.h"
#include "vm/weights.h"

namespace {

using namespace amk;
namespace flow = oneapi::tbb::flow;

struct Ratios : benchmark::ConsoleReporter {
  std::map<std::string, double> tbb_ns;  // DAG name -> TBB ns/task
  double stream = 0;
  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> copy = runs;
    for (Run& r : copy) {
      const std::string name = r.benchmark_name();
      auto dag = name.substr(name.find('/') + 1);
      dag = dag.substr(0, dag.find('/'));
      if (name.starts_with("BM_TbbFlowGraph")) {  // the baseline: TBB's best thread count
        const double v = r.counters["ns_per_task"].value;
        tbb_ns[dag] = tbb_ns.count(dag) ? std::min(tbb_ns[dag], v) : v;
      }
      if (name.starts_with("BM_Vm/") && tbb_ns.count(dag))
        r.counters["tbb_over_vm"] = tbb_ns[dag] / r.counters["ns_per_task"].value;
      if (r.counters.count("read_GBs")) stream = r.counters["read_GBs"].value;
      if (r.counters.count("weight_GBs") && stream > 0)
        r.counters["ratio_vs_stream"] = r.counters["weight_GBs"].value / stream;
    }
    ConsoleReporter::ReportRuns(copy);
  }
};

struct Dag {
  const char* name;
  ir::GenShape shape;
  uint64_t tasks;
};
const Dag kDags[] = {{"chain100k", ir::GenShape::Chain, 100000},
                     {"fan100k", ir::GenShape::Fan, 100000},
                     {"llama16k", ir::GenShape::Llama, 16000},
                     {"random100k", ir::GenShape::Mesh, 100000}};

const ir::Program& nop_program(int which) {
  static std::map<int, ir::Program> cache;
  auto it = cache.find(which);
  if (it == cache.end()) {
    ir::GenOptions o;
    o.shape = kDags[which].shape;
    o.tasks = kDags[which].tasks;
    o.nop = true;
    it = cache.emplace(which, ir::generate(o).program).first;
  }
  return it->second;
}

void BM_Vm(benchmark::State& st, int which, int workers) {
  const ir::Program& p = nop_program(which);
  vm::LoadOptions lo;
  lo.num_sms = 132;  // h100
  std::string err;
  auto m = vm::Vm::load(p, lo, err);
  if (!m) {
    st.SkipWithError(err.c_str());
    return;
  }
  vm::RunOptions o;
  o.workers = workers;
  double ns = 0;
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = m->run(o);
    ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok()) st.SkipWithError(r.error.c_str());
  }
  st.counters["tasks"] = static_cast<double>(p.tasks.size());
  st.counters["ns_per_task"] =
      ns / static_cast<double>(st.iterations()) / static_cast<double>(p.tasks.size());
}

void BM_TbbFlowGraph(benchmark::State& st, int which, int threads) {
  const ir::Program& p = nop_program(which);
  ir::Graph g = ir::Graph::build(p);
  oneapi::tbb::task_arena arena(threads);
  arena.execute([&] {
    flow::graph fg;
    std::vector<std::unique_ptr<flow::continue_node<flow::continue_msg>>> nodes;
    nodes.reserve(p.tasks.size());
    for (size_t t = 0; t < p.tasks.size(); ++t)
      nodes.push_back(std::make_unique<flow::continue_node<flow::continue_msg>>(
          fg, [](const flow::continue_msg&) {}));
    std::vector<uint32_t> sources;
    for (uint32_t t = 0; t < p.tasks.size(); ++t) {
      for (uint32_t c : g.consumers(t))
        if (c != t) flow::make_edge(*nodes[t], *nodes[c]);
      if (p.tasks[t].waits.empty()) sources.push_back(t);
    }
    double ns = 0;
    for (auto _ : st) {
      const auto t0 = std::chrono::steady_clock::now();
      for (uint32_t s : sources) nodes[s]->try_put(flow::continue_msg());
      fg.wait_for_all();
      ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    }
    st.counters["ns_per_task"] =
        ns / static_cast<double>(st.iterations()) / static_cast<double>(p.tasks.size());
  });
}

// ---- decode step -------------------------------------------------------------------------------

std::filesystem::path conformance() {
  return std::filesystem::path(AMK_CONFORMANCE_DIR) / "programs/llama_1B_default.json";
}

void BM_StreamAllCores(benchmark::State& st) {
  const size_t per = size_t{512} << 20;
  const int n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  static std::vector<std::unique_ptr<float[]>> bufs;
  if (bufs.empty())
    for (int i = 0; i < n; ++i) {
      bufs.emplace_back(new float[per / 4]);
      std::memset(bufs.back().get(), 0, per);
    }
  for (auto _ : st) {
    std::vector<std::jthread> th;
    for (int i = 0; i < n; ++i)
      th.emplace_back([&, i] {
        benchmark::DoNotOptimize(inst::simd::sum(bufs[i].get(), static_cast<int64_t>(per / 4)));
      });
  }
  st.counters["read_GBs"] = benchmark::Counter(static_cast<double>(per) * n / 1e9,
                                               benchmark::Counter::kIsIterationInvariantRate);
}

void BM_DecodeStep(benchmark::State& st, ir::DType wdt, int workers) {
  if (!std::filesystem::exists(conformance())) {
    st.SkipWithError("../shared/conformance is absent");
    return;
  }
  auto lr = ir::load_program(conformance().string());
  ir::Program p = *lr.program;
  for (auto& b : p.buffers)
    if (b.kind == ir::BufferKind::WEIGHT) b.dtype = wdt;
  const std::vector<uint8_t> wimage = vm::random_weights_image(p, 1);
  std::string err;
  auto wfile = vm::SafeTensors::parse(wimage, "random", err);
  auto m = vm::Vm::load(p, {}, err);
  if (!m || !wfile || m->bind_weights(*wfile)) {
    st.SkipWithError("cannot load the decode program");
    return;
  }
  vm::TensorStore kv;
  const int32_t token = 7;
  if (m->set_decode_inputs({&token, 1}, 0) || m->bind_kv(kv)) {
    st.SkipWithError("cannot bind inputs");
    return;
  }
  vm::RunOptions o;
  o.workers = workers;
  m->run(o);  // first touch
  double moved = 0;
  for (auto _ : st) {
    auto r = m->run(o);
    if (!r.ok()) st.SkipWithError(r.error.c_str());
    moved = r.bytes;
  }
  // weight_GBs: every weight byte per step (the measure; the embedding table is counted
  // although only one row is read); moved_GBs: the bytes the tasks actually read and wrote.
  const double bytes = static_cast<double>(p.total_weight_bytes());
  st.counters["weight_GBs"] =
      benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["moved_GBs"] =
      benchmark::Counter(moved / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["tokens_per_s"] =
      benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["tasks"] = static_cast<double>(p.tasks.size());
}

}  // namespace

int main(int argc, char** argv) {
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int d = 0; d < 4; ++d) {
    for (int t : {1, hw})
      benchmark::RegisterBenchmark(
          fmt::format("BM_TbbFlowGraph/{}/threads:{}", kDags[d].name, t).c_str(), BM_TbbFlowGraph,
          d, t)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    for (int w : {1, hw})
      benchmark::RegisterBenchmark(fmt::format("BM_Vm/{}/workers:{}", kDags[d].name, w).c_str(),
                                   BM_Vm, d, w)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
  }
  benchmark::RegisterBenchmark("BM_StreamAllCores", BM_StreamAllCores)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  for (auto [name, dt] : {std::pair{"f32", ir::DType::F32}, std::pair{"bf16", ir::DType::BF16}})
    for (int w : {1, hw})
      benchmark::RegisterBenchmark(
          fmt::format("BM_DecodeStep/llama1B/{}/workers:{}", name, w).c_str(), BM_DecodeStep, dt, w)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->MinTime(3.0);
  benchmark::Initialize(&argc, argv);
  Ratios rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  benchmark::Shutdown();
}
