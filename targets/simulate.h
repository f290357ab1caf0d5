// The runtime model's schedule: a program's tasks walked in dependency order on the workers that
// run them, each paying what its runtime profile charges (dispatch, waits, signals across workers,
// barriers) and streaming its bytes at the rate its bytes in flight and its share of HBM give.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "ir/digraph.h"
#include "ir/graph.h"
#include "ir/program.h"
#include "targets/runtime.h"

namespace amk::targets {

/// What a runtime on a chip delivers under a program's config, in microseconds and bytes per
/// microsecond: the constants of the walk, worked out once per program.
struct Machine {
  enum class Prefetch : uint8_t { None, L2, Shared };
  double launch = 0, dispatch = 0, wait = 0, remote = 0, poll_half = 0;
  double barrier = 0, signal = 0, sync = 0;  ///< after a task: barriers, its signal, both
  double threads = 0;                        ///< per worker, doing the work
  double in_flight = 0;                      ///< bytes a worker keeps in flight
  double stream = 0;  ///< bytes/us one worker streams from DRAM alone (Little's law, capped)
  double hot = 0;     ///< bytes/us one worker reads prefetched data
  double qstream = 0, qhot = 0;  ///< stream and hot for a GEMV that dequantises its weights
  double peak = 0;               ///< bytes/us a worker loads at most
  double hbm = 0;                ///< bytes/us the chip streams (achievable)
  double compute = 0;            ///< flops/us of one worker at batch 1
  double kv_step = 0;  ///< us per KV position and 32 elements of an attention head (0: no chain)
  double warps = 1;    ///< per worker: the heads of an attention tile it walks at once
  double prefetch_cap = 0;  ///< bytes of a task that can be loaded ahead
  Prefetch prefetch = Prefetch::None;
  bool dynamic = false;           ///< an unplaced program's tasks go to the earliest free worker
  bool quant_hint_ahead = false;  ///< a dequantising GEMV streams after the next task's L2 hint
  int64_t depth = 2;
  uint32_t workers = 1;
  /// The machine `rt` makes of `hw` under a config's threads, shared memory and depth (nullptr:
  /// AMK's defaults, 256 threads, no shared memory asked for, depth 2).
  Machine(const ir::ScheduleConfig* cfg, const ir::Target& hw, const Runtime& rt);
  /// A worker's streaming rate while `k` workers stream at once (`dequant`: a GEMV that
  /// dequantises its weights).
  double rate(double k, bool dequant = false) const {
    return std::min(dequant ? qstream : stream, hbm / std::max(1.0, k));
  }
  /// The serial chain of an attention tile: its heads dealt over the warps, each walking its
  /// steps, a lane's share of a head's `width` elements at each (ir::TaskLoad's heads, steps and
  /// width).
  double chain(double heads, double steps, double width) const {
    if (!(kv_step > 0 && steps > 0)) return 0.0;
    return std::ceil(heads / warps) * steps * std::max(1.0, std::ceil(width / 32)) * kv_step;
  }
  /// A task's execution once its inputs are ready: max(streaming what was not prefetched,
  /// computing, its serial chain), with `pre` of its `bytes` loaded ahead.
  double exec(const ir::TaskLoad& l, double pre, double k) const {
    return exec_at(l.bytes, l.flops, pre, rate(k, l.dequant), chain(l.heads, l.steps, l.width),
                   l.dequant);
  }
  /// Likewise at the streaming rate `r` (rate(k, dequant)), `serial` the task's chain.
  double exec_at(double bytes, double flops, double pre, double r, double serial,
                 bool dequant) const {
    double mem = (bytes - pre) / r;
    if (prefetch == Prefetch::L2) mem += pre / (dequant ? qhot : hot);
    return std::max({mem, flops / compute, serial});
  }
  bool operator==(const Machine&) const = default;
};

/// The producers of one counter so far: the latest finish (its worker and task), and the latest
/// finish on another worker than that one: what a waiter on any worker sees.
struct LatestFinish {
  static constexpr uint32_t kNoTask = UINT32_MAX;
  double f1 = -std::numeric_limits<double>::infinity(), f2 = f1;
  uint32_t w1 = 0, t1 = kNoTask, t2 = kNoTask;
  /// Records a producer finishing at `f` on worker `w` (task `t`).
  void add(double f, uint32_t w, uint32_t t) {
    if (f > f1) {
      if (w != w1 || t1 == kNoTask) {
        f2 = f1;
        t2 = t1;
      }
      f1 = f;
      w1 = w;
      t1 = t;
    } else if (w != w1 && f > f2) {
      f2 = f;
      t2 = t;
    }
  }
  /// When a waiter on worker `w` sees them all, a finish on another worker arriving `cross`
  /// later; `who` gets the producer that decides it. -inf without producers.
  double ready_on(uint32_t w, double cross, uint32_t* who = nullptr) const {
    if (t1 == kNoTask) return -std::numeric_limits<double>::infinity();
    double c = f1 + (w1 != w ? cross : 0.0);
    uint32_t by = t1;
    if (w1 == w && t2 != kNoTask && f2 + cross > c) {
      c = f2 + cross;
      by = t2;
    }
    if (who) *who = by;
    return c;
  }
};

/// Where the walk's time went along its critical path (sums to Walk::makespan).
struct Breakdown {
  double launch_us = 0;      ///< the run's launch
  double dispatch_us = 0;    ///< handing tasks to workers and setting them up
  double dependency_us = 0;  ///< publishing outputs and counters, their crossing to the
                             ///< waiter's worker, polling for them, reading them
  double sync_us = 0;        ///< block-wide barriers
  double memory_us = 0;      ///< streaming weights that was not hidden behind compute or waits
  double compute_us = 0;     ///< computing, and an attention tile's serial walk (Machine::chain)
  bool operator==(const Breakdown&) const = default;
};

/// What the walk reads of a program's tasks, in flat arrays: made from a program (walk_input) or
/// from a lowering's plan before it has counters (its groups are the counters).
struct WalkInput {
  std::vector<double> bytes, flops;          ///< by task (ir::task_load)
  std::vector<uint8_t> streams;              ///< by task: streams weights a runtime may load ahead
  std::vector<uint8_t> dequant;              ///< by task: ir::TaskLoad::dequant
  std::vector<std::array<float, 3>> chain;   ///< by task: ir::TaskLoad's heads, steps and width
  std::vector<ir::Op> op;                    ///< by task (AMK's formula adds a GEMV tile's issue)
  std::vector<uint32_t> worker;              ///< by task; empty: the runtime places the tasks
  std::vector<uint32_t> order;               ///< topological over the waits and each worker's queue
  std::vector<uint32_t> wait_off{0}, waits;  ///< CSR: the counter slots each task waits on
  std::vector<uint32_t> out;                 ///< by task: the slot it increments
  std::vector<std::pair<int64_t, int64_t>> est;  ///< est_bytes, est_flops (AMK's loader's keys)
  uint32_t slots = 0;                            ///< number of counter slots
  bool acyclic = true;                           ///< false: no order holds every task
  /// Sizes the per-task loads (bytes, flops, streams, dequant, chain, op) for `n` tasks.
  void resize_loads(size_t n);
  /// The per-task loads of `from` (bytes, flops, streams, dequant, chain, op), in place of these.
  void copy_loads(const WalkInput& from);
  /// Task i's load, as the walk reads it of task `t`.
  void set_load(size_t i, const ir::TaskLoad& l, const ir::Task& t);
};
/// The walk's input of a placed or unplaced program (`g`: its counter graph; `queues` as
/// estimate() takes it).
WalkInput walk_input(const ir::Program& p, const ir::Graph& g, const ir::ScheduleGraph* queues);
/// Likewise into `in`, reusing its memory; with `keep_program_part`, `in` holds the input of a
/// program whose tasks, their SMs aside, and buffers are those of `p`, and its program part
/// (counter slots, waits, loads) is kept as it is: only the placement part is filled.
void fill_walk_input(WalkInput& in, const ir::Program& p, const ir::Graph& g,
                     const ir::ScheduleGraph* queues, bool keep_program_part = false);

/// Whether a runtime may load a task's weights ahead: GEMV and GEMM tiles, fused tasks.
inline bool streams_weights(const ir::Task& t) {
  return t.op == ir::Op::GEMV_TILE || t.op == ir::Op::GEMM_TILE || t.op == ir::Op::FUSED;
}

/// The walk of a program on a machine.
struct Walk {
  double makespan = 0;                ///< launch + the last task's finish
  double bytes = 0;                   ///< Σ task bytes
  std::vector<double> ready, finish;  ///< by task: execution start and end (finish: signalled)
  std::vector<uint32_t> worker;       ///< by task: the worker that runs it
  std::vector<uint32_t> path;         ///< the critical path, first task to last
  Breakdown breakdown;
  bool acyclic = true;
};

/// The SM queues of a placed program as AMK's loader runs them (an unassigned task on SM 0):
/// `queues` when it is that graph over `g` (a validator's), else one built into `own`.
const ir::ScheduleGraph& placed_queues(const ir::Program& p, const ir::Graph& g,
                                       const ir::ScheduleGraph* queues,
                                       std::optional<ir::ScheduleGraph>& own);

/// A prediction from a schedule's makespan: never below the launch and then the bytes `w` moves at
/// the chip's bandwidth, nor below the weight-streaming floor (`floor_us`; NaN: none).
double bounded_makespan(double makespan_us, const Walk& w, const Machine& m, double floor_us);

/// Walks the tasks on `m`; `times` fills ready, finish, worker and path (else only makespan,
/// bytes and the breakdown).
Walk simulate(const WalkInput& in, const Machine& m, bool times);

/// simulate() for walk after walk (a search's candidates, a placement's tries), keeping the walk's
/// memory from one to the next.
class Simulator {
 public:
  Simulator();
  ~Simulator();
  Simulator(Simulator&&) noexcept;
  Simulator& operator=(Simulator&&) noexcept;
  /// simulate(in, m, times). A non-zero `program_version` names `in`'s program part (counter
  /// slots, waits, loads): a run with the version and the machine of the last run takes the
  /// streams' concurrency that run worked out (the caller keeps each version to one program part).
  Walk run(const WalkInput& in, const Machine& m, bool times, uint64_t program_version = 0);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace amk::targets
