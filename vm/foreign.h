// Runs a program read from another runtime's file (or recorded by amk's orchestrator) the way
// that runtime would: its tasks as timed no-ops under its placement and capacities. MPK: each
// worker a bounded FIFO queue dealt at the iteration's start, the head waiting on its event, and
// only the blocks the chip holds resident. PTO (and amk's orchestrator): the orchestrator
// submitting in order into rings with a task window, heap and dependency pool that reclaim in
// task order behind scopes, schedulers dispatching ready tasks to the cores of their shape. A
// graph that a capacity hangs ends in a stuck report naming the full queue or ring.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/program.h"
#include "ir/result.h"

namespace amk::vm {

/// How to run a foreign graph.
struct ForeignOptions {
  double task_us = 1.0;        ///< each task's (simulated) run time
  int64_t default_cores = 24;  ///< PTO cores per shape when the record names none
};

/// What the run did.
struct ForeignRun {
  uint64_t tasks_run = 0;
  double makespan_us = 0;          ///< simulated
  uint64_t blocked = 0;            ///< submits (PTO) that waited for a ring to reclaim
  std::vector<std::string> lanes;  ///< per worker / core: what it ran last (for reports)
};

/// Runs `p` (Program::runtime of kind mpk or pto, or amk's with scopes). Completes, or fails with
/// a `vm.deadlock` error whose message names the full queue or ring, the tasks it holds and what
/// the blocked side waits for (exit 3), or a `vm.overflow` for a queue that would wrap.
ir::Result<ForeignRun> run_foreign(const ir::Program& p, const ForeignOptions& o = {});
/// True when run_foreign is how `p` runs (an MPK or PTO graph).
bool runs_foreign(const ir::Program& p);

}  // namespace amk::vm
