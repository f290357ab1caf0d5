#include "lower/tile.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

namespace amk::lower {
namespace {

using ir::BufferKind;
using ir::Op;
using ir::ParamValue;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

struct Tiler {
  Plan& p;
  const ModelSpec& m;
  const int64_t B;
  const int64_t d;  // bytes per element for estimates (AMK: max(1, bits // 8))
  std::map<std::string, int64_t, std::less<>> buf;

  explicit Tiler(Plan& plan)
      : p(plan),
        m(*plan.model),
        B(plan.opt.batch),
        d(std::max<int64_t>(1, ir::dtype_bits(plan.opt.dtype) / 8)) {}

  int64_t buffer(const std::string& name, BufferKind kind, ir::DType dt, std::vector<int64_t> shape,
                 bool weight = false) {
    if (auto it = buf.find(name); it != buf.end()) return it->second;
    const int64_t id =
        p.program.add_buffer(name, kind, dt, std::move(shape), ir::MemSpace::HBM,
                             weight ? std::optional<std::string>(name) : std::nullopt);
    buf.emplace(name, id);
    return id;
  }
  int64_t act(const std::string& name, std::vector<int64_t> shape) {
    // AMK: every non-IO buffer gets the lowering dtype; the logits output stays F32.
    const bool io = name == "logits";
    return buffer(name, io ? BufferKind::IO_OUTPUT : BufferKind::ACTIVATION,
                  io ? ir::DType::F32 : p.opt.dtype, std::move(shape));
  }
  int64_t weight(const Node& n) {
    return buffer(n.weight, BufferKind::WEIGHT, p.opt.dtype, n.weight_shape, true);
  }
  int64_t id(const std::string& name) const { return buf.find(name)->second; }

  PlanTask& task(Op op, std::vector<int64_t> in, std::vector<int64_t> out, std::string label,
                 int64_t group, int64_t node, int64_t bytes, int64_t flops) {
    PlanTask pt;
    pt.task.op = op;
    pt.task.inputs = std::move(in);
    pt.task.outputs = std::move(out);
    pt.task.label = std::move(label);
    pt.task.est_bytes = bytes;
    pt.task.est_flops = flops;
    pt.group = group;
    pt.node = node;
    pt.task.params.reserve(7);
    p.tasks.push_back(std::move(pt));
    return p.tasks.back();
  }
  static void param(PlanTask& t, const char* key, ParamValue v) {
    t.task.params.push_back({key, v});
  }

  int64_t tile_width(int64_t N) const {
    if (p.opt.reference) return N;
    const Knobs& k = p.knobs;
    int64_t n = k.n_tile ? std::clamp<int64_t>(*k.n_tile, 1, N)
                         : std::min<int64_t>(std::max<int64_t>(16, k.base_width.value_or(32)), N);
    if (ceil_div(N, n) > 64) n = ceil_div(N, 64);
    return n;
  }

  void linear(const Node& n, int64_t ni) {
    const int64_t N = n.weight_shape[0], K = n.weight_shape[1];
    const int64_t x = id(n.inputs[0]);
    const int64_t out = act(n.output, {B, N});
    // Tied lm_head reads the embedding table, which stays unquantised.
    const bool quant = p.opt.quant != Quant::None && n.weight != global_weight_key(m, "embed");
    std::vector<int64_t> w_in;
    int64_t bits = 0, group = 0, n_groups = 0;
    if (quant) {
      bits = p.opt.quant == Quant::Int8 ? 8 : 4;
      group = std::min(p.opt.quant_group, K);
      n_groups = ceil_div(K, group);
      const int64_t qw = buffer(n.weight + ".qweight", BufferKind::WEIGHT,
                                bits == 8 ? ir::DType::I8 : ir::DType::U8,
                                {N, bits == 8 ? K : ceil_div(K, 2)}, true);
      const int64_t sc =
          buffer(n.weight + ".scales", BufferKind::WEIGHT, ir::DType::F32, {N, n_groups}, true);
      w_in = {qw, sc};
    } else {
      w_in = {weight(n)};
    }
    const int64_t nt = tile_width(N), tiles = ceil_div(N, nt);
    const int64_t g =
        p.add_group(n.name, B > 1 ? fmt::format("{} ({} tiles, M={})", n.name, tiles, B)
                                  : fmt::format("{} ({} tiles)", n.name, tiles));
    for (int64_t i = 0; i < tiles; ++i) {
      const int64_t off = i * nt, w = std::min(nt, N - off);
      std::vector<int64_t> in{x};
      in.insert(in.end(), w_in.begin(), w_in.end());
      const int64_t bytes = quant ? (ceil_div(K * bits, 8) + 2 * n_groups) * w : K * d * w;
      PlanTask& t = task(B > 1 ? Op::GEMM_TILE : Op::GEMV_TILE, std::move(in), {out},
                         fmt::format("{}[t{}]", n.name, i), g, ni, bytes, 2 * K * w * B);
      if (B > 1) param(t, "M_tile", ParamValue::of_int(B));
      param(t, "K", ParamValue::of_int(K));
      param(t, "N_tile", ParamValue::of_int(w));
      param(t, "n_off", ParamValue::of_int(off));
      if (quant) {
        param(t, "qdtype", ParamValue::of_int(bits == 8 ? 6 : 7));
        param(t, "group", ParamValue::of_int(group));
      }
      t.out_region = {
          static_cast<int>(p.program.buffers[static_cast<size_t>(out)].shape.size()) - 1, off,
          off + w};
    }
  }

  void attention(const Node& n, int64_t ni) {
    const int64_t hd = m.head_dim, kv_len = p.opt.pos + 1;
    const int64_t q = id(n.inputs[0]), kc = id(n.inputs[1]), vc = id(n.inputs[2]);
    const double scale = std::pow(static_cast<double>(hd), -0.5);
    auto common = [&](PlanTask& t) {
      param(t, "scale", ParamValue::of_float(scale));
      param(t, "n_heads", ParamValue::of_int(m.n_heads));
      param(t, "n_kv_heads", ParamValue::of_int(m.n_kv_heads));
    };
    int64_t parts = 1;
    if (B == 1 && !p.opt.reference) {
      std::optional<int64_t> want = p.knobs.n_partitions;
      if (!want && !p.opt.amk_compat && p.knobs.kv_block)
        want = ceil_div(kv_len, *p.knobs.kv_block);
      if (want && *want > 1)
        parts = std::min({int64_t{8}, p.target->num_workers(), *want, ceil_div(kv_len, 16)});
    }
    if (parts <= 1) {
      const int64_t out = act(n.output, {B, m.q_dim()});
      PlanTask& t = task(Op::ATTENTION_TILE, {q, kc, vc}, {out}, n.name, p.add_group(n.name), ni,
                         B * 2 * kv_len * m.n_kv_heads * hd * d, B * 4 * m.n_heads * hd * kv_len);
      param(t, "head_dim", ParamValue::of_int(hd));
      param(t, "kv_start", ParamValue::of_int(0));
      param(t, "kv_len", ParamValue::of_int(kv_len));
      common(t);
      return;
    }
    const int64_t chunk = ceil_div(kv_len, parts);
    std::vector<int64_t> part_bufs;
    for (int64_t s = 0; s < parts; ++s) {
      const int64_t start = s * chunk, len = std::min(chunk, kv_len - start);
      if (len <= 0) break;
      const int64_t pb = act(fmt::format("{}.part{}", n.output, s), {m.n_heads, hd + 2});
      part_bufs.push_back(pb);
      const std::string label = fmt::format("{}.s{}", n.name, s);
      PlanTask& t = task(Op::ATTENTION_TILE, {q, kc, vc}, {pb}, label, p.add_group(label), ni,
                         2 * len * m.n_kv_heads * hd * d, 4 * m.n_heads * hd * len);
      param(t, "head_dim", ParamValue::of_int(hd));
      param(t, "kv_start", ParamValue::of_int(start));
      param(t, "kv_len", ParamValue::of_int(len));
      common(t);
      param(t, "flags", ParamValue::of_int(2));
      t.task.sm = s % p.target->num_workers();
    }
    const int64_t out = act(n.output, {B, m.q_dim()});
    const auto np = static_cast<int64_t>(part_bufs.size());
    PlanTask& c = task(Op::ATTENTION_COMBINE, part_bufs, {out}, n.name + ".comb",
                       p.add_group(n.name), ni, np * m.n_heads * (hd + 2) * d, np * m.n_heads * hd);
    param(c, "head_dim", ParamValue::of_int(hd));
    param(c, "n_heads", ParamValue::of_int(m.n_heads));
    param(c, "n_kv_heads", ParamValue::of_int(m.n_kv_heads));
  }

  void node(const Node& n, int64_t ni) {
    const int64_t H = m.hidden, hd = m.head_dim;
    switch (n.op) {
      case NodeOp::Embed: {
        const int64_t out = act(n.output, {B, H});
        PlanTask& t = task(Op::EMBED, {id("token_id"), weight(n)}, {out}, n.name,
                           p.add_group(n.name), ni, B * H * d, 0);
        param(t, "hidden", ParamValue::of_int(H));
        return;
      }
      case NodeOp::RmsNorm: {
        const int64_t out = act(n.output, {B, H});
        PlanTask& t = task(Op::RMSNORM, {id(n.inputs[0]), weight(n)}, {out}, n.name,
                           p.add_group(n.name), ni, B * H * d, 4 * B * H);
        param(t, "eps", ParamValue::of_float(m.rms_eps));
        param(t, "hidden", ParamValue::of_int(H));
        return;
      }
      case NodeOp::Linear:
        return linear(n, ni);
      case NodeOp::Rope: {
        std::vector<int64_t> shape{B, n.heads, hd};
        if (B == 1 && n.role == "rope_q") shape = {n.heads, hd};  // AMK: q as [n_heads, hd]
        const int64_t hs = act(n.output + ".hs", shape);
        const std::string rl = n.name + ".reshape";
        PlanTask& r = task(Op::EMBED, {id("reshape_id0"), id(n.inputs[0])}, {hs}, rl,
                           p.add_group(rl), ni, 0, 0);
        param(r, "hidden", ParamValue::of_int(hd));
        const int64_t out = act(n.output, shape);
        PlanTask& t = task(Op::ROPE, {hs, id("pos")}, {out}, n.name, p.add_group(n.name), ni, 0,
                           6 * n.heads * hd);
        param(t, "head_dim", ParamValue::of_int(hd));
        param(t, "theta", ParamValue::of_float(m.rope_theta));
        return;
      }
      case NodeOp::KvAppend: {
        std::vector<int64_t> shape{m.max_seq, m.n_kv_heads, hd};
        if (B > 1) shape.insert(shape.begin(), B);
        const int64_t cache = buffer(n.output, BufferKind::KV_CACHE, p.opt.dtype, shape);
        PlanTask& t = task(Op::KV_APPEND, {id(n.inputs[0]), cache}, {cache}, n.name,
                           p.add_group(n.name), ni, B * m.n_kv_heads * hd * d, 0);
        param(t, "pos", ParamValue::of_int(p.opt.pos));
        return;
      }
      case NodeOp::Attention:
        return attention(n, ni);
      case NodeOp::Swiglu: {
        const int64_t I = m.intermediate;
        const int64_t out = act(n.output, {B, I});
        task(Op::SILU_MUL, {id(n.inputs[0]), id(n.inputs[1])}, {out}, n.name, p.add_group(n.name),
             ni, B * I * d, 3 * B * I);
        return;
      }
      case NodeOp::Add: {
        const int64_t out = act(n.output, {B, H});
        task(Op::ADD, {id(n.inputs[0]), id(n.inputs[1])}, {out}, n.name, p.add_group(n.name), ni,
             B * H * d, B * H);
        return;
      }
    }
  }
};

}  // namespace

void tile(Plan& p) {
  Tiler t(p);
  size_t count = 0;  // exact task count up front: PlanTasks are moved once, never reallocated
  for (const Node& n : p.graph)
    count += n.op == NodeOp::Linear
                 ? static_cast<size_t>(ceil_div(n.weight_shape[0], t.tile_width(n.weight_shape[0])))
             : n.op == NodeOp::Rope      ? 2
             : n.op == NodeOp::Attention ? 9
                                         : 1;
  p.tasks.reserve(count);
  for (const char* io : {"token_id", "pos", "reshape_id0"})
    t.buffer(io, BufferKind::IO_INPUT, ir::DType::I32, {p.opt.batch});
  for (size_t i = 0; i < p.graph.size(); ++i) t.node(p.graph[i], static_cast<int64_t>(i));
}

}  // namespace amk::lower
