// A search set up from the arguments `amk search`, the Python module and the servers take: a
// model and a target by name or file, a space file (or the built-in one), a start config and a
// resume log, checked against each other before anything runs.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/result.h"
#include "lower/model.h"
#include "search/search.h"
#include "search/space.h"
#include "targets/runtime.h"
#include "targets/target.h"

namespace amk::app {

/// What to search.
struct SearchRequest {
  std::string model;                        ///< a built-in name, a spec or a config.json
  std::string target;                       ///< a built-in name or a target .json
  std::string space;                        ///< a space file ("": schedules/space.json)
  std::optional<ir::ScheduleConfig> start;  ///< nullopt: AMK's default_config
  std::string start_origin;                 ///< where the start came from (its file, --start)
  std::string resume;                       ///< a --log of an earlier run of the same search
  std::string runtime;                      ///< a built-in name or a runtime .json ("": the
                                            ///< target's)
  search::SearchOptions options;            ///< its start and replay are filled from the above
};

/// A search ready to run: the model, target and space it owns, and the search.
class SearchSession {
 public:
  /// Loads everything; a start config the target refuses is `config.invalid` naming
  /// start_origin; a resume log of another search is `search.replay`.
  static ir::Result<std::unique_ptr<SearchSession>> create(SearchRequest req);
  /// Runs it (see search::Search::run) with these hooks (SearchOptions::on_trial, on_measured,
  /// evaluate).
  ir::Result<search::SearchResult> run(
      std::function<bool(const search::Trial&)> on_trial = {},
      std::function<void(const search::Trial&)> on_measured = {},
      std::function<ir::Status(const std::vector<search::Trial*>&)> evaluate = {});
  const lower::ModelSpec& model() const { return model_; }
  const targets::TargetSpec& target() const { return target_; }
  /// The runtime its predictions are for.
  const targets::Runtime& runtime() const { return runtime_; }
  const search::Space& space() const { return space_; }
  /// The log header of this search.
  const search::LogHeader& header() const { return header_; }
  /// The options it runs with.
  const search::SearchOptions& options() const { return options_; }
  /// Trials replayed from the resume log.
  size_t replayed() const { return options_.replay.size(); }
  /// The resume log's trial `index` (nullptr when it has none).
  const search::Trial* logged(int64_t index) const;
  /// The resume log's bytes up to its last whole line (a line cut off by a crash comes after).
  size_t resume_complete() const { return resume_complete_; }

 private:
  SearchSession() = default;
  lower::ModelSpec model_;
  targets::TargetSpec target_;
  search::Space space_;
  search::SearchOptions options_;
  search::LogHeader header_;
  targets::Runtime runtime_;  ///< options_.lower.runtime points here
  size_t resume_complete_ = 0;
};

/// Fills the trials of `batch` from an executor's results, one per trial in order, each the JSON
/// text of a trial (what search_eval answers): a result of another count, one that is not a
/// trial, or one for another config than the one it was sent for is a `search.executor` error
/// naming it (an executor that mixes up its results must not score configs wrongly).
ir::Status take_executor_results(const std::vector<search::Trial*>& batch,
                                 const std::vector<std::string>& results);

/// The `amk search --json` document of a finished search: model, target, algorithm, objective,
/// seed, counts, the start and best trials (as in the log, without timings and diagnostics),
/// candidates/s and wall time.
nlohmann::ordered_json search_summary_json(const SearchSession& s, const search::SearchResult& r);

}  // namespace amk::app
