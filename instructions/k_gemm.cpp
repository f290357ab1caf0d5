// GEMV_TILE / GEMM_TILE: out[m, n_off + j] = x[m] . W[n_off + j] (+ bias) for j < N_tile, with
// fp32 accumulation and one cast. Weights are [N, K] (torch Linear layout): each output column
// streams one contiguous weight row, which is what makes decode bandwidth-bound.
// Quantised (qdtype 6/7 and >= 3 inputs): int8 [N, K] or packed int4 [N, ceil(K/2)] (low nibble =
// even column, value = nibble - 8) with scales [N, n_groups] (+ zeros): w = (q - z) * s, the last
// group repeating for a ragged tail. Rows: all of x's rows for GEMV; [m_off, m_off + M_tile) for
// GEMM (AMK's lowering sets M_tile = rows and no m_off).
#include <algorithm>
#include <cmath>

#include "instructions/kernels.h"
#include "instructions/simd.h"

namespace amk::inst {
namespace {

using F = ir::ParamField;

// Weights as fp32 for the columns a tile needs, when no SIMD dot exists for the dtype.
float dot_any(const float* x, const Tensor& w, int64_t row, int64_t k_len) {
  const int64_t base = row * w.shape[1];
  switch (w.dtype) {
    case ir::DType::F32:
      return simd::dot_f32(x, static_cast<const float*>(w.data) + base, k_len);
    case ir::DType::BF16:
      return simd::dot_bf16(x, static_cast<const uint16_t*>(w.data) + base, k_len);
    case ir::DType::F16:
      return simd::dot_f16(x, static_cast<const uint16_t*>(w.data) + base, k_len);
    case ir::DType::I8:
      return simd::dot_i8(x, static_cast<const int8_t*>(w.data) + base, k_len);
    default: {
      float acc = 0;
      for (int64_t k = 0; k < k_len; ++k) acc += x[k] * load(w.data, w.dtype, base + k);
      return acc;
    }
  }
}

struct Quant {
  int64_t qdtype, group, n_groups;
  int64_t ld;           // bytes from one weight row to the next
  const float* scales;  // the tile's rows [row0, row0 + N_tile) of scales, as fp32
  const float* zeros;   // same rows of zeros, or nullptr
  int64_t row0;
};

// Σ_k x[k] * (q[k] - z_g) * s_g for one weight row. Whole groups go through the fused row kernels
// (scales applied in-vector, offset and zero-point folded in as -s_g (offset + z_g) Σ_{k in g}
// x[k]); a ragged tail or odd int4 groups take the per-group path.
float dot_quant(const float* x, const float* xe, const float* xo, const float* gsum,
                const Tensor& w, int64_t row, int64_t K, const Quant& q) {
  const float* s = q.scales + (row - q.row0) * q.n_groups;
  const float* z = q.zeros ? q.zeros + (row - q.row0) * q.n_groups : nullptr;
  const float offset = q.qdtype == 7 ? 8.0f : 0.0f;
  const auto* base = static_cast<const uint8_t*>(w.data) + row * q.ld;
  if (K == q.n_groups * q.group && (q.qdtype == 6 || q.group % 2 == 0)) {
    float acc = q.qdtype == 6 ? simd::dot_i8_scaled(x, reinterpret_cast<const int8_t*>(base),
                                                    q.n_groups, q.group, s)
                              : simd::dot_u4_scaled(xe, xo, base, q.n_groups, q.group / 2, s);
    if (offset != 0.0f || z)
      for (int64_t g = 0; g < q.n_groups; ++g) acc -= s[g] * (offset + (z ? z[g] : 0.0f)) * gsum[g];
    return acc;
  }
  float acc = 0;
  for (int64_t g = 0; g < q.n_groups; ++g) {
    const int64_t k0 = g * q.group;
    const int64_t k1 = g + 1 == q.n_groups ? K : std::min(K, k0 + q.group);  // ragged tail
    if (k0 >= K) break;
    float d;
    if (q.qdtype == 6) {
      d = simd::dot_i8(x + k0, reinterpret_cast<const int8_t*>(base) + k0, k1 - k0);
    } else if (k0 % 2 == 0 && (k1 - k0) % 2 == 0) {
      d = simd::dot_u4(xe + k0 / 2, xo + k0 / 2, base + k0 / 2, (k1 - k0) / 2) - 8.0f * gsum[g];
    } else {
      d = 0;
      for (int64_t k = k0; k < k1; ++k)
        d += x[k] * static_cast<float>(((k & 1) ? base[k / 2] >> 4 : base[k / 2] & 0xF) - 8);
    }
    acc += s[g] * (d - (z ? z[g] * gsum[g] : 0.0f));
  }
  return acc;
}

// Σ_{k in group g} x[k] per group (the zero-point and int4 offset terms).
void group_sums(const float* xr, int64_t K, const Quant& q, std::vector<float>& gsum) {
  gsum.assign(static_cast<size_t>(q.n_groups), 0.0f);
  for (int64_t g = 0; g < q.n_groups; ++g) {
    const int64_t k0 = g * q.group, k1 = g + 1 == q.n_groups ? K : std::min(K, k0 + q.group);
    if (k0 < K) gsum[static_cast<size_t>(g)] = simd::sum(xr + k0, k1 - k0);
  }
}

// The tile's dots of one row of x into acc[0, n_tile) by the row-block kernels (simd::gemv_*);
// false when they have none for the weights' format or the quantisation's groups.
bool tile_dots(const float* xr, const Tensor& w, int64_t n_off, int64_t n_tile, int64_t K,
               const Quant* q, float* acc, Workspace& ws) {
  const int64_t ld = q ? q->ld : w.shape[1];
  float* scratch = ws.floats(8, static_cast<size_t>(simd::gemv_scratch(K, q ? q->n_groups : 0)));
  if (!q) {
    if (w.dtype == ir::DType::F32) {
      simd::gemv_f32(xr, static_cast<const float*>(w.data) + n_off * ld, ld, K, n_tile, acc,
                     scratch);
      return true;
    }
    if (w.dtype == ir::DType::BF16) {
      simd::gemv_bf16(xr, static_cast<const uint16_t*>(w.data) + n_off * ld, ld, K, n_tile, acc,
                      scratch);
      return true;
    }
    return false;
  }
  if (K != q->n_groups * q->group) return false;
  const auto* base = static_cast<const uint8_t*>(w.data) + n_off * ld;
  if (q->qdtype == 7)
    return simd::gemv_u4(xr, base, ld, q->n_groups, q->group, q->scales, q->zeros, n_tile, acc,
                         scratch);
  if (!simd::gemv_i8_scaled(xr, reinterpret_cast<const int8_t*>(base), ld, q->n_groups, q->group,
                            q->scales, n_tile, acc, scratch))
    return false;
  if (q->zeros) {  // - s_g z_g Σ_{k in g} x[k]
    std::vector<float> gsum;
    group_sums(xr, K, *q, gsum);
    for (int64_t j = 0; j < n_tile; ++j)
      for (int64_t g = 0; g < q->n_groups; ++g)
        acc[j] -= q->scales[j * q->n_groups + g] * q->zeros[j * q->n_groups + g] *
                  gsum[static_cast<size_t>(g)];
  }
  return true;
}

// The tile's dots of one row of x, weight row after weight row (the formats and groups the
// row-block kernels do not take); xe, xo, gsum: reused buffers.
void row_dots(const float* xr, const Tensor& w, int64_t n_off, int64_t n_tile, int64_t K,
              const Quant* q, float* acc, std::vector<float>& xe, std::vector<float>& xo,
              std::vector<float>& gsum) {
  if (q && q->qdtype == 7) {  // even/odd elements of x, for the packed int4 kernels
    xe.resize(static_cast<size_t>((K + 1) / 2));
    xo.assign(static_cast<size_t>((K + 1) / 2), 0.0f);
    for (int64_t k = 0; k < K; ++k) ((k & 1) ? xo : xe)[static_cast<size_t>(k / 2)] = xr[k];
  }
  if (q) group_sums(xr, K, *q, gsum);
  for (int64_t j = 0; j < n_tile; ++j)
    acc[j] = q ? dot_quant(xr, xe.data(), xo.data(), gsum.data(), w, n_off + j, K, *q)
               : dot_any(xr, w, n_off + j, K);
}

}  // namespace

Status k_gemm(const KernelArgs& a) {
  const Tensor &x = a.in[0], &w = a.in[1], &out = a.out[0];
  const bool gemm = a.op == ir::Op::GEMM_TILE;
  const char* op = gemm ? "GEMM_TILE" : "GEMV_TILE";
  const int64_t K = a.params.get(F::K, x.last());
  if (K <= 0 || K > x.last())
    return kernel_error(fmt::format("{}: K={} but x is {}", op, K, describe(x)));
  const int64_t rows = x.numel / x.last();
  const int64_t qd = a.params.get(F::qdtype, 0);
  const bool quant = (qd == 6 || qd == 7) && a.in.size() >= 3;
  if (w.rank != 2) return kernel_error(fmt::format("{}: weight {} must be 2-D", op, describe(w)));
  Quant q{qd, 0, 0, 0, nullptr, nullptr, 0};
  int64_t n_rows = w.shape[0];
  if (quant) {
    const Tensor& sc = a.in[2];
    if (sc.rank != 2)
      return kernel_error(fmt::format("{}: scales {} must be [N, n_groups]", op, describe(sc)));
    n_rows = sc.shape[0];
    q.n_groups = sc.shape[1];
    q.group = a.params.get(F::group, K);
    const ir::Quant format = ir::quant_of(qd);
    const int64_t wcols = ir::quant_weight_cols(format, w.dtype, K);
    // An I4 row of n values takes ceil(n/2) bytes; a U8 (or I8) row a byte a column.
    q.ld = w.dtype == ir::DType::I4 ? ir::quant_row_bytes(format, w.shape[1]) : w.shape[1];
    if (w.dtype == ir::DType::I4 && w.shape[1] % 2 != 0)  // its buffer holds ceil(N K / 2) bytes
      return kernel_error(fmt::format(
          "{}: I4 weight {} of odd width cannot pack its rows on whole bytes", op, describe(w)));
    if (q.group <= 0 || q.n_groups <= 0 || w.shape[0] != n_rows || w.shape[1] < wcols)
      return kernel_error(
          fmt::format("{}: quantised weight {} / scales {} do not fit K={}, group={}", op,
                      describe(w), describe(sc), K, q.group));
    if ((qd == 6 && w.dtype != ir::DType::I8) ||
        (qd == 7 && w.dtype != ir::DType::U8 && w.dtype != ir::DType::I4))
      return kernel_error(fmt::format("{}: qdtype {} cannot read weight {}", op, qd, describe(w)));
    if (a.in.size() > 3 && a.in[3].numel != sc.numel)
      return kernel_error(fmt::format("{}: zeros must match the scales", op));
  } else if (w.shape[1] < K) {
    return kernel_error(fmt::format("{}: K={} but weight is {}", op, K, describe(w)));
  }
  const int64_t n_off = a.params.get(F::n_off, 0);
  const int64_t n_tile = a.params.get(F::N_tile, n_rows);
  const int64_t n_out = out.last();
  if (n_off < 0 || n_tile <= 0 || n_off + n_tile > n_rows || n_off + n_tile > n_out)
    return kernel_error(fmt::format("{}: tile columns [{}, {}) outside weight rows {} / output {}",
                                    op, n_off, n_off + n_tile, n_rows, describe(out)));
  const int64_t m0 = gemm ? a.params.get(F::m_off, 0) : 0;
  const int64_t m1 = gemm ? m0 + a.params.get(F::M_tile, rows) : rows;
  if (m0 < 0 || m1 > rows || m1 * n_out > out.numel)
    return kernel_error(fmt::format("{}: rows [{}, {}) outside x {} / output {}", op, m0, m1,
                                    describe(x), describe(out)));
  if (quant) {  // only the tile's rows of scales (and zeros), as fp32
    const int64_t cnt = n_tile * q.n_groups, first = n_off * q.n_groups;
    float* sc = a.ws.floats(4, static_cast<size_t>(cnt));
    to_f32(a.in[2].data, a.in[2].dtype, first, cnt, sc);
    q.scales = sc;
    q.row0 = n_off;
    if (a.in.size() > 3) {
      float* z = a.ws.floats(5, static_cast<size_t>(cnt));
      to_f32(a.in[3].data, a.in[3].dtype, first, cnt, z);
      q.zeros = z;
    }
  }
  const float* xf = f32_view(x, a.ws, 0);
  const bool has_bias = !quant && a.in.size() == 3;
  if (has_bias && a.in[2].numel < n_off + n_tile)
    return kernel_error(fmt::format("{}: bias {} is shorter than the tile", op, describe(a.in[2])));
  float* bias = nullptr;  // the tile's slice of the bias, as fp32
  if (has_bias) {
    bias = a.ws.floats(6, static_cast<size_t>(n_tile));
    to_f32(a.in[2].data, a.in[2].dtype, n_off, n_tile, bias);
  }
  float* acc = a.ws.floats(7, static_cast<size_t>(n_tile));
  std::vector<float> xe, xo, gsum;
  for (int64_t m = m0; m < m1; ++m) {
    const float* xr = xf + m * x.last();
    if (!tile_dots(xr, w, n_off, n_tile, K, quant ? &q : nullptr, acc, a.ws))
      row_dots(xr, w, n_off, n_tile, K, quant ? &q : nullptr, acc, xe, xo, gsum);
    for (int64_t j = 0; j < n_tile; ++j)
      store(out.data, out.dtype, m * n_out + n_off + j, bias ? acc[j] + bias[j] : acc[j]);
  }
  return {};
}

Status k_dequant(const KernelArgs& a) {
  const Tensor &qv = a.in[0], &sc = a.in[1], &out = a.out[0];
  const int64_t group = a.params.get(F::group, qv.last());
  if (group <= 0 || qv.numel % group != 0 || sc.numel != qv.numel / group ||
      out.numel != qv.numel || (a.in.size() == 3 && a.in[2].numel != sc.numel))
    return kernel_error(fmt::format("DEQUANT: q {}, scales {}, group {}, output {}", describe(qv),
                                    describe(sc), group, describe(out)));
  float* y = f32_target(out, a.ws, 0);
  for (int64_t i = 0; i < qv.numel; ++i) {
    const int64_t g = i / group;
    const float z = a.in.size() == 3 ? load(a.in[2].data, a.in[2].dtype, g) : 0.0f;
    y[i] = (load(qv.data, qv.dtype, i) - z) * load(sc.data, sc.dtype, g);
  }
  f32_commit(y, out);
  return {};
}

}  // namespace amk::inst
