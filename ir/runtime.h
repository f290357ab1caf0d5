// What the runtime that executes a program provides: its kind (amk's own, Mirage MPK, PTO), its
// launch shape and its capacities, and for a graph read from another runtime's file the foreign
// identity of each task and the scopes it was submitted in. Carried by ir::Program (an optional
// member) so the capacity rules and the VM read it; serialised as the program's "runtime" field.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/json_value.h"
#include "ir/result.h"

namespace amk::ir {

/// Which runtime executes the program.
enum class RuntimeKind : uint8_t { Amk, Mpk, Pto };

/// The launch-shape and capacity keys, one table for reader, writer, `--launch` and `amk info`.
enum class Cap : uint8_t {
  workers,          ///< MPK worker CTAs (one per SM)
  schedulers,       ///< MPK scheduler warps (four per scheduler CTA)
  sms,              ///< SMs (MPK) or cores of the chip
  worker_queue,     ///< MPK per-worker task queue entries
  scheduler_queue,  ///< MPK per-scheduler event queue entries
  task_window,      ///< PTO per-ring task window (slots)
  heap,             ///< PTO per-ring output heap (bytes)
  dep_pool,         ///< PTO per-ring dependency-list pool (entries)
  tensormap,        ///< PTO TensorMap entry pool (shared)
  ready_queue,      ///< PTO ready queue per resource shape
  fanin_inline,     ///< PTO fan-in edges held inline before the spill pool
  fanin_spill,      ///< PTO per-ring fan-in spill pool (entries)
  cores_aic,        ///< PTO AIC (cube) cores
  cores_aiv,        ///< PTO AIV (vector) cores
};
inline constexpr int kCapCount = 14;

/// One row of the capacity table.
struct CapInfo {
  Cap key;
  std::string_view name;  ///< the JSON / --launch key
  bool per_ring;          ///< a list with one value per PTO ring (a single value: every ring)
  std::string_view doc;
};
/// Every key, in table order.
std::span<const CapInfo> cap_table();
/// The row of a key.
const CapInfo& cap_info(Cap k);
/// The key named `name`, or nullopt.
std::optional<Cap> parse_cap(std::string_view name);

/// PTO's ring count (scope depth d uses ring min(d, kPtoRings - 1)).
inline constexpr int kPtoRings = 4;

/// A PTO scope (PTO2_SCOPE) as scope_stats recorded it, or derived from the rings.
struct RuntimeScope {
  int32_t parent = -1;  ///< enclosing scope, -1 for a root
  int32_t depth = 0;
  int32_t ring = 0;
  std::string site;   ///< "file:line" of the PTO2_SCOPE call
  int64_t begin = 0;  ///< first ring-local task id submitted while it was open (its ring)
  int64_t end = 0;    ///< one past the last
  bool operator==(const RuntimeScope&) const = default;
};

/// A task's identity in the runtime its file came from.
struct ForeignTask {
  uint64_t id = 0;      ///< MPK: the task index; PTO: task_id = ring << 32 | local
  int32_t kind = 0;     ///< MPK: task_type; PTO: PtoShape (a join amk adds: Alloc, id ~0)
  int32_t variant = 0;  ///< MPK: variant_id; PTO: block_num
  int32_t scope = -1;   ///< PTO: index into Runtime::scopes
  std::array<int32_t, 3> kernels{-1, -1, -1};  ///< PTO kernel_ids (aic, aiv0, aiv1)
  int64_t heap = 0;     ///< PTO: bytes of the packed output buffer this task allocates
  int32_t fanin = 0;    ///< PTO: distinct producers it waits on (dependency-pool entries)
  bool early = false;   ///< PTO early_dispatch
  bool manual = false;  ///< PTO: submitted in a MANUAL scope
  bool operator==(const ForeignTask&) const = default;
};

/// PTO resource shapes (ForeignTask::kind).
enum class PtoShape : int32_t { Mix = 0, Aic = 1, Aiv = 2, Alloc = 3 };

/// The AIC and AIV cores one block of a task of PTO shape `kind` takes (a MIX block: a cluster
/// of one AIC and two AIV cores; Alloc and unknown shapes: none).
std::array<int64_t, 2> pto_block_cores(int32_t kind);

/// The runtime record. A capacity that is empty is the runtime's documented default.
struct Runtime {
  RuntimeKind kind = RuntimeKind::Amk;
  std::array<std::vector<int64_t>, kCapCount> caps;
  std::vector<RuntimeScope> scopes;  ///< PTO, in begin order
  std::vector<ForeignTask> tasks;    ///< by task id (empty for amk's own programs)
  /// PTO: (waiter, notifier) task ids (ForeignTask::id): the waiter blocks on its core in TWAIT
  /// until the notifier's TNOTIFY, an order deps.json does not record (`--launch twait=W:N`).
  std::vector<std::array<uint64_t, 2>> twaits;
  JsonValue extra;  ///< unknown fields, kept verbatim

  /// The value of `k` for `ring` (the last given value covers later rings), or nullopt.
  std::optional<int64_t> given(Cap k, int ring = 0) const;
  /// given(), else the runtime's documented default (target-independent), else nullopt.
  std::optional<int64_t> value(Cap k, int ring = 0) const;
  /// Sets a capacity (one value: every ring).
  void set(Cap k, std::vector<int64_t> v) { caps[static_cast<size_t>(k)] = std::move(v); }
  /// twaits as indexes into tasks (waiter, notifier), -1 for an id no task has.
  std::vector<std::array<int64_t, 2>> twait_tasks() const;
  bool operator==(const Runtime&) const = default;
};

/// JSON name of a kind ("amk", "mpk", "pto").
std::string_view name(RuntimeKind k);
/// Kind by name, or nullopt.
std::optional<RuntimeKind> parse_runtime_kind(std::string_view s);
/// The documented default of `k` for a runtime of kind `kind`, or nullopt where it depends on the
/// chip (MPK's worker count) or does not apply.
std::optional<int64_t> runtime_default(RuntimeKind kind, Cap k);

/// The record as the "runtime" field of a program holds it.
JsonValue runtime_json(const Runtime& r);
/// Reads a "runtime" field; diagnostics point under `pointer`.
Result<Runtime> parse_runtime(const JsonValue& v, std::string_view pointer = "/runtime");
struct Program;
/// Moves a parsed program's "runtime" field (kept in Program::extra by the reader) into
/// Program::runtime; a malformed record fails the result. The one reading direction.
void lift_runtime(Result<Program>& r);

/// Applies one `KEY=VALUE` override (a number, or a comma list per ring) to `r`; `twait=W:N`
/// adds a blocking-wait pair (Runtime::twaits).
Status apply_launch(Runtime& r, std::string_view key_value);

}  // namespace amk::ir
