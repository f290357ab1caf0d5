// The state the lowering passes hand each other: options, parsed knobs, buffers and task plans.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ir/opcodes.h"
#include "ir/program.h"
#include "ir/tensor_map.h"
#include "lower/graph.h"
#include "lower/model.h"
#include "targets/runtime.h"
#include "targets/target.h"

namespace amk::lower {

/// Weight quantisation of the linear layers (W8A16 / W4A16 with per-group scales).
using Quant = ir::Quant;

/// What to lower besides the model, target and config.
/// The largest batch a lowering takes.
inline constexpr int64_t kMaxBatch = 4096;

struct LowerOptions {
  int64_t pos = 0;                   ///< decode position (kv_len = pos + 1)
  int64_t batch = 1;                 ///< B > 1 emits GEMM tiles
  ir::DType dtype = ir::DType::F32;  ///< weights, activations and KV caches
  Quant quant = Quant::None;
  int64_t quant_group = 128;  ///< columns per scale
  bool amk_compat = false;    ///< AMK's lower() byte for byte: only tiling/n_partitions consumed
  bool reference = false;     ///< one untiled task per graph node, no split/fusion/placement/pages
  bool log = false;           ///< record one line per pass (with its time) in LowerResult::log
  /// The executor placement weighs tasks for (nullptr: the target's default runtime); it must
  /// outlive the lowering.
  const targets::Runtime* runtime = nullptr;
};

/// ScheduleConfig parsed and checked against the target.
struct Knobs {
  std::optional<int64_t> n_tile, base_width, n_partitions, kv_block;
  std::vector<std::vector<std::string>> fusion;  ///< groups of node roles or names
  enum class Sm : uint8_t { None, RoundRobin, LoadBalance, Explicit } sm = Sm::LoadBalance;
  std::vector<std::pair<int64_t, int64_t>> sm_map;  ///< explicit {task id, sm}
  int64_t depth = 2;
  enum class Pages : uint8_t { None, Linear, GraphColor } pages = Pages::GraphColor;
  int64_t threads = 256, smem = 0;
};

using ir::Access;  ///< one buffer access of a task
using ir::Region;  ///< the whole buffer, or [lo, hi) along one axis (GEMV tile columns)

/// A task before counters exist: its ir::Task (out_counter/waits unset), counter group and the
/// region of its outputs it writes. It reads its inputs whole, except an input that is also an
/// output (in place: the prior state, e.g. a KV cache being appended to).
struct PlanTask {
  ir::Task task;
  int64_t group = 0;  ///< tasks of one group share one counter (tiles of one projection)
  int64_t node = -1;  ///< op-graph node it came from (-1: several, after fusion)
  Region out_region;  ///< GEMV/GEMM tiles: their columns; others: whole outputs
  /// The accesses TensorMap and page allocation see (vectors cleared first).
  void accesses(std::vector<Access>& reads, std::vector<Access>& writes) const {
    reads.clear();
    writes.clear();
    for (int64_t b : task.inputs)
      if (std::find(task.outputs.begin(), task.outputs.end(), b) == task.outputs.end())
        reads.push_back({b, {}});
    for (int64_t b : task.outputs) writes.push_back({b, out_region});
  }
};

/// Resizes `v` to `n`: the elements a shrink drops are parked in `spare` and a growth takes them
/// back first, so the storage of their strings and vectors survives a warm lowering's changes of
/// size (their contents are stale: the caller overwrites them).
template <class T>
void resize_reusing(std::vector<T>& v, size_t n, std::vector<T>& spare) {
  while (v.size() > n) {
    spare.push_back(std::move(v.back()));
    v.pop_back();
  }
  if (v.capacity() < n) v.reserve(std::max(n, 2 * v.capacity()));
  while (v.size() < n && !spare.empty()) {
    v.push_back(std::move(spare.back()));
    spare.pop_back();
  }
  v.resize(n);
}

struct PlacementDag;  // assign.cpp's

/// Everything the passes share. `program` holds buffers, meta, target and config until emit
/// fills its counters and tasks.
struct Plan {
  const ModelSpec* model = nullptr;
  const targets::TargetSpec* target = nullptr;
  LowerOptions opt;
  Knobs knobs;
  std::vector<Node> graph;
  ir::Program program;
  std::vector<PlanTask> tasks;
  std::vector<std::string> group_notes;     ///< counter note per group
  std::vector<std::string> group_names;     ///< op name per group ("L0.q_proj")
  std::vector<uint32_t> dep_off, dep_list;  ///< CSR: earlier tasks each task must follow
  /// The passes after deps leave tasks, groups and dependencies as they are (a warm Lowerer
  /// keeps them for the next config): assign chooses each task's SM and the emission order here.
  std::vector<int64_t> sm;      ///< by task: its SM (empty: the tasks' own)
  std::vector<uint32_t> order;  ///< order[k]: the task emitted k-th (empty: task order)
  std::vector<uint32_t> pos;    ///< inverse of order (empty with it)
  std::vector<std::string> log;
  /// assign_workers's view of the tasks, kept (and owned) by a warm Lowerer for the structure
  /// placed; null: assign_workers makes one for the run.
  PlacementDag* dag = nullptr;
  bool keep_tasks = false;  ///< emit copies the tasks instead of moving them (a warm Lowerer)
  /// The program's tasks are already those this run emits, in this order (a warm Lowerer's run
  /// on the structure and order of its previous one): emit only sets their SMs.
  bool tasks_emitted = false;
  // Memory a warm lowering keeps between runs.
  ir::TensorMap tensor_map;           ///< the dependency pass's
  std::vector<PlanTask> spare_plan;   ///< tasks dropped by a shrink, storage kept (resize_reusing)
  std::vector<ir::Task> spare_tasks;  ///< the program's, likewise
  /// The earlier tasks task `i` must follow (after the dependency pass).
  std::span<const uint32_t> deps(size_t i) const {
    return {dep_list.data() + dep_off[i], dep_off[i + 1] - dep_off[i]};
  }
  /// The task emitted at position k.
  uint32_t task_at(size_t k) const { return order.empty() ? static_cast<uint32_t>(k) : order[k]; }
  /// The emission position of task i.
  uint32_t position(uint32_t i) const { return pos.empty() ? i : pos[i]; }
  /// A new counter group named `name` (note defaults to the name); returns its id.
  int64_t add_group(std::string name, std::string note = {}) {
    group_notes.push_back(note.empty() ? name : std::move(note));
    group_names.push_back(std::move(name));
    return static_cast<int64_t>(group_notes.size()) - 1;
  }
};

}  // namespace amk::lower
