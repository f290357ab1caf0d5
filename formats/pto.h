// Internal: PTO's dependency dump (deps.json) and scope statistics (scope_stats.jsonl) as their
// files hold them: the reader's and the writer's one model (simpler dep_gen_replay.cpp,
// docs/dfx/dep-gen.md, docs/dfx/scope-stats.md).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "formats/blocks.h"
#include "formats/regions.h"
#include "ir/json_cursor.h"

namespace amk::formats::pto {

/// Values in a task's `extents`: an argument's shape or strides.
struct Extent {
  uint32_t at = 0, n = 0;
};

/// An argument's type: what its task does with its tensor.
enum class ArgType : uint8_t { Unknown, Input, Output, Inout, OutputExisting };

// A read file's strings are views of its text (ir::RawString); a writer's are names it gives.
// The reader classifies them as it reads (kind, dtype_at, creator).
struct Arg {
  int64_t idx = 0;
  ir::RawString type;  ///< INPUT, OUTPUT, INOUT, OUTPUT_EXISTING
  bool has_tensor = false;
  ArgType kind = ArgType::Unknown;  ///< type's
  int8_t dtype_at = -1;             ///< dtype's dtype_index()
  uint32_t tensor = UINT32_MAX;     ///< the position of tensor_id in Deps::tensors, once looked up
  uint64_t tensor_id = 0;
  ir::RawString dtype;
  Extent shape, strides;
  uint64_t start_offset = 0;
  size_t at = 0;
  /// Whether its task reads the tensor (INPUT, INOUT).
  bool reads() const { return kind == ArgType::Input || kind == ArgType::Inout; }
  /// Whether its task writes the tensor in place (OUTPUT_EXISTING, INOUT).
  bool writes() const { return kind == ArgType::OutputExisting || kind == ArgType::Inout; }
};

/// Where a dump's tasks keep their arguments and the arguments' extents.
using ArgStore = detail::Blocks<Arg, int64_t>;

struct Task {
  uint64_t task_id = 0;
  ir::RawString scope{"auto"};
  bool early_dispatch = false;
  std::array<int64_t, 3> kernel_ids{-1, -1, -1};
  int64_t block_num = 1;
  std::span<Arg> args;               ///< in Deps::store
  std::span<const int64_t> extents;  ///< its args' shapes and strides, in Deps::store
  /// The values of `e`.
  std::span<const int64_t> values(Extent e) const { return extents.subspan(e.at, e.n); }
  size_t at = 0;
};

struct Tensor {
  uint64_t tensor_id = 0, buffer_addr = 0, buffer_numel = 0;
  int64_t version = 0;
  ir::RawString dtype;
  int8_t dtype_at = -1;  ///< dtype's dtype_index()
  size_t at = 0;
};

/// An edge: what a program is made of.
struct Edge {
  uint64_t pred = 0, succ = 0;
  int64_t arg = -1;
  ir::RawString source;  ///< tensormap, creator, explicit
  bool creator = false;  ///< source is "creator"
  bool has_tensor = false;
  uint64_t tensor_id = 0;
  size_t at = 0;
};

/// What the dump says of an edge besides: written, not kept when read.
struct EdgeDetail {
  std::vector<std::string> flags;
  std::string overlap;
  std::string consumer_dtype;
  std::vector<int64_t> consumer_shape, consumer_strides, producer_shape, producer_strides;
  uint64_t consumer_start_offset = 0, producer_start_offset = 0;
};

struct Deps {
  ArgStore store;  ///< the tasks' args and extents (before the tasks: they outlive them)
  std::vector<Task> tasks;
  std::vector<Tensor> tensors;
  std::vector<Edge> edges;
  std::vector<EdgeDetail> details;  ///< edges[k]'s, for the writer (a read leaves it empty)
};

/// One scope_stats.jsonl sample line.
struct ScopeSample {
  std::string site, phase;
  int64_t depth = 0, ring = 0, task_window_start = 0, task_window_end = 0, heap_start = 0,
          heap_end = 0, dep_pool_start = 0, dep_pool_end = 0, tensormap = 0;
  int line = 0;
};

/// scope_stats.jsonl: its metadata line and its samples.
struct ScopeStats {
  int64_t version = 6;
  bool fatal = false;
  int64_t dropped = 0, total = 0;
  std::vector<int64_t> task_window_max, heap_max, dep_pool_max;
  int64_t tensormap_max = 0;
  bool has_header = false;
  std::vector<ScopeSample> samples;
};

/// Parses deps.json (which must outlive `d`: its strings are views of it) into `d`; diagnostics
/// carry pointers and line:column. An edge's details are checked, not kept.
ir::Diagnostics parse_deps(std::string_view text, Deps& d);
/// Parses scope_stats.jsonl into `s`; a diagnostic's line is the jsonl line.
ir::Diagnostics parse_scope_stats(std::string_view text, ScopeStats& s);
/// deps.json's text, as write_deps_json() writes it.
std::string write_deps(const Deps& d);
/// scope_stats.jsonl's text, as the scope_stats collector writes it.
std::string write_scope_stats(const ScopeStats& s);
/// PTO's tensor_id of an address and version (FNV-1a over their bytes).
uint64_t tensor_id(uint64_t buffer_addr, int32_t version);
/// The position of a dtype name in PTO's type table, or -1 when PTO has no such type.
int8_t dtype_index(const ir::RawString& dtype);
/// amk's element type of the PTO type at `index` (a dtype_index() >= 0).
detail::ElemType elem_type(int8_t index);
/// Bytes of one element of the PTO type at `index` (a dtype_index() >= 0).
int64_t elem_bytes(int8_t index);
/// What an argument's type names (ArgType::Unknown when none).
ArgType arg_type(const ir::RawString& type);
/// The PTO dtype name for an amk dtype.
std::string_view dtype_name(ir::DType d);

/// PTO2_PACKED_OUTPUT_ALIGN: each output in a task's packed buffer starts 1024-byte aligned.
inline constexpr int64_t kOutputAlign = 1024;

}  // namespace amk::formats::pto
