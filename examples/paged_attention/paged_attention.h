// The PTO seed's batch paged attention, written against the orchestration API: one scope per
// chunk of `chunk` sequences. Either amk opcodes (a hub task that stages the chunk's queries,
// one split-KV ATTENTION_TILE partial per KV block, an ATTENTION_COMBINE; recordable) or the
// seed's own four kernels registered with Orchestrator::kernel(); checked against a direct
// evaluation. An example of the orchestration API (tests and bench_vm run it), not part of vm/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/program.h"
#include "ir/result.h"
#include "vm/orchestrator.h"

namespace amk::examples {

using vm::OrchestratorOptions;
using vm::OrchestratorStats;

/// Sizes of one run (defaults: the seed's batch 256 in chunks of 16).
struct PagedAttentionCase {
  int64_t batch = 256;
  int64_t chunk = 16;  ///< sequences per scope (IN_CORE_BATCH)
  int64_t head_dim = 256;
  int64_t context = 128;  ///< cached positions per sequence
  int64_t block = 16;     ///< positions per KV block (context / block <= 8 partials per combine)
  uint64_t seed = 1;
  /// The seed's decomposition: per chunk an AIV_HUB task that initialises the accumulators, then
  /// per KV block QK (AIC) -> SF softmax-prepare (AIV) -> PV (AIC) -> UP online update (AIV,
  /// in-out accumulators; the last one writes the output), as kernels registered with
  /// Orchestrator::kernel(): 1 + 4 x blocks tasks per chunk (batch 256, context 48: 208). Not
  /// recordable. Off: per block one ATTENTION_TILE split-KV partial, then ATTENTION_COMBINE.
  bool seed_kernels = false;
  bool record = false;  ///< also return the orchestration as an amk program
};

/// What a run produced.
struct PagedAttentionResult {
  double max_abs_error = 0;  ///< against the direct evaluation (double precision)
  OrchestratorStats stats;
  double wall_s = 0;  ///< submit + execute
  std::optional<ir::Program> program;
  /// With `record`: the data (per chunk: q [S, D], K/V caches [T, S, D]) and the output [B, D].
  std::vector<float> q, k, v, out;
};

/// Builds, runs and checks the example; the orchestrator's error when it fails.
ir::Result<PagedAttentionResult> run_paged_attention(const PagedAttentionCase& c,
                                                     const OrchestratorOptions& o);

}  // namespace amk::examples
