// The opcode registry (arity, outputs, required params) and the marshalled param fields.
#pragma once

#include <array>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ir/types.h"

namespace amk::ir {

/// Arity and required params of one opcode (AMK's OpSpec); -1 means variadic.
struct OpSpec {
  Op op;
  int min_inputs;
  int max_inputs;
  int n_outputs;
  std::span<const std::string_view> required;
  std::string_view note;
  /// True when `n` inputs are within the opcode's arity.
  constexpr bool inputs_ok(int64_t n) const {
    return n >= min_inputs && (max_inputs == -1 || n <= max_inputs);
  }
  /// True when `n` outputs are what the opcode writes.
  constexpr bool outputs_ok(int64_t n) const { return n_outputs == -1 || n == n_outputs; }
};

namespace detail {
extern const std::array<OpSpec, kOpCount> kRegistry;  // AMK's OP_REGISTRY, indexed by opcode
}  // namespace detail
/// The registry entry of an opcode (inline: every task of a proof asks for it).
inline const OpSpec& op_spec(Op op) {
  return detail::kRegistry[static_cast<size_t>(op)];
}

/// An opcode's required params as amk_params_t field bits, and the required keys that are no
/// field (a FUSED task's recipe).
struct RequiredParams {
  uint32_t fields = 0;
  std::vector<std::string_view> others;
};
namespace detail {
extern const std::array<RequiredParams, kOpCount> kRequired;  // computed once, before main
}  // namespace detail
/// The required params of `op` (computed once; inline like op_spec).
inline const RequiredParams& required_params(Op op) {
  return detail::kRequired[static_cast<size_t>(op)];
}

/// Marshalled type of a known param field: int32 ('i') or float ('f').
enum class ParamType : char { Int = 'i', Float = 'f' };

/// Index of a known amk_params_t field in device order (K .. dim int32, eps/scale/theta float).
enum class ParamField : uint8_t {
  K = 0,
  N,
  M,
  N_tile,
  M_tile,
  n_off,
  m_off,
  hidden,
  vocab,
  head_dim,
  n_heads,
  n_kv_heads,
  kv_start,
  kv_len,
  pos,
  qdtype,
  group,
  flags,
  dim,
  eps,
  scale,
  theta
};
inline constexpr int kParamFieldCount = 22;

/// The type of a known param field, or nullopt for a key not in PARAM_FIELDS.
std::optional<ParamType> param_type(std::string_view key);
/// The field index of a known key, or nullopt.
std::optional<ParamField> param_field(std::string_view key);
/// The JSON key of a field.
std::string_view param_name(ParamField f);

struct Task;

/// A task's known param fields decoded once (a bit per field says which kinds are present).
struct ParamTable {
  /// Every param is a known field, named once, holding a value of its field's type (Int: an int
  /// in int32 range; Float: a number or a bool): nothing about the params to report.
  bool plain = true;
  uint32_t present = 0;         ///< field is present (any value)
  uint32_t ints = 0;            ///< field holds a non-bool int (value in i[])
  uint32_t reals = 0;           ///< field holds an int or a float (value in f[])
  uint32_t nonpositive = 0;     ///< field was given an int <= 0 (some value, if named twice)
  uint32_t negative = 0;        ///< field was given an int < 0 (likewise)
  bool finite = true;           ///< no float param (of a known key or not) is NaN or infinite
  int64_t i[kParamFieldCount];  // valid where `ints` has the bit (left uninitialised otherwise)
  double f[kParamFieldCount];   // valid where `reals` has the bit
  /// Decodes the known fields of a task's params (unknown keys are skipped).
  static ParamTable of(const Task& t) {
    ParamTable pt;
    pt.set(t);
    return pt;
  }
  /// Like of(), in place: writes the bit masks and only the fields present.
  void set(const Task& t);
  /// True when the field holds a non-bool int.
  bool has_int(ParamField k) const { return ints >> static_cast<int>(k) & 1u; }
  /// The int value of a field, or `fallback` when it is absent or not an int.
  int64_t get(ParamField k, int64_t fallback) const {
    return has_int(k) ? i[static_cast<int>(k)] : fallback;
  }
  /// The numeric value of a field, or `fallback`.
  double real(ParamField k, double fallback) const {
    return reals >> static_cast<int>(k) & 1u ? f[static_cast<int>(k)] : fallback;
  }
};

/// ATTENTION_TILE flags bit: write an un-normalised split-KV partial [n_heads, hd+2].
inline constexpr int kFlagSplitKvPartial = 2;

/// The quantised weight formats (a `qdtype` param holds the DType code of the stored values).
enum class Quant : uint8_t {
  None,  ///< not quantised
  Int8,  ///< qdtype 6 (I8): an int8 [N, K] weight
  Int4,  ///< qdtype 7 (I4): packed int4, low nibble first, each row on whole bytes: an I4 [N, K]
         ///< weight (AMK's lowering: the logical shape, K even) or a U8 [N, ceil(K/2)] one
};
/// The format a `qdtype` param names (None for any other value).
constexpr Quant quant_of(int64_t qdtype) {
  return qdtype == static_cast<int64_t>(DType::I8)   ? Quant::Int8
         : qdtype == static_cast<int64_t>(DType::I4) ? Quant::Int4
                                                     : Quant::None;
}
/// How a GEMV/GEMM tile reads its weight: quantised when `qdtype` names a format and a scales
/// input follows the weight (`n_inputs` >= 3), else None.
constexpr Quant gemv_quant(int64_t qdtype, size_t n_inputs) {
  return n_inputs >= 3 ? quant_of(qdtype) : Quant::None;
}
/// Bytes of a quantised weight row of K values (two per byte for Int4).
constexpr int64_t quant_row_bytes(Quant q, int64_t K) {
  return q == Quant::Int4 ? (K + 1) / 2 : K;
}
/// The columns a quantised weight of dtype `d` declares for rows of K values: K, or for Int4
/// stored as U8 bytes, its row bytes.
constexpr int64_t quant_weight_cols(Quant q, DType d, int64_t K) {
  return q == Quant::Int4 && d != DType::I4 ? quant_row_bytes(q, K) : K;
}
/// Whether a buffer of dtype `d` can hold weights stored in format `q`.
constexpr bool quant_weight_dtype_ok(Quant q, DType d) {
  return q == Quant::Int8   ? d == DType::I8
         : q == Quant::Int4 ? d == DType::U8 || d == DType::I4
                            : true;
}
/// "int8", "int4" or "none".
std::string_view quant_name(Quant q);

/// The part of its output a GEMV/GEMM tile writes: columns [c0, c1) and rows [r0, r1) (r1 < 0:
/// every row); `whole` for another op or a tile without valid offsets (the whole output).
struct TileRegion {
  bool whole = true;
  int64_t r0 = 0, r1 = -1, c0 = 0, c1 = 0;
};
/// The region task `op` with params `pt` writes (n_off/N_tile columns, GEMM m_off/M_tile rows);
/// with `foreign`, a NOP (a kernel of another runtime's graph) writes the rectangle its
/// m_off/M_tile/n_off/N_tile give.
inline TileRegion tile_region(Op op, const ParamTable& pt, bool foreign = false) {
  TileRegion r;
  const bool kernel = foreign && op == Op::NOP;
  if (op != Op::GEMV_TILE && op != Op::GEMM_TILE && !kernel) return r;
  using F = ParamField;
  if (!pt.has_int(F::n_off) || !pt.has_int(F::N_tile)) return r;
  const int64_t n_off = pt.get(F::n_off, 0), n_tile = pt.get(F::N_tile, 0);
  if (n_off < 0 || n_tile <= 0) return r;
  r.whole = false;
  r.c0 = n_off;
  r.c1 = n_off + n_tile;
  if ((op == Op::GEMM_TILE || kernel) && pt.has_int(F::m_off) && pt.has_int(F::M_tile)) {
    const int64_t m_off = pt.get(F::m_off, 0), m_tile = pt.get(F::M_tile, 0);
    if (m_off >= 0 && m_tile > 0) {
      r.r0 = m_off;
      r.r1 = m_off + m_tile;
    }
  }
  return r;
}
/// Whether two regions of one output may share an element.
inline bool overlaps(const TileRegion& a, const TileRegion& b) {
  if (a.whole || b.whole) return true;
  const bool rows = a.r1 < 0 || b.r1 < 0 || (a.r0 < b.r1 && b.r0 < a.r1);
  return rows && a.c0 < b.c1 && b.c0 < a.c1;
}

}  // namespace amk::ir
