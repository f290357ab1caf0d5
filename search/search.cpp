#include "search/search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "ir/pool.h"
#include "ir/pyjson.h"
#include "lower/config.h"
#include "search/strategy.h"
#include "targets/cost.h"
#include "validate/validate.h"

namespace amk::search {

namespace {

using Clock = std::chrono::steady_clock;

constexpr Source kSources[] = {Source::Start,    Source::Random,    Source::Mutate,
                               Source::Neighbor, Source::Crossover, Source::Perturb};
constexpr std::string_view kSourceNames[] = {"start",    "random",    "mutate",
                                             "neighbor", "crossover", "perturb"};
constexpr size_t kReasons = 3;  // rejection diagnostics kept per trial (AMK keeps 3 messages)

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

}  // namespace

std::string_view name(Source s) {
  return kSourceNames[static_cast<size_t>(s)];
}

std::optional<Source> parse_source(std::string_view s) {
  for (size_t i = 0; i < std::size(kSources); ++i)
    if (kSourceNames[i] == s) return kSources[i];
  return std::nullopt;
}

struct Evaluator::Impl {
  const targets::TargetSpec& target;
  const targets::Runtime& runtime;
  lower::Lowerer lowerer;
  validate::Validator validator;
};

Evaluator::Evaluator(const lower::ModelSpec& m, const targets::TargetSpec& t,
                     const lower::LowerOptions& o)
    : impl_(std::make_unique<Impl>(Impl{
          t, o.runtime ? *o.runtime : targets::default_runtime(t), lower::Lowerer(m, t, o), {}})) {
  impl_->validator.set_threads(1);  // a search runs evaluators in parallel, one per thread
}
Evaluator::~Evaluator() = default;
Evaluator::Evaluator(Evaluator&&) noexcept = default;
Evaluator& Evaluator::operator=(Evaluator&&) noexcept = default;

void Evaluator::evaluate(Trial& t, Objective obj) {
  lower::Lowerer& lowerer = impl_->lowerer;
  validate::Validator& validator = impl_->validator;
  const auto t0 = Clock::now();
  lower::LowerResult lr = lowerer.run(t.config);
  const auto t1 = Clock::now();
  t.lower_us = std::chrono::duration<double, std::micro>(t1 - t0).count();
  if (ir::has_errors(lr.diagnostics)) {
    for (ir::Diagnostic& d : lr.diagnostics)
      if (d.severity == ir::Severity::Error && t.diagnostics.size() < kReasons)
        t.diagnostics.push_back(std::move(d));
    t.eval_us = t.lower_us;
    return;
  }
  const ir::Program& p = lowerer.program();
  t.tasks = static_cast<int64_t>(p.tasks.size());
  validate::Result v = validator.validate(p);
  const auto t2 = Clock::now();
  t.validate_us = std::chrono::duration<double, std::micro>(t2 - t1).count();
  if (!v.ok) {
    for (ir::Diagnostic& d : v.errors) {
      if (t.diagnostics.size() == kReasons) break;
      t.diagnostics.push_back(std::move(d));
    }
    t.eval_us = t.lower_us + t.validate_us;
    return;
  }
  const targets::CostEstimate c = targets::estimate(p, impl_->target.record, impl_->runtime,
                                                    validator.graph(), validator.queue_graph());
  t.cost_us = us_since(t2);
  t.valid = true;
  t.predicted_us = c.makespan_us;
  t.amk_formula_us = c.amk_makespan_us;
  t.score = obj == Objective::Predicted ? c.makespan_us : c.amk_makespan_us;
  t.eval_us = t.lower_us + t.validate_us + t.cost_us;
}

std::string structure_text(const ir::ScheduleConfig& c) {
  std::string text;
  ir::append_json_value(text, c.tiling.json(), 0);
  text += '|';
  ir::append_json_value(text, c.fusion_grouping.json(), 0);
  return text;
}

namespace {

// affinity_units over the configs' structure texts.
std::vector<std::vector<size_t>> units_of(std::span<const std::string> texts, size_t parts) {
  std::vector<std::vector<size_t>> groups;
  std::unordered_map<std::string_view, size_t> group_of;
  for (size_t i = 0; i < texts.size(); ++i) {
    auto [it, fresh] = group_of.try_emplace(texts[i], groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  parts = std::max<size_t>(1, parts);
  const size_t share = std::max<size_t>(1, (texts.size() + parts - 1) / parts);
  std::vector<std::vector<size_t>> units;
  for (const std::vector<size_t>& g : groups)
    for (size_t i = 0; i < g.size(); i += share)
      units.emplace_back(g.begin() + static_cast<ptrdiff_t>(i),
                         g.begin() + static_cast<ptrdiff_t>(std::min(g.size(), i + share)));
  std::stable_sort(units.begin(), units.end(),
                   [](const auto& a, const auto& b) { return a.size() > b.size(); });
  return units;
}

std::vector<std::string> structure_texts(std::span<const ir::ScheduleConfig* const> configs) {
  std::vector<std::string> texts;
  texts.reserve(configs.size());
  for (const ir::ScheduleConfig* c : configs) texts.push_back(structure_text(*c));
  return texts;
}

}  // namespace

std::vector<std::vector<size_t>> affinity_units(std::span<const ir::ScheduleConfig* const> configs,
                                                size_t parts) {
  return units_of(structure_texts(configs), parts);
}

std::vector<std::vector<size_t>> affinity_chunks(std::span<const ir::ScheduleConfig* const> configs,
                                                 size_t parts) {
  parts = std::max<size_t>(1, parts);
  std::vector<std::vector<size_t>> chunks(parts);
  std::vector<size_t> cost(parts, 0);
  // Largest unit first to the cheapest chunk so far (the first such): a unit costs its configs
  // and two more for the lowering of its structure (a miss costs about three hits).
  for (const std::vector<size_t>& u : affinity_units(configs, parts)) {
    const size_t c = static_cast<size_t>(std::min_element(cost.begin(), cost.end()) - cost.begin());
    chunks[c].insert(chunks[c].end(), u.begin(), u.end());
    cost[c] += u.size() + 2;
  }
  std::erase_if(chunks, [](const std::vector<size_t>& c) { return c.empty(); });
  return chunks;
}

namespace {

// Orders a batch's units (units_of `texts`) longest first: a unit whose structure no evaluator
// has lowered yet (not in `lowered`, which then takes the batch's) costs a tiling, some four
// evaluations, besides its configs, so it goes before the others of its size, and no thread is
// left with one at the end of the batch while the others idle.
void longest_first(std::vector<std::vector<size_t>>& units, std::span<const std::string> texts,
                   std::unordered_set<std::string>& lowered) {
  std::vector<size_t> cost(units.size()), order(units.size());
  for (size_t u = 0; u < units.size(); ++u)
    cost[u] = units[u].size() + (lowered.count(texts[units[u][0]]) ? 0 : 4);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  std::vector<std::vector<size_t>> sorted;
  for (size_t u : order) sorted.push_back(std::move(units[u]));
  units = std::move(sorted);
  lowered.insert(texts.begin(), texts.end());
}

}  // namespace

void take_results(Trial& to, const Trial& from) {
  to.valid = from.valid;
  to.diagnostics = from.diagnostics;
  to.predicted_us = from.predicted_us;
  to.amk_formula_us = from.amk_formula_us;
  to.measured_us = from.measured_us;
  to.tasks = from.tasks;
  to.eval_us = from.eval_us;
  to.lower_us = from.lower_us;
  to.validate_us = from.validate_us;
  to.cost_us = from.cost_us;
  to.score = from.score;
}

Search::Search(const lower::ModelSpec& m, const targets::TargetSpec& t, Space space,
               SearchOptions options)
    : m_(m), t_(t), space_(std::move(space)), o_(std::move(options)) {}

ir::Result<SearchResult> Search::run() {
  const auto t0 = Clock::now();
  SearchResult res;
  History h;
  const ir::ScheduleConfig base = o_.start ? *o_.start : lower::default_config();
  const Point start_point = space_.point_of(base);
  const int jobs = std::max(1, o_.jobs);
  std::vector<Evaluator> workers;
  if (!o_.evaluate)
    for (int j = 0; j < jobs; ++j) workers.emplace_back(m_, t_, o_.lower);
  ir::Pool pool(o_.evaluate ? 1 : static_cast<size_t>(jobs));
  // A warm evaluator holds up to ~60 MB of structures in small blocks: at the end each is freed
  // on a thread of its own (Llama-3.2-1B, 600 candidates, --jobs 2: 23 ms one after the other,
  // 15 ms so; medians of 5).
  struct FreeInParallel {
    ir::Pool& pool;
    std::vector<Evaluator>& workers;
    ~FreeInParallel() {
      pool.run(workers.size(), [&](size_t, size_t i) { Evaluator gone = std::move(workers[i]); });
    }
  } free_in_parallel{pool, workers};
  std::unordered_set<std::string> lowered;  // the structures (structure_text) evaluated so far

  std::unique_ptr<Strategy> strategy =
      o_.algorithm == Algorithm::Amk
          ? amk_strategy(space_, o_.seed, o_.budget)
          : descent_strategy(space_, o_.seed, o_.min_batch,
                             [&](const Point& p) { return config_key(space_.config(p, base)); });
  // A log's evaluations by config: a proposal the log evaluated takes its result, whatever its
  // index there (a search of another budget: AMK's random share depends on it).
  std::unordered_map<std::string, const Trial*> replay_by_key;
  for (const Trial& r : o_.replay)
    if (r.duplicate_of < 0) replay_by_key.emplace(r.key, &r);

  // Turns proposals into trials (duplicates and replayed ones settled at once), evaluates the
  // rest in parallel, and records them in index order.
  auto run_batch = [&](std::vector<Proposal> batch) -> ir::Status {
    std::vector<Trial> trials(batch.size());
    std::vector<size_t> todo;
    std::unordered_map<std::string, size_t> in_batch;
    for (size_t i = 0; i < batch.size(); ++i) {
      Trial& t = trials[i];
      t.index = static_cast<int64_t>(h.trials.size() + i);
      t.source = batch[i].source;
      t.config = t.source == Source::Start ? base : space_.config(batch[i].point, base);
      t.key = config_key(t.config);
      if (auto it = h.by_key.find(t.key); it != h.by_key.end()) {
        t.duplicate_of = it->second;
      } else if (auto jt = in_batch.find(t.key); jt != in_batch.end()) {
        t.duplicate_of = trials[jt->second].index;
      } else if (auto kt = replay_by_key.find(t.key); kt != replay_by_key.end()) {
        in_batch.emplace(t.key, i);  // evaluated in the log: its result is taken
        take_results(t, *kt->second);
        t.eval_us = t.lower_us = t.validate_us = t.cost_us = 0;
        ++res.replayed;
      } else {
        in_batch.emplace(t.key, i);
        todo.push_back(i);
      }
    }
    if (o_.evaluate) {
      std::vector<Trial*> remote;
      for (size_t k : todo) remote.push_back(&trials[k]);
      if (!remote.empty())
        if (ir::Status st = o_.evaluate(remote); !st) return st;
    } else {
      std::vector<const ir::ScheduleConfig*> configs;
      for (size_t k : todo) configs.push_back(&trials[k].config);
      // Units of one structure each, so that a thread lowers a structure for all of them.
      const std::vector<std::string> texts = structure_texts(configs);
      std::vector<std::vector<size_t>> units = units_of(texts, workers.size());
      longest_first(units, texts, lowered);
      if (h.trials.empty() && units.size() == 1 && workers.size() > 1) {
        // The start config alone: while the first evaluator evaluates it, each other one
        // evaluates a copy (dropped), so that all come to the first neighbourhood warm (the
        // model's graph built, the start's structure kept, their memory mapped) instead of
        // idling now and starting cold then.
        pool.run(workers.size(), [&](size_t, size_t e) {
          if (e == 0) {
            for (size_t k : units[0]) workers[0].evaluate(trials[todo[k]], o_.objective);
            return;
          }
          Trial warm;
          warm.config = trials[todo[units[0][0]]].config;
          workers[e].evaluate(warm, o_.objective);
        });
      } else {
        pool.run(units.size(), [&](size_t w, size_t u) {
          for (size_t k : units[u]) workers[w].evaluate(trials[todo[k]], o_.objective);
        });
      }
    }
    const auto first = static_cast<int64_t>(h.trials.size());  // trials[i] is trial first + i
    for (size_t i = 0; i < trials.size(); ++i) {
      Trial& t = trials[i];
      if (t.duplicate_of >= 0) {
        const Trial& orig = t.duplicate_of < first
                                ? h.trials[static_cast<size_t>(t.duplicate_of)]
                                : trials[static_cast<size_t>(t.duplicate_of - first)];
        take_results(t, orig);
        t.eval_us = t.lower_us = t.validate_us = t.cost_us = 0;
      }
      if (t.duplicate_of >= 0)
        ++res.duplicates;
      else
        ++res.evaluations;
      if (t.duplicate_of < 0) h.by_key.emplace(t.key, t.index);
      h.points.push_back(batch[i].point);
      h.seen.insert(batch[i].point);
      if (t.valid && t.duplicate_of < 0 && t.score < h.score(h.incumbent)) h.incumbent = t.index;
      h.trials.push_back(std::move(t));
      if (o_.on_trial && !o_.on_trial(h.trials.back())) {
        res.stopped = true;
        return {};
      }
    }
    return {};
  };

  auto out_of_time = [&] {
    return o_.deadline_s > 0 &&
           std::chrono::duration<double>(Clock::now() - t0).count() >= o_.deadline_s;
  };
  if (ir::Status st = run_batch({{start_point, Source::Start}}); !st)
    return std::move(st.diagnostics);
  int idle = 0;  // batches that evaluated nothing new (a small space runs out)
  while (!res.stopped && res.evaluations < o_.budget && !out_of_time() && idle < 64) {
    std::vector<Proposal> batch = strategy->next(h);
    if (batch.empty()) {
      res.exhausted = true;
      break;
    }
    // Where the budget ends inside the batch: after as many new configs as it has left.
    std::unordered_set<std::string> fresh;
    for (size_t i = 0; i < batch.size(); ++i) {
      const Proposal& q = batch[i];
      std::string key = config_key(q.source == Source::Start ? base : space_.config(q.point, base));
      if (!h.by_key.count(key) && fresh.insert(std::move(key)).second &&
          static_cast<int64_t>(fresh.size()) == o_.budget - res.evaluations) {
        batch.resize(i + 1);
        break;
      }
    }
    const int64_t before = res.evaluations;
    if (ir::Status st = run_batch(std::move(batch)); !st) return std::move(st.diagnostics);
    idle = res.evaluations == before ? idle + 1 : 0;
  }
  if (idle == 64) res.exhausted = true;

  // The exploit: measure the best predicted configs (and the start), rank by measurement.
  if (o_.measure && o_.measure_top_k > 0 && !res.stopped) {
    std::vector<int64_t> ranked;
    for (const Trial& t : h.trials)
      if (t.valid && t.duplicate_of < 0) ranked.push_back(t.index);
    std::stable_sort(ranked.begin(), ranked.end(),
                     [&](int64_t a, int64_t b) { return h.score(a) < h.score(b); });
    if (ranked.size() > static_cast<size_t>(o_.measure_top_k))
      ranked.resize(static_cast<size_t>(o_.measure_top_k));
    if (h.trials[0].valid && std::find(ranked.begin(), ranked.end(), 0) == ranked.end())
      ranked.push_back(0);  // the best is never measured worse than the start
    int64_t best_measured = -1;
    for (int64_t i : ranked) {
      Trial& t = h.trials[static_cast<size_t>(i)];
      lower::LowerResult lr = lower::lower(m_, t_, t.config, o_.lower);
      if (!lr) continue;
      ir::Result<double> us = o_.measure(*lr.value, t);
      if (!us || !std::isfinite(*us) || *us <= 0) {
        ir::Diagnostic d = us ? ir::error("search.measure", fmt::format("the measurement {} is not "
                                                                        "a positive latency",
                                                                        *us))
                              : us.diagnostics.front();
        d.severity = ir::Severity::Warning;  // the trial keeps its prediction
        t.diagnostics.push_back(std::move(d));
        continue;
      }
      t.measured_us = *us;
      t.score = *us;
      if (best_measured < 0 || t.score < h.score(best_measured)) best_measured = i;
    }
    if (best_measured >= 0) h.incumbent = best_measured;
    if (o_.on_measured)
      for (int64_t i : ranked) o_.on_measured(h.trials[static_cast<size_t>(i)]);
  }

  res.best = h.incumbent;
  res.valid = std::count_if(h.trials.begin(), h.trials.end(),
                            [](const Trial& t) { return t.valid && t.duplicate_of < 0; });
  res.trials = std::move(h.trials);
  res.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (res.best < 0) {
    ir::Diagnostics d{
        ir::error("search.none-valid",
                  fmt::format("no candidate of {} trials lowered and validated for {} on {}",
                              res.trials.size(), m_.name, t_.record.name))};
    for (const ir::Diagnostic& x : res.trials.front().diagnostics) {
      ir::Diagnostic why = x;
      why.message = "the start config: " + why.message;
      d.push_back(std::move(why));
    }
    return d;
  }
  // The best config, lowered again from nothing and proven again before anyone writes it.
  lower::LowerResult lr =
      lower::lower(m_, t_, res.trials[static_cast<size_t>(res.best)].config, o_.lower);
  if (!lr) return std::move(lr.diagnostics);
  validate::Result v = validate::validate(*lr.value);
  AMK_ASSERT(v.ok, "the best config lowered again does not validate");
  res.best_program = std::move(*lr.value);
  return res;
}

}  // namespace amk::search
