#include "app/search_session.h"

#include <algorithm>

#include <fmt/format.h>

#include "ir/fileio.h"
#include "ir/json_io.h"
#include "ir/json_value.h"
#include "ir/pyjson.h"
#include "lower/config.h"

namespace amk::app {

ir::Result<std::unique_ptr<SearchSession>> SearchSession::create(SearchRequest req) {
  // The bounds `amk search` puts on its options, for every caller (Python, the request seam).
  const search::SearchOptions& o = req.options;
  if (o.budget < 1 || o.budget > search::kMaxBudget)
    return ir::error("usage.option", fmt::format("budget must be in [1, {}] (got {})",
                                                 search::kMaxBudget, o.budget));
  if (o.jobs < 1 || o.jobs > search::kMaxJobs)
    return ir::error("usage.option",
                     fmt::format("jobs must be in [1, {}] (got {})", search::kMaxJobs, o.jobs));
  if (o.min_batch < 0 || o.min_batch > search::kMaxBudget)
    return ir::error("usage.option", fmt::format("min_batch must be in [0, {}] (got {})",
                                                 search::kMaxBudget, o.min_batch));
  if (o.min_batch > 0 && o.algorithm != search::Algorithm::Descent)
    return ir::error("usage.option",
                     "min_batch applies to the descent algorithm (amk proposes one at a time)");
  if (!(o.deadline_s >= 0))
    return ir::error("usage.option", fmt::format("time must be >= 0 (got {})", o.deadline_s));
  std::unique_ptr<SearchSession> s(new SearchSession);
  ir::Diagnostics warnings;
  auto model = lower::load_model(req.model);
  if (!model) return std::move(model.diagnostics);
  ir::append(warnings, std::move(model.diagnostics));
  s->model_ = std::move(*model.value);
  auto target = targets::load_target(req.target);
  if (!target) return std::move(target.diagnostics);
  s->target_ = std::move(*target.value);
  if (req.start)
    if (ir::Result<lower::Knobs> k = lower::parse_knobs(*req.start, s->target_); !k) {
      if (!req.start_origin.empty()) ir::set_file(k.diagnostics, req.start_origin);
      return std::move(k.diagnostics);
    }
  ir::Result<targets::Runtime> rt = targets::resolve_runtime(req.runtime, s->target_.record);
  if (!rt) return std::move(rt.diagnostics);
  s->runtime_ = req.runtime.empty() ? targets::default_runtime(s->target_) : std::move(*rt.value);
  const ir::ScheduleConfig base = req.start ? *req.start : lower::default_config();
  // The space keeps to the runtime's launch; a start beyond it is searched from as given.
  ir::Diagnostics limits = targets::runtime_limits(s->runtime_, base);
  if (!req.start_origin.empty()) ir::set_file(limits, req.start_origin);
  ir::append(warnings, std::move(limits));
  ir::Result<search::Space> space = [&]() -> ir::Result<search::Space> {
    if (req.space.empty()) return search::default_space(s->model_, s->target_, base, &s->runtime_);
    ir::Result<std::string> text = ir::read_file(req.space);
    if (!text) return std::move(text.diagnostics);
    return search::parse_space(*text, req.space, s->model_, s->target_, base, &s->runtime_);
  }();
  if (!space) return std::move(space.diagnostics);
  s->space_ = std::move(*space.value);
  s->options_ = std::move(req.options);
  s->options_.start = req.start;
  s->options_.lower.runtime = &s->runtime_;
  s->header_ = search::header_of(s->model_, s->target_, s->space_, s->options_);
  if (!req.resume.empty()) {
    ir::Result<search::Log> log = search::read_log(req.resume);
    if (!log) return std::move(log.diagnostics);
    if (log->header) {
      const search::LogHeader& a = *log->header;
      const search::LogHeader& b = s->header_;
      const std::pair<const char*, bool> same[] = {{"model", a.model == b.model},
                                                   {"target", a.target == b.target},
                                                   {"algorithm", a.algorithm == b.algorithm},
                                                   {"objective", a.objective == b.objective},
                                                   {"seed", a.seed == b.seed},
                                                   {"min_batch", a.min_batch == b.min_batch},
                                                   {"space", a.space == b.space},
                                                   {"start", a.start == b.start},
                                                   {"runtime", a.runtime == b.runtime}};
      for (const auto& [field, equal] : same)
        if (!equal) {
          ir::Diagnostic d = ir::error(
              "search.replay",
              fmt::format("the log is of another search: its {} differs from this one's", field),
              fmt::format("/search/{}", field));
          d.file = req.resume;
          return d;
        }
    }
    s->options_.replay = std::move(log->trials);
    s->resume_complete_ = log->complete;
    ir::append(warnings, std::move(log->warnings));
  }
  ir::Result<std::unique_ptr<SearchSession>> r(std::move(s));
  r.diagnostics = std::move(warnings);
  return r;
}

const search::Trial* SearchSession::logged(int64_t index) const {
  const std::vector<search::Trial>& log = options_.replay;  // by index (read_log)
  const auto it = std::lower_bound(log.begin(), log.end(), index,
                                   [](const search::Trial& t, int64_t i) { return t.index < i; });
  return it != log.end() && it->index == index ? &*it : nullptr;
}

ir::Result<search::SearchResult> SearchSession::run(
    std::function<bool(const search::Trial&)> on_trial,
    std::function<void(const search::Trial&)> on_measured,
    std::function<ir::Status(const std::vector<search::Trial*>&)> evaluate) {
  search::SearchOptions o = options_;
  o.on_trial = std::move(on_trial);
  o.on_measured = std::move(on_measured);
  o.evaluate = std::move(evaluate);
  return search::Search(model_, target_, space_, std::move(o)).run();
}

namespace {

// A trial as in the log, without its timings and diagnostics.
nlohmann::ordered_json trial_summary(const search::Trial& t) {
  nlohmann::ordered_json j = ir::reread_object(search::trial_json(t));
  j.erase("duplicate_of");
  j.erase("diagnostics");
  for (const search::TrialField& f : search::trial_results())
    if (f.timing) j.erase(std::string(f.name));
  return j;
}

}  // namespace

nlohmann::ordered_json search_summary_json(const SearchSession& s, const search::SearchResult& r) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["model"] = s.model().name;
  j["target"] = s.target().record.name;
  j["runtime"] = s.header().runtime;
  j["algorithm"] = search::name(s.options().algorithm);
  j["min_batch"] = s.options().min_batch;
  j["objective"] = search::name(s.options().objective);
  j["seed"] = s.options().seed;
  j["trials"] = r.trials.size();
  j["evaluations"] = r.evaluations;
  j["duplicates"] = r.duplicates;
  j["valid"] = r.valid;
  j["replayed"] = r.replayed;
  j["exhausted"] = r.exhausted;
  j["start"] = trial_summary(r.trials.front());
  j["best"] = trial_summary(r.trials[static_cast<size_t>(r.best)]);
  j["candidates_per_s"] = static_cast<double>(r.evaluations) / std::max(r.wall_s, 1e-9);
  j["wall_s"] = r.wall_s;
  return j;
}

ir::Status take_executor_results(const std::vector<search::Trial*>& batch,
                                 const std::vector<std::string>& results) {
  if (results.size() != batch.size())
    return ir::error("search.executor",
                     fmt::format("the executor returned {} results for {} configs", results.size(),
                                 batch.size()));
  for (size_t i = 0; i < batch.size(); ++i) {
    search::Trial& want = *batch[i];
    auto bad = [&](const std::string& why) {
      return ir::error("search.executor",
                       fmt::format("the executor's result {} (trial {}) {}", i, want.index, why));
    };
    ir::Result<ir::JsonValue> doc = ir::parse_json_object(results[i], "an executor's result");
    if (!doc) return bad("is not a trial: " + ir::error_messages(doc.diagnostics));
    nlohmann::ordered_json& j = doc->mut();
    j["index"] = want.index;
    j["source"] = search::name(want.source);
    ir::Result<search::Trial> got = search::parse_trial(ir::dump_text(j));
    if (!got) return bad("is not a trial: " + ir::error_messages(got.diagnostics));
    if (got->key != want.key)
      return bad(
          fmt::format("is for the config {}, not for {}, the one it was sent: the executor "
                      "mixed up its results",
                      got->key, want.key));
    search::take_results(want, *got);
  }
  return {};
}

}  // namespace amk::app
