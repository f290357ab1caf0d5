// amk's shape/param consistency: one rule per opcode family, so a schedule that AMK would accept
// but whose kernels would index out of bounds or compute garbage is rejected before it runs.
// Each rule only runs when the task's buffers exist and its arity is right (else reported already).
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/opcodes.h"
#include "ir/pyjson.h"
#include "validate/context.h"

namespace amk::validate {

// The rules this file checks, in emission order (rules() lists every family's).
constexpr Rule kParamRange{
    "param.range",
    "a size/offset param is negative, zero where it must be positive, or odd where it must be even",
    false};
constexpr Rule kShapeCopy{"shape.copy", "COPY: input and output sizes differ", false};
constexpr Rule kShapeEmbed{"shape.embed", "EMBED: table rank, id dtype or output size inconsistent",
                           false};
constexpr Rule kShapeNorm{"shape.norm",
                          "RMSNORM/LAYERNORM: hidden, weight, bias and output inconsistent", false};
constexpr Rule kShapeGemv{"shape.gemv",
                          "GEMV/GEMM_TILE: K, weight, scales, bias or output inconsistent", false};
constexpr Rule kShapeAttention{
    "shape.attention", "ATTENTION_TILE: heads, head_dim, KV window or output inconsistent", false};
constexpr Rule kShapeRope{"shape.rope",
                          "ROPE: head_dim odd or inconsistent, positions or output wrong", false};
constexpr Rule kShapeElementwise{
    "shape.elementwise", "SILU_MUL/GELU/ADD/MUL/SOFTMAX/ALLREDUCE: operand sizes differ", false};
constexpr Rule kShapeDequant{"shape.dequant",
                             "DEQUANT: qdtype, group, scales or output inconsistent", false};
constexpr Rule kShapeKvAppend{
    "shape.kv-append", "KV_APPEND: not in place, or the new rows do not fit the cache", false};
constexpr Rule kShapeArgmax{"shape.argmax", "SAMPLE_ARGMAX: output size is not the number of rows",
                            false};
constexpr Rule kShapeCombine{"shape.combine", "ATTENTION_COMBINE: partials and output inconsistent",
                             false};
constexpr Rule kTileBounds{"tile.bounds", "a GEMV/GEMM tile writes outside its output buffer",
                           false};

std::span<const Rule> shape_rules() {
  static constexpr Rule kList[] = {kParamRange,   kShapeCopy,      kShapeEmbed,  kShapeNorm,
                                   kShapeGemv,    kShapeAttention, kShapeRope,   kShapeElementwise,
                                   kShapeDequant, kShapeKvAppend,  kShapeArgmax, kShapeCombine,
                                   kTileBounds};
  return kList;
}

namespace {

using ir::Op;
using F = ir::ParamField;

bool integer_dtype(ir::DType d) {
  return d == ir::DType::I32 || d == ir::DType::I8 || d == ir::DType::U8;
}

std::string shape_str(const ir::Buffer& b) {
  return ir::py_repr(nlohmann::ordered_json(b.shape));
}

class TaskShapes {
 public:
  TaskShapes(Context& c, size_t id, const ir::ParamTable& pt)
      : c_(c), id_(id), t_(c.p.tasks[id]), pt_(pt) {}

  const ir::Buffer& in(size_t k) const { return c_.buf(t_.inputs[k]); }
  const ir::Buffer& out() const { return c_.buf(t_.outputs[0]); }
  int64_t in_numel(size_t k) const { return c_.numel(t_.inputs[k]); }
  int64_t out_numel() const { return c_.numel(t_.outputs[0]); }
  std::string in_ref(size_t k) const {
    return fmt::format("input #{} ('{}', shape {})", t_.inputs[k], in(k).name, shape_str(in(k)));
  }
  std::string out_ref() const {
    return fmt::format("output #{} ('{}', shape {})", t_.outputs[0], out().name, shape_str(out()));
  }
  // An int param (absent or non-int -> fallback).
  int64_t i(ir::ParamField key, int64_t fallback) const { return pt_.get(key, fallback); }
  bool has_int(ir::ParamField key) const { return pt_.has_int(key); }
  static int64_t last(const ir::Buffer& b) { return b.shape.empty() ? 1 : b.shape.back(); }

  void fail(const Rule& code, const std::string& msg, const std::string& field = "") {
    c_.error(code, fmt::format("{} {}: {}", task_ref(t_, id_), ir::name(t_.op), msg),
             ir::task_pointer(id_, field));
  }
  void same_numel(const Rule& code, size_t k) {
    if (in_numel(k) != out_numel())
      fail(code,
           fmt::format("{} has {} elements but {} has {}", in_ref(k), in_numel(k), out_ref(),
                       out_numel()),
           fmt::format("inputs/{}", k));
  }

  void run();

 private:
  void embed();
  void norm();
  void gemv();
  void attention();
  void rope();
  void softmax();
  void dequant();
  void kv_append();
  void argmax();
  void combine();
  Context& c_;
  size_t id_;
  const ir::Task& t_;
  const ir::ParamTable& pt_;
};

// Param ranges that hold for every opcode using the key: 'P' positive, 'Z' non-negative.
constexpr char kRange[ir::kParamFieldCount] = {
    'P', 'P', 'P', 'P', 'P', 'Z', 'Z', 'P', 'P', 'P', 'P', 'P',  // K .. n_kv_heads
    'Z', 'Z', 'Z', 0,   'P', 0,   0,   0,   0,   0};             // kv_start .. theta
static_assert(static_cast<int>(ir::ParamField::group) == 16 && ir::kParamFieldCount == 22);

// kRange as bit masks of the fields that must be positive and non-negative.
constexpr std::pair<uint32_t, uint32_t> kRangeMasks = [] {
  std::pair<uint32_t, uint32_t> m{0, 0};
  for (int f = 0; f < ir::kParamFieldCount; ++f) {
    if (kRange[f] == 'P') m.first |= 1u << f;
    if (kRange[f] == 'Z') m.second |= 1u << f;
  }
  return m;
}();

void check_ranges(Context& c, size_t id, const ir::ParamTable& pt) {
  const ir::Task& t = c.p.tasks[id];
  // The fields' values are looked at only when one of them was given an int out of its range.
  const uint32_t suspect =
      (pt.nonpositive & kRangeMasks.first) | (pt.negative & kRangeMasks.second);
  for (uint32_t m = suspect || !c.s.screens ? pt.ints : 0; m; m &= m - 1) {
    const int f = __builtin_ctz(m);
    const char rule = kRange[f];
    const int64_t v = pt.i[f];
    if ((rule == 'P' && v <= 0) || (rule == 'Z' && v < 0)) {
      auto key = ir::param_name(static_cast<ir::ParamField>(f));
      c.error(kParamRange,
              fmt::format("{} param '{}'={} must be {}", task_ref(t, id), key, v,
                          rule == 'P' ? "positive" : "non-negative"),
              ir::task_pointer(id, fmt::format("params/{}", key)));
    }
  }
  const double eps = pt.real(F::eps, 0), theta = pt.real(F::theta, 1);
  if (eps < 0)
    c.error(kParamRange, fmt::format("{} param 'eps' must be non-negative", task_ref(t, id)),
            ir::task_pointer(id, "params/eps"));
  if (theta <= 0)
    c.error(kParamRange, fmt::format("{} param 'theta' must be positive", task_ref(t, id)),
            ir::task_pointer(id, "params/theta"));
}

void TaskShapes::gemv() {
  const bool gemm = t_.op == Op::GEMM_TILE;
  const auto& x = in(0);
  const int64_t K = i(F::K, last(x));
  const int64_t qd = i(F::qdtype, 0);
  const ir::Quant quant = ir::gemv_quant(qd, t_.inputs.size());
  if (last(x) != K)
    fail(kShapeGemv, fmt::format("K={} but {} has width {}", K, in_ref(0), last(x)), "params/K");
  const int64_t rows = K > 0 ? in_numel(0) / K : 0;
  int64_t N = 0;
  const auto& w = in(1);
  if (quant != ir::Quant::None) {
    const bool int4 = quant == ir::Quant::Int4;
    const auto& sc = in(2);
    const int64_t group = i(F::group, K);
    if (sc.shape.size() != 2) {
      fail(kShapeGemv, fmt::format("scales {} must be [N, n_groups]", in_ref(2)), "inputs/2");
      return;
    }
    N = sc.shape[0];
    const int64_t groups = group > 0 ? (K + group - 1) / group : 0;
    if (sc.shape[1] != groups)
      fail(kShapeGemv,
           fmt::format("{} needs {} groups of {} for K={}, scales {} has {}", ir::quant_name(quant),
                       groups, group, K, in_ref(2), sc.shape[1]),
           "inputs/2");
    const bool logical = int4 && w.dtype == ir::DType::I4;
    const int64_t wcols = ir::quant_weight_cols(quant, w.dtype, K);
    if (w.shape.size() != 2 || w.shape[0] != N || w.shape[1] != wcols)
      fail(kShapeGemv,
           fmt::format("{} weight {} must be [{}, {}]{}", int4 ? "packed int4" : "int8", in_ref(1),
                       N, wcols,
                       !int4     ? ""
                       : logical ? " (I4: the logical shape)"
                                 : " (U8: two columns per byte)"),
           "inputs/1");
    else if (logical && K % 2 != 0)
      fail(kShapeGemv,
           fmt::format("packed int4 weight {} is I4 [{}, {}]: its rows are packed on whole bytes, "
                       "which an I4 buffer of odd K does not size (declare it U8 [{}, {}])",
                       in_ref(1), N, K, N, ir::quant_row_bytes(quant, K)),
           "inputs/1");
    if (!ir::quant_weight_dtype_ok(quant, w.dtype))
      fail(kShapeGemv,
           fmt::format("qdtype {} needs a {} weight, {} is {}", qd,
                       int4 ? "I4 or U8 (packed)" : "I8", in_ref(1), ir::name(w.dtype)),
           "inputs/1");
  } else {
    if (w.shape.size() != 2) {
      fail(kShapeGemv, fmt::format("weight {} must be [N, K]", in_ref(1)), "inputs/1");
      return;
    }
    N = w.shape[0];
    if (w.shape[1] != K)
      fail(kShapeGemv, fmt::format("K={} but weight {} has inner dim {}", K, in_ref(1), w.shape[1]),
           "inputs/1");
    if (t_.inputs.size() == 3 && in_numel(2) != N)
      fail(kShapeGemv, fmt::format("bias {} must have N={} elements", in_ref(2), N), "inputs/2");
  }
  if (last(out()) != N)
    fail(kShapeGemv, fmt::format("{} must have N={} columns (the weight's rows)", out_ref(), N),
         "outputs/0");
  const int64_t out_rows = N > 0 ? out_numel() / N : 0;
  if (gemm) {
    const int64_t m_off = i(F::m_off, 0), m_tile = i(F::M_tile, rows);
    if (m_off + m_tile > rows || m_off + m_tile > out_rows)
      c_.error(kTileBounds,
               fmt::format("{} rows [{}, {}) exceed {} ({} rows) or {}", task_ref(t_, id_), m_off,
                           m_off + m_tile, in_ref(0), rows, out_ref()),
               ir::task_pointer(id_, "params/M_tile"));
  } else if (rows != out_rows) {
    fail(kShapeGemv,
         fmt::format("{} has {} rows but {} has {}", in_ref(0), rows, out_ref(), out_rows),
         "outputs/0");
  }
  const int64_t n_off = i(F::n_off, 0), n_tile = i(F::N_tile, N);
  if (has_int(F::n_off) && has_int(F::N_tile) && n_off >= 0 && n_tile > 0 && n_off + n_tile > N)
    c_.error(kTileBounds,
             fmt::format("{} tile columns [{}, {}) exceed N={} of {}", task_ref(t_, id_), n_off,
                         n_off + n_tile, N, out_ref()),
             ir::task_pointer(id_, "params/N_tile"));
}

void TaskShapes::attention() {
  const int64_t hd = i(F::head_dim, 0), nh = i(F::n_heads, 0), nkv = i(F::n_kv_heads, nh);
  if (hd <= 0 || nh <= 0 || nkv <= 0) return;  // param.range / param.int32 already said so
  if (nh % nkv != 0)
    fail(kShapeAttention, fmt::format("n_heads={} is not a multiple of n_kv_heads={}", nh, nkv),
         "params/n_kv_heads");
  const auto &q = in(0), &k = in(1), &v = in(2);
  const int64_t batch = ir::attention_batch(q.shape);
  if (in_numel(0) != batch * nh * hd)
    fail(kShapeAttention,
         fmt::format("{} must hold {} x n_heads={} x head_dim={}", in_ref(0), batch, nh, hd),
         "inputs/0");
  for (size_t kk : {size_t{1}, size_t{2}}) {
    const auto& cache = in(kk);
    bool ok = (cache.shape.size() == 3 || cache.shape.size() == 4) && cache.shape.back() == hd &&
              cache.shape[cache.shape.size() - 2] == nkv &&
              (cache.shape.size() == 3 || cache.shape[0] == batch) &&
              (batch == 1 || cache.shape.size() == 4);
    if (!ok)
      fail(kShapeAttention,
           fmt::format("{} must be [max_seq, n_kv_heads={}, head_dim={}]{}", in_ref(kk), nkv, hd,
                       batch > 1 ? fmt::format(" batched as [{}, ...]", batch) : ""),
           fmt::format("inputs/{}", kk));
  }
  if (k.shape != v.shape)
    fail(kShapeAttention, fmt::format("{} and {} differ", in_ref(1), in_ref(2)), "inputs/2");
  const int64_t seq = k.shape.size() >= 3 ? k.shape[k.shape.size() - 3] : 0;
  const int64_t start = i(F::kv_start, 0), len = i(F::kv_len, seq);
  const bool partial = (i(F::flags, 0) & ir::kFlagSplitKvPartial) != 0;
  if (start >= 0 && len >= 0 && start + len > seq)
    fail(
        kShapeAttention,
        fmt::format("KV window [{}, {}) exceeds the cache's {} positions", start, start + len, seq),
        "params/kv_len");
  if (len == 0 && !partial)
    fail(kShapeAttention, "kv_len=0 attends to nothing (only a split-KV partial may be empty)",
         "params/kv_len");
  const int64_t want = partial ? nh * (hd + 2) : batch * nh * hd;
  if (partial && batch != 1)
    fail(kShapeAttention, "split-KV partials are single-sequence", "params/flags");
  if (out_numel() != want)
    fail(kShapeAttention,
         fmt::format("{} must have {} elements ({})", out_ref(), want,
                     partial ? "n_heads x (head_dim + 2) partial" : "n_heads x head_dim"),
         "outputs/0");
}

// EMBED: integer ids, a [rows, width] table, ids x width outputs.
void TaskShapes::embed() {
  const auto &ids = in(0), &table = in(1);
  if (!integer_dtype(ids.dtype))
    fail(kShapeEmbed,
         fmt::format("ids {} must be I32, I8 or U8, not {}", in_ref(0), ir::name(ids.dtype)),
         "inputs/0");
  if (table.shape.size() != 2) {
    fail(kShapeEmbed, fmt::format("table {} must be [rows, width]", in_ref(1)), "inputs/1");
    return;
  }
  if (out_numel() != in_numel(0) * table.shape[1])
    fail(kShapeEmbed,
         fmt::format("{} ids x {} columns of {} do not fill {}", in_numel(0), table.shape[1],
                     in_ref(1), out_ref()),
         "outputs/0");
  if (has_int(F::hidden) && i(F::hidden, 0) != last(out()))
    fail(kShapeEmbed,
         fmt::format("hidden={} but {} has width {}", i(F::hidden, 0), out_ref(), last(out())),
         "params/hidden");
}

// RMSNORM/LAYERNORM: the weight (and bias) have hidden elements, the output the input's.
void TaskShapes::norm() {
  const int64_t h = i(F::hidden, last(in(0)));
  if (last(in(0)) != h)
    fail(kShapeNorm, fmt::format("hidden={} but {} has width {}", h, in_ref(0), last(in(0))),
         "params/hidden");
  if (in_numel(1) != h)
    fail(kShapeNorm, fmt::format("weight {} must have hidden={} elements", in_ref(1), h),
         "inputs/1");
  if (t_.inputs.size() == 3 && in_numel(2) != h)
    fail(kShapeNorm, fmt::format("bias {} must have hidden={} elements", in_ref(2), h), "inputs/2");
  same_numel(kShapeNorm, 0);
}

// ROPE: an even head_dim, [n_heads, hd] or [seq, n_heads, hd] rows, integer positions.
void TaskShapes::rope() {
  const int64_t hd = i(F::head_dim, 0);
  const auto &x = in(0), &pos = in(1);
  if (hd > 0 && hd % 2 != 0)
    fail(kShapeRope, fmt::format("head_dim={} must be even (rotate-half)", hd), "params/head_dim");
  if ((x.shape.size() != 2 && x.shape.size() != 3) || (hd > 0 && last(x) != hd))
    fail(
        kShapeRope,
        fmt::format("{} must be [n_heads, head_dim={}] or [seq, n_heads, head_dim]", in_ref(0), hd),
        "inputs/0");
  if (!integer_dtype(pos.dtype))
    fail(kShapeRope, fmt::format("positions {} must be I32, I8 or U8", in_ref(1)), "inputs/1");
  if (x.shape.size() == 3 && in_numel(1) != x.shape[0])
    fail(kShapeRope,
         fmt::format("{} positions for {} rows of {}", in_numel(1), x.shape[0], in_ref(0)),
         "inputs/1");
  same_numel(kShapeRope, 0);
}

// SOFTMAX: the output is the input's size, `dim` inside its rank.
void TaskShapes::softmax() {
  same_numel(kShapeElementwise, 0);
  const auto rank = static_cast<int64_t>(in(0).shape.size());
  const int64_t dim = i(F::dim, -1);
  if (dim < -std::max<int64_t>(rank, 1) || dim >= std::max<int64_t>(rank, 1))
    fail(kShapeElementwise,
         fmt::format("dim={} is outside the rank {} of {}", dim, rank, in_ref(0)), "params/dim");
}

// DEQUANT: a known qdtype, whole groups, one scale (and zero) per group.
void TaskShapes::dequant() {
  const int64_t qd = i(F::qdtype, 0), group = i(F::group, 0);
  if (ir::quant_of(qd) == ir::Quant::None)
    fail(kShapeDequant, fmt::format("qdtype={} must be 6 (I8) or 7 (I4)", qd), "params/qdtype");
  same_numel(kShapeDequant, 0);
  if (group > 0) {
    if (in_numel(0) % group != 0)
      fail(kShapeDequant,
           fmt::format("{} elements of {} are not whole groups of {}", in_numel(0), in_ref(0),
                       group),
           "params/group");
    else if (in_numel(1) != in_numel(0) / group)
      fail(kShapeDequant,
           fmt::format("scales {} must have one value per group ({})", in_ref(1),
                       in_numel(0) / group),
           "inputs/1");
    if (t_.inputs.size() == 3 && in_numel(2) != in_numel(1))
      fail(kShapeDequant, fmt::format("zeros {} must match the scales", in_ref(2)), "inputs/2");
  }
}

// KV_APPEND: in place, whole rows that fit the cache at `pos`.
void TaskShapes::kv_append() {
  if (t_.inputs[1] != t_.outputs[0]) {
    fail(kShapeKvAppend,
         fmt::format("appends in place: input 1 (#{}) must be the output (#{})", t_.inputs[1],
                     t_.outputs[0]),
         "inputs/1");
    return;
  }
  const auto& cache = out();
  const int64_t pos = i(F::pos, 0);
  if (cache.shape.size() == 3) {
    const int64_t row = cache.shape[1] * cache.shape[2];
    if (row <= 0 || in_numel(0) % row != 0) {
      fail(kShapeKvAppend,
           fmt::format("{} is not whole rows of [n_kv_heads, head_dim] = {} elements", in_ref(0),
                       row),
           "inputs/0");
    } else if (pos + in_numel(0) / row > cache.shape[0]) {
      fail(kShapeKvAppend,
           fmt::format("rows [{}, {}) do not fit the {} positions of {}", pos,
                       pos + in_numel(0) / row, cache.shape[0], out_ref()),
           "params/pos");
    }
  } else if (cache.shape.size() == 4) {
    if (in_numel(0) != cache.shape[0] * cache.shape[2] * cache.shape[3])
      fail(kShapeKvAppend,
           fmt::format("{} must hold one [n_kv_heads, head_dim] row per sequence of {}", in_ref(0),
                       out_ref()),
           "inputs/0");
    if (pos >= cache.shape[1])
      fail(kShapeKvAppend,
           fmt::format("pos={} is past the {} positions of {}", pos, cache.shape[1], out_ref()),
           "params/pos");
  } else {
    fail(kShapeKvAppend,
         fmt::format("cache {} must be [max_seq, n_kv, hd] or [batch, max_seq, n_kv, hd]",
                     out_ref()),
         "outputs/0");
  }
}

// SAMPLE_ARGMAX: one index per row.
void TaskShapes::argmax() {
  const int64_t v = last(in(0));
  if (v <= 0 || out_numel() != in_numel(0) / v)
    fail(kShapeArgmax, fmt::format("{} must hold one index per row of {}", out_ref(), in_ref(0)),
         "outputs/0");
}

// ATTENTION_COMBINE: n_heads x (head_dim + 2) partials into n_heads x head_dim.
void TaskShapes::combine() {
  if (!has_int(F::head_dim)) {
    fail(kShapeCombine, "needs the int param head_dim to split the partials", "params");
    return;
  }
  const int64_t hd = i(F::head_dim, 0);
  if (hd <= 0) return;
  const int64_t nh = i(F::n_heads, in_numel(0) / (hd + 2));
  for (size_t k = 0; k < t_.inputs.size(); ++k)
    if (in_numel(k) != nh * (hd + 2))
      fail(kShapeCombine,
           fmt::format("partial {} must be n_heads={} x (head_dim + 2) = {} elements", in_ref(k),
                       nh, nh * (hd + 2)),
           fmt::format("inputs/{}", k));
  if (out_numel() != nh * hd)
    fail(kShapeCombine,
         fmt::format("{} must have n_heads x head_dim = {} elements", out_ref(), nh * hd),
         "outputs/0");
}

// One visit per opcode family (LLVM's Verifier style); the elementwise ones need equal sizes.
void TaskShapes::run() {
  switch (t_.op) {
    case Op::NOP:
    case Op::FUSED:
      return;
    case Op::COPY:
      return same_numel(kShapeCopy, 0);
    case Op::EMBED:
      return embed();
    case Op::RMSNORM:
    case Op::LAYERNORM:
      return norm();
    case Op::GEMV_TILE:
    case Op::GEMM_TILE:
      return gemv();
    case Op::ATTENTION_TILE:
      return attention();
    case Op::ROPE:
      return rope();
    case Op::SILU_MUL:
    case Op::ADD:
    case Op::ALLREDUCE_SHARD:
    case Op::GELU:
    case Op::MUL:
      for (size_t k = 0; k < t_.inputs.size(); ++k) same_numel(kShapeElementwise, k);
      return;
    case Op::SOFTMAX:
      return softmax();
    case Op::DEQUANT:
      return dequant();
    case Op::KV_APPEND:
      return kv_append();
    case Op::SAMPLE_ARGMAX:
      return argmax();
    case Op::ATTENTION_COMBINE:
      return combine();
  }
}

}  // namespace

void check_task_shapes(Context& c, size_t id, const ir::ParamTable& pt, bool refs_clean) {
  const ir::Task& t = c.p.tasks[id];
  check_ranges(c, id, pt);
  if (refs_clean) return TaskShapes(c, id, pt).run();  // the guards below hold
  const ir::OpSpec& spec = ir::op_spec(t.op);
  if (!spec.inputs_ok(static_cast<int64_t>(t.inputs.size()))) return;
  if (!spec.outputs_ok(static_cast<int64_t>(t.outputs.size()))) return;
  for (int64_t b : t.inputs)
    if (!c.buffer_ok(b)) return;
  for (int64_t b : t.outputs)
    if (!c.buffer_ok(b)) return;
  TaskShapes(c, id, pt).run();
}

}  // namespace amk::validate
