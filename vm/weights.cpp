#include "vm/weights.h"

#include <cmath>
#include <cstring>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "instructions/dtype.h"
#include "ir/opcodes.h"
#include "ir/rng.h"
#include "vm/safetensors.h"

namespace amk::vm {
namespace {

// The scale each quantised weight's scales buffer is drawn around: a tile dequantises code q to
// q s (int8, |q| <= 128) or (q - 8) s (int4, |q - 8| <= 8), so s = 1 / (sqrt(K) qmax) keeps the
// dequantised weights within +-1/sqrt(K), as the float matrices are (random codes under scales
// of +-1/sqrt(n_groups) gave weights ~1,000x larger and activations in the thousands).
// Per buffer: its base, or 0 for a buffer that holds no scales.
std::vector<float> scale_bases(const ir::Program& p) {
  std::vector<float> bases(p.buffers.size(), 0.0f);
  const auto n_buffers = static_cast<int64_t>(p.buffers.size());
  for (const ir::Task& t : p.tasks) {
    if (t.op != ir::Op::GEMV_TILE && t.op != ir::Op::GEMM_TILE) continue;
    const ir::Quant q = ir::gemv_quant(t.int_param("qdtype").value_or(0), t.inputs.size());
    if (q == ir::Quant::None || t.inputs[0] < 0 || t.inputs[0] >= n_buffers || t.inputs[2] < 0 ||
        t.inputs[2] >= n_buffers)
      continue;
    const auto& x = p.buffers[static_cast<size_t>(t.inputs[0])].shape;
    const int64_t K = t.int_param("K").value_or(x.empty() ? 1 : x.back());
    const double qmax = q == ir::Quant::Int8 ? 128.0 : 8.0;
    bases[static_cast<size_t>(t.inputs[2])] =
        static_cast<float>(1.0 / (std::sqrt(static_cast<double>(std::max<int64_t>(1, K))) * qmax));
  }
  return bases;
}

}  // namespace

ir::Result<std::vector<uint8_t>> random_weights_image(
    const ir::Program& p, uint64_t seed,
    const std::function<void(size_t done, size_t total)>& progress) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  std::vector<const ir::Buffer*> bufs;
  std::set<std::string> keys;
  size_t off = 0;
  for (size_t id = 0; id < p.buffers.size(); ++id) {
    const ir::Buffer& b = p.buffers[id];
    if (b.kind != ir::BufferKind::WEIGHT && b.kind != ir::BufferKind::CONST) continue;
    const std::string key = b.source.value_or(b.name);
    if (ir::Status st = st_name_ok(key); !st) {  // said of the buffer it comes from
      for (ir::Diagnostic& d : st.diagnostics) {
        d.message = fmt::format("buffer {}'s {}", id, d.message);
        d.pointer = fmt::format("/buffers/{}/{}", id, b.source ? "source" : "name");
      }
      return std::move(st.diagnostics);
    }
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
  const std::vector<float> scales = scale_bases(p);
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
      // Scales of quantised weights: in [0.5, 1] of their base, positive.
      const float base = scales[static_cast<size_t>(b - p.buffers.data())];
      const float centre = base > 0 ? 0.75f * base : norm ? 1.0f : 0.0f;
      const auto scale = static_cast<float>(base > 0 ? 0.25 * base
                                            : norm   ? 0.1
                                                     : 1.0 / std::sqrt(last));
      const int64_t numel = b->numel();
      for (int64_t i = 0; i < numel; i += static_cast<int64_t>(chunk.size())) {
        const int64_t m = std::min<int64_t>(static_cast<int64_t>(chunk.size()), numel - i);
        for (int64_t j = 0; j < m; ++j) {
          const float u =
              static_cast<float>(static_cast<int64_t>(next() >> 40) - (int64_t{1} << 23)) /
              static_cast<float>(int64_t{1} << 23);  // [-1, 1)
          chunk[static_cast<size_t>(j)] = centre + scale * u;
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
