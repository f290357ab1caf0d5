#include "ir/types.h"

#include <array>
#include <limits>
#include <optional>

#include "ir/checked.h"

namespace amk::ir {
namespace {

constexpr std::array<std::string_view, kDTypeCount> kDTypeNames = {
    "F32", "F16", "BF16", "F8E4M3", "F8E5M2", "I32", "I8", "I4", "U8", "BOOL"};
constexpr std::array<std::string_view, kMemSpaceCount> kSpaceNames = {"HBM", "GLOBAL_SCRATCH",
                                                                      "SMEM", "REGISTER"};
constexpr std::array<std::string_view, kBufferKindCount> kKindNames = {
    "WEIGHT", "ACTIVATION", "KV_CACHE", "IO_INPUT", "IO_OUTPUT", "CONST"};
constexpr std::array<std::string_view, kOpCount> kOpNames = {"NOP",
                                                             "COPY",
                                                             "EMBED",
                                                             "RMSNORM",
                                                             "LAYERNORM",
                                                             "GEMV_TILE",
                                                             "GEMM_TILE",
                                                             "ATTENTION_TILE",
                                                             "ROPE",
                                                             "SILU_MUL",
                                                             "GELU",
                                                             "ADD",
                                                             "MUL",
                                                             "DEQUANT",
                                                             "SOFTMAX",
                                                             "ALLREDUCE_SHARD",
                                                             "KV_APPEND",
                                                             "SAMPLE_ARGMAX",
                                                             "ATTENTION_COMBINE",
                                                             "FUSED"};

template <typename E, size_t N>
std::optional<E> lookup(const std::array<std::string_view, N>& names, std::string_view s) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == s) return static_cast<E>(i);
  return std::nullopt;
}

}  // namespace

std::string_view name(DType v) {
  return kDTypeNames[static_cast<size_t>(v)];
}
std::string_view name(MemSpace v) {
  return kSpaceNames[static_cast<size_t>(v)];
}
std::string_view name(BufferKind v) {
  return kKindNames[static_cast<size_t>(v)];
}
std::string_view name(Op v) {
  return kOpNames[static_cast<size_t>(v)];
}

std::optional<DType> parse_dtype(std::string_view s) {
  return lookup<DType>(kDTypeNames, s);
}
std::optional<MemSpace> parse_memspace(std::string_view s) {
  return lookup<MemSpace>(kSpaceNames, s);
}
std::optional<BufferKind> parse_kind(std::string_view s) {
  return lookup<BufferKind>(kKindNames, s);
}
std::optional<Op> parse_op(std::string_view s) {
  return lookup<Op>(kOpNames, s);
}

std::optional<int64_t> detail::dtype_size_wide(DType d, int64_t count) {
  const int64_t bits = dtype_bits(d);
  if (count < 0) {  // not a size: the formula's value, as long as it fits
    const std::optional<int64_t> b = checked_mul(count, bits);
    return b ? std::optional<int64_t>((*b + 7) / 8) : std::nullopt;
  }
  // ceil(count * bits / 8) without forming count * bits, which may not fit where the bytes do.
  const std::optional<int64_t> whole = checked_mul(count / 8, bits);
  return whole ? checked_add(*whole, (count % 8 * bits + 7) / 8) : std::nullopt;
}

int64_t dtype_nbytes(DType d, int64_t count) {
  if (const std::optional<int64_t> n = dtype_size(d, count)) return *n;
  return count < 0 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
}

}  // namespace amk::ir
