#include "ir/opcodes.h"

#include <array>

namespace amk::ir {
namespace {

using SV = std::string_view;
constexpr SV kEmbed[] = {"hidden"};
constexpr SV kNorm[] = {"eps", "hidden"};
constexpr SV kGemv[] = {"K", "N_tile", "n_off"};
constexpr SV kGemm[] = {"M_tile", "K", "N_tile", "n_off"};
constexpr SV kAttn[] = {"head_dim", "kv_start", "kv_len", "scale", "n_heads", "n_kv_heads"};
constexpr SV kRope[] = {"head_dim", "theta"};
constexpr SV kDequant[] = {"qdtype", "group"};
constexpr SV kKvAppend[] = {"pos"};
constexpr SV kFused[] = {"recipe"};

// AMK's OP_REGISTRY, indexed by opcode.
const std::array<OpSpec, kOpCount> kRegistry = {{
    {Op::NOP, 0, 0, 0, {}, "no-op"},
    {Op::COPY, 1, 1, 1, {}, "page -> page move (cast-copy)"},
    {Op::EMBED, 2, 2, 1, kEmbed, "[ids, table[V,H]] -> gathered rows (also the reshape bridge)"},
    {Op::RMSNORM, 2, 2, 1, kNorm, "x * rsqrt(mean(x^2) + eps) * w"},
    {Op::LAYERNORM, 2, 3, 1, kNorm, "LayerNorm(x, w[, b])"},
    {Op::GEMV_TILE, 2, 3, 1, kGemv, "out[.., n_off:n_off+N_tile] = x @ W[n_off:..].T"},
    {Op::GEMM_TILE, 2, 3, 1, kGemm, "tiled GEMM (prefill / batch)"},
    {Op::ATTENTION_TILE, 3, 4, 1, kAttn, "GQA attention over a KV window"},
    {Op::ROPE, 2, 2, 1, kRope, "Llama rotate-half rotary embedding"},
    {Op::SILU_MUL, 2, 2, 1, {}, "SwiGLU: silu(gate) * up"},
    {Op::GELU, 1, 1, 1, {}, "GELU (erf)"},
    {Op::ADD, 2, 2, 1, {}, "residual add"},
    {Op::MUL, 1, 2, 1, {}, "elementwise product or scale"},
    {Op::DEQUANT, 2, 3, 1, kDequant, "int4/int8 + scales -> fp tile"},
    {Op::SOFTMAX, 1, 1, 1, {}, "softmax over dim"},
    {Op::ALLREDUCE_SHARD, 1, 8, 1, {}, "tensor-parallel shard reduce (sum)"},
    {Op::KV_APPEND, 2, 2, 1, kKvAppend, "append new k/v into the KV cache at pos"},
    {Op::SAMPLE_ARGMAX, 1, 1, 1, {}, "greedy logits -> next token"},
    {Op::ATTENTION_COMBINE, 2, 8, 1, {}, "merge split-KV (acc, m, l) partials"},
    {Op::FUSED, 1, -1, 1, kFused, "a recipe of primitive steps on scratch"},
}};

struct FieldInfo {
  SV name;
  ParamType type;
};
// AMK's PARAM_FIELDS in amk_params_t order.
constexpr std::array<FieldInfo, kParamFieldCount> kFields = {{
    {"K", ParamType::Int},        {"N", ParamType::Int},       {"M", ParamType::Int},
    {"N_tile", ParamType::Int},   {"M_tile", ParamType::Int},  {"n_off", ParamType::Int},
    {"m_off", ParamType::Int},    {"hidden", ParamType::Int},  {"vocab", ParamType::Int},
    {"head_dim", ParamType::Int}, {"n_heads", ParamType::Int}, {"n_kv_heads", ParamType::Int},
    {"kv_start", ParamType::Int}, {"kv_len", ParamType::Int},  {"pos", ParamType::Int},
    {"qdtype", ParamType::Int},   {"group", ParamType::Int},   {"flags", ParamType::Int},
    {"dim", ParamType::Int},      {"eps", ParamType::Float},   {"scale", ParamType::Float},
    {"theta", ParamType::Float},
}};

}  // namespace

const OpSpec& op_spec(Op op) {
  return kRegistry[static_cast<size_t>(op)];
}

std::optional<ParamField> param_field(std::string_view key) {
  for (size_t i = 0; i < kFields.size(); ++i)
    if (kFields[i].name == key) return static_cast<ParamField>(i);
  return std::nullopt;
}

std::optional<ParamType> param_type(std::string_view key) {
  auto f = param_field(key);
  if (!f) return std::nullopt;
  return kFields[static_cast<size_t>(*f)].type;
}

std::string_view param_name(ParamField f) {
  return kFields[static_cast<size_t>(f)].name;
}

}  // namespace amk::ir
