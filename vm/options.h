// How a program is loaded and run on the VM: the loader's options, the execution modes, the
// AICore topology and the run options (the observer seam included).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "instructions/kernel.h"
#include "ir/opcodes.h"
#include "ir/program.h"

namespace amk::vm {

class Observer;

/// The most SMs (or AICore cores) the VM models.
constexpr int64_t kMaxSms = int64_t{1} << 20;

/// How tasks without `Task.sm` are placed on SMs.
enum class Placement : uint8_t {
  Lpt,  ///< AMK's loader: greedy LPT over the topological order by (Σ bytes, Σ flops, count)
  RoundRobin  ///< topological index modulo the SM count
};

/// Loader options.
struct LoadOptions {
  int64_t num_sms = 0;  ///< SMs of the machine; 0: the program's target, else `default_sms`
  int64_t default_sms = 1;
  Placement placement = Placement::Lpt;
  bool skip_validate = false;  ///< run a program the validator rejects (to exercise the watchdog)
  bool honor_pages = true;     ///< buffers sharing a page share memory, as on the device
};

/// How the SM topology is executed.
enum class Mode : uint8_t {
  Multiplexed,    ///< logical SMs multiplexed on `workers` OS threads (event-driven, no spinning)
  ThreadPerSm,    ///< one OS thread per SM walking its queue, spinning then blocking on counters
  Deterministic,  ///< one thread, seeded choice among ready SM heads; replayable from the seed
  Aicore,         ///< Ascend model: AICPU scheduler threads dispatch ready tasks to AIC/AIV cores
};

/// The two AICore kinds of an Ascend cluster.
enum class CoreType : uint8_t {
  Aic,  ///< cube core: matrix work
  Aiv   ///< vector core: everything else
};
/// "AIC" or "AIV".
std::string_view name(CoreType c);

/// The opcodes AICore mode runs on AIC cores when the target names none (PTO's convention:
/// GEMV_TILE, GEMM_TILE, ATTENTION_TILE); targets carry theirs as data ("amk": {"aic_ops"}).
std::vector<ir::Op> default_aic_ops();
/// The core type of a task: AIC for an opcode in `aic_ops` (and a FUSED task with one in its
/// recipe), AIV otherwise.
CoreType core_type_of(const ir::Task& t, std::span<const ir::Op> aic_ops);

/// The Ascend topology and scheduler set-up of AICore mode.
struct AicoreOptions {
  int64_t clusters = 0;  ///< 0: 24 (a2a3)
  int64_t aic_per_cluster = 1;
  int64_t aiv_per_cluster = 2;
  int schedulers = 0;    ///< AICPU scheduler threads owning disjoint clusters; 0: min(clusters, 3)
  int core_threads = 0;  ///< OS threads running the cores' kernels; 0: each scheduler thread runs
                         ///< the kernels of its own cores between its dispatch and completion scans
  bool deterministic = false;  ///< one thread, seeded choices (RunOptions::seed); replayable
  std::vector<ir::Op> aic_ops = default_aic_ops();      ///< opcodes for AIC (the target's data)
  std::vector<std::pair<int64_t, CoreType>> overrides;  ///< per-task core type (task id, type)
};

/// The most OS threads a run starts (workers, SM threads, schedulers plus core threads).
inline constexpr int kMaxThreads = 1024;

/// Run options.
struct RunOptions {
  Mode mode = Mode::Multiplexed;
  int workers = 0;               ///< OS threads in Multiplexed mode; 0: hardware threads
  uint64_t seed = 0;             ///< Deterministic mode's interleaving
  int64_t watchdog_ms = 10000;   ///< no progress for this long: abort with a stuck report
  Observer* observer = nullptr;  ///< sees every task's events (a TraceRecorder for --trace)
  inst::Kernel (*kernel_for)(ir::Op) =
      inst::kernel_for;  ///< the kernel registry (a seam for tests)
  AicoreOptions aicore;  ///< Mode::Aicore only
};

}  // namespace amk::vm
