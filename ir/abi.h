// The device ABI (AMK's vm/abi.h): POD records whose codes and sizes must equal AMK's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ir/types.h"

namespace amk::abi {

/// ABI version (AMK_ABI_VERSION_MAJOR.MINOR).
inline constexpr int kVersionMajor = 0;
/// ABI minor version.
inline constexpr int kVersionMinor = 2;
/// Capacities of one instruction record.
inline constexpr int kMaxInputs = 8, kMaxOutputs = 4, kMaxWaits = 8, kMaxRank = 4;

/// Element type codes (amk_dtype_t).
enum amk_dtype_t : int32_t {
  AMK_F32 = 0,
  AMK_F16 = 1,
  AMK_BF16 = 2,
  AMK_F8E4M3 = 3,
  AMK_F8E5M2 = 4,
  AMK_I32 = 5,
  AMK_I8 = 6,
  AMK_I4 = 7,
  AMK_U8 = 8,
  AMK_BOOL = 9
};
/// Memory space codes (amk_memspace_t).
enum amk_memspace_t : int32_t {
  AMK_HBM = 0,
  AMK_GLOBAL_SCRATCH = 1,
  AMK_SMEM = 2,
  AMK_REGISTER = 3
};
/// Opcode codes (amk_opcode_t), FUSED included.
enum amk_opcode_t : int32_t {
  AMK_OP_NOP = 0,
  AMK_OP_COPY = 1,
  AMK_OP_EMBED = 2,
  AMK_OP_RMSNORM = 3,
  AMK_OP_LAYERNORM = 4,
  AMK_OP_GEMV_TILE = 5,
  AMK_OP_GEMM_TILE = 6,
  AMK_OP_ATTENTION_TILE = 7,
  AMK_OP_ROPE = 8,
  AMK_OP_SILU_MUL = 9,
  AMK_OP_GELU = 10,
  AMK_OP_ADD = 11,
  AMK_OP_MUL = 12,
  AMK_OP_DEQUANT = 13,
  AMK_OP_SOFTMAX = 14,
  AMK_OP_ALLREDUCE_SHARD = 15,
  AMK_OP_KV_APPEND = 16,
  AMK_OP_SAMPLE_ARGMAX = 17,
  AMK_OP_ATTENTION_COMBINE = 18,
  AMK_OP_FUSED = 19,
  AMK_OP__COUNT
};

/// A synchronisation counter (host-reset before each launch).
using amk_counter_t = uint32_t;

/// Op-specific scalars: 19 int32 then 3 float, in AMK's order (88 bytes).
struct amk_params_t {
  int32_t K, N, M, N_tile, M_tile, n_off, m_off, hidden, vocab, head_dim, n_heads, n_kv_heads,
      kv_start, kv_len, pos, qdtype, group, flags, dim;
  float eps, scale, theta;
};

/// A resolved buffer: pointer, size, layout in element strides (96 bytes).
struct amk_buffer_t {
  void* ptr;
  int64_t numel;
  int32_t rank, dtype, space, _pad;
  int64_t shape[kMaxRank];
  int64_t stride[kMaxRank];
};

/// One instruction, 1:1 with an IR task (224 bytes).
struct amk_instruction_t {
  int32_t op, n_inputs, n_outputs, n_waits;
  int32_t inputs[kMaxInputs];
  int32_t outputs[kMaxOutputs];
  int32_t wait_counter[kMaxWaits];
  int32_t wait_threshold[kMaxWaits];
  int32_t out_counter, sm;
  amk_params_t params;
};

/// The position-independent program header: every table is an offset from the image base.
struct amk_program_header_t {
  uint32_t magic, abi_major, abi_minor, flags;
  uint64_t buffers_off, counters_off, instructions_off, queue_off, queue_len_off, scratch_off;
  int32_t n_buffers, n_counters, n_instructions, num_sms;
  int64_t scratch_bytes, image_bytes;
};

static_assert(sizeof(amk_params_t) == 88, "amk_params_t must be AMK's 88 bytes");
static_assert(sizeof(amk_buffer_t) == 96, "amk_buffer_t must be AMK's 96 bytes");
static_assert(sizeof(amk_instruction_t) == 224, "amk_instruction_t must be AMK's 224 bytes");
static_assert(std::is_trivially_copyable_v<amk_instruction_t>);
static_assert(offsetof(amk_instruction_t, params) == 136);
static_assert(offsetof(amk_buffer_t, shape) == 32 && offsetof(amk_buffer_t, stride) == 64);
static_assert(kMaxInputs == ir::kMaxInputs && kMaxOutputs == ir::kMaxOutputs &&
              kMaxWaits == ir::kMaxWaits && kMaxRank == ir::kMaxRank);
static_assert(AMK_BOOL == static_cast<int>(ir::DType::BOOL) &&
              AMK_I4 == static_cast<int>(ir::DType::I4));
static_assert(AMK_REGISTER == static_cast<int>(ir::MemSpace::REGISTER));
static_assert(AMK_OP_ATTENTION_COMBINE == static_cast<int>(ir::Op::ATTENTION_COMBINE) &&
              AMK_OP_FUSED == static_cast<int>(ir::Op::FUSED) && AMK_OP__COUNT == ir::kOpCount);

}  // namespace amk::abi
