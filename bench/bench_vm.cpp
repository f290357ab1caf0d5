// VM benchmarks. (1) Scheduling overhead on NOP programs (chain, fan-out/fan-in, Llama-like,
// random mesh from `amk gen`) against a oneTBB flow::graph of the same DAG in the same run; each
// reports ns/task and the ratio TBB/VM; AICore mode's dispatch cost (and its ratio to SM mode) and
// the orchestration API's submit cost on the same DAGs, and the paged-attention example. (2) A
// decode step of the Llama-3.2-1B-shaped conformance program with random fp32 and bf16 weights on
// all cores (and Llama-3.2-1B lowered with int8 weights), against the machine's read bandwidth
// (streaming sum on every core) measured in the same run, and (ratio_paired) against its own
// weights streamed by as many threads as the step has workers just before each step (since
// 2026-11-30; a separate 1 GiB buffer before, see stream_read) (ratio_paired_next:
// the step run right after that one, as a decode runs them); reports GB/s, the ratios and
// tokens/s.
#include <benchmark/benchmark.h>

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <span>
#include <thread>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "examples/paged_attention/paged_attention.h"
#include "fixtures/gen.h"
#include "instructions/simd.h"
#include "ir/graph.h"
#include "ir/json_io.h"
#include "lower/config.h"
#include "lower/lower.h"
#include "targets/target.h"
#include "vm/observer.h"
#include "vm/orchestrator.h"
#include "vm/vm.h"
#include "vm/weights.h"

namespace {

using namespace amk;
namespace flow = oneapi::tbb::flow;

struct Ratios : benchmark::ConsoleReporter {
  std::map<std::string, double> tbb_ns;  // DAG name -> TBB ns/task
  std::map<std::string, double> sm_ns;   // DAG name -> SM-mode ns/task with one worker
  double stream = 0;
  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> copy = runs;
    for (Run& r : copy) {
      // With --benchmark_repetitions: a mean is compared with a mean, a median with a median;
      // a stddev or cv row is no baseline (the smallest "ns_per_task" would be TBB's stddev).
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name != "mean" &&
          r.aggregate_name != "median")
        continue;
      const std::string name = r.benchmark_name();
      auto dag = name.substr(name.find('/') + 1);
      dag = dag.substr(0, dag.find('/')) + r.aggregate_name;
      if (name.starts_with("BM_TbbFlowGraph")) {  // the baseline: TBB's best thread count
        const double v = r.counters["ns_per_task"].value;
        tbb_ns[dag] = tbb_ns.count(dag) ? std::min(tbb_ns[dag], v) : v;
      }
      if ((name.starts_with("BM_Vm/") || name.starts_with("BM_VmAicore/")) && tbb_ns.count(dag))
        r.counters["tbb_over_vm"] = tbb_ns[dag] / r.counters["ns_per_task"].value;
      if (name.starts_with("BM_Vm/") && name.find("workers:1") != std::string::npos)
        sm_ns[dag] = r.counters["ns_per_task"].value;
      if (name.starts_with("BM_VmAicore/") && sm_ns.count(dag))
        r.counters["aicore_over_sm"] = r.counters["ns_per_task"].value / sm_ns[dag];
      if (name.starts_with("BM_OrchestratorSubmit/") && tbb_ns.count(dag))
        r.counters["submit_over_tbb"] = r.counters["submit_ns_per_task"].value / tbb_ns[dag];
      if (r.counters.count("read_GBs")) stream = r.counters["read_GBs"].value;
      if (r.counters.count("weight_GBs") && stream > 0)
        r.counters["ratio_vs_stream"] = r.counters["weight_GBs"].value / stream;
    }
    ConsoleReporter::ReportRuns(copy);
  }
};

struct Dag {
  const char* name;
  fixtures::GenShape shape;
  uint64_t tasks;
};
const Dag kDags[] = {{"chain100k", fixtures::GenShape::Chain, 100000},
                     {"fan100k", fixtures::GenShape::Fan, 100000},
                     {"llama16k", fixtures::GenShape::Llama, 16000},
                     {"random100k", fixtures::GenShape::Mesh, 100000}};

const ir::Program& nop_program(int which) {
  static std::map<int, ir::Program> cache;
  auto it = cache.find(which);
  if (it == cache.end()) {
    fixtures::GenOptions o;
    o.shape = kDags[which].shape;
    o.tasks = kDags[which].tasks;
    o.nop = true;
    it = cache.emplace(which, fixtures::generate(o).program).first;
  }
  return it->second;
}

// Runs the NOP program `which` (loaded for h100's 132 SMs) with `o`; reports ns_per_task.
void time_nop_runs(benchmark::State& st, int which, const vm::RunOptions& o) {
  const ir::Program& p = nop_program(which);
  vm::LoadOptions lo;
  lo.num_sms = 132;  // h100
  auto loaded = vm::Vm::load(p, lo);
  if (!loaded) {
    st.SkipWithError(ir::error_messages(loaded.diagnostics).c_str());
    return;
  }
  vm::Vm* m = loaded->get();
  double ns = 0;
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = m->run(o);
    ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok()) st.SkipWithError(ir::error_messages(r.diagnostics).c_str());
  }
  st.counters["tasks"] = static_cast<double>(p.tasks.size());
  st.counters["ns_per_task"] =
      ns / static_cast<double>(st.iterations()) / static_cast<double>(p.tasks.size());
}

void BM_Vm(benchmark::State& st, int which, int workers) {
  vm::RunOptions o;
  o.workers = workers;
  time_nop_runs(st, which, o);
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

// AICore mode on a2a3's topology (24 clusters = 72 cores): `schedulers` AICPU threads, each running
// its own cores' (NOP) kernels, so ns/task is dispatch + handshake + completion.
void BM_VmAicore(benchmark::State& st, int which, int schedulers) {
  vm::RunOptions o;
  o.mode = vm::Mode::Aicore;
  o.aicore.schedulers = schedulers;
  time_nop_runs(st, which, o);
}

// The orchestration API on the same DAG: task t writes its own tensor and reads its producers'
// (TensorMap finds the edges). submit_ns_per_task: the orchestrator thread's time in submit()
// (lookup, ring, wiring) while `schedulers` AICPU scheduler threads dispatch the NOP tasks to
// a2a3's 72 cores concurrently.
void BM_OrchestratorSubmit(benchmark::State& st, int which, int schedulers, bool record,
                           uint32_t publish_every) {
  const ir::Program& p = nop_program(which);
  const ir::Graph g = ir::Graph::build(p);
  std::vector<std::vector<uint32_t>> prods(p.tasks.size());
  for (uint32_t t = 0; t < p.tasks.size(); ++t)
    for (uint32_t c : g.consumers(t))
      if (c != t) prods[c].push_back(t);
  std::vector<float> cells(p.tasks.size());
  double submit_ns = 0, total_ns = 0;
  uint64_t blocked = 0;
  for (auto _ : st) {
    vm::OrchestratorOptions oo;
    oo.machine.schedulers = schedulers;
    oo.record = record;
    oo.publish_every = publish_every;
    oo.rings.dep_pool = 1u << 20;
    const auto t0 = std::chrono::steady_clock::now();
    vm::Orchestrator orch(oo);
    std::vector<int64_t> ids(p.tasks.size());
    for (size_t t = 0; t < p.tasks.size(); ++t)
      ids[t] = orch.tensor("t", ir::DType::F32, {1}, &cells[t], ir::BufferKind::IO_OUTPUT);
    // Argument lists built first, so the clock pair around the loop times submit() alone (a
    // pair per submit would add ~40 ns of clock reads to each).
    std::vector<std::vector<vm::TensorArg>> args(p.tasks.size());
    for (uint32_t t = 0; t < p.tasks.size(); ++t) {
      for (uint32_t q : prods[t]) args[t].push_back({ids[q], vm::ArgDir::Input});
      args[t].push_back({ids[t], vm::ArgDir::Output});
    }
    const auto s0 = std::chrono::steady_clock::now();
    for (uint32_t t = 0; t < p.tasks.size(); ++t)
      if (const ir::Status s = orch.submit(ir::Op::NOP, vm::CoreType::Aiv, args[t], {}, "n"); !s) {
        st.SkipWithError(ir::error_messages(s.diagnostics).c_str());
        return;
      }
    const double in_submit =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - s0).count();
    if (const ir::Status s = orch.finish(); !s)
      st.SkipWithError(ir::error_messages(s.diagnostics).c_str());
    total_ns +=
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    submit_ns += in_submit;
    blocked += orch.stats().blocked;
  }
  const double n = static_cast<double>(st.iterations()) * static_cast<double>(p.tasks.size());
  st.counters["submit_ns_per_task"] = submit_ns / n;
  st.counters["total_ns_per_task"] = total_ns / n;
  st.counters["blocked_submits"] =
      static_cast<double>(blocked) / static_cast<double>(st.iterations());
}

// The paged-attention example at the seed's batch 256 with rings of 16 and 65536: in amk opcodes
// (context 128: 160 tasks), or in the seed's own four kernels (context 48: 208 tasks).
void BM_PagedAttention(benchmark::State& st, uint32_t window, bool seed_kernels) {
  examples::PagedAttentionCase c;
  c.seed_kernels = seed_kernels;
  if (seed_kernels) c.context = 48;
  vm::OrchestratorOptions o;
  o.rings.task_window = window;
  o.record = false;
  double err = 0;
  uint64_t blocked = 0, tasks = 0;
  for (auto _ : st) {
    auto r = examples::run_paged_attention(c, o);
    if (!r) {
      st.SkipWithError(ir::error_messages(r.diagnostics).c_str());
      return;
    }
    err = std::max(err, r->max_abs_error);
    blocked += r->stats.blocked;
    tasks = r->stats.tasks;
  }
  st.counters["max_abs_error"] = err;
  st.counters["blocked_submits"] =
      static_cast<double>(blocked) / static_cast<double>(st.iterations());
  st.counters["tasks"] = static_cast<double>(tasks);
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

// The decode step's own weight bytes (its weights file's image, of which the step reads every
// tensor, but for one row of the embedding table) read through simd::sum by `threads` threads,
// each its own part: the paired baseline. The same bytes as the step's, not a buffer of their
// own: on a VM two buffers stream 15-20% apart by where their pages lie. Returns the bytes read.
size_t stream_read(int threads, std::span<const uint8_t> image) {
  const auto* floats = reinterpret_cast<const float*>(image.data());
  const size_t per = image.size() / 4 / static_cast<size_t>(threads);
  std::vector<std::jthread> th;
  for (int i = 0; i < threads; ++i)
    th.emplace_back([&, i] {
      benchmark::DoNotOptimize(
          inst::simd::sum(floats + per * static_cast<size_t>(i), static_cast<int64_t>(per)));
    });
  return per * 4 * static_cast<size_t>(threads);
}

// Llama-3.2-1B lowered with int8 weights (per-128-column F16 scales), AMK's default config.
ir::Program llama1b_int8() {
  const auto m = lower::load_model("llama-3.2-1b");
  const auto t = targets::load_target("h100");
  lower::LowerOptions o;
  o.quant = lower::Quant::Int8;
  auto r = lower::lower(*m.value, *t.value, lower::default_config(), o);
  return r.value ? std::move(*r.value) : ir::Program{};
}

// The share of the workers' time over a traced run, from its first start to its last end, that a
// worker was idle while a task was runnable (ready and at its SM queue's head): the handoff
// between workers. A sweep over each task's runnable, start and end instants.
double idle_runnable_share(const std::vector<vm::TraceEvent>& events, int workers, int64_t first,
                           int64_t last) {
  struct Point {
    int64_t t;
    int runnable, busy;  // changes at t
  };
  std::vector<Point> pts;
  for (const vm::TraceEvent& e : events) {
    pts.push_back({std::max(e.ready_ns, e.head_ns), 1, 0});
    pts.push_back({e.start_ns, -1, 1});
    pts.push_back({e.end_ns, 0, -1});
  }
  std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.t < b.t; });
  int runnable = 0, busy = 0;
  double idle_ns = 0;
  for (size_t i = 0; i + 1 < pts.size(); ++i) {
    runnable += pts[i].runnable;
    busy += pts[i].busy;
    const int64_t a = std::max(pts[i].t, first), b = std::min(pts[i + 1].t, last);
    if (b > a)
      idle_ns += std::min(workers - busy, std::max(runnable, 0)) * static_cast<double>(b - a);
  }
  return idle_ns / (workers * static_cast<double>(last - first));
}

// wdt: the conformance program's weights recast; I8: Llama-3.2-1B lowered with int8 weights.
void BM_DecodeStep(benchmark::State& st, ir::DType wdt, int workers) {
  if (!std::filesystem::exists(conformance())) {
    st.SkipWithError("tests/conformance is absent");
    return;
  }
  ir::Program p;
  if (wdt == ir::DType::I8) {
    p = llama1b_int8();
  } else {
    p = *ir::load_program(conformance().string()).value;
    for (auto& b : p.buffers)
      if (b.kind == ir::BufferKind::WEIGHT) b.dtype = wdt;
  }
  const ir::Result<std::vector<uint8_t>> wimage = vm::random_weights_image(p, 1);
  if (!wimage) {
    st.SkipWithError(("random weights: " + ir::error_messages(wimage.diagnostics)).c_str());
    return;
  }
  auto wfile = vm::SafeTensors::parse(*wimage, "random");
  auto loaded = vm::Vm::load(p, {});
  if (!loaded || !wfile || !(*loaded)->bind_weights(**wfile)) {
    st.SkipWithError("cannot load the decode program");
    return;
  }
  vm::Vm* m = loaded->get();
  vm::TensorStore kv;
  const int32_t token = 7;
  if (!m->set_decode_inputs({&token, 1}, 0) || !m->bind_kv(kv)) {
    st.SkipWithError("cannot bind inputs");
    return;
  }
  vm::RunOptions o;
  o.workers = workers;
  m->run(o);  // first touch
  double moved = 0, stream_s = 0, step_s = 0, next_s = 0, streamed = 0;
  using clock = std::chrono::steady_clock;
  auto seconds = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  for (auto _ : st) {
    // Paired baseline: the weights streamed by as many threads as the step has workers, just
    // before it (this machine's bandwidth moves by 30% within seconds). A second step follows the
    // first, as a decode runs its steps back to back (ratio_paired_next), to tell what the stream
    // just before a step costs it.
    const auto t0 = clock::now();
    streamed += static_cast<double>(stream_read(workers, *wimage));
    const auto t1 = clock::now();
    auto r = m->run(o);
    const auto t2 = clock::now();
    auto r2 = m->run(o);
    const auto t3 = clock::now();
    stream_s += seconds(t0, t1);
    step_s += seconds(t1, t2);
    next_s += seconds(t2, t3);
    for (const auto* res : {&r, &r2})
      if (!res->ok()) st.SkipWithError(ir::error_messages(res->diagnostics).c_str());
    moved = r.bytes;
  }
  // Five more steps, traced (not timed above): the share of the workers' time spent in tasks, the
  // share they idled while a task was runnable, and the GEMV tiles' own rate on a worker, which
  // tell the schedule's idle time and the handoffs from the kernels' speed (the median of each:
  // one step's figures move with this machine's bandwidth).
  std::vector<double> busy_share, gemv_rate, handoff_share;
  for (int k = 0; k < 5; ++k) {
    vm::TraceRecorder trace;
    o.observer = &trace;
    if (!m->run(o).ok()) break;
    int64_t first = std::numeric_limits<int64_t>::max(), last = 0;
    double busy_ns = 0, gemv_ns = 0, gemv_bytes = 0;
    const std::vector<vm::TraceEvent> events = trace.events();
    for (const vm::TraceEvent& e : events) {
      first = std::min(first, e.start_ns);
      last = std::max(last, e.end_ns);
      busy_ns += static_cast<double>(e.end_ns - e.start_ns);
      const ir::Task& t = p.tasks[static_cast<size_t>(e.task)];
      if (t.op != ir::Op::GEMV_TILE) continue;
      // The tile's weight rows in the weights' own dtype (a recast program keeps the F32
      // program's est_bytes).
      const ir::Buffer& w = p.buffers[static_cast<size_t>(t.inputs.at(1))];
      gemv_ns += static_cast<double>(e.end_ns - e.start_ns);
      gemv_bytes += static_cast<double>(ir::dtype_nbytes(
          w.dtype, t.int_param("N_tile").value_or(0) * t.int_param("K").value_or(0)));
    }
    if (last > first) {
      busy_share.push_back(busy_ns / (workers * static_cast<double>(last - first)));
      handoff_share.push_back(idle_runnable_share(events, workers, first, last));
    }
    if (gemv_ns > 0) gemv_rate.push_back(gemv_bytes / gemv_ns);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  if (!busy_share.empty()) st.counters["busy_share"] = median(busy_share);
  if (!gemv_rate.empty()) st.counters["gemv_GBs_per_worker"] = median(gemv_rate);
  if (!handoff_share.empty()) st.counters["idle_runnable_share"] = median(handoff_share);
  // weight_GBs: every weight byte per step (the measure; the embedding table is counted
  // although only one row is read); moved_GBs: the bytes the tasks actually read and wrote. Both,
  // and tokens_per_s, over the first steps' own time (an iteration also holds the stream and the
  // second step).
  const double n = static_cast<double>(st.iterations());
  const double bytes = static_cast<double>(p.total_weight_bytes());
  const double weight_rate = n * bytes / step_s / 1e9;
  const double stream_rate = streamed / stream_s / 1e9;
  st.counters["paired_read_GBs"] = stream_rate;
  st.counters["ratio_paired"] = weight_rate / stream_rate;
  st.counters["ratio_paired_next"] = n * bytes / next_s / 1e9 / stream_rate;
  const double moved_rate = n * moved / step_s / 1e9;
  st.counters["moved_ratio_paired"] = moved_rate / stream_rate;
  st.counters["weight_GBs"] = weight_rate;
  st.counters["moved_GBs"] = moved_rate;
  st.counters["tokens_per_s"] = n / step_s;
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
    for (int s : {1, 3})
      benchmark::RegisterBenchmark(
          fmt::format("BM_VmAicore/{}/schedulers:{}", kDags[d].name, s).c_str(), BM_VmAicore, d, s)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    if (kDags[d].shape != fixtures::GenShape::Fan)  // the fan's join would take 100k arguments
      for (uint32_t pub : {1u, 16u})  // PTO's hand-over of each task, and the default groups
        for (bool rec : {false, true})
          benchmark::RegisterBenchmark(
              fmt::format("BM_OrchestratorSubmit/{}/schedulers:1/publish:{}/record:{}",
                          kDags[d].name, pub, rec)
                  .c_str(),
              BM_OrchestratorSubmit, d, 1, rec, pub)
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime();
  }
  for (bool seed : {false, true})
    for (uint32_t w : {16u, 65536u})
      benchmark::RegisterBenchmark(
          fmt::format("BM_PagedAttention/b256/{}/window:{}", seed ? "seed_kernels" : "opcodes", w)
              .c_str(),
          BM_PagedAttention, w, seed)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
  benchmark::RegisterBenchmark("BM_StreamAllCores", BM_StreamAllCores)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  for (auto [name, dt] : {std::pair{"f32", ir::DType::F32}, std::pair{"bf16", ir::DType::BF16},
                          std::pair{"int8", ir::DType::I8}})
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
