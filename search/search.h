// Schedule search with the full proof in the loop: propose ScheduleConfigs, lower each (a warm
// lowering per worker), prove it with the validator (every rule, at any size), score it with the
// cost model (or a measurement), keep the best. Deterministic for a seed whatever the jobs.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ir/diagnostic.h"
#include "ir/program.h"
#include "ir/result.h"
#include "lower/lower.h"
#include "lower/model.h"
#include "search/space.h"
#include "targets/target.h"
#include "validate/validate.h"

namespace amk::search {

/// Where a trial's config came from.
enum class Source : uint8_t {
  Start,      ///< the start config (trial 0)
  Random,     ///< a uniform random point
  Mutate,     ///< the incumbent with one knob changed at random (AMK's exploit)
  Neighbor,   ///< one knob of the descent's current point changed (every value, in turn)
  Crossover,  ///< knobs of two good points mixed
  Perturb,    ///< the incumbent with several knobs changed (leaves a local optimum)
  Combine,    ///< the descent's current point with every knob that improved it alone changed
  Repair,     ///< a refused neighbour with the knob its error names changed too
};
/// "start", "random", "mutate", "neighbor", "crossover", "perturb", "combine", "repair".
std::string_view name(Source s);
/// The source of a name, or nullopt.
std::optional<Source> parse_source(std::string_view s);

/// What a search minimises.
enum class Objective : uint8_t {
  Predicted,   ///< amk's cost model (per-SM bandwidth share, shared HBM)
  AmkFormula,  ///< AMK's formula (every SM streams at full bandwidth)
};

/// How it proposes configs.
enum class Algorithm : uint8_t {
  Descent,  ///< the default: steepest one-knob descent from the start (each step also tries the
            ///< knobs that improved alone, together), then crossover of the best points and
            ///< perturbations of the incumbent, descending again
  Amk,      ///< AMK's policy: the start, a 0.35 share of random configs, then one-knob mutations
            ///< of the incumbent, one at a time, kept iff strictly better
};

/// One candidate of a search.
struct Trial {
  int64_t index = 0;
  Source source = Source::Start;
  ir::ScheduleConfig config;
  std::string key;            ///< the canonical config text (config_key)
  int64_t duplicate_of = -1;  ///< an earlier trial with the same config: not evaluated again
  bool valid = false;
  ir::Diagnostics diagnostics;  ///< why it was rejected: the lowering's or the validator's errors
  double predicted_us = std::numeric_limits<double>::quiet_NaN();
  double amk_formula_us = std::numeric_limits<double>::quiet_NaN();
  std::optional<double> measured_us;  ///< --measure: the command's latency
  int64_t tasks = 0;
  double eval_us = 0;  ///< lower + validate + cost (0 for a duplicate or a replayed trial)
  double lower_us = 0, validate_us = 0, cost_us = 0;  ///< eval_us by step
  std::string proof;  ///< the validator's path (validate::name(ProofPath)); "" if not validated
  double score = std::numeric_limits<double>::infinity();  ///< the objective; +inf if invalid
};

/// The most evaluations a search takes.
inline constexpr int64_t kMaxBudget = 1'000'000'000;
/// The most evaluator threads a search takes.
inline constexpr int kMaxJobs = 256;

/// How a search runs.
struct SearchOptions {
  int64_t budget = 200;   ///< evaluations (duplicates cost nothing and do not count)
  double deadline_s = 0;  ///< stop proposing after this many seconds (0: none)
  uint64_t seed = 0;
  int jobs = 1;  ///< evaluator threads (each a warm lowerer and validator)
  Algorithm algorithm = Algorithm::Descent;
  /// descent: at least this many new configs per batch where the space has them (the neighbours
  /// of the next best points join the current point's), for as many workers as that keeps busy.
  /// 0: the current point's neighbourhood alone. Part of what the trials depend on.
  int64_t min_batch = 0;
  Objective objective = Objective::Predicted;
  std::optional<ir::ScheduleConfig> start;  ///< nullopt: AMK's default_config
  lower::LowerOptions lower;                ///< position, batch, dtype, quantisation
  /// Measures a program on hardware (the exploit): a latency in µs, or an error (the trial then
  /// keeps its prediction). Called for the `measure_top_k` best predicted valid trials.
  std::function<ir::Result<double>(const ir::Program&, const Trial&)> measure;
  int measure_top_k = 0;
  /// Called with every trial in index order on the calling thread; false stops the search.
  std::function<bool(const Trial&)> on_trial;
  /// Called with each trial the exploit measured (or tried to: a warning says why not).
  std::function<void(const Trial&)> on_measured;
  /// Trials of an earlier run of the same search (a --resume log): a proposal whose config one of
  /// them evaluated takes its result instead of being evaluated again, so a resumed search, of
  /// the same budget or a larger one, gives the trials of an uninterrupted one.
  std::vector<Trial> replay;
  /// Evaluates a batch elsewhere (an executor, a cluster) instead of the `jobs` threads: fills
  /// each trial's results from its config as Evaluator::evaluate would; an error stops the search.
  std::function<ir::Status(const std::vector<Trial*>&)> evaluate;
  /// Set by another thread (a server's cancel or time ceiling): the search stops before its next
  /// evaluation and fails with `search.cancelled`.
  const std::atomic<bool>* stop = nullptr;
};

/// One warm worker of a search: lower + prove + score one config, reusing its lowering and its
/// validators (one per recent structure) across calls (what every search thread and every remote
/// worker runs).
class Evaluator {
 public:
  /// `m` and `t` must outlive the evaluator.
  Evaluator(const lower::ModelSpec& m, const targets::TargetSpec& t, const lower::LowerOptions& o);
  ~Evaluator();
  Evaluator(Evaluator&&) noexcept;
  Evaluator& operator=(Evaluator&&) noexcept;
  /// Fills `t`'s valid, diagnostics (the first rejection reasons), scores, tasks and timings from
  /// its config. Each structure it met recently keeps its validator, so a config that comes back
  /// to one is proved against that structure's last program (incrementally where they differ in
  /// what the incremental proof reruns).
  void evaluate(Trial& t, Objective objective);
  /// The structure `c` lowers to (lower::Lowerer::structure_of): configs with one structure share
  /// the lowering's tile, fuse and dependency work, and their programs differ only where the
  /// incremental proof reruns what changed.
  std::string structure_of(const ir::ScheduleConfig& c);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Where a result of a trial lives.
using TrialMember =
    std::variant<bool Trial::*, int64_t Trial::*, double Trial::*, std::optional<double> Trial::*,
                 std::string Trial::*, ir::Diagnostics Trial::*>;
/// One result of a trial (what an evaluation fills), under its key in the log.
struct TrialField {
  std::string_view name;
  TrialMember member;
  bool timing = false;  ///< how an evaluation ran (a time, the proof's path): empty where a result
                        ///< was copied, and not part of what a trial is
};
/// A trial's results in the order the log writes them (after index, source, config and
/// duplicate_of): the one list the log's writer and reader, take_results and the summaries walk.
std::span<const TrialField> trial_results();
/// Copies an evaluation's results (trial_results()) from `from` to `to`, keeping `to`'s index,
/// source, config and key; with `copied`, `to`'s timings are 0 (it was not evaluated).
void take_results(Trial& to, const Trial& from, bool copied = false);

/// A config's structure: its tiling and fusion grouping as text. Configs that share it share the
/// warm lowering's tile, fuse and dependency work (lower::Lowerer).
std::string structure_text(const ir::ScheduleConfig& c);
/// A batch of configs in units for `parts` evaluators: the positions of the configs of one
/// structure, so that one evaluator lowers the structure once for all of them, except that a
/// structure with more than an even share of the batch is cut in even shares. Largest first.
std::vector<std::vector<size_t>> affinity_units(std::span<const ir::ScheduleConfig* const> configs,
                                                size_t parts);
/// The units of affinity_units dealt to at most `parts` chunks of about equal cost (a unit counts
/// its configs and two more for its structure's lowering), for evaluators that take one chunk
/// each (an executor's workers).
std::vector<std::vector<size_t>> affinity_chunks(std::span<const ir::ScheduleConfig* const> configs,
                                                 size_t parts);

/// What a search found.
struct SearchResult {
  std::vector<Trial> trials;  ///< every trial, by index
  int64_t best = -1;          ///< the best valid trial (the start when nothing beat it)
  ir::Program best_program;   ///< the best config lowered again and proven again
  int64_t evaluations = 0, duplicates = 0, valid = 0, replayed = 0;
  bool stopped = false;    ///< on_trial asked to stop
  bool exhausted = false;  ///< ended before the budget: the algorithm had nothing new to try
  double wall_s = 0;
};

/// A search of `m` on `t` over `space`.
class Search {
 public:
  /// `m` and `t` must outlive the search.
  Search(const lower::ModelSpec& m, const targets::TargetSpec& t, Space space,
         SearchOptions options);
  /// Runs to the budget or the deadline. Fails when the start config is invalid for this model
  /// and target (`search.start`), or when no trial was valid (`search.none-valid`, with the
  /// trials). The trials of a budget are a prefix of those of a larger one.
  ir::Result<SearchResult> run();

 private:
  const lower::ModelSpec& m_;
  const targets::TargetSpec& t_;
  Space space_;
  SearchOptions o_;
};

/// A trial as one JSON line (the --log format): index, source, config, valid, scores, tasks,
/// eval_us, duplicate_of, diagnostics (code, message, pointer).
std::string trial_json(const Trial& t);
/// A trial from a log line; errors name the line's JSON pointer.
ir::Result<Trial> parse_trial(std::string_view line);
/// What identifies a search in its log (the first line): a resumed log must match it.
struct LogHeader {
  std::string model, target, algorithm, objective, start;  ///< start: the start config's key
  uint64_t seed = 0;
  uint64_t space = 0;  ///< config_hash of the space's knobs and values
  int64_t min_batch = 0;
  std::string runtime;  ///< the runtime the predictions are for
};
/// The header as one JSON line ({"search": {...}}).
std::string header_json(const LogHeader& h);
/// A log read back: its header and its trials (by index; a later line for an index wins).
struct Log {
  std::optional<LogHeader> header;
  std::vector<Trial> trials;
  size_t complete = 0;       ///< bytes up to the end of the last whole line read
  ir::Diagnostics warnings;  ///< a last line cut off by a crash (dropped)
};
/// Reads a --log file; a malformed line is an error naming the file and line:column, except an
/// unterminated last line (a run killed while writing it), which is dropped with a warning.
ir::Result<Log> read_log(const std::string& path);
/// The header of a search about to run.
LogHeader header_of(const lower::ModelSpec& m, const targets::TargetSpec& t, const Space& s,
                    const SearchOptions& o);
/// "descent" or "amk"; "predicted" or "amk-formula".
std::string_view name(Algorithm a);
std::string_view name(Objective o);
/// The algorithm of a name, else a `usage.option` error naming `what` (the argument as the caller
/// spells it: "--algo", "algo").
ir::Result<Algorithm> algorithm_named(std::string_view what, std::string_view s);
/// The objective of a name, else an error as algorithm_named's.
ir::Result<Objective> objective_named(std::string_view what, std::string_view s);

/// AMK's results.tsv: a header, then per trial its index, source, valid, score, predicted and
/// measured µs, tasks, kept (it became the incumbent), the first rejection reason and the config.
std::string results_tsv(const SearchResult& r);

}  // namespace amk::search
