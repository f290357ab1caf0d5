// One kernel signature for every opcode: tensor views in, tensor views out, decoded params.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/fused.h"
#include "ir/opcodes.h"
#include "ir/program.h"
#include "ir/result.h"

namespace amk::inst {

/// A view of a contiguous row-major tensor (the ABI's amk_buffer_t without ownership).
struct Tensor {
  void* data = nullptr;
  ir::DType dtype = ir::DType::F32;
  int rank = 0;
  int64_t shape[ir::kMaxRank] = {};
  int64_t numel = 1;
  /// A view over `data` with the given dtype and shape (numel computed).
  static Tensor of(void* data, ir::DType dtype, std::span<const int64_t> shape);
  /// Size of the last dimension (1 for rank 0).
  int64_t last() const { return rank ? shape[rank - 1] : 1; }
};

/// Per-thread scratch memory for kernels (grows, never shrinks).
class Workspace {
 public:
  /// A float buffer of at least `n` elements; `slot` picks one of several live buffers.
  float* floats(size_t slot, size_t n);

 private:
  std::vector<std::vector<float>> bufs_;
};

/// A kernel's outcome: ok, or a `kernel.error` diagnostic (never undefined behaviour).
using Status = ir::Status;
/// A failed kernel outcome saying `message`.
Status kernel_error(std::string message);

/// Everything one instruction needs. A kernel reads only `in`, writes only `out`.
struct KernelArgs {
  ir::Op op;
  std::span<const Tensor> in;
  std::span<const Tensor> out;
  const ir::ParamTable& params;
  const ir::Task* task = nullptr;      ///< the task (unknown params; may be null)
  const ir::Recipe* recipe = nullptr;  ///< FUSED: the parsed recipe (parsed on the fly if null)
  Workspace& ws;
};

/// A kernel.
using Kernel = Status (*)(const KernelArgs&);

/// The registry: the kernel of an opcode (every opcode has one).
Kernel kernel_for(ir::Op op);
/// Calls `k` on `a` (null: "no kernel for this opcode"); an exception becomes a failed Status.
Status call_kernel(Kernel k, const KernelArgs& a);
/// Runs one task's kernel on already-bound tensors (decodes params; parses a FUSED recipe).
Status run_task(const ir::Task& task, std::span<const Tensor> in, std::span<const Tensor> out,
                Workspace& ws, const ir::Recipe* recipe = nullptr);

}  // namespace amk::inst
