// Seeded random weights for a program (for runs, benchmarks and tests without a checkpoint).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "ir/program.h"
#include "ir/result.h"

namespace amk::vm {

/// A safetensors file image holding a tensor for every WEIGHT/CONST buffer of `p` (keyed by
/// `Buffer.source`, else its name) in the buffer's dtype: rank-1 tensors (norm weights) 1 ± 0.1,
/// others uniform in ±1/sqrt(last dim); integer dtypes get random codes, and the scales of a
/// quantised GEMV/GEMM weight (its tiles' third input) positive values that dequantise those codes
/// within ±1/sqrt(K). Deterministic per seed.
/// `progress` (optional) hears the bytes done and the total after every tensor. A tensor name (a
/// buffer's source or name) that is not UTF-8 is an error: the header is UTF-8 JSON.
ir::Result<std::vector<uint8_t>> random_weights_image(
    const ir::Program& p, uint64_t seed,
    const std::function<void(size_t done, size_t total)>& progress = {});

}  // namespace amk::vm
