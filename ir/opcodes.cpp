#include "ir/opcodes.h"

#include <array>
#include <cmath>
#include <limits>

#include "ir/program.h"

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

}  // namespace

// AMK's OP_REGISTRY, indexed by opcode.
const std::array<OpSpec, kOpCount> detail::kRegistry = {{
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

namespace {

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

std::optional<ParamField> param_field(std::string_view key) {
  // Dispatch on length and first letter so a lookup is one or two short compares.
  auto is = [&](std::string_view lit, ParamField f) -> std::optional<ParamField> {
    if (key == lit) return f;
    return std::nullopt;
  };
  using F = ParamField;
  switch (key.size()) {
    case 1:
      return key[0] == 'K'   ? F::K
             : key[0] == 'N' ? F::N
             : key[0] == 'M' ? F::M
                             : std::optional<F>();
    case 3:
      if (key[0] == 'e') return is("eps", F::eps);
      if (key[0] == 'p') return is("pos", F::pos);
      if (key[0] == 'd') return is("dim", F::dim);
      return std::nullopt;
    case 5:
      switch (key[0]) {
        case 'n':
          return is("n_off", F::n_off);
        case 'm':
          return is("m_off", F::m_off);
        case 'v':
          return is("vocab", F::vocab);
        case 'g':
          return is("group", F::group);
        case 'f':
          return is("flags", F::flags);
        case 's':
          return is("scale", F::scale);
        case 't':
          return is("theta", F::theta);
        default:
          return std::nullopt;
      }
    case 6:
      if (key[0] == 'N') return is("N_tile", F::N_tile);
      if (key[0] == 'M') return is("M_tile", F::M_tile);
      if (key[0] == 'h') return is("hidden", F::hidden);
      if (key[0] == 'k') return is("kv_len", F::kv_len);
      if (key[0] == 'q') return is("qdtype", F::qdtype);
      return std::nullopt;
    case 7:
      return is("n_heads", F::n_heads);
    case 8:
      if (key[0] == 'h') return is("head_dim", F::head_dim);
      return is("kv_start", F::kv_start);
    case 10:
      return is("n_kv_heads", F::n_kv_heads);
    default:
      return std::nullopt;
  }
}

std::optional<ParamType> param_type(std::string_view key) {
  auto f = param_field(key);
  if (!f) return std::nullopt;
  return kFields[static_cast<size_t>(*f)].type;
}

std::string_view param_name(ParamField f) {
  return kFields[static_cast<size_t>(f)].name;
}

// Computed once, before main (kRegistry is defined above, so it is initialised first).
const std::array<RequiredParams, kOpCount> detail::kRequired = [] {
  std::array<RequiredParams, kOpCount> r{};
  for (size_t o = 0; o < detail::kRegistry.size(); ++o)
    for (std::string_view k : detail::kRegistry[o].required) {
      if (auto f = param_field(k))
        r[o].fields |= 1u << static_cast<int>(*f);
      else
        r[o].others.push_back(k);
    }
  return r;
}();

namespace {

// The fields of type Int, as bits.
constexpr uint32_t kIntFields = [] {
  uint32_t m = 0;
  for (size_t k = 0; k < kFields.size(); ++k)
    if (kFields[k].type == ParamType::Int) m |= 1u << k;
  return m;
}();

}  // namespace

void ParamTable::set(const Task& t) {
  // Flags gathered with bit operations, not chains of && (a task's params are few; the branches
  // of the chains cost more than the tests).
  uint32_t seen = 0, is_int = 0, is_real = 0, nonpos = 0, neg = 0, dirty = 0;
  bool all_finite = true;
  for (const Param& p : t.params) {
    const ParamValue& v = p.value;
    const std::optional<ParamField> field = param_field(p.key);
    if (!field) [[unlikely]] {
      dirty = 1;
      if (v.kind == ParamValue::Kind::Float) all_finite &= std::isfinite(v.f);
      continue;
    }
    const int k = static_cast<int>(*field);
    const uint32_t bit = 1u << k;
    dirty |= seen & bit;  // named twice: not plain
    seen |= bit;
    const uint32_t int_field = kIntFields & bit;
    if (v.kind == ParamValue::Kind::Int) [[likely]] {
      // An Int field must hold an int32; a Float field takes any.
      is_int |= bit;
      is_real |= bit;
      i[k] = v.i;
      f[k] = static_cast<double>(v.i);
      nonpos |= v.i <= 0 ? bit : 0;
      neg |= v.i < 0 ? bit : 0;
      const bool int32 = static_cast<uint64_t>(v.i) + (uint64_t{1} << 31) < (uint64_t{1} << 32);
      dirty |= int32 ? 0 : int_field;
    } else if (v.kind == ParamValue::Kind::Float) {
      is_real |= bit;
      f[k] = v.f;
      all_finite &= std::isfinite(v.f);
      dirty |= int_field;
    } else if (v.kind == ParamValue::Kind::Bool) {  // Python: a bool passes as a float, not an int
      dirty |= int_field;
    } else {
      dirty = 1;
    }
  }
  const bool clean = dirty == 0;
  present = seen;
  ints = is_int;
  reals = is_real;
  nonpositive = nonpos;
  negative = neg;
  plain = clean;
  finite = all_finite;
}

std::string_view quant_name(Quant q) {
  return q == Quant::Int8 ? "int8" : q == Quant::Int4 ? "int4" : "none";
}

}  // namespace amk::ir
