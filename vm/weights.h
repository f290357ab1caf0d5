// Seeded random weights for a program (for runs, benchmarks and tests without a checkpoint).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/program.h"

namespace amk::vm {

/// A safetensors file image holding a tensor for every WEIGHT/CONST buffer of `p` (keyed by
/// `Buffer.source`, else its name) in the buffer's dtype: rank-1 tensors (norm weights) 1 ± 0.1,
/// others uniform in ±1/sqrt(last dim); integer dtypes get random codes. Deterministic per seed.
std::vector<uint8_t> random_weights_image(const ir::Program& p, uint64_t seed);

}  // namespace amk::vm
