// Search speed: candidates per second of `amk search` (the default algorithm, predicted
// objective) and the split of one evaluation into lower / validate / cost, for three models on
// h100 and a2a3 with one and two jobs; the baseline, measured in the same run, is the cold
// evaluation of the same candidates (lower() from nothing, a fresh validation, the estimate).
// AMK's search() runs 12 candidates/s for Llama-3.2-1B / h100 on this machine kind (README).
// It runs under the allocator settings `amk search` runs with (big_heap_main.cpp).
#include <benchmark/benchmark.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>

#include "lower/config.h"
#include "lower/lower.h"
#include "search/search.h"
#include "targets/cost.h"
#include "validate/validate.h"

namespace {

using namespace amk;

constexpr const char* kModels[] = {"toy-2L", "smollm2-135m", "llama-3.2-1b"};
constexpr const char* kTargets[] = {"h100", "a2a3"};

struct Subject {
  lower::ModelSpec m;
  targets::TargetSpec t;
  search::Space space;
};

Subject subject(const benchmark::State& st) {
  Subject s{*lower::load_model(kModels[st.range(0)]).value,
            *targets::load_target(kTargets[st.range(1)]).value,
            {}};
  s.space = *search::default_space(s.m, s.t, lower::default_config()).value;
  return s;
}

int64_t budget_for(int64_t model) {
  return model == 0 ? 2000 : model == 1 ? 400 : 600;
}

void set_name(benchmark::State& st) {
  st.SetLabel(std::string(kModels[st.range(0)]) + "/" + kTargets[st.range(1)]);
}

// This process's CPU seconds so far: its threads' time in the kernel and in user code.
std::pair<double, double> cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * t.tv_usec; };
  return {secs(u.ru_stime), secs(u.ru_utime)};
}

// One whole search per iteration: candidates/s and the per-candidate split. kernel_share is the
// share of the search's CPU time spent in the kernel: on a VM it is mostly the zeroing of the
// memory a new process touches first, and where it is high (0.3-0.45 against 0.02-0.05 on this VM),
// the same binary runs 1.5-2x slower, so that it tells runs slowed by their fresh memory from slow
// code.
void BM_Search(benchmark::State& st) {
  const Subject s = subject(st);
  set_name(st);
  search::SearchOptions o;
  o.budget = budget_for(st.range(0));
  o.jobs = static_cast<int>(st.range(2));
  double evals = 0, wall = 0, lower_us = 0, validate_us = 0, cost_us = 0, tasks = 0;
  const auto [sys0, user0] = cpu_s();
  for (auto _ : st) {
    search::SearchResult r = *search::Search(s.m, s.t, s.space, o).run().value;
    evals += static_cast<double>(r.evaluations);
    wall += r.wall_s;
    for (const search::Trial& t : r.trials) {
      if (t.duplicate_of >= 0) continue;
      lower_us += t.lower_us;
      validate_us += t.validate_us;
      cost_us += t.cost_us;
      tasks += static_cast<double>(t.tasks);
    }
  }
  const auto [sys1, user1] = cpu_s();
  st.counters["cand_per_s"] = evals / wall;
  st.counters["kernel_share"] = (sys1 - sys0) / std::max(1e-9, sys1 - sys0 + user1 - user0);
  st.counters["lower_us"] = lower_us / evals;
  st.counters["validate_us"] = validate_us / evals;
  st.counters["cost_us"] = cost_us / evals;
  st.counters["tasks"] = tasks / evals;
}

// The baseline: the same candidates evaluated cold, one after another.
void BM_ColdEvaluation(benchmark::State& st) {
  const Subject s = subject(st);
  set_name(st);
  search::SearchOptions o;
  o.budget = budget_for(st.range(0));  // the very candidates BM_Search evaluates
  std::vector<ir::ScheduleConfig> configs;
  const search::SearchResult first = *search::Search(s.m, s.t, s.space, o).run().value;
  for (const search::Trial& t : first.trials)
    if (t.duplicate_of < 0) configs.push_back(t.config);
  double evals = 0, secs = 0;
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    for (const ir::ScheduleConfig& c : configs) {
      lower::LowerResult lr = lower::lower(s.m, s.t, c, {});
      if (!lr) continue;
      validate::Result v = validate::validate(*lr.value);
      if (v.ok) benchmark::DoNotOptimize(targets::estimate(*lr.value, s.t.record).makespan_us);
    }
    secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    evals += static_cast<double>(configs.size());
  }
  st.counters["cand_per_s"] = evals / secs;
}

void search_args(benchmark::internal::Benchmark* b) {
  for (int64_t m = 0; m < 3; ++m)
    for (int64_t t = 0; t < 2; ++t)
      for (int64_t j : {1, 2}) b->Args({m, t, j});
}

void cold_args(benchmark::internal::Benchmark* b) {
  for (int64_t m = 0; m < 3; ++m)
    for (int64_t t = 0; t < 2; ++t) b->Args({m, t});
}

BENCHMARK(BM_Search)
    ->Apply(search_args)
    ->ArgNames({"model", "target", "jobs"})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_ColdEvaluation)
    ->Apply(cold_args)
    ->ArgNames({"model", "target"})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
