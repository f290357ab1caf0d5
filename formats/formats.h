// Other megakernel runtimes' task graphs as ordinary amk programs: Mirage MPK's task_graph.json
// and PTO's deps.json (+ scope_stats.jsonl), read into an ir::Program whose Program::runtime
// records the foreign runtime's launch shape, capacities, task identities and scopes; and the
// writers that produce those files exactly as the runtimes write them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ir/program.h"
#include "ir/result.h"
#include "ir/runtime.h"

namespace amk::formats {

/// What the caller knows beyond the file.
struct ReadOptions {
  std::string origin;     ///< the file, named in diagnostics
  int64_t num_sms = 0;    ///< SMs of the chip (0: the file's target or MPK's 132-SM default)
  int64_t cores_aic = 0;  ///< PTO: AIC cores of the chip (0: unknown)
  int64_t cores_aiv = 0;  ///< PTO: AIV cores of the chip (0: unknown)
  ir::Runtime launch;     ///< overrides (`--launch`): a given capacity wins over the file's
  std::optional<std::string> scope_stats;  ///< PTO: scope_stats.jsonl text, when there is one
  std::string scope_stats_origin;          ///< its file, for diagnostics
};

/// MPK's task_graph.json. Events become counters (an event fires at num_triggers x iteration,
/// iteration 1); the scheduler's round-robin deal of LAUNCH_DEPENDENT_TASKS becomes SM queues;
/// tensor regions become buffers (see formats/regions.h). Malformed input: diagnostics with the
/// file, a JSON pointer and line:column.
ir::Result<ir::Program> read_mpk(std::string_view text, const ReadOptions& opt);
/// PTO's deps.json with its scope_stats.jsonl when given. Edges become counters and waits
/// (producers with the same consumers share a counter); tensor regions become buffers; scopes,
/// rings, kernel ids and output bytes go to the runtime record.
ir::Result<ir::Program> read_pto(std::string_view deps, const ReadOptions& opt);

/// The MPK task_graph.json of an amk program, written as MPK writes it: its tasks in dependency
/// levels after TERMINATE and BEGIN_TASK_GRAPH, one event per level that the next level waits
/// on, buffers as tensors (GEMV/GEMM tiles as column slices). An error for a cyclic program or
/// a task past MPK's 7 inputs / 3 outputs.
ir::Result<std::string> export_mpk(const ir::Program& p);

/// How to lay an amk program out as a PTO orchestration.
struct PtoExport {
  int depth = 1;            ///< the tasks' scope depth (ring min(depth, 3))
  int64_t scope_tasks = 0;  ///< tasks per scope at that depth (0: one scope)
  int64_t outer_tasks = 0;  ///< tasks submitted first in the scope around those (depth - 1)
  /// Every task's block_num; unset: a task's own from a PTO runtime record the program carries
  /// (an imported deps.json, which also gives its kernel_ids and early_dispatch), else 1.
  std::optional<int64_t> block_num;
  bool runtime_outputs = false;  ///< single-writer activations as runtime-allocated OUTPUTs
  ir::Runtime launch;            ///< capacities for scope_stats' header (else the defaults)
};
/// A PTO dump: deps.json and scope_stats/scope_stats.jsonl.
struct PtoFiles {
  std::string deps, scope_stats;
};
/// The PTO files of an amk program, written as PTO writes them: tasks in dependency order in
/// scopes, a tensor per buffer, an edge per producer a task waits on. An error for a cycle.
ir::Result<PtoFiles> export_pto(const ir::Program& p, const PtoExport& o);

/// MPK's defaults for a chip of `num_sms` SMs (mirage utils.get_configurations_from_gpu): the
/// worker count, and four scheduler warps per SM left over.
std::pair<int64_t, int64_t> mpk_default_launch(int64_t num_sms);

}  // namespace amk::formats
