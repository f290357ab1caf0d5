// Elementwise and reduction kernels: fp32 math, one final cast (AMK's reference semantics).
#include <cmath>
#include <cstring>
#include <limits>

#include "instructions/kernels.h"

namespace amk::inst {

const float* f32_view(const Tensor& t, Workspace& ws, size_t slot) {
  if (t.dtype == ir::DType::F32) return static_cast<const float*>(t.data);
  float* buf = ws.floats(slot, static_cast<size_t>(t.numel));
  to_f32(t.data, t.dtype, 0, t.numel, buf);
  return buf;
}

float* f32_target(const Tensor& out, Workspace& ws, size_t slot) {
  if (out.dtype == ir::DType::F32) return static_cast<float*>(out.data);
  return ws.floats(slot, static_cast<size_t>(out.numel));
}

void f32_commit(const float* v, const Tensor& out) {
  if (v != out.data) from_f32(v, out.numel, out.data, out.dtype, 0);
}

bool is_index_dtype(ir::DType d) {
  return d == ir::DType::I32 || d == ir::DType::I8 || d == ir::DType::U8 || d == ir::DType::I4;
}

int64_t load_index(const Tensor& t, int64_t i) {
  switch (t.dtype) {
    case ir::DType::I32: {
      int32_t v;
      std::memcpy(&v, static_cast<const char*>(t.data) + 4 * i, 4);
      return v;
    }
    case ir::DType::I8:
      return static_cast<const int8_t*>(t.data)[i];
    case ir::DType::U8:
      return static_cast<const uint8_t*>(t.data)[i];
    default:
      return static_cast<int64_t>(load(t.data, t.dtype, i));
  }
}

std::string describe(const Tensor& t) {
  std::string s = "[";
  for (int k = 0; k < t.rank; ++k) s += (k ? ", " : "") + std::to_string(t.shape[k]);
  return fmt::format("shape {}] ({})", s, ir::name(t.dtype));
}

namespace {

// Applies f elementwise over inputs with the output's numel (all sizes checked equal).
template <typename F>
Status elementwise(const KernelArgs& a, size_t n_in, const char* op, F f) {
  const Tensor& out = a.out[0];
  const float* x[2] = {nullptr, nullptr};
  for (size_t k = 0; k < n_in; ++k) {
    if (a.in[k].numel != out.numel)
      return kernel_error(fmt::format("{}: input {} {} does not match output {}", op, k,
                                      describe(a.in[k]), describe(out)));
    x[k] = f32_view(a.in[k], a.ws, k);
  }
  float* y = f32_target(out, a.ws, 2);
  for (int64_t i = 0; i < out.numel; ++i) y[i] = f(x[0] ? x[0][i] : 0.0f, x[1] ? x[1][i] : 0.0f);
  f32_commit(y, out);
  return {};
}

}  // namespace

Status k_nop(const KernelArgs&) {
  return {};
}

Status k_copy(const KernelArgs& a) {
  const Tensor &x = a.in[0], &out = a.out[0];
  if (x.numel != out.numel)
    return kernel_error(fmt::format("COPY: {} into {}", describe(x), describe(out)));
  if (x.dtype == out.dtype && x.dtype != ir::DType::I4) {
    std::memmove(out.data, x.data, static_cast<size_t>(ir::dtype_nbytes(x.dtype, x.numel)));
    return {};
  }
  for (int64_t i = 0; i < x.numel; ++i) store(out.data, out.dtype, i, load(x.data, x.dtype, i));
  return {};
}

Status k_add(const KernelArgs& a) {
  return elementwise(a, 2, "ADD", [](float x, float y) { return x + y; });
}

Status k_mul(const KernelArgs& a) {
  if (a.in.size() == 2) return elementwise(a, 2, "MUL", [](float x, float y) { return x * y; });
  const auto scale = static_cast<float>(a.params.real(ir::ParamField::scale, 1.0));
  return elementwise(a, 1, "MUL", [scale](float x, float) { return x * scale; });
}

Status k_gelu(const KernelArgs& a) {
  return elementwise(a, 1, "GELU", [](float x, float) {
    return 0.5f * x * (1.0f + std::erf(x * static_cast<float>(M_SQRT1_2)));
  });
}

Status k_silu_mul(const KernelArgs& a) {
  return elementwise(a, 2, "SILU_MUL",
                     [](float g, float u) { return g / (1.0f + std::exp(-g)) * u; });
}

Status k_allreduce(const KernelArgs& a) {
  const Tensor& out = a.out[0];
  float* y = f32_target(out, a.ws, 0);
  std::vector<float> acc;
  float* sum = y;
  if (y == a.in[0].data) {  // in place over the first shard: accumulate aside
    acc.assign(static_cast<size_t>(out.numel), 0.0f);
    sum = acc.data();
  } else {
    std::fill(y, y + out.numel, 0.0f);
  }
  for (size_t k = 0; k < a.in.size(); ++k) {
    if (a.in[k].numel != out.numel)
      return kernel_error(fmt::format("ALLREDUCE_SHARD: shard {} {} does not match output {}", k,
                                      describe(a.in[k]), describe(out)));
    for (int64_t i = 0; i < out.numel; ++i) sum[i] += load(a.in[k].data, a.in[k].dtype, i);
  }
  if (sum != y) std::copy(sum, sum + out.numel, y);
  f32_commit(y, out);
  return {};
}

Status k_softmax(const KernelArgs& a) {
  const Tensor &x = a.in[0], &out = a.out[0];
  if (x.numel != out.numel)
    return kernel_error(fmt::format("SOFTMAX: {} into {}", describe(x), describe(out)));
  int rank = std::max(x.rank, 1);
  int64_t dim = a.params.get(ir::ParamField::dim, -1);
  if (dim < 0) dim += rank;
  if (dim < 0 || dim >= rank)
    return kernel_error(fmt::format("SOFTMAX: dim out of range for {}", describe(x)));
  int64_t len = x.rank ? x.shape[dim] : 1, inner = 1;
  for (int k = static_cast<int>(dim) + 1; k < x.rank; ++k) inner *= x.shape[k];
  const int64_t span = len * inner;
  const int64_t outer = span != 0 ? x.numel / span : 0;
  const float* v = f32_view(x, a.ws, 0);
  float* y = f32_target(out, a.ws, 1);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      const int64_t base = o * len * inner + in;
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < len; ++j) m = std::max(m, v[base + j * inner]);
      float s = 0;
      for (int64_t j = 0; j < len; ++j)
        s += (y[base + j * inner] = std::exp(v[base + j * inner] - m));
      for (int64_t j = 0; j < len; ++j) y[base + j * inner] /= s;
    }
  f32_commit(y, out);
  return {};
}

Status k_argmax(const KernelArgs& a) {
  const Tensor &x = a.in[0], &out = a.out[0];
  const int64_t v = x.last();
  if (v <= 0 || out.numel * v != x.numel)
    return kernel_error(
        fmt::format("SAMPLE_ARGMAX: {} needs one index per row of {}", describe(out), describe(x)));
  const float* p = f32_view(x, a.ws, 0);
  for (int64_t r = 0; r < out.numel; ++r) {
    const float* row = p + r * v;
    int64_t best = 0;
    for (int64_t j = 1; j < v; ++j) {
      // First index on ties; a NaN is the maximum (as torch.argmax).
      if (std::isnan(row[best])) break;
      if (std::isnan(row[j]) || row[j] > row[best]) best = j;
    }
    store(out.data, out.dtype, r, static_cast<float>(best));
  }
  return {};
}

Status k_rmsnorm(const KernelArgs& a) {
  const Tensor &x = a.in[0], &w = a.in[1], &out = a.out[0];
  const int64_t h = x.last();
  if (w.numel != h || out.numel != x.numel)
    return kernel_error(fmt::format("RMSNORM: x {}, weight {}, output {}", describe(x), describe(w),
                                    describe(out)));
  const auto eps = static_cast<float>(a.params.real(ir::ParamField::eps, 1e-6));
  const float *v = f32_view(x, a.ws, 0), *g = f32_view(w, a.ws, 1);
  float* y = f32_target(out, a.ws, 2);
  for (int64_t r = 0; r < x.numel / h; ++r) {
    const float* row = v + r * h;
    float ss = 0;
    for (int64_t k = 0; k < h; ++k) ss += row[k] * row[k];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(h) + eps);
    for (int64_t k = 0; k < h; ++k) y[r * h + k] = row[k] * inv * g[k];
  }
  f32_commit(y, out);
  return {};
}

Status k_layernorm(const KernelArgs& a) {
  const Tensor &x = a.in[0], &w = a.in[1], &out = a.out[0];
  const int64_t h = a.params.get(ir::ParamField::hidden, x.last());
  if (h <= 0 || x.numel % h != 0 || w.numel != h || out.numel != x.numel ||
      (a.in.size() == 3 && a.in[2].numel != h))
    return kernel_error(fmt::format("LAYERNORM: x {}, weight {}, output {}", describe(x),
                                    describe(w), describe(out)));
  const auto eps = static_cast<float>(a.params.real(ir::ParamField::eps, 1e-5));
  const float *v = f32_view(x, a.ws, 0), *g = f32_view(w, a.ws, 1);
  const float* b = a.in.size() == 3 ? f32_view(a.in[2], a.ws, 3) : nullptr;
  float* y = f32_target(out, a.ws, 2);
  for (int64_t r = 0; r < x.numel / h; ++r) {
    const float* row = v + r * h;
    float mean = 0;
    for (int64_t k = 0; k < h; ++k) mean += row[k];
    mean /= static_cast<float>(h);
    float var = 0;
    for (int64_t k = 0; k < h; ++k) var += (row[k] - mean) * (row[k] - mean);
    var /= static_cast<float>(h);
    const float inv = 1.0f / std::sqrt(var + eps);
    for (int64_t k = 0; k < h; ++k) y[r * h + k] = (row[k] - mean) * inv * g[k] + (b ? b[k] : 0.0f);
  }
  f32_commit(y, out);
  return {};
}

Status k_embed(const KernelArgs& a) {
  const Tensor &ids = a.in[0], &table = a.in[1], &out = a.out[0];
  if (!is_index_dtype(ids.dtype))
    return kernel_error("EMBED: ids must be I32, I8 or U8, not " + describe(ids));
  if (table.rank != 2 || out.numel != ids.numel * table.shape[1])
    return kernel_error(fmt::format("EMBED: {} ids of table {} do not fill {}", ids.numel,
                                    describe(table), describe(out)));
  const int64_t rows = table.shape[0], width = table.shape[1];
  for (int64_t i = 0; i < ids.numel; ++i) {
    const int64_t id = load_index(ids, i);
    if (id < 0 || id >= rows)
      return kernel_error(
          fmt::format("EMBED: id {} at position {} is outside the table's {} rows", id, i, rows));
    if (table.dtype == out.dtype && table.dtype != ir::DType::I4) {
      const size_t row_bytes = static_cast<size_t>(ir::dtype_nbytes(table.dtype, width));
      std::memcpy(static_cast<char*>(out.data) + static_cast<size_t>(i) * row_bytes,
                  static_cast<const char*>(table.data) + static_cast<size_t>(id) * row_bytes,
                  row_bytes);
    } else {
      for (int64_t k = 0; k < width; ++k)
        store(out.data, out.dtype, i * width + k, load(table.data, table.dtype, id * width + k));
    }
  }
  return {};
}

}  // namespace amk::inst
