// Lowering speed (Llama-3.2-1B shape: AMK's tiling-only lowering vs every pass on, same run),
// the random-config property on the large shipped models (too slow for ctest), and the numbers
// the closing note reports: graph_color vs linear scratch bytes, load_balance vs round_robin.
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include "lower/config.h"
#include "lower/lower.h"
#include "lower/random_config.h"
#include "targets/cost.h"
#include "validate/validate.h"

namespace {

using namespace amk;
using json = nlohmann::ordered_json;

lower::ModelSpec model(const char* n) {
  return *lower::load_model(n).value;
}

targets::TargetSpec target(const char* n) {
  return *targets::load_target(n).value;
}

ir::ScheduleConfig config(const json& j) {
  return *lower::parse_config(j.dump(), "bench").value;
}

// AMK's lower(): tiling only (AMK's Python takes 8.6 ms for graph + lowering on this machine).
void BM_Lower1B_AmkCompatTilingOnly(benchmark::State& st) {
  const auto m = model("llama-3.2-1b");
  const auto t = target("h100");
  const auto c = lower::default_config();
  lower::LowerOptions o;
  o.amk_compat = true;
  for (auto _ : st) benchmark::DoNotOptimize(lower::lower(m, t, c, o).value->tasks.size());
}
BENCHMARK(BM_Lower1B_AmkCompatTilingOnly)->Unit(benchmark::kMillisecond);

// Every pass on: tiling, fusion (rope pairs, residual+norm), TensorMap dependencies, load_balance
// list scheduling, graph_color pages, emit.
void BM_Lower1B_EveryPass(benchmark::State& st) {
  const auto m = model("llama-3.2-1b");
  const auto t = target("h100");
  const auto c =
      config({{"tiling", {{"gemv", {{"N_tile", 64}}}, {"attention", {{"kv_block", 128}}}}},
              {"fusion_grouping", json::array({json::array({"rope_q.reshape", "rope_q"}),
                                               json::array({"rope_k.reshape", "rope_k"}),
                                               json::array({"attn_residual", "post_norm"})})},
              {"sm_assignment", "load_balance"},
              {"page_allocation", "graph_color"}});
  lower::LowerOptions o;
  o.pos = 300;  // split-KV by kv_block too
  size_t tasks = 0;
  for (auto _ : st) tasks = lower::lower(m, t, c, o).value->tasks.size();
  st.counters["tasks"] = static_cast<double>(tasks);
}
BENCHMARK(BM_Lower1B_EveryPass)->Unit(benchmark::kMillisecond);

// 1,000 random valid configs per large model and target (h100; a2a3, whose 72 cores make
// load_balance renumber tasks more often): lowered and validated, zero errors expected.
void BM_PropertyLargeModels(benchmark::State& st) {
  const char* names[] = {"smollm2-135m", "tinyllama-1.1b", "llama-3.2-1b"};
  const char* targets[] = {"h100", "a2a3"};
  const auto m = model(names[st.range(0)]);
  const auto t = target(targets[st.range(1)]);
  validate::Validator v;
  int64_t failures = 0, configs = 0, renumbered = 0;
  for (auto _ : st) {
    for (int s = 0; s < 1000; ++s) {
      lower::LowerOptions o;
      o.pos = (s * 37) % 1000;
      o.log = true;
      lower::LowerResult r =
          lower::lower(m, t, lower::random_config(static_cast<uint64_t>(s), m, t), o);
      failures += !r.value || !v.validate(*r.value).ok;
      ++configs;
      for (const std::string& l : r.log) renumbered += l.find("critical-path order") != l.npos;
    }
  }
  st.counters["configs"] = static_cast<double>(configs);
  st.counters["failures"] = static_cast<double>(failures);
  st.counters["renumbered"] = static_cast<double>(renumbered);
}
BENCHMARK(BM_PropertyLargeModels)
    ->ArgsProduct({{0, 1, 2}, {0, 1}})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

// Scratch bytes: linear vs graph_color per shipped model; predicted makespan, SM queues and their
// lower bound, RR vs LB, on Llama-3.2-1B (h100, t4, a2a3) and small-4L (a2a3).
void BM_Report(benchmark::State& st) {
  for (auto _ : st) {
    for (const auto& n : lower::builtin_model_names()) {
      const auto m = model(n.c_str());
      const auto t = target("h100");
      auto lin = lower::lower(m, t, config({{"page_allocation", "linear"}}), {});
      auto col = lower::lower(m, t, config({{"page_allocation", "graph_color"}}), {});
      st.counters[n + "_linear_B"] = static_cast<double>(lin.value->pages->total_scratch_bytes());
      st.counters[n + "_color_B"] = static_cast<double>(col.value->pages->total_scratch_bytes());
    }
    struct Case {
      const char *model, *target, *key;
    };
    for (const Case c :
         {Case{"llama-3.2-1b", "h100", "1b_h100"}, Case{"llama-3.2-1b", "t4", "1b_t4"},
          Case{"llama-3.2-1b", "a2a3", "1b_a2a3"}, Case{"small-4L", "a2a3", "small4_a2a3"}}) {
      const auto m = model(c.model);
      const auto t = target(c.target);
      auto rr = lower::lower(m, t, config({{"sm_assignment", "round_robin"}}), {});
      auto lb = lower::lower(m, t, config({{"sm_assignment", "load_balance"}}), {});
      const auto a = targets::estimate(*rr.value, t.record),
                 b = targets::estimate(*lb.value, t.record);
      ir::Program unplaced = *rr.value;
      for (ir::Task& task : unplaced.tasks) task.sm.reset();
      const std::string k = c.key;
      st.counters[k + "_rr_us"] = a.makespan_us;
      st.counters[k + "_lb_us"] = b.makespan_us;
      st.counters[k + "_rr_queue_us"] = a.queue_us;
      st.counters[k + "_lb_queue_us"] = b.queue_us;
      // max(critical path, total / SMs) of the queue model: no placement predicts less.
      st.counters[k + "_queue_bound_us"] = targets::estimate(unplaced, t.record).queue_us;
      st.counters[k + "_rr_amk_us"] = a.amk_makespan_us;
      st.counters[k + "_lb_amk_us"] = b.amk_makespan_us;
      // The longest dependency chain: no placement can predict less than this in AMK's formula.
      st.counters[k + "_critical_path_us"] = a.critical_path_us;
    }
  }
}
BENCHMARK(BM_Report)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
