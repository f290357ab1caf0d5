// Executors as data: what the runtime that walks a megakernel costs per task on a chip family
// (dispatch, dependency signals, barriers, prefetch across tasks, how loads are staged), one
// record per file in runtimes/*.json, beside the hardware records of targets/*.json.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/json_value.h"
#include "ir/program.h"
#include "ir/result.h"

namespace amk::targets {

struct TargetSpec;

/// A runtime profile. Every constant of the cost model that is not the chip's lives here; the
/// field table (runtime_fields) says what each one means, its unit and its range.
struct Runtime {
  std::string name;
  std::string family;       ///< the chips it runs on: "gpu", "ascend", "tx8", "cpu"
  std::string note;         ///< what it is and where its numbers come from
  std::string placement;    ///< an unplaced program's tasks go to workers: "loader" or "dynamic"
  std::string staging;      ///< where weight loads land: "registers", "shared" or "fixed"
  std::string prefetch;     ///< the next task's weights load before its dependency wait into:
                            ///< "none", "l2" or "shared"
  std::string fused_tasks;  ///< "run" (or empty) or "trap": whether it executes FUSED tasks
  std::string i4_hint;      ///< "exact" (or empty) or "oversized": how its L2 hint sizes an I4
                            ///< weight
  std::string quant_hint;   ///< "beside" (or empty) or "ahead": a dequantising GEMV's loads
                            ///< against the next task's L2 hint
  double launch_us = 0;     ///< once per run
  double dispatch_ns = 0;
  double barrier_ns = 0;
  double signal_ns = 0;
  double wait_ns = 0;
  double remote_ns = 0;
  double poll_ns = 0;
  double latency_ns = 0;
  double prefetched_latency_ns = 0;
  double bytes_per_thread = 0;
  /// A GEMV that dequantises int8/int4 weights, where its kernel loads them otherwise (each 0: as
  /// the field without the prefix).
  double quant_bytes_per_thread = 0;
  double quant_latency_ns = 0;
  double quant_prefetched_latency_ns = 0;
  double threads = 0;  ///< 0: the config's threads_per_block
  double reserved_smem_bytes = 0;
  double default_smem_bytes = 0;
  double worker_bytes_per_cycle = 0;
  double peak_fraction = 0;
  double flops_per_thread_cycle = 0;
  double kv_step_ns = 0;             ///< 0: attention's KV positions are no serial chain here
  double max_threads_per_block = 0;  ///< the most threads its launch takes (0: the target's)
  ir::JsonValue sources;             ///< {"field": "where its value comes from"}
  ir::JsonValue fit;                 ///< amk calibrate's report (kept verbatim)
  bool operator==(const Runtime&) const = default;
};

/// One field of a runtime file. Exactly one of `text` / `number` is set; a text field with
/// `choices` takes one of them.
struct RuntimeField {
  std::string_view key;
  std::string_view unit;  ///< "ns", "us", "bytes", "" (a ratio or a count)
  std::string_view doc;
  std::string Runtime::*text = nullptr;
  double Runtime::*number = nullptr;
  std::span<const std::string_view> choices = {};
  double min = 0, max = 0;  ///< a number's range
  bool fit = false;         ///< a constant `amk calibrate` may move
  bool optional = false;    ///< absent: 0 (a text: empty), and written only when set
};

/// The fields of a runtime file in file order: the one list the reader, the writer, `amk
/// runtimes` and calibrate walk.
std::span<const RuntimeField> runtime_fields();
/// Parses a runtime file's text; diagnostics (`runtime.field`) name `origin`, a JSON pointer and
/// a line:column.
ir::Result<Runtime> parse_runtime(std::string_view text, std::string_view origin);
/// The file text of a runtime (fields in table order; parse round-trips it).
std::string write_runtime(const Runtime& r);
/// A built-in runtime by name ("amk-cuda"), or a runtime file by path.
ir::Result<Runtime> load_runtime(std::string_view name_or_path);
/// Names of the built-in runtimes (the files in runtimes/), sorted.
std::vector<std::string> builtin_runtime_names();
/// A built-in runtime, parsed once per process; nullptr for an unknown name.
const Runtime* builtin_runtime(std::string_view name);
/// The runtime a target runs by default: its file's "runtime", else (a record embedded in a
/// program) that of the built-in target of the same name, else amk-cuda.
const Runtime& default_runtime(const ir::Target& t);
/// Likewise for a target file's record.
const Runtime& default_runtime(const TargetSpec& t);
/// Warnings (`runtime.limit`, at the config field) for what `c` asks of runtime `r` that its
/// launch refuses (threads_per_block above max_threads_per_block) or its executor cannot run
/// (fusion_grouping where it traps on FUSED tasks; with `lowered`, only when that program has
/// one) or mis-sizes (with `lowered`: an L2 hint of I4 weights, i4_hint oversized): a
/// prediction for such a config is one for an executor that would take it.
ir::Diagnostics runtime_limits(const Runtime& r, const ir::ScheduleConfig& c,
                               const ir::Program* lowered = nullptr);
/// `arg` (a name or a file) when given, else the target's default runtime.
ir::Result<Runtime> resolve_runtime(std::string_view arg, const ir::Target& t);

}  // namespace amk::targets
