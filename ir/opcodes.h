// The opcode registry (arity, outputs, required params) and the marshalled param fields.
#pragma once

#include <optional>
#include <span>
#include <string_view>

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
};

/// The registry entry of an opcode.
const OpSpec& op_spec(Op op);

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

/// ATTENTION_TILE flags bit: write an un-normalised split-KV partial [n_heads, hd+2].
inline constexpr int kFlagSplitKvPartial = 2;

}  // namespace amk::ir
