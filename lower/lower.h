// model + target + ScheduleConfig -> a program: tile, fuse, dependencies, assign workers,
// allocate pages, emit; each pass one function, logged and timed on request.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/program.h"
#include "ir/result.h"
#include "lower/model.h"
#include "lower/plan.h"
#include "targets/target.h"

namespace amk::lower {

/// The lowered program, or the errors that stopped it (a user mistake: a bad config, pointer
/// under /config, or model), with the passes' log.
struct LowerResult : ir::Result<ir::Program> {
  std::vector<std::string> log;  ///< one line per pass when LowerOptions::log
  double seconds = 0;            ///< wall time of all passes
};

/// A lowering dtype by name: F32, BF16 or F16 (the dtypes of weights, activations and KV caches);
/// else a `usage.option` error naming `what` (the argument as the caller spells it).
ir::Result<ir::DType> lower_dtype_named(std::string_view what, std::string_view s);
/// A weight quantisation by name: "int8" or "int4", and with `none_word` "none" (the JSON and
/// Python front ends spell no quantisation null); else an error as lower_dtype_named's.
ir::Result<Quant> quant_named(std::string_view what, std::string_view s, bool none_word = true);

/// Lowers one decode step of `m` for `t` under `cfg` (nullopt: AMK's config-less "auto" point).
/// These are the passes only; compile() (compile.h) also proves and predicts the program.
LowerResult lower(const ModelSpec& m, const targets::TargetSpec& t,
                  const std::optional<ir::ScheduleConfig>& cfg, const LowerOptions& opt);

/// The warm lowering of a search's inner loop, for one model, target and options: the op graph is
/// built once, and the tasks, buffers and dependencies of the last (tiling, fusion) points are kept
/// (up to 120,000 tasks in all, some 60 MB for Llama-3.2-1B), so a config that differs only in
/// placement, pages or launch knobs, or comes back to a recent tiling, skips tile, fuse and the
/// dependency pass; one whose structure the fusion refused before is refused again with the same
/// errors at once. lower() is a cold Lowerer: both give the same bytes for the same config.
class Lowerer {
 public:
  /// `m` and `t` must outlive the lowerer; `warm` false keeps nothing between runs (lower()).
  Lowerer(const ModelSpec& m, const targets::TargetSpec& t, const LowerOptions& opt,
          bool warm = true);
  ~Lowerer();
  Lowerer(Lowerer&&) noexcept;
  Lowerer& operator=(Lowerer&&) noexcept;
  /// Lowers under `cfg`; on success the program stays in the lowerer until the next call (the
  /// result holds no program: see program() and take()). The log and seconds are filled as
  /// lower()'s.
  LowerResult run(const std::optional<ir::ScheduleConfig>& cfg);
  /// The program of the last successful run().
  const ir::Program& program() const;
  /// Moves it out.
  ir::Program take();
  /// How many run()s reused a cached (tiling, fusion) point.
  uint64_t cache_hits() const;
  /// How many run()s found the tasks of their structure as emitted before in the same order (only
  /// the SMs set): the structure's last program, kept while it is among the recent ones.
  uint64_t emits_recalled() const;
  /// A stamp of the last successful run's tasks but their SMs, unique in the process: a run that
  /// recalls the tasks (emits_recalled) keeps its structure's stamp, any other emission takes a
  /// new one, so programs with one stamp have the same tasks but for their SMs (the promise
  /// validate::Validator::validate takes). 0 for a cold lowerer.
  uint64_t tasks_stamp() const;
  /// The structure key of the last successful run() (structure_of its config) for a warm
  /// lowerer; empty for a cold one.
  const std::string& structure() const;
  /// A hash of the order the last successful run() emitted its tasks in (0: task order): the
  /// programs of one structure and one order differ only where a placement, page plan or config
  /// differs (load_balance's critical-path order renumbers the tasks).
  uint64_t emission_order() const;
  /// The key of the structure (tasks, buffers, dependencies) `cfg` lowers to, as run() keys its
  /// cache: configs with one key differ only in what the later passes read (placement, pages,
  /// the launch). "" when the config's knobs are refused.
  std::string structure_of(const ir::ScheduleConfig& cfg);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace amk::lower
