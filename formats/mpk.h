// Internal: MPK's task graph as its file holds it (the reader's and the writer's one model), with
// the facts of mirage's runtime_header.h and persistent_kernel.cuh that both need.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/blocks.h"
#include "formats/regions.h"
#include "ir/json_cursor.h"

namespace amk::formats::mpk {

inline constexpr uint64_t kEventInvalid = 0x7ffffffffffffffeull;
inline constexpr uint64_t kNvshmemTag = 0x1e00000000000000ull;
inline constexpr int kMaxInputs = 7, kMaxOutputs = 3, kMaxDims = 4, kMaxWorkers = 160;

enum EventType : int {
  kEmpty = 900,
  kLaunchTasks = 901,
  kLaunchMassive = 902,
  kLaunchDependent = 903,
  kEndOfTaskGraph = 910,
  kTermination = 911,
};
enum TaskType : int { kTerminate = 0, kBeginTaskGraph = 10 };

/// A tensor's dims or strides (MPK's ints): how many the file lists, and the first kMaxDims of
/// them (a tensor of more is refused).
struct Extents {
  std::array<int32_t, kMaxDims> v{};
  uint32_t n = 0;
  void push(int32_t x) {
    if (n < v.size()) v[n] = x;
    ++n;
  }
  /// The values kept.
  std::span<const int32_t> values() const { return {v.data(), std::min<size_t>(n, v.size())}; }
};

struct Tensor {
  ir::RawString base_ptr;  ///< a read file's bytes, or the buffer's name a writer gives
  uint64_t name_hash = 0;  ///< std::hash of the name base_ptr holds (a reader sets it)
  int32_t data_type = 0;
  int64_t offset = 0;     ///< bytes
  Extents dims, strides;  ///< elements
  size_t at = 0;          ///< byte offset in the file
};

struct Task {
  int64_t task_type = 0, variant_id = 0;
  std::span<const Tensor> inputs, outputs;  ///< in Graph::store
  bool inputs_null = true, outputs_null = true;
  uint64_t trigger_event = kEventInvalid, dependent_event = kEventInvalid;
  int64_t request_id = -1, expert_offset = -1, kv_idx = -1, merge_task_offset = -1,
          task_offset = -1;
  size_t at = 0;
};

struct Event {
  int64_t event_type = kEmpty, num_triggers = 0, first_task_id = 0, last_task_id = 0;
  size_t at = 0;
};

struct Graph {
  detail::Blocks<Tensor> store;  ///< the tasks' tensors (before the tasks: they outlive them)
  std::vector<Task> tasks;
  std::vector<Event> events;
  std::vector<int64_t> first_tasks;
};

/// The name of a task type ("RMS_NORM"), or "" when unknown.
std::string_view task_type_name(int64_t t);
/// amk's element type for an MPK DT_* code, or false for an unknown code.
bool elem_type(int64_t data_type, detail::ElemType& out);
/// The MPK DT_* code for an amk dtype.
int64_t data_type_code(ir::DType d);
/// The event index of an event id (its low 32 bits).
inline uint64_t event_index(uint64_t id) {
  return id & 0xffffffffull;
}

/// Sets a task's metadata union (int16 request_id, uint16 kv_idx, int32 merge_task_offset) and
/// the two int32 views of its first four bytes (expert_offset, task_offset).
void set_metadata(Task& t, int16_t request_id, uint16_t kv_idx, int32_t merge_task_offset);
/// The MPK task type nearest an amk opcode (TASK_IDENTITY when there is none).
int64_t task_type_of(ir::Op op);
/// The file text of a graph: nlohmann's dump(2) of it, keys sorted, as MPK writes it.
std::string write(const Graph& g);

/// Each task's worker under the schedulers' deal of LAUNCH_DEPENDENT_TASKS (-1: not dealt
/// statically); `workers` >= 1, `schedulers` >= 1.
std::vector<int64_t> placement(const Graph& g, int64_t workers, int64_t schedulers);

}  // namespace amk::formats::mpk
