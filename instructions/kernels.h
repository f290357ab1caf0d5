// Internal: the kernels behind the registry, and helpers they share.
#pragma once

#include <fmt/format.h>

#include "instructions/dtype.h"
#include "instructions/kernel.h"

namespace amk::inst {

Status k_nop(const KernelArgs& a);
Status k_copy(const KernelArgs& a);
Status k_embed(const KernelArgs& a);
Status k_rmsnorm(const KernelArgs& a);
Status k_layernorm(const KernelArgs& a);
Status k_gemm(const KernelArgs& a);
Status k_attention(const KernelArgs& a);
Status k_rope(const KernelArgs& a);
Status k_silu_mul(const KernelArgs& a);
Status k_gelu(const KernelArgs& a);
Status k_add(const KernelArgs& a);
Status k_mul(const KernelArgs& a);
Status k_dequant(const KernelArgs& a);
Status k_softmax(const KernelArgs& a);
Status k_allreduce(const KernelArgs& a);
Status k_kv_append(const KernelArgs& a);
Status k_argmax(const KernelArgs& a);
Status k_combine(const KernelArgs& a);
Status k_fused(const KernelArgs& a);

/// The fp32 contents of a tensor: its own data when F32, else converted into workspace `slot`.
const float* f32_view(const Tensor& t, Workspace& ws, size_t slot);
/// Where to compute an fp32 result for `out`: its data when F32, else workspace `slot`.
float* f32_target(const Tensor& out, Workspace& ws, size_t slot);
/// Stores a result computed by f32_target into `out` (a no-op when it was computed in place).
void f32_commit(const float* v, const Tensor& out);
/// An integer element (ids, positions) without going through fp32.
int64_t load_index(const Tensor& t, int64_t i);
/// True for the dtypes ids and positions may have.
bool is_index_dtype(ir::DType d);

/// "shape [1, 8] (F32)" for messages.
std::string describe(const Tensor& t);

}  // namespace amk::inst
