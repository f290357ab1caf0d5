#include "search/search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include <fmt/format.h>

#include "ir/cache.h"
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
                               Source::Neighbor, Source::Crossover, Source::Perturb,
                               Source::Combine,  Source::Repair};
constexpr std::string_view kSourceNames[] = {"start",     "random",  "mutate",  "neighbor",
                                             "crossover", "perturb", "combine", "repair"};
constexpr size_t kReasons = 3;  // rejection diagnostics kept per trial (AMK keeps 3 messages)
// What a unit's structure costs an evaluator that does not hold it, in evaluations: a tiling, an
// emission and a full proof.
constexpr size_t kMissCost = 4;

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

// An evaluator proves and scores each candidate with the validator and the estimator of its
// structure (Lowerer::structure_of) and emission order (Lowerer::emission_order: a placement in
// critical-path order renumbers the tasks, which a proof against the other order would take for
// new tasks): a search's next neighbourhoods come back to the tilings of its last ones with other
// placements, and the validator that proved a structure last proves it again incrementally, the
// estimator takes its tasks' loads and recalls its recent walks. Slots are kept
// while their programs total at most kSlotTasks tasks (some 2 MB per 4k tasks each: eight
// Llama-3.2-1B structures), and at least one; past that the least recently used takes the next
// new structure.
constexpr size_t kMaxSlots = 8;
constexpr size_t kSlotTasks = 40'000;

struct Slot {
  std::string structure;
  validate::Validator validator;
  targets::Estimator estimator;  // of this structure's programs (their loads, its recent walks)
  bool estimated_last = false;  // the estimator's last program is the one the validator proved last
  size_t tasks = 0;             // of the program it proved last
  uint64_t used = 0;
};

struct Evaluator::Impl {
  const targets::TargetSpec& target;
  const targets::Runtime& runtime;
  lower::Lowerer lowerer;
  std::vector<Slot> slots;
  uint64_t clock = 0;

  // The slot of `structure`, else a new one within the budget, else the least recently used.
  Slot& slot_for(const std::string& structure) {
    auto it = std::find_if(slots.begin(), slots.end(),
                           [&](const Slot& s) { return s.structure == structure; });
    if (it != slots.end()) {
      it->used = ++clock;
      return *it;
    }
    const size_t before = slots.size();
    Slot& s =
        ir::entry_to_fill(slots, 1, kMaxSlots, kSlotTasks, [](const Slot& x) { return x.tasks; });
    if (slots.size() > before) {
      s.validator.set_threads(1);         // a search runs evaluators in parallel, one per thread
      s.validator.set_incremental(true);  // a candidate often differs from the last in one knob
    }
    s.structure = structure;
    s.estimated_last = false;
    s.used = ++clock;
    return s;
  }
};

Evaluator::Evaluator(const lower::ModelSpec& m, const targets::TargetSpec& t,
                     const lower::LowerOptions& o)
    : impl_(std::make_unique<Impl>(Impl{t,
                                        o.runtime ? *o.runtime : targets::default_runtime(t),
                                        lower::Lowerer(m, t, o),
                                        {},
                                        0})) {}
Evaluator::~Evaluator() = default;
Evaluator::Evaluator(Evaluator&&) noexcept = default;
Evaluator& Evaluator::operator=(Evaluator&&) noexcept = default;

void Evaluator::evaluate(Trial& t, Objective obj) {
  lower::Lowerer& lowerer = impl_->lowerer;
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
  Slot& slot =
      impl_->slot_for(fmt::format("{}#{:x}", lowerer.structure(), lowerer.emission_order()));
  validate::Validator& validator = slot.validator;
  validate::Result v = validator.validate(p, lowerer.tasks_stamp());
  slot.tasks = p.tasks.size();
  const auto t2 = Clock::now();
  t.validate_us = std::chrono::duration<double, std::micro>(t2 - t1).count();
  t.proof = validate::name(validator.last_path());
  // A proof that took the last one's structure found p's tasks and buffers equal to those of the
  // program this validator proved last: when that one was estimated last, its tasks' loads are
  // still right.
  const bool same_tasks = !validator.last_path().full && slot.estimated_last;
  slot.estimated_last = v.ok;
  if (!v.ok) {
    for (ir::Diagnostic& d : v.errors) {
      if (t.diagnostics.size() == kReasons) break;
      t.diagnostics.push_back(std::move(d));
    }
    t.eval_us = t.lower_us + t.validate_us;
    return;
  }
  const targets::CostEstimate c =
      slot.estimator(p, impl_->target.record, impl_->runtime, validator.graph(),
                     validator.queue_graph(), same_tasks);
  t.cost_us = us_since(t2);
  t.valid = true;
  t.predicted_us = c.makespan_us;
  t.amk_formula_us = c.amk_makespan_us;
  t.score = obj == Objective::Predicted ? c.makespan_us : c.amk_makespan_us;
  t.eval_us = t.lower_us + t.validate_us + t.cost_us;
}

std::string Evaluator::structure_of(const ir::ScheduleConfig& c) {
  return impl_->lowerer.structure_of(c);
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

std::span<const TrialField> trial_results() {
  static const TrialField kFields[] = {
      {"valid", &Trial::valid},
      {"score", &Trial::score},
      {"predicted_us", &Trial::predicted_us},
      {"amk_formula_us", &Trial::amk_formula_us},
      {"measured_us", &Trial::measured_us},
      {"tasks", &Trial::tasks},
      {"eval_us", &Trial::eval_us, true},
      {"lower_us", &Trial::lower_us, true},
      {"validate_us", &Trial::validate_us, true},
      {"cost_us", &Trial::cost_us, true},
      {"proof", &Trial::proof, true},
      {"diagnostics", &Trial::diagnostics},
  };
  return kFields;
}

void take_results(Trial& to, const Trial& from, bool copied) {
  for (const TrialField& f : trial_results())
    std::visit(
        [&](auto m) {
          using T = std::remove_reference_t<decltype(to.*m)>;
          to.*m = copied && f.timing ? T{} : from.*m;
        },
        f.member);
}

Search::Search(const lower::ModelSpec& m, const targets::TargetSpec& t, Space space,
               SearchOptions options)
    : m_(m), t_(t), space_(std::move(space)), o_(std::move(options)) {}

namespace {

// One run of a search: the trials so far, the evaluators and their pool, and the steps of a run
// (propose, settle, evaluate, record; then measure the best and prove the winner again).
class Run {
 public:
  Run(const lower::ModelSpec& m, const targets::TargetSpec& t, Space& space, const SearchOptions& o)
      : m_(m),
        t_(t),
        space_(space),
        o_(o),
        base_(o.start ? *o.start : lower::default_config()),
        pool_(o.evaluate ? 1 : static_cast<size_t>(std::max(1, o.jobs))) {
    if (!o_.evaluate)
      for (int j = 0; j < std::max(1, o_.jobs); ++j) workers_.emplace_back(m_, t_, o_.lower);
    for (const Trial& r : o_.replay)
      if (r.duplicate_of < 0) replay_by_key_.emplace(r.key, &r);
  }
  // A warm evaluator holds tens of MB of structures in small blocks: each is freed on a thread
  // of its own, so that the frees of one do not wait for those of the others.
  ~Run() {
    pool_.run(workers_.size(), [&](size_t, size_t i) { Evaluator gone = std::move(workers_[i]); });
  }
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  ir::Result<SearchResult> run() {
    if (ir::Status st = explore(); !st) return std::move(st.diagnostics);
    if (o_.measure && o_.measure_top_k > 0 && !res_.stopped) measure_best();
    return finish();
  }

 private:
  bool stopped() const { return o_.stop && o_.stop->load(std::memory_order_relaxed); }
  bool out_of_time() const {
    return o_.deadline_s > 0 &&
           std::chrono::duration<double>(Clock::now() - t0_).count() >= o_.deadline_s;
  }
  ir::ScheduleConfig config_of(const Proposal& q) const {
    return q.source == Source::Start ? base_ : space_.config(q.point, base_);
  }

  // The start, then the strategy's batches until the budget, the deadline, a stop, or a space
  // with nothing new left.
  ir::Status explore() {
    std::unique_ptr<Strategy> strategy =
        o_.algorithm == Algorithm::Amk
            ? amk_strategy(space_, o_.seed, o_.budget)
            : descent_strategy(space_, o_.seed, o_.min_batch,
                               [&](const Point& p) { return config_key(space_.config(p, base_)); });
    if (ir::Status st = run_batch({{space_.point_of(base_), Source::Start}}); !st) return st;
    int idle = 0;  // batches that evaluated nothing new (a small space runs out)
    while (!res_.stopped && res_.evaluations < o_.budget && !out_of_time() && idle < 64) {
      std::vector<Proposal> batch = strategy->next(h_);
      if (batch.empty()) {
        res_.exhausted = true;
        break;
      }
      cut_at_budget(batch);
      const int64_t before = res_.evaluations;
      if (ir::Status st = run_batch(std::move(batch)); !st) return st;
      idle = res_.evaluations == before ? idle + 1 : 0;
    }
    if (idle == 64) res_.exhausted = true;
    return {};
  }

  // Where the budget ends inside a batch: after as many new configs as it has left.
  void cut_at_budget(std::vector<Proposal>& batch) const {
    // A batch no longer than the budget left has no more new configs than that (the usual case:
    // its keys are then worked out once, by settle).
    if (static_cast<int64_t>(batch.size()) <= o_.budget - res_.evaluations) return;
    std::unordered_set<std::string> fresh;
    for (size_t i = 0; i < batch.size(); ++i) {
      std::string key = config_key(config_of(batch[i]));
      if (!h_.by_key.count(key) && fresh.insert(std::move(key)).second &&
          static_cast<int64_t>(fresh.size()) == o_.budget - res_.evaluations) {
        batch.resize(i + 1);
        return;
      }
    }
  }

  // Turns proposals into trials (duplicates and replayed ones settled at once), evaluates the
  // rest, and records them in index order.
  ir::Status run_batch(std::vector<Proposal> batch) {
    std::vector<Trial> trials(batch.size());
    const std::vector<size_t> todo = settle(batch, trials);
    if (ir::Status st = evaluate(trials, todo); !st) return st;
    if (stopped()) return ir::error("search.cancelled", "the search was cancelled");
    record(batch, trials);
    return {};
  }

  // Fills each trial's config and key; returns the ones to evaluate (a duplicate takes its
  // original's results later, a replayed one its log's now).
  std::vector<size_t> settle(const std::vector<Proposal>& batch, std::vector<Trial>& trials) {
    std::vector<size_t> todo;
    std::unordered_map<std::string, size_t> in_batch;
    for (size_t i = 0; i < batch.size(); ++i) {
      Trial& t = trials[i];
      t.index = static_cast<int64_t>(h_.trials.size() + i);
      t.source = batch[i].source;
      t.config = config_of(batch[i]);
      t.key = config_key(t.config);
      if (auto it = h_.by_key.find(t.key); it != h_.by_key.end()) {
        t.duplicate_of = it->second;
      } else if (auto jt = in_batch.find(t.key); jt != in_batch.end()) {
        t.duplicate_of = trials[jt->second].index;
      } else if (auto kt = replay_by_key_.find(t.key); kt != replay_by_key_.end()) {
        in_batch.emplace(t.key, i);  // evaluated in the log: its result is taken
        take_results(t, *kt->second, /*copied=*/true);
        ++res_.replayed;
      } else {
        in_batch.emplace(t.key, i);
        todo.push_back(i);
      }
    }
    return todo;
  }

  // Evaluates trials[todo]: elsewhere (SearchOptions::evaluate), or on the workers in units of
  // one structure each, so that a thread lowers a structure for all of its configs.
  ir::Status evaluate(std::vector<Trial>& trials, const std::vector<size_t>& todo) {
    if (o_.evaluate) {
      std::vector<Trial*> remote;
      for (size_t k : todo) remote.push_back(&trials[k]);
      return remote.empty() ? ir::Status{} : o_.evaluate(remote);
    }
    // Units by the structure the lowering keys: configs whose tilings differ only in knobs the
    // tiling ignores are one unit, so their proofs after the first are incremental.
    std::vector<std::string> texts;
    for (size_t k : todo) texts.push_back(workers_[0].structure_of(trials[k].config));
    std::vector<std::vector<size_t>> units = units_of(texts, workers_.size());
    longest_first(units, texts, lowered_);
    if (h_.trials.empty() && units.size() == 1 && workers_.size() > 1) {
      // The start config alone: while the first evaluator evaluates it, each other one evaluates
      // a copy (dropped), so that all come to the first neighbourhood warm (the model's graph
      // built, the start's structure kept, their memory mapped) instead of idling now and
      // starting cold then.
      pool_.run(workers_.size(), [&](size_t, size_t e) {
        if (e == 0) {
          for (size_t k : units[0]) workers_[0].evaluate(trials[todo[k]], o_.objective);
          return;
        }
        Trial warm;
        warm.config = trials[todo[units[0][0]]].config;
        workers_[e].evaluate(warm, o_.objective);
      });
      return {};
    }
    // Each evaluator keeps the structures it evaluated last (their lowering, program and
    // validator): a unit goes to its structure's evaluator (home_) unless that one has a miss's
    // worth more queued than the least loaded, and an evaluator whose queue runs dry takes the last
    // unit of the fullest other queue.
    const size_t n = workers_.size();
    std::vector<std::deque<size_t>> queues(n);
    std::vector<size_t> load(n, 0), ran_by(units.size());
    for (size_t u = 0; u < units.size(); ++u) {
      const size_t cost = units[u].size();
      size_t e = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
      if (auto home = home_.find(texts[units[u][0]]);
          home != home_.end() && load[home->second] <= load[e] + kMissCost)
        e = home->second;
      queues[e].push_back(u);
      load[e] += cost;
    }
    std::mutex claim;
    pool_.run(n, [&](size_t, size_t e) {
      for (;;) {
        size_t u = 0;
        {
          std::lock_guard<std::mutex> lock(claim);
          std::deque<size_t>* q = &queues[e];
          if (q->empty())
            q = &*std::max_element(queues.begin(), queues.end(), [](const auto& a, const auto& b) {
              return a.size() < b.size();
            });
          if (q->empty()) return;
          if (q == &queues[e]) {
            u = q->front();
            q->pop_front();
          } else {
            u = q->back();
            q->pop_back();
          }
        }
        ran_by[u] = e;
        for (size_t k : units[u])
          if (!stopped()) workers_[e].evaluate(trials[todo[k]], o_.objective);
      }
    });
    for (size_t u = 0; u < units.size(); ++u) home_.try_emplace(texts[units[u][0]], ran_by[u]);
    return {};
  }

  // Appends a batch's trials to the history in index order (a duplicate takes its original's
  // results), moves the incumbent, and tells on_trial (which may stop the search).
  void record(const std::vector<Proposal>& batch, std::vector<Trial>& trials) {
    const auto first = static_cast<int64_t>(h_.trials.size());  // trials[i] is trial first + i
    for (size_t i = 0; i < trials.size(); ++i) {
      Trial& t = trials[i];
      if (t.duplicate_of >= 0) {
        const Trial& orig = t.duplicate_of < first
                                ? h_.trials[static_cast<size_t>(t.duplicate_of)]
                                : trials[static_cast<size_t>(t.duplicate_of - first)];
        take_results(t, orig, /*copied=*/true);
        ++res_.duplicates;
      } else {
        ++res_.evaluations;
        h_.by_key.emplace(t.key, t.index);
      }
      h_.points.push_back(batch[i].point);
      h_.seen.insert(batch[i].point);
      if (t.valid && t.duplicate_of < 0 && t.score < h_.score(h_.incumbent)) h_.incumbent = t.index;
      h_.trials.push_back(std::move(t));
      if (o_.on_trial && !o_.on_trial(h_.trials.back())) {
        res_.stopped = true;
        return;
      }
    }
  }

  // The exploit: measures the best predicted configs (and the start) and ranks by measurement.
  void measure_best() {
    std::vector<int64_t> ranked;
    for (const Trial& t : h_.trials)
      if (t.valid && t.duplicate_of < 0) ranked.push_back(t.index);
    std::stable_sort(ranked.begin(), ranked.end(),
                     [&](int64_t a, int64_t b) { return h_.score(a) < h_.score(b); });
    if (ranked.size() > static_cast<size_t>(o_.measure_top_k))
      ranked.resize(static_cast<size_t>(o_.measure_top_k));
    if (h_.trials[0].valid && std::find(ranked.begin(), ranked.end(), 0) == ranked.end())
      ranked.push_back(0);  // the best is never measured worse than the start
    int64_t best_measured = -1;
    for (int64_t i : ranked) {
      Trial& t = h_.trials[static_cast<size_t>(i)];
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
      if (best_measured < 0 || t.score < h_.score(best_measured)) best_measured = i;
    }
    if (best_measured >= 0) h_.incumbent = best_measured;
    if (o_.on_measured)
      for (int64_t i : ranked) o_.on_measured(h_.trials[static_cast<size_t>(i)]);
  }

  // The result: the best config, lowered again from nothing and proven again before anyone
  // writes it; `search.none-valid` when no trial was valid.
  ir::Result<SearchResult> finish() {
    SearchResult res = std::move(res_);
    res.best = h_.incumbent;
    res.valid = std::count_if(h_.trials.begin(), h_.trials.end(),
                              [](const Trial& t) { return t.valid && t.duplicate_of < 0; });
    res.trials = std::move(h_.trials);
    res.wall_s = std::chrono::duration<double>(Clock::now() - t0_).count();
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
    lower::LowerResult lr =
        lower::lower(m_, t_, res.trials[static_cast<size_t>(res.best)].config, o_.lower);
    if (!lr) return std::move(lr.diagnostics);
    validate::Result v = validate::validate(*lr.value);
    AMK_ASSERT(v.ok, "the best config lowered again does not validate");
    res.best_program = std::move(*lr.value);
    return res;
  }

  const lower::ModelSpec& m_;
  const targets::TargetSpec& t_;
  Space& space_;  // point_of() adds the start's values to it
  const SearchOptions& o_;
  const Clock::time_point t0_ = Clock::now();
  const ir::ScheduleConfig base_;
  SearchResult res_;
  History h_;
  ir::Pool pool_;
  std::vector<Evaluator> workers_;
  std::unordered_set<std::string> lowered_;  // the structures (structure_of) evaluated so far
  // Each structure's evaluator: the one that evaluated it first (a unit taken by an idle one
  // leaves it there, so that structures do not wander between evaluators).
  std::unordered_map<std::string, size_t> home_;
  // A log's evaluations by config: a proposal the log evaluated takes its result, whatever its
  // index there (a search of another budget: AMK's random share depends on it).
  std::unordered_map<std::string, const Trial*> replay_by_key_;
};

}  // namespace

ir::Result<SearchResult> Search::run() {
  return Run(m_, t_, space_, o_).run();
}

}  // namespace amk::search
