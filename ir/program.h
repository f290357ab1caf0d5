// The IR data model: buffers, counters, tasks, pages, config and target in flat vectors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/json_value.h"
#include "ir/runtime.h"
#include "ir/types.h"

namespace amk::ir {

/// A JSON number as written: integer or float (AMK keeps Python's int/float distinction).
struct Number {
  bool is_int = true;
  int64_t i = 0;
  double f = 0.0;
  /// An integer number.
  static Number of(int64_t v) { return {true, v, static_cast<double>(v)}; }
  /// A float number.
  static Number real(double v) { return {false, static_cast<int64_t>(0), v}; }
  /// The value as a double.
  double as_double() const { return is_int ? static_cast<double>(i) : f; }
  bool operator==(const Number& o) const {
    return is_int == o.is_int && (is_int ? i == o.i : f == o.f);
  }
};

/// A named tensor; `id` is its position in Program::buffers.
struct Buffer {
  std::string name;
  BufferKind kind = BufferKind::ACTIVATION;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  MemSpace space = MemSpace::HBM;
  std::optional<std::string> source;  ///< state-dict key of a WEIGHT/CONST buffer
  JsonValue extra;                    ///< unknown fields, kept verbatim
  /// Product of the dims (1 for rank 0).
  int64_t numel() const;
  /// Storage bytes, rounded up for packed dtypes (held at INT64_MAX past it: see size_bytes).
  int64_t nbytes() const { return dtype_nbytes(dtype, numel()); }
  /// Storage bytes in checked arithmetic: nullopt when they do not fit in int64 (the validator's
  /// `buffer.size`; a program it accepts has none such).
  std::optional<int64_t> size_bytes() const;
  bool operator==(const Buffer&) const = default;
};

/// A monotonic uint32 counter; producers increment it by one each.
struct Counter {
  int64_t init = 0;
  std::string note;
  JsonValue extra;
  bool operator==(const Counter&) const = default;
};

/// A precondition: do not run until counters[counter] >= threshold.
struct Wait {
  int64_t counter = 0;
  int64_t threshold = 1;
  JsonValue extra;
  bool operator==(const Wait&) const = default;
};

/// A param value: int, float or bool inline; anything else (string, object, list, null) verbatim.
struct ParamValue {
  enum class Kind : uint8_t { Int, Float, Bool, Other };
  Kind kind = Kind::Int;
  union {
    int64_t i = 0;  ///< Int, Bool (0 or 1)
    double f;       ///< Float
  };
  JsonValue other;
  /// An int param.
  static ParamValue of_int(int64_t v);
  /// A float param.
  static ParamValue of_float(double v);
  /// A bool param.
  static ParamValue of_bool(bool v);
  /// Any other JSON value (string, object, list, null).
  static ParamValue of_json(JsonValue v);
  /// True for a non-bool int (Python's isinstance(v, int) and not bool).
  bool is_int() const { return kind == Kind::Int; }
  /// True for an int or float (bools excluded).
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float; }
  /// The numeric value as double (bools as 0/1).
  double as_double() const;
  bool operator==(const ParamValue& o) const;
};

/// One params entry; keys keep their insertion order.
struct Param {
  std::string key;
  ParamValue value;
  bool operator==(const Param&) const = default;
};

/// A DAG node == one ABI instruction on one SM; `id` is its position in Program::tasks.
struct Task {
  Op op = Op::NOP;
  std::vector<int64_t> inputs;   ///< buffer ids read
  std::vector<int64_t> outputs;  ///< buffer ids written
  int64_t out_counter = 0;       ///< incremented by one on completion
  std::vector<Wait> waits;
  std::vector<Param> params;
  std::optional<int64_t> sm;  ///< SM/worker assignment (a lowering output)
  int64_t est_bytes = 0;
  int64_t est_flops = 0;
  std::string label;
  JsonValue extra;
  /// The value of a param key, or nullptr.
  const ParamValue* param(std::string_view key) const;
  /// An int param (non-bool) or nullopt.
  std::optional<int64_t> int_param(std::string_view key) const;
  /// A numeric param (int or float, not bool) as double, or nullopt.
  std::optional<double> real_param(std::string_view key) const;
  /// Sets (or replaces in place) a param.
  void set_param(std::string_view key, ParamValue v);
  /// `label` or the opcode name when the label is empty.
  std::string_view display() const;
  bool operator==(const Task&) const = default;
};

/// Asks the cache for the blocks a task keeps apart from its record (inputs, outputs, waits,
/// params). Issued a few tasks ahead by the first pass over a program that is not in cache, it
/// lets that pass wait on several tasks' blocks at once instead of on one block after another.
inline void prefetch_blocks(const Task& t) {
  __builtin_prefetch(t.inputs.data());
  __builtin_prefetch(t.outputs.data());
  __builtin_prefetch(t.waits.data());
  __builtin_prefetch(t.params.data());
}
/// prefetch_blocks, and the rest of the params block and the label's characters: for a pass that
/// reads every field of a task.
inline void prefetch_whole(const Task& t) {
  prefetch_blocks(t);
  const char* params = reinterpret_cast<const char*>(t.params.data());
  const size_t bytes = t.params.size() * sizeof(Param);
  for (size_t at = 64; at < bytes; at += 64) __builtin_prefetch(params + at);
  __builtin_prefetch(t.label.data());
}

/// A physical scratch slot; `id` is its position in PageAllocation::pages.
struct Page {
  MemSpace space = MemSpace::GLOBAL_SCRATCH;
  int64_t nbytes = 0;
  int64_t live_start = -1;
  int64_t live_end = -1;
  JsonValue extra;
  bool operator==(const Page&) const = default;
};

/// The page allocation: which page backs each activation buffer (insertion order kept).
struct PageAllocation {
  std::vector<std::pair<int64_t, int64_t>> buffer_to_page;
  std::vector<Page> pages;
  JsonValue extra;
  /// Sum of the pages' sizes.
  int64_t total_scratch_bytes() const;
  bool operator==(const PageAllocation&) const = default;
};

/// The Loop-2 search point; fields are kept verbatim (AMK does not type-check them).
struct ScheduleConfig {
  JsonValue tiling;            ///< {"gemv": {"N_tile": 64}, "attention": {...}}
  JsonValue fusion_grouping;   ///< [["add", "rmsnorm"], ...]
  JsonValue sm_assignment;     ///< "round_robin" | "load_balance" | {"<task id>": sm}
  JsonValue pipelining_depth;  ///< int, default 2
  JsonValue page_allocation;   ///< "linear" | "graph_color" | "none"
  JsonValue threads_per_block;
  JsonValue smem_bytes_per_block;
  JsonValue extra;
  /// AMK's defaults (load_balance, depth 2, graph_color, 256 threads, 0 smem).
  static ScheduleConfig defaults();
  /// pipelining_depth as everything reads it: a non-negative integer, else AMK's default 2.
  int64_t depth() const;
  bool operator==(const ScheduleConfig&) const = default;
};

/// A chip described as data (AMK's GpuTarget, field for field).
struct Target {
  std::string name;
  Number sm_arch, num_sms, smem_bytes_per_sm, smem_bytes_per_block_optin, regs_per_sm,
      max_threads_per_sm, max_regs_per_thread, l2_bytes, hbm_bytes;
  Number hbm_bandwidth_gbs = Number::real(0), fp16_tflops = Number::real(0);
  Number clock_ghz = Number::real(0.0);
  bool supports_cooperative = true;
  bool wddm_tdr = false;
  Number measured_bw_gbs = Number::real(0.0);
  std::string note;
  JsonValue extra;
  /// Weight-streaming floor in microseconds at the spec bandwidth (NaN if bandwidth <= 0).
  double bandwidth_bound_us(double weight_bytes) const;
  bool operator==(const Target&) const = default;
};

struct Program;

/// What a task moves and computes.
/// The sequences a decode attention tile's query holds: B for a rank-3 query [B, n_heads,
/// head_dim], else 1.
inline int64_t attention_batch(const std::vector<int64_t>& q_shape) {
  return q_shape.size() == 3 ? q_shape[0] : 1;
}

struct TaskLoad {
  double bytes = 0;
  double flops = 0;
  double heads = 0;      ///< ATTENTION: its query heads
  double steps = 0;      ///< ATTENTION: the KV positions each head's online softmax walks in turn
                         ///< (kv_len, for each sequence of a batched tile)
  double width = 0;      ///< ATTENTION: head_dim, the elements of a head's row at each position
  bool dequant = false;  ///< GEMV/GEMM: weights stored quantised (params.qdtype), dequantised
                         ///< as they stream
  bool operator==(const TaskLoad&) const = default;
};
/// The one definition of a task's load (AMK's cost model): est_bytes / est_flops when either is
/// set; else the bytes of its WEIGHT and KV_CACHE inputs, GEMV/GEMM 2·M_tile·K·N_tile flops (and
/// K·N_tile·2 bytes without a weight input), ATTENTION 4·n_heads·kv_len·head_dim flops and its
/// heads, steps and width, and whether a GEMV/GEMM dequantises its weights (whatever est_bytes /
/// est_flops say).
TaskLoad task_load(const Program& p, const Task& t);

/// A complete megakernel schedule (AMK's MegakernelProgram). Ids are vector positions.
struct Program {
  std::string ir_version{kIrVersion};
  std::string abi_version{kAbiVersion};
  JsonValue meta = JsonValue::object();
  std::optional<Target> target;
  std::vector<Buffer> buffers;
  std::vector<Counter> counters;
  std::vector<Task> tasks;
  std::optional<PageAllocation> pages;
  std::optional<ScheduleConfig> config;
  JsonValue extra;                 ///< unknown top-level fields
  std::optional<Runtime> runtime;  ///< the executing runtime ("runtime" field; absent: amk's)

  /// Appends a buffer and returns its id.
  int64_t add_buffer(std::string name, BufferKind kind, DType dtype, std::vector<int64_t> shape,
                     MemSpace space = MemSpace::HBM, std::optional<std::string> source = {});
  /// Appends a counter and returns its id.
  int64_t add_counter(std::string note = {});
  /// Appends a task and returns its id.
  int64_t add_task(Task t);
  /// Σ nbytes over WEIGHT buffers, held at INT64_MAX past it (`buffer.size` rejects such).
  int64_t total_weight_bytes() const;
  /// True when any task has an SM assignment.
  bool sm_assigned() const;
  bool operator==(const Program&) const = default;
};

}  // namespace amk::ir
