#include "vm/weights.h"

#include <cmath>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "instructions/dtype.h"
#include "ir/rng.h"
#include "vm/safetensors.h"

namespace amk::vm {

std::vector<uint8_t> random_weights_image(
    const ir::Program& p, uint64_t seed,
    const std::function<void(size_t done, size_t total)>& progress) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  std::vector<const ir::Buffer*> bufs;
  std::set<std::string> keys;
  size_t off = 0;
  for (const ir::Buffer& b : p.buffers) {
    if (b.kind != ir::BufferKind::WEIGHT && b.kind != ir::BufferKind::CONST) continue;
    const std::string key = b.source.value_or(b.name);
    if (!keys.insert(key).second) continue;  // two buffers may share one tensor
    auto shape = b.shape;
    if (b.dtype == ir::DType::I4 && !shape.empty()) shape.back() = (shape.back() + 1) / 2;
    const auto n = static_cast<size_t>(b.nbytes());
    h[key] = {
        {"dtype", st_name(st_of(b.dtype))}, {"shape", shape}, {"data_offsets", {off, off + n}}};
    off += n;
    bufs.push_back(&b);
  }
  std::string head = h.dump();
  head.append((8 - head.size() % 8) % 8, ' ');
  std::vector<uint8_t> out(8 + head.size() + off);
  const uint64_t hl = head.size();
  for (int k = 0; k < 8; ++k) out[static_cast<size_t>(k)] = static_cast<uint8_t>(hl >> (8 * k));
  std::memcpy(out.data() + 8, head.data(), head.size());
  uint8_t* data = out.data() + 8 + head.size();
  ir::Rng rng = ir::Rng::seeded(seed, 1);
  auto next = [&] { return rng.next(); };
  std::vector<float> chunk(4096);
  size_t at = 0;
  for (const ir::Buffer* b : bufs) {
    const auto n = static_cast<size_t>(b->nbytes());
    const bool real = b->dtype == ir::DType::F32 || b->dtype == ir::DType::F16 ||
                      b->dtype == ir::DType::BF16 || b->dtype == ir::DType::F8E4M3 ||
                      b->dtype == ir::DType::F8E5M2;
    if (!real) {
      for (size_t i = 0; i < n; ++i) data[at + i] = static_cast<uint8_t>(next() >> 56);
      if (b->dtype == ir::DType::BOOL)
        for (size_t i = 0; i < n; ++i) data[at + i] &= 1;
      if (b->dtype == ir::DType::I32)
        for (size_t i = 3; i < n; i += 4) data[at + i] = 0;  // small non-negative values
    } else {
      const bool norm = b->shape.size() == 1;
      const double last =
          b->shape.empty() ? 1.0 : static_cast<double>(std::max<int64_t>(1, b->shape.back()));
      const auto scale = static_cast<float>(norm ? 0.1 : 1.0 / std::sqrt(last));
      const int64_t numel = b->numel();
      for (int64_t i = 0; i < numel; i += static_cast<int64_t>(chunk.size())) {
        const int64_t m = std::min<int64_t>(static_cast<int64_t>(chunk.size()), numel - i);
        for (int64_t j = 0; j < m; ++j) {
          const float u =
              static_cast<float>(static_cast<int64_t>(next() >> 40) - (int64_t{1} << 23)) /
              static_cast<float>(int64_t{1} << 23);  // [-1, 1)
          chunk[static_cast<size_t>(j)] = (norm ? 1.0f : 0.0f) + scale * u;
        }
        inst::from_f32(chunk.data(), m, data + at, b->dtype, i);
      }
    }
    at += n;
    if (progress) progress(at, off);
  }
  return out;
}

}  // namespace amk::vm
