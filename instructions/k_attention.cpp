// Attention family: ATTENTION_TILE (GQA over a KV window, batched q, split-KV partials),
// ATTENTION_COMBINE, ROPE (rotate-half) and KV_APPEND (in place).
#include <cmath>
#include <cstring>
#include <limits>

#include "instructions/kernels.h"
#include "instructions/simd.h"

namespace amk::inst {
namespace {

using F = ir::ParamField;

// A KV cache row (n_kv * hd values) as fp32: the cache itself when F32, else converted.
const float* kv_row(const Tensor& cache, int64_t row, int64_t width, float* tmp) {
  if (cache.dtype == ir::DType::F32) return static_cast<const float*>(cache.data) + row * width;
  to_f32(cache.data, cache.dtype, row * width, width, tmp);
  return tmp;
}

}  // namespace

Status k_attention(const KernelArgs& a) {
  const Tensor &q = a.in[0], &kc = a.in[1], &vc = a.in[2], &out = a.out[0];
  const int64_t hd = a.params.get(F::head_dim, 0);
  const int64_t nh = a.params.get(F::n_heads, q.rank >= 2 ? q.shape[q.rank - 2] : 0);
  const int64_t nkv = a.params.get(F::n_kv_heads, nh);
  if (hd <= 0 || nh <= 0 || nkv <= 0 || nh % nkv != 0)
    return kernel_error(
        fmt::format("ATTENTION_TILE: head_dim {}, n_heads {}, n_kv_heads {}", hd, nh, nkv));
  const int64_t batch = q.rank == 3 ? q.shape[0] : 1;
  const bool batched_cache = kc.rank == 4;
  if (q.numel != batch * nh * hd || kc.rank < 3 || kc.last() != hd ||
      kc.shape[kc.rank - 2] != nkv || vc.numel != kc.numel ||
      (batched_cache && kc.shape[0] != batch) || (!batched_cache && batch != 1))
    return kernel_error(
        fmt::format("ATTENTION_TILE: q {}, k {}, v {} do not fit {} heads x {} ({} kv heads)",
                    describe(q), describe(kc), describe(vc), nh, hd, nkv));
  const int64_t seq = kc.shape[kc.rank - 3];
  const int64_t start = a.params.get(F::kv_start, 0), len = a.params.get(F::kv_len, seq);
  const float scale =
      static_cast<float>(a.params.real(F::scale, 1.0 / std::sqrt(static_cast<double>(hd))));
  const bool partial = (a.params.get(F::flags, 0) & ir::kFlagSplitKvPartial) != 0;
  if (start < 0 || len < 0 || start + len > seq)
    return kernel_error(
        fmt::format("ATTENTION_TILE: window [{}, {}) outside the {} cached positions", start,
                    start + len, seq));
  if (partial ? (batch != 1 || out.numel != nh * (hd + 2)) : out.numel != batch * nh * hd)
    return kernel_error(fmt::format("ATTENTION_TILE: output {} has the wrong size", describe(out)));
  if (len == 0 && !partial) return kernel_error("ATTENTION_TILE: empty KV window");
  const int64_t rep = nh / nkv, width = nkv * hd;
  const float* qf = f32_view(q, a.ws, 0);
  float* y = f32_target(out, a.ws, 1);
  float* scores = a.ws.floats(2, static_cast<size_t>(rep * std::max<int64_t>(len, 1)));
  float* krow = a.ws.floats(3, static_cast<size_t>(width));
  float* acc = a.ws.floats(4, static_cast<size_t>(rep * hd));
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t cache_base = batched_cache ? b * seq : 0;
    for (int64_t g = 0; g < nkv; ++g) {  // the rep query heads of a kv head share its K/V rows
      const float* qg = qf + (b * nh + g * rep) * hd;
      for (int64_t j = 0; j < len; ++j) {
        const float* k = kv_row(kc, cache_base + start + j, width, krow) + g * hd;
        for (int64_t r = 0; r < rep; ++r)
          scores[r * len + j] = simd::dot_f32(qg + r * hd, k, hd) * scale;
      }
      std::vector<float> m(static_cast<size_t>(rep)), l(static_cast<size_t>(rep));
      for (int64_t r = 0; r < rep; ++r) {
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < len; ++j) mx = std::max(mx, scores[r * len + j]);
        float s = 0;
        for (int64_t j = 0; j < len; ++j)
          s += (scores[r * len + j] = std::exp(scores[r * len + j] - mx));
        m[static_cast<size_t>(r)] = mx;
        l[static_cast<size_t>(r)] = s;
      }
      std::fill(acc, acc + rep * hd, 0.0f);
      for (int64_t j = 0; j < len; ++j) {
        const float* v = kv_row(vc, cache_base + start + j, width, krow) + g * hd;
        for (int64_t r = 0; r < rep; ++r) {
          const float p = scores[r * len + j];
          float* ar = acc + r * hd;
          for (int64_t d = 0; d < hd; ++d) ar[d] += p * v[d];
        }
      }
      for (int64_t r = 0; r < rep; ++r) {
        const int64_t h = g * rep + r;
        const float* ar = acc + r * hd;
        if (partial) {  // un-normalised [acc | m | l]; an empty window is acc 0, m -inf, l 0
          float* o = y + h * (hd + 2);
          for (int64_t d = 0; d < hd; ++d) o[d] = len ? ar[d] : 0.0f;
          o[hd] = len ? m[static_cast<size_t>(r)] : -std::numeric_limits<float>::infinity();
          o[hd + 1] = len ? l[static_cast<size_t>(r)] : 0.0f;
        } else {
          float* o = y + (b * nh + h) * hd;
          const float inv = 1.0f / l[static_cast<size_t>(r)];
          for (int64_t d = 0; d < hd; ++d) o[d] = ar[d] * inv;
        }
      }
    }
  }
  f32_commit(y, out);
  return {};
}

Status k_combine(const KernelArgs& a) {
  const Tensor& out = a.out[0];
  if (!a.params.has_int(F::head_dim))
    return kernel_error("ATTENTION_COMBINE: needs param head_dim");
  const int64_t hd = a.params.get(F::head_dim, 0);
  const int64_t nh = a.params.get(F::n_heads, hd > 0 ? a.in[0].numel / (hd + 2) : 0);
  if (hd <= 0 || nh <= 0 || out.numel != nh * hd)
    return kernel_error(
        fmt::format("ATTENTION_COMBINE: output {} is not n_heads x head_dim", describe(out)));
  std::vector<const float*> parts;
  for (size_t p = 0; p < a.in.size(); ++p) {
    if (a.in[p].numel != nh * (hd + 2))
      return kernel_error(fmt::format("ATTENTION_COMBINE: partial {} is {}", p, describe(a.in[p])));
    parts.push_back(f32_view(a.in[p], a.ws, 2 + p));
  }
  float* y = f32_target(out, a.ws, 0);
  for (int64_t h = 0; h < nh; ++h) {
    float m = -std::numeric_limits<float>::infinity();
    for (const float* p : parts) m = std::max(m, p[h * (hd + 2) + hd]);
    float l = 0;
    float* o = y + h * hd;
    std::fill(o, o + hd, 0.0f);
    for (const float* p : parts) {
      const float* r = p + h * (hd + 2);
      const float w = r[hd + 1] > 0 ? std::exp(r[hd] - m) : 0.0f;  // empty shard: zero weight
      l += r[hd + 1] * w;
      for (int64_t d = 0; d < hd; ++d) o[d] += r[d] * w;
    }
    const float inv = 1.0f / std::max(l, 1e-20f);
    for (int64_t d = 0; d < hd; ++d) o[d] *= inv;
  }
  f32_commit(y, out);
  return {};
}

Status k_rope(const KernelArgs& a) {
  const Tensor &x = a.in[0], &pos = a.in[1], &out = a.out[0];
  const int64_t hd = a.params.get(F::head_dim, 0);
  if (hd <= 0 || hd % 2 != 0 || x.last() != hd || (x.rank != 2 && x.rank != 3) ||
      out.numel != x.numel)
    return kernel_error(
        fmt::format("ROPE: x {} with head_dim {} (must be even; rank 2 or 3)", describe(x), hd));
  if (!is_index_dtype(pos.dtype) || pos.numel < 1 || (x.rank == 3 && pos.numel != x.shape[0]))
    return kernel_error(fmt::format("ROPE: positions {} for x {}", describe(pos), describe(x)));
  const auto theta = static_cast<float>(a.params.real(F::theta, 10000.0));
  const int64_t half = hd / 2;
  std::vector<float> inv_freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)  // fp32 as torch: 1 / theta ** (arange(half) / half)
    inv_freq[static_cast<size_t>(i)] =
        1.0f / std::pow(theta, static_cast<float>(i) / static_cast<float>(half));
  const float* v = f32_view(x, a.ws, 0);
  float* y = f32_target(out, a.ws, 1);
  const int64_t seq = x.rank == 3 ? x.shape[0] : 1;
  const int64_t per_pos = x.numel / seq;  // heads x head_dim
  for (int64_t s = 0; s < seq; ++s) {
    const auto p = static_cast<float>(load_index(pos, s));
    for (int64_t row = 0; row < per_pos / hd; ++row) {
      const float* x1 = v + s * per_pos + row * hd;
      float* o = y + s * per_pos + row * hd;
      for (int64_t i = 0; i < half; ++i) {
        const float ang = p * inv_freq[static_cast<size_t>(i)];
        const float c = std::cos(ang), sn = std::sin(ang);
        const float a1 = x1[i], a2 = x1[i + half];
        o[i] = a1 * c - a2 * sn;
        o[i + half] = a2 * c + a1 * sn;
      }
    }
  }
  f32_commit(y, out);
  return {};
}

Status k_kv_append(const KernelArgs& a) {
  const Tensor &nw = a.in[0], &cache = a.out[0];
  const int64_t pos = a.params.get(F::pos, -1);
  if (a.in[1].data != cache.data)
    return kernel_error("KV_APPEND: input 1 must be the output cache (in place)");
  if (cache.rank == 3) {
    const int64_t row = cache.shape[1] * cache.shape[2];
    if (row <= 0 || nw.numel % row != 0 || pos < 0 || pos + nw.numel / row > cache.shape[0])
      return kernel_error(fmt::format("KV_APPEND: {} at pos {} does not fit cache {}", describe(nw),
                                      pos, describe(cache)));
    for (int64_t i = 0; i < nw.numel; ++i)
      store(cache.data, cache.dtype, pos * row + i, load(nw.data, nw.dtype, i));
    return {};
  }
  if (cache.rank == 4) {
    const int64_t b = cache.shape[0], seq = cache.shape[1], row = cache.shape[2] * cache.shape[3];
    if (nw.numel != b * row || pos < 0 || pos >= seq)
      return kernel_error(fmt::format("KV_APPEND: {} at pos {} does not fit cache {}", describe(nw),
                                      pos, describe(cache)));
    for (int64_t s = 0; s < b; ++s)
      for (int64_t i = 0; i < row; ++i)
        store(cache.data, cache.dtype, (s * seq + pos) * row + i,
              load(nw.data, nw.dtype, s * row + i));
    return {};
  }
  return kernel_error("KV_APPEND: cache must be rank 3 or 4, not " + describe(cache));
}

}  // namespace amk::inst
