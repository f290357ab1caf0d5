// Enums with AMK's canonical numeric codes, their JSON names, dtype sizes and the ABI caps.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace amk::ir {

/// On-disk IR format version written by amk (AMK's IR_VERSION).
inline constexpr std::string_view kIrVersion = "0.2.0";
/// Device ABI version (AMK's ABI_VERSION, vm/abi.h MAJOR.MINOR).
inline constexpr std::string_view kAbiVersion = "0.2";

/// ABI capacity limits of one instruction (AMK's ABI_MAX_INPUTS/OUTPUTS/WAITS/RANK).
inline constexpr int kMaxInputs = 8;
inline constexpr int kMaxOutputs = 4;
inline constexpr int kMaxWaits = 8;
inline constexpr int kMaxRank = 4;

/// Storage element types; the values are AMK's canonical codes.
enum class DType : uint8_t { F32 = 0, F16, BF16, F8E4M3, F8E5M2, I32, I8, I4, U8, BOOL };
inline constexpr int kDTypeCount = 10;

/// Memory spaces; the values are AMK's canonical codes.
enum class MemSpace : uint8_t { HBM = 0, GLOBAL_SCRATCH, SMEM, REGISTER };
inline constexpr int kMemSpaceCount = 4;

/// Buffer roles; the values are AMK's canonical codes.
enum class BufferKind : uint8_t { WEIGHT = 0, ACTIVATION, KV_CACHE, IO_INPUT, IO_OUTPUT, CONST };
inline constexpr int kBufferKindCount = 6;

/// Opcodes (AMK's InstructionKind incl. FUSED = 19); append only, never renumber.
enum class Op : uint8_t {
  NOP = 0,
  COPY,
  EMBED,
  RMSNORM,
  LAYERNORM,
  GEMV_TILE,
  GEMM_TILE,
  ATTENTION_TILE,
  ROPE,
  SILU_MUL,
  GELU,
  ADD,
  MUL,
  DEQUANT,
  SOFTMAX,
  ALLREDUCE_SHARD,
  KV_APPEND,
  SAMPLE_ARGMAX,
  ATTENTION_COMBINE,
  FUSED,
};
inline constexpr int kOpCount = 20;

/// JSON name of an enum value ("F32", "HBM", "WEIGHT", "GEMV_TILE").
std::string_view name(DType v);
/// JSON name of a memory space.
std::string_view name(MemSpace v);
/// JSON name of a buffer kind.
std::string_view name(BufferKind v);
/// JSON name of an opcode.
std::string_view name(Op v);

/// Exact-name lookups (AMK looks enum names up exactly); nullopt when unknown.
std::optional<DType> parse_dtype(std::string_view s);
/// Exact-name lookup of a memory space.
std::optional<MemSpace> parse_memspace(std::string_view s);
/// Exact-name lookup of a buffer kind.
std::optional<BufferKind> parse_kind(std::string_view s);
/// Exact-name lookup of an opcode.
std::optional<Op> parse_op(std::string_view s);

namespace detail {
inline constexpr std::array<int, kDTypeCount> kDTypeBits = {32, 16, 16, 8, 8, 32, 8, 4, 8, 8};
std::optional<int64_t> dtype_size_wide(DType d, int64_t count);  // dtype_size past 2^56 or < 0
}  // namespace detail
/// Bits per element (I4 is 4: two per byte).
inline int dtype_bits(DType d) {
  return detail::kDTypeBits[static_cast<size_t>(d)];
}
/// Bytes needed for `count` elements, rounded up for packed types: (count*bits+7)/8, or nullopt
/// when that does not fit in int64 (checked arithmetic). Inline: a proof asks it of every buffer.
inline std::optional<int64_t> dtype_size(DType d, int64_t count) {
  if (static_cast<uint64_t>(count) < (uint64_t{1} << 56)) [[likely]]  // count * bits fits
    return (count * dtype_bits(d) + 7) / 8;
  return detail::dtype_size_wide(d, count);
}
/// dtype_size held at the int64 bound it passes.
int64_t dtype_nbytes(DType d, int64_t count);
/// True for WEIGHT, CONST and IO_INPUT (never need a producer).
inline bool is_readonly(BufferKind k) {
  return k == BufferKind::WEIGHT || k == BufferKind::CONST || k == BufferKind::IO_INPUT;
}
/// True for SMEM and REGISTER (visible to one SM only).
inline bool is_onchip(MemSpace s) {
  return s == MemSpace::SMEM || s == MemSpace::REGISTER;
}

}  // namespace amk::ir
