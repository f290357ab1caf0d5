#include "instructions/kernel.h"

#include <array>

#include <fmt/format.h>

#include "instructions/kernels.h"

namespace amk::inst {

Tensor Tensor::of(void* data, ir::DType dtype, std::span<const int64_t> shape) {
  Tensor t;
  t.data = data;
  t.dtype = dtype;
  t.rank = static_cast<int>(std::min<size_t>(shape.size(), ir::kMaxRank));
  t.numel = 1;
  for (int k = 0; k < t.rank; ++k) {
    t.shape[k] = shape[static_cast<size_t>(k)];
    t.numel *= t.shape[k];
  }
  return t;
}

float* Workspace::floats(size_t slot, size_t n) {
  if (bufs_.size() <= slot) bufs_.resize(slot + 1);
  if (bufs_[slot].size() < n) bufs_[slot].resize(n);
  return bufs_[slot].data();
}

Kernel kernel_for(ir::Op op) {
  using ir::Op;
  static const std::array<Kernel, ir::kOpCount> kTable = [] {
    std::array<Kernel, ir::kOpCount> t{};
    t[static_cast<size_t>(Op::NOP)] = k_nop;
    t[static_cast<size_t>(Op::COPY)] = k_copy;
    t[static_cast<size_t>(Op::EMBED)] = k_embed;
    t[static_cast<size_t>(Op::RMSNORM)] = k_rmsnorm;
    t[static_cast<size_t>(Op::LAYERNORM)] = k_layernorm;
    t[static_cast<size_t>(Op::GEMV_TILE)] = k_gemm;
    t[static_cast<size_t>(Op::GEMM_TILE)] = k_gemm;
    t[static_cast<size_t>(Op::ATTENTION_TILE)] = k_attention;
    t[static_cast<size_t>(Op::ROPE)] = k_rope;
    t[static_cast<size_t>(Op::SILU_MUL)] = k_silu_mul;
    t[static_cast<size_t>(Op::GELU)] = k_gelu;
    t[static_cast<size_t>(Op::ADD)] = k_add;
    t[static_cast<size_t>(Op::MUL)] = k_mul;
    t[static_cast<size_t>(Op::DEQUANT)] = k_dequant;
    t[static_cast<size_t>(Op::SOFTMAX)] = k_softmax;
    t[static_cast<size_t>(Op::ALLREDUCE_SHARD)] = k_allreduce;
    t[static_cast<size_t>(Op::KV_APPEND)] = k_kv_append;
    t[static_cast<size_t>(Op::SAMPLE_ARGMAX)] = k_argmax;
    t[static_cast<size_t>(Op::ATTENTION_COMBINE)] = k_combine;
    t[static_cast<size_t>(Op::FUSED)] = k_fused;
    return t;
  }();
  return kTable[static_cast<size_t>(op)];
}

Status kernel_error(std::string message) {
  return ir::error("kernel.error", std::move(message));
}

Status call_kernel(Kernel k, const KernelArgs& a) {
  if (!k) return kernel_error("no kernel for this opcode");
  try {
    return k(a);
  } catch (const std::exception& e) {
    return kernel_error(fmt::format("kernel threw: {}", e.what()));
  } catch (...) {
    return kernel_error("kernel threw a non-standard exception");
  }
}

Status run_task(const ir::Task& task, std::span<const Tensor> in, std::span<const Tensor> out,
                Workspace& ws, const ir::Recipe* recipe) {
  const ir::ParamTable pt = ir::ParamTable::of(task);
  KernelArgs a{task.op, in, out, pt, &task, recipe, ws};
  return kernel_for(task.op)(a);
}

}  // namespace amk::inst
