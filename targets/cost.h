// The cost model: a program on hardware (a target record) run by an executor (a runtime profile,
// runtime.h). amk's prediction walks the schedule as the runtime runs it (simulate.h); AMK's own
// formula (per-task time from bytes and flops, longest path) is kept beside it, as is the
// weight-streaming floor no schedule beats.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/program.h"
#include "targets/runtime.h"
#include "targets/simulate.h"

namespace amk::ir {
class ScheduleGraph;
}  // namespace amk::ir

namespace amk::targets {

/// What the cost model predicts for a program on a target and runtime.
struct CostEstimate {
  double makespan_us = 0;       ///< amk's prediction: the runtime's schedule, never below the
                                ///< bandwidth bound or the floor
  double amk_makespan_us = 0;   ///< AMK's formula: every SM streams at full bandwidth at once
  double bandwidth_us = 0;      ///< Σ bytes at the bandwidth streaming reaches
  double queue_us = 0;          ///< the runtime's schedule: launch + the last task's finish
  double critical_path_us = 0;  ///< AMK's formula: the longest dependency chain
  double total_us = 0;          ///< AMK's formula: Σ task times
  double floor_us = 0;          ///< weight_floor_us: the weights streamed at spec bandwidth
  double bytes_in_flight = 0;   ///< per worker, from the runtime and the config's knobs
  double worker_gbs = 0;        ///< one worker's streaming rate alone
  Breakdown breakdown;          ///< where queue_us goes along its critical path
  std::string runtime;          ///< the runtime's name
  bool sm_assigned = false;     ///< the program places its tasks (else the runtime does)
  bool cyclic = false;          ///< dependency cycle: AMK's makespan = Σt, amk's the bound
  bool operator==(const CostEstimate&) const = default;
};

/// The weight bytes one decode step streams: every WEIGHT buffer whole, except a table that only
/// EMBED tasks read (an untied embedding), of which the rows they gather.
double streamed_weight_bytes(const ir::Program& p);
/// The weight-streaming floor no schedule of `p` beats: streamed_weight_bytes at `tg`'s spec
/// bandwidth (NaN without one).
double weight_floor_us(const ir::Program& p, const ir::Target& tg);

/// Predicted microseconds of one task (AMK's formula; `depth` = pipelining depth: the exposed
/// fraction of weight streaming is max(0.5, 1 / (1 + 0.6 depth))).
double task_time_us(const ir::Program& p, const ir::Task& t, const ir::Target& tg, int64_t depth);

/// Predicts `p` on `tg` run by `rt`.
CostEstimate estimate(const ir::Program& p, const ir::Target& tg, const Runtime& rt);
/// Likewise on the target's default runtime.
CostEstimate estimate(const ir::Program& p, const ir::Target& tg);
/// Likewise with the counter graph of `p` already built (a validator's: Validator::graph()), and
/// optionally its SM-queue graph over `g` (Validator::queue_graph()), used when every task is on
/// an SM >= 0, where it is the loader's.
CostEstimate estimate(const ir::Program& p, const ir::Target& tg, const Runtime& rt,
                      const ir::Graph& g, const ir::ScheduleGraph* queues = nullptr);

/// estimate() for program after program (a search's candidates), with the same results: its
/// memory (the walk's input and state) is kept from one program to the next, and so are its last
/// estimates, so that a program whose walk, machine and AMK task times equal those of a recent one
/// (configs that differ in a knob the runtime or the placement does not read) is not walked again.
class Estimator {
 public:
  Estimator();
  ~Estimator();
  Estimator(Estimator&&) noexcept;
  Estimator& operator=(Estimator&&) noexcept;
  /// estimate(p, tg, rt, g, queues). `same_tasks` says that p's tasks (their SMs aside) and
  /// buffers equal, field for field, those of the program of this estimator's last call (a search
  /// knows it from its incremental proof): their loads and the weight bytes they stream are then
  /// taken from that call instead of being worked out again. False is always right.
  CostEstimate operator()(const ir::Program& p, const ir::Target& tg, const Runtime& rt,
                          const ir::Graph& g, const ir::ScheduleGraph* queues = nullptr,
                          bool same_tasks = false);
  /// How many estimates were recalled rather than walked.
  uint64_t recalled() const { return recalled_; }

 private:
  struct Entry;
  static constexpr size_t kRecall = 8;  // estimates kept
  void remember(const Machine& m, double sms, const CostEstimate& r);
  WalkInput in_;
  // The last call's program part of the walk input: counter slots and per-task loads (the
  // placement part stays empty), and a number that changes whenever it does.
  WalkInput program_;
  uint64_t program_version_ = 0;
  double streamed_bytes_ = 0;  // streamed_weight_bytes of the last call's program
  bool called_ = false;        // there is a last call (same_tasks means nothing before)
  Simulator sim_;
  // AMK's formula: each task's time and their sum, for the program part of program_version and
  // the rates (a depth's exposed share, bandwidth, tflops) they were worked out for; version
  // changes whenever they are worked out again.
  struct Times {
    bool valid = false;
    uint64_t program_version = 0, version = 0;
    std::array<double, 3> rates{};
    std::vector<double> t;
    double total = 0;
  } times_;
  // AMK's critical path through the dependencies of the tasks of the last calls, kept while their
  // tasks stay the same (same_tasks) and are weighed by the same times.
  struct CriticalPath {
    bool valid = false;
    uint64_t times_version = 0;    // Times::version of the times it was found for
    std::optional<double> length;  // nullopt: the dependencies hold a cycle
    // Its length for p's tasks (graph g) weighed by `t`, found again unless `same_tasks` (p's
    // tasks are those it was found for) and t are its times.
    std::optional<double> of(const ir::Program& p, const ir::Graph& g, const Times& t,
                             bool same_tasks);
  } path_;
  std::vector<Entry> recent_;
  uint64_t clock_ = 0, recalled_ = 0;
};

/// A task's time on one worker by itself under `p`'s config (dispatch, streaming at a fair share
/// of the bandwidth or computing, signalling): what a list scheduler weighs tasks by.
class TaskCoster {
 public:
  /// For the tasks of `p` on `tg` run by `rt` under the knobs of `knobs` (nullptr: AMK's
  /// defaults).
  TaskCoster(const ir::Program& p, const ir::Target& tg, const Runtime& rt,
             const ir::ScheduleConfig* knobs);
  /// The time of task `t` of the program, in microseconds.
  double operator()(const ir::Task& t) const;
  /// The time of a task whose load (ir::task_load) is `l`, in microseconds.
  double operator()(const ir::TaskLoad& l) const;
  /// What the runtime makes of the target under the knobs.
  const Machine& machine() const { return m_; }

 private:
  const ir::Program& p_;
  Machine m_;
};

/// When each task runs in the prediction and the path that sets the makespan.
struct TaskTimes {
  std::vector<double> start_us, finish_us;  ///< by task id: its execution
  std::vector<uint32_t> worker;             ///< by task id: the worker the runtime runs it on
  std::vector<uint32_t> critical;           ///< the critical path, first task to last
  bool acyclic = true;                      ///< false: a cycle; nothing else is filled
};
/// The predicted execution of every task of `p` on `tg` run by `rt` (`g`: its counter graph).
TaskTimes predicted_times(const ir::Program& p, const ir::Target& tg, const Runtime& rt,
                          const ir::Graph& g);

}  // namespace amk::targets
