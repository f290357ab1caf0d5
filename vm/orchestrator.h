// The PTO2 programming model on amk: submit kernels with INPUT/OUTPUT/INOUT tensor regions, in
// scopes, with runtime-allocated intermediates; dependencies come from ir::TensorMap (WAR
// included); a bounded task ring, heap ring and dependency pool apply back-pressure while worker
// threads run the tasks; record() turns the orchestration into an ordinary amk program.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/program.h"
#include "ir/tensor_map.h"
#include "vm/observer.h"
#include "vm/options.h"
#include "vm/run_result.h"

namespace amk::vm {

/// How a task uses a tensor argument.
enum class ArgDir : uint8_t { Input, Output, InOut };

/// One tensor argument: a buffer of the orchestration (a tensor() or make_tensor() id), the
/// region used (whole, or rows [lo, hi) on axis 0), and the direction.
struct TensorArg {
  int64_t tensor = 0;
  ArgDir dir = ArgDir::Input;
  ir::Region region{};
};

/// The bounded resources (PTO2_RING_TASK_WINDOW, PTO2_RING_HEAP, PTO2_RING_DEP_POOL).
struct RingSizes {
  uint32_t task_window = 65536;            ///< tasks alive at once (submitted, not yet reclaimed)
  int64_t heap_bytes = int64_t{64} << 20;  ///< make_tensor() memory (a ring, never straddled)
  uint32_t dep_pool = 65536;               ///< producer -> consumer edges alive at once
};

/// Orchestrator set-up.
struct OrchestratorOptions {
  RingSizes rings;
  /// The machine running the tasks while the orchestrator submits: clusters of AIC/AIV cores,
  /// AICPU scheduler threads and core threads (deterministic and overrides do not apply).
  AicoreOptions machine;
  /// The schedulers' timeout: no task retired for this long while tasks are pending, or while the
  /// orchestration is open (submitted to, not finished) and nothing is pending, fails the run
  /// with PTO's stall class: running-stalled, ready-but-idle, dependency-deadlock or
  /// orchestrator-starvation.
  int64_t watchdog_ms = 10000;
  /// Keep every submitted task for record() and core_types() (PTO keeps none: off saves a copy
  /// of each task).
  bool record = true;
  /// Submits make their tasks visible to the schedulers in groups of this many (1: each at once,
  /// as PTO does). A group costs one hand-over between threads instead of one per task; a task
  /// waits at most this many - 1 later submits (a blocked submit, scope_end() and finish()
  /// publish at once).
  uint32_t publish_every = 16;
  inst::Kernel (*kernel_for)(ir::Op) = inst::kernel_for;  ///< the kernel registry (a seam)
  /// Sees every task's dispatch, run and retirement (a TraceRecorder traces an orchestration;
  /// task ids are submission order); must outlive the orchestrator.
  Observer* observer = nullptr;
};

/// A kernel registered with Orchestrator::kernel() (PTO's func_id).
struct KernelId {
  int32_t id = -1;
};

/// What a run did.
struct OrchestratorStats {
  uint64_t tasks = 0;
  uint64_t edges = 0;          ///< dependencies wired (WAR ones included)
  uint64_t war_edges = 0;      ///< of those, write-after-read only (PTO does not track these)
  uint64_t blocked = 0;        ///< submits that waited for a ring or pool (back-pressure)
  uint32_t max_active = 0;     ///< most tasks alive at once (as the orchestrator saw them)
  int64_t max_heap_bytes = 0;  ///< most heap bytes in use at once
  StallClass stall_class = StallClass::None;  ///< the schedulers' timeout class (watchdog_ms)
};

/// Builds and runs a task graph; methods are called from one (the orchestrating) thread. Ready
/// tasks go to per-core-type queues; AICPU scheduler threads dispatch them to idle AIC/AIV cores
/// through the register handshake of AICore mode.
class Orchestrator {
 public:
  explicit Orchestrator(const OrchestratorOptions& o = {});
  ~Orchestrator();  ///< waits for the submitted tasks (and for kernels still running after a stall)
  Orchestrator(const Orchestrator&) = delete;
  Orchestrator& operator=(const Orchestrator&) = delete;

  /// Registers caller-owned memory (`data` must outlive the run) as a tensor; its kind is what
  /// record() gives the buffer (WEIGHT, IO_INPUT, IO_OUTPUT, KV_CACHE, CONST).
  int64_t tensor(std::string name, ir::DType dtype, std::vector<int64_t> shape, void* data,
                 ir::BufferKind kind);
  /// A runtime intermediate from the heap ring (zeroed), valid until its scope ends; blocks while
  /// the heap is full. An `orch.deadlock` error on a provable heap deadlock.
  ir::Result<int64_t> make_tensor(std::string name, ir::DType dtype, std::vector<int64_t> shape);
  /// Submits a task; it runs once every task it depends on has finished. Blocks while the task
  /// ring or the dependency pool is full. Fails (`orch.usage`) on a bad argument or
  /// (`orch.deadlock`) a provable deadlock (the scope holds more tasks than the ring); the first
  /// error is sticky: every later call returns it.
  ir::Status submit(ir::Op op, CoreType core, const std::vector<TensorArg>& args,
                    std::vector<ir::Param> params = {}, std::string label = {});
  /// Registers a kernel of the caller's (PTO's func_id) under `name`. Its tasks get the views
  /// of their tensors (inputs and in-outs, then outputs and in-outs, each in argument order) and
  /// their params; a failed Status fails the run as an opcode kernel's does. record() cannot
  /// express such tasks (they have no amk opcode).
  KernelId kernel(std::string name, inst::Kernel fn);
  /// Submits a task of a registered kernel (as submit() above).
  ir::Status submit(KernelId kernel, CoreType core, const std::vector<TensorArg>& args,
                    std::vector<ir::Param> params = {}, std::string label = {});
  /// Opens a scope: its tasks keep their ring slots (and its tensors their heap bytes) until it
  /// ends.
  void scope_begin();
  /// Ends the innermost scope.
  void scope_end();
  /// Waits for every submitted task; fails with the first error (a `vm.kernel` error, a
  /// `vm.timeout` stall with PTO's stall class, or an earlier submit's error).
  ir::Status finish();
  /// Counts of this run.
  OrchestratorStats stats() const;
  /// The orchestration as an amk program: one counter per task, a threshold-1 wait on each task
  /// it depends on (RAW, WAW, WAR), however long ago that task was reclaimed. An `orch.usage`
  /// error when a task used a proper sub-region (amk tasks address whole buffers) or a registered
  /// kernel.
  ir::Result<ir::Program> record();
  /// The core type each submitted task asked for: AicoreOptions::overrides for the recorded
  /// program (empty without OrchestratorOptions::record).
  std::vector<std::pair<int64_t, CoreType>> core_types() const;

  struct State;

 private:
  std::unique_ptr<State> s_;
};

/// RAII scope: scope_begin() now, scope_end() at the end of the block.
class Scope {
 public:
  explicit Scope(Orchestrator& o) : o_(o) { o_.scope_begin(); }
  ~Scope() { o_.scope_end(); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Orchestrator& o_;
};

}  // namespace amk::vm
