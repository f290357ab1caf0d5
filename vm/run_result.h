// What a launch produced: its status and diagnostics, its counts and speed, and for a stuck run
// what every blocked SM or core was waiting for (PTO's stall class in AICore mode).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/diagnostic.h"
#include "vm/options.h"

namespace amk::vm {

/// PTO's classes of a scheduler timeout, shared by AICore mode and the orchestrator.
enum class StallClass : uint8_t {
  None,                   ///< no stall
  RunningStalled,         ///< S1: a core acknowledged a task and never finished it
  ReadyButIdle,           ///< S3: tasks are ready but nothing dispatches them
  DependencyDeadlock,     ///< S4: tasks wait on producers that can never run
  OrchestratorStarvation  ///< S5: every submitted task ran; the orchestrator submits nothing
};
/// "running-stalled", "ready-but-idle", "dependency-deadlock", "orchestrator-starvation" ("").
std::string_view name(StallClass c);
/// The class of a stall (PTO's order): a core running a task, else ready tasks, else tasks
/// waiting on producers, else nothing left to run: the orchestrator starved the machine.
StallClass classify_stall(bool core_running, int64_t ready, int64_t waiting);

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
  /// AICore mode, Stuck: PTO's stall class, the busy cores, ready tasks left.
  StallClass stall_class = StallClass::None;
  std::vector<BusyCore> busy;
  int64_t ready_left = 0;
  /// The lanes workers ran on (one per SM; in AICore mode "AIC 0", "AIV 24", ..., then
  /// "AICPU scheduler 0", ...), the lane numbers an Observer sees.
  std::vector<std::string> lanes;
  int64_t tasks = 0, tasks_done = 0;
  double wall_s = 0;
  double bytes = 0;  ///< Σ bytes moved by the tasks that ran (ir::task_load)
  int workers = 0;
  bool ok() const { return status == Status::Ok; }
};

}  // namespace amk::vm
