// The persistent-kernel reference VM: loads a validated program into one arena, binds tensors from
// safetensors files, and runs it on counter-driven workers that model the GPU's SMs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "instructions/kernel.h"
#include "ir/program.h"
#include "ir/result.h"
#include "vm/safetensors.h"

namespace amk::vm {

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

/// The core type AICore mode gives an opcode: GEMV_TILE, GEMM_TILE and ATTENTION_TILE (and a FUSED
/// task with any of them in its recipe) run on AIC, every other opcode on AIV.
CoreType core_type_of(const ir::Task& t);
/// "AIC" or "AIV".
std::string_view name(CoreType c);

/// The Ascend topology and scheduler set-up of AICore mode.
struct AicoreOptions {
  int64_t clusters = 0;  ///< 0: 24 (a2a3)
  int64_t aic_per_cluster = 1;
  int64_t aiv_per_cluster = 2;
  int schedulers = 0;    ///< AICPU scheduler threads owning disjoint clusters; 0: min(clusters, 3)
  int core_threads = 0;  ///< OS threads running the cores' kernels; 0: each scheduler thread runs
                         ///< the kernels of its own cores between its dispatch and completion scans
  bool deterministic = false;  ///< one thread, seeded choices (RunOptions::seed); replayable
  std::vector<std::pair<int64_t, CoreType>> overrides;  ///< per-task core type (task id, type)
};

/// Run options.
struct RunOptions {
  Mode mode = Mode::Multiplexed;
  int workers = 0;              ///< OS threads in Multiplexed mode; 0: hardware threads
  uint64_t seed = 0;            ///< Deterministic mode's interleaving
  int64_t watchdog_ms = 10000;  ///< no progress for this long: abort with a stuck report
  bool trace = false;           ///< record one slice per task (for chrome_trace)
  inst::Kernel (*kernel_for)(ir::Op) =
      inst::kernel_for;  ///< the kernel registry (a seam for tests)
  AicoreOptions aicore;  ///< Mode::Aicore only
};

/// One SM that could not finish: its head task and what it waits for. In AICore mode (sm -1) a
/// task that never became ready.
struct BlockedSm {
  int64_t sm = 0;
  int64_t task = 0;
  int64_t remaining = 0;  ///< tasks left in its queue, head included
  bool running = false;   ///< the head had started (a stalled kernel), rather than waiting
  int64_t counter = -1;   ///< the counter the head waits on (-1: none unsatisfied)
  int64_t threshold = 0;
  int64_t value = 0;
  std::vector<int64_t> idle_producers;  ///< producers of that counter that never ran
};

/// One executed task (trace).
struct TraceEvent {
  int64_t task = 0;
  int32_t worker = 0;
  int64_t head_ns = 0;   ///< became its SM's queue head
  int64_t ready_ns = 0;  ///< all its waits held
  int64_t start_ns = 0, end_ns = 0;
  int32_t scheduler = -1;   ///< AICore mode: the scheduler thread that dispatched it
  int64_t dispatch_ns = 0;  ///< AICore mode: its token written to the core's dispatch register
  int64_t retire_ns = 0;    ///< AICore mode: its FIN seen by the scheduler (consumers released)
};

/// AICore mode: a core whose task had been dispatched but not finished when the run stopped.
struct BusyCore {
  int64_t core = 0;
  CoreType type = CoreType::Aiv;
  int64_t task = 0;
  /// Dispatched (token in DMB, no ACK yet), Running (ACK, no FIN), Finished (FIN, not retired).
  enum class State : uint8_t { Dispatched, Running, Finished } state = State::Dispatched;
};

/// The outcome of one launch.
struct RunResult {
  enum class Status : uint8_t { Ok, KernelError, Stuck } status = Status::Ok;
  /// KernelError: a `vm.kernel` error at the task ("task N (label): message"); Stuck: a
  /// `vm.deadlock` (nothing can ever run) or `vm.timeout` (the watchdog) error with the cause.
  ir::Diagnostics diagnostics;
  std::vector<BlockedSm> blocked;
  /// AICore mode, Stuck: PTO's stall class ("running-stalled", "ready-but-idle",
  /// "dependency-deadlock", "orchestrator-starvation"), the busy cores, ready tasks left.
  std::string stall_class;
  std::vector<BusyCore> busy;
  int64_t ready_left = 0;
  /// Trace lanes by TraceEvent::worker (AICore mode: "AIC 0", "AIV 24", ..., then
  /// "AICPU scheduler 0", ...); empty: one lane per SM.
  std::vector<std::string> lanes;
  int64_t tasks = 0, tasks_done = 0;
  double wall_s = 0;
  double bytes = 0;  ///< Σ bytes moved by the tasks that ran (est_bytes, else their tensors' bytes)
  int workers = 0;
  std::vector<TraceEvent> trace;
  bool ok() const { return status == Status::Ok; }
};

/// Named tensors that outlive a launch (KV caches across decode steps).
struct TensorStore {
  struct Entry {
    ir::DType dtype = ir::DType::F32;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };
  std::map<std::string, Entry, std::less<>> tensors;
};

class Image;

/// A loaded program: the arena image plus the bindings of its buffers.
class Vm {
 public:
  /// Validates (unless skipped), places and lays out `p`. A program the validator rejects is a
  /// `vm.rejected` error ("... [REJECTED] {stats}") followed by the validator's errors; an
  /// unloadable one `vm.load`.
  static ir::Result<std::unique_ptr<Vm>> load(ir::Program p, const LoadOptions& opts);
  ~Vm();
  Vm(const Vm&) = delete;
  Vm& operator=(const Vm&) = delete;

  /// Binds WEIGHT/CONST buffers to `Buffer.source` (or name) in `w`; same dtype → a view into the
  /// mapping (no copy), otherwise converted. `w` must outlive the Vm.
  ir::Status bind_weights(const SafeTensors& w);
  /// Copies IO_INPUT tensors (by name) into the arena for the next launches.
  ir::Status set_inputs(const SafeTensors& in);
  /// Copies one IO_INPUT tensor (by its name; converted to the buffer's dtype). `origin` names
  /// where it came from in errors.
  ir::Status set_input(const StTensor& t, const std::string& origin);
  /// Sets the inputs of a lowered decode step: `token_id` (one id per sequence), `pos` (every
  /// element) and the reshape bridges' `reshape_id*` (0..n-1); any other IO_INPUT is an error.
  ir::Status set_decode_inputs(std::span<const int32_t> tokens, int32_t pos);
  /// Binds KV_CACHE buffers to `store` (by name), creating zero tensors for missing names and
  /// converting/refusing mis-shaped ones. Writes of KV_APPEND land in the store.
  ir::Status bind_kv(TensorStore& store);
  /// Imports tensors of a file into a store (name, dtype and shape kept; for `--kv`).
  static ir::Status import(const SafeTensors& f, TensorStore& store);

  /// One launch: reset counters and activations, run every task, return the outcome.
  RunResult run(const RunOptions& opts);

  /// IO_OUTPUT buffers then KV_CACHE buffers, as tensors to write (views; valid until next run).
  std::vector<StOut> outputs() const;
  /// A buffer's current contents (nullptr when unbound).
  const void* data(int64_t buffer) const;
  /// The program as loaded (with the SM placement filled in).
  const ir::Program& program() const;
  /// Number of SMs.
  int64_t num_sms() const;
  /// The SM queues (task ids in execution order).
  std::vector<std::vector<int64_t>> queues() const;
  /// Bytes of the arena image (tables + activation scratch).
  int64_t image_bytes() const;

 private:
  Vm();
  std::unique_ptr<Image> im_;
};

/// The stuck report: one line per blocked SM, then the idle producers.
std::string stuck_report(const ir::Program& p, const RunResult& r);
/// A Chrome/Perfetto trace (JSON): one lane per SM, a slice per task, wait slices before it.
std::string chrome_trace(const ir::Program& p, const RunResult& r);

}  // namespace amk::vm
