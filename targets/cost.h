// AMK's cost model over any program: per-task time from the bytes and flops it moves (one
// definition: ir::task_load) on a target, the makespan over dependencies and per-SM queues
// (ir::ScheduleGraph), and the weight-streaming floor.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ir/program.h"

namespace amk::ir {
class ScheduleGraph;
}  // namespace amk::ir

namespace amk::targets {

/// What the cost model predicts for a program on a target.
struct CostEstimate {
  double makespan_us = 0;       ///< amk's prediction: per-SM bandwidth share, shared HBM
  double amk_makespan_us = 0;   ///< AMK's formula: every SM streams at full bandwidth at once
  double bandwidth_us = 0;      ///< Σ bytes at 80% of HBM bandwidth: all SMs share one HBM
  double queue_us = 0;          ///< per-SM queues with each SM's bandwidth share (placement)
  double critical_path_us = 0;  ///< longest dependency chain (ignoring SM queues)
  double total_us = 0;          ///< Σ task times
  double floor_us = 0;          ///< total WEIGHT bytes at the target's spec bandwidth
  bool sm_assigned = false;     ///< makespan used per-SM queues (else max(cp, Σt / num_sms))
  bool cyclic = false;          ///< dependency cycle: AMK's makespan = Σt
};

/// Predicted microseconds of one task (AMK's formula; `depth` = pipelining depth: the exposed
/// fraction of weight streaming is max(0.5, 1 / (1 + 0.6 depth))).
double task_time_us(const ir::Program& p, const ir::Task& t, const ir::Target& tg, int64_t depth);
/// Like task_time_us, but one SM streams at most 4x its fair share of the HBM bandwidth.
double task_time_sm_us(const ir::Program& p, const ir::Task& t, const ir::Target& tg,
                       int64_t depth);
/// Predicts `p` on `tg`; the depth is the program's ScheduleConfig::depth() (2 without a config).
CostEstimate estimate(const ir::Program& p, const ir::Target& tg);
/// Likewise with the counter graph of `p` already built (a validator's: Validator::graph()), and
/// optionally its SM-queue graph over `g` (Validator::queue_graph()), used when every task is on
/// an SM >= 0, where it is the loader's.
CostEstimate estimate(const ir::Program& p, const ir::Target& tg, const ir::Graph& g,
                      const ir::ScheduleGraph* queues = nullptr);

/// When each task runs in the prediction (the per-SM bandwidth share; per-SM queues in list order
/// when the program is placed, else dependencies only) and the path that sets the makespan.
struct TaskTimes {
  std::vector<double> start_us, finish_us;  ///< by task id
  std::vector<uint32_t> critical;           ///< the longest path, first task to last
  bool acyclic = true;                      ///< false: a cycle; nothing else is filled
};
/// The predicted start and finish of every task of `p` on `tg` (`g`: the counter graph of `p`).
TaskTimes predicted_times(const ir::Program& p, const ir::Target& tg, const ir::Graph& g);

}  // namespace amk::targets
