// Chips as data: AMK's GpuTarget record plus the worker topology amk needs (targets/*.json).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/opcodes.h"
#include "ir/program.h"
#include "ir/result.h"

namespace amk::targets {

/// One kind of worker a chip has and how many (SMs, AIC cube cores, AIV vector cores, tiles).
struct WorkerKind {
  std::string kind;
  int64_t count = 0;
  bool operator==(const WorkerKind&) const = default;
};

/// A target: the record lowered programs embed, and amk's extension object ("amk" in the file).
struct TargetSpec {
  ir::Target record;                ///< AMK's fields only (the "amk" object is not in here)
  std::string family;               ///< "gpu", "ascend" or "tx8" (descriptive; code never branches)
  std::string runtime;              ///< the built-in runtime it runs by default (runtimes/*.json)
  std::vector<WorkerKind> workers;  ///< Σ count == record.num_sms
  int64_t clusters = 0;             ///< Ascend: clusters of `cluster_aic` AIC + `cluster_aiv` AIV
  int64_t cluster_aic = 0;          ///< AIC cores per cluster
  int64_t cluster_aiv = 0;          ///< AIV cores per cluster
  int64_t aicpu_threads = 0;        ///< Ascend: AICPU scheduler threads
  std::vector<ir::Op> aic_ops;      ///< Ascend: the opcodes that run on AIC (cube) cores
  std::vector<int64_t> mesh;        ///< tiled chips: mesh dimensions
  int64_t scratch_bytes = 0;        ///< capacity for scratch pages (activations)
  /// Number of workers (== record.num_sms).
  int64_t num_workers() const;
  /// Count of one worker kind (0 when absent).
  int64_t count_of(std::string_view kind) const;
  bool operator==(const TargetSpec&) const = default;
};

/// Parses a target file's text; `origin` names it in diagnostics, which carry a JSON pointer.
ir::Result<TargetSpec> parse_target_spec(std::string_view text, std::string_view origin);
/// The file text of a target (AMK's record fields, then the "amk" object); parse round-trips it.
std::string write_target_spec(const TargetSpec& t);
/// A built-in target by name ("h100"), or a target file by path.
ir::Result<TargetSpec> load_target(std::string_view name_or_path);
/// Names of the built-in targets (the files in targets/), sorted.
std::vector<std::string> builtin_target_names();

}  // namespace amk::targets
