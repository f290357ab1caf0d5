#include "lower/tile.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "ir/assert.h"

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
  size_t used = 0;           // tasks written
  PlanTask* open = nullptr;  // the task being written
  size_t params_used = 0;    // its params so far
  std::string scratch;       // the labels formatted here

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

  // The next task, written over the element a warm lowering left there (its strings and vectors
  // keep their storage).
  PlanTask& task(Op op, std::initializer_list<int64_t> in, std::initializer_list<int64_t> out,
                 std::string_view label, int64_t group, int64_t node, int64_t bytes,
                 int64_t flops) {
    close();
    PlanTask& pt = p.tasks[used++];
    open = &pt;
    params_used = 0;
    ir::Task& t = pt.task;
    t.op = op;
    t.inputs.assign(in);
    t.outputs.assign(out);
    t.out_counter = 0;
    t.waits.clear();
    t.sm.reset();
    t.est_bytes = bytes;
    t.est_flops = flops;
    t.label.assign(label);
    if (!t.extra.is_null()) t.extra = ir::JsonValue();
    pt.group = group;
    pt.node = node;
    pt.out_region = {};
    return pt;
  }
  // "NAME[tI]", the label of tile I (formatted by hand: this is most tasks).
  std::string_view tile_label(const std::string& name, int64_t i) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, i).ptr;
    scratch.assign(name);
    scratch += "[t";
    scratch.append(digits, end);
    scratch += ']';
    return scratch;
  }
  // `fmt` formatted into a scratch string (no allocation once it has grown).
  template <class... Args>
  std::string_view label(fmt::format_string<Args...> f, Args&&... args) {
    scratch.clear();
    fmt::format_to(std::back_inserter(scratch), f, std::forward<Args>(args)...);
    return scratch;
  }
  // Sets the next param of the task being written (over the one a warm lowering left there).
  void param(PlanTask& t, std::string_view key, ParamValue::Kind kind, int64_t i, double f) {
    AMK_ASSERT(&t == open, "a param of a task other than the one being written");
    std::vector<ir::Param>& ps = t.task.params;
    if (params_used == ps.size()) ps.emplace_back();
    ir::Param& q = ps[params_used++];
    if (q.key != key) q.key.assign(key);
    q.value.kind = kind;
    if (kind == ParamValue::Kind::Float)
      q.value.f = f;
    else
      q.value.i = i;
    if (!q.value.other.is_null()) q.value.other = ir::JsonValue();
  }
  void param_int(PlanTask& t, std::string_view key, int64_t v) {
    param(t, key, ParamValue::Kind::Int, v, 0.0);
  }
  void param_float(PlanTask& t, std::string_view key, double v) {
    param(t, key, ParamValue::Kind::Float, 0, v);
  }
  // Ends the task being written: drops params an earlier run left beyond its own.
  void close() {
    if (open) open->task.params.resize(params_used);
    open = nullptr;
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
      // Int4 is two nibbles a byte, each row on whole bytes. --amk-compat declares it as AMK's
      // lowering does, I4 at the logical [N, K]; amk's own lowering as the bytes they are, U8
      // [N, ceil(K/2)]: AMK's CUDA VM sizes the L2 hint (pipelining_depth > 0) of an I4 weight
      // as 4-byte elements, 8x the tile's bytes from 8x its offset (measured 12x slower).
      const bool i4 = bits == 4 && p.opt.amk_compat;
      const int64_t qw = buffer(n.weight + ".qweight", BufferKind::WEIGHT,
                                bits == 8 ? ir::DType::I8
                                : i4      ? ir::DType::I4
                                          : ir::DType::U8,
                                {N, bits == 4 && !i4 ? ceil_div(K, 2) : K}, true);
      const int64_t sc =
          buffer(n.weight + ".scales", BufferKind::WEIGHT, ir::DType::F16, {N, n_groups}, true);
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
      const int64_t bytes = quant ? (ceil_div(K * bits, 8) + 2 * n_groups) * w : K * d * w;
      PlanTask& t = task(B > 1 ? Op::GEMM_TILE : Op::GEMV_TILE, {x}, {out}, tile_label(n.name, i),
                         g, ni, bytes, 2 * K * w * B);
      // Most tasks are these tiles: their lists get their exact sizes at once (a fresh
      // structure's memory is dear).
      t.task.inputs.reserve(1 + w_in.size());
      t.task.inputs.insert(t.task.inputs.end(), w_in.begin(), w_in.end());
      t.task.params.reserve((B > 1 ? 4 : 3) + (quant ? 2 : 0));
      if (B > 1) param_int(t, "M_tile", B);
      param_int(t, "K", K);
      param_int(t, "N_tile", w);
      param_int(t, "n_off", off);
      if (quant) {
        param_int(t, "qdtype", bits == 8 ? 6 : 7);
        param_int(t, "group", group);
      }
      t.out_region = {
          static_cast<int>(p.program.buffers[static_cast<size_t>(out)].shape.size()) - 1, off,
          off + w};
    }
  }

  // The KV partitions of an attention (1: not split).
  int64_t partitions() const {
    const int64_t kv_len = p.opt.pos + 1;
    if (B != 1 || p.opt.reference) return 1;
    std::optional<int64_t> want = p.knobs.n_partitions;
    if (!want && !p.opt.amk_compat && p.knobs.kv_block) want = ceil_div(kv_len, *p.knobs.kv_block);
    return want && *want > 1
               ? std::min({int64_t{8}, p.target->num_workers(), *want, ceil_div(kv_len, 16)})
               : 1;
  }
  // The tasks of an attention: one, or its non-empty partitions and their combine.
  int64_t attention_tasks() const {
    const int64_t parts = partitions(), kv_len = p.opt.pos + 1;
    return parts <= 1 ? 1 : ceil_div(kv_len, ceil_div(kv_len, parts)) + 1;
  }

  void attention(const Node& n, int64_t ni) {
    const int64_t hd = m.head_dim, kv_len = p.opt.pos + 1;
    const int64_t q = id(n.inputs[0]), kc = id(n.inputs[1]), vc = id(n.inputs[2]);
    const double scale = std::pow(static_cast<double>(hd), -0.5);
    auto common = [&](PlanTask& t) {
      param_float(t, "scale", scale);
      param_int(t, "n_heads", m.n_heads);
      param_int(t, "n_kv_heads", m.n_kv_heads);
    };
    const int64_t parts = partitions();
    if (parts <= 1) {
      const int64_t out = act(n.output, {B, m.q_dim()});
      PlanTask& t = task(Op::ATTENTION_TILE, {q, kc, vc}, {out}, n.name, p.add_group(n.name), ni,
                         B * 2 * kv_len * m.n_kv_heads * hd * d, B * 4 * m.n_heads * hd * kv_len);
      param_int(t, "head_dim", hd);
      param_int(t, "kv_start", 0);
      param_int(t, "kv_len", kv_len);
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
      const int64_t g = p.add_group(fmt::format("{}.s{}", n.name, s));
      PlanTask& t = task(Op::ATTENTION_TILE, {q, kc, vc}, {pb}, p.group_names.back(), g, ni,
                         2 * len * m.n_kv_heads * hd * d, 4 * m.n_heads * hd * len);
      param_int(t, "head_dim", hd);
      param_int(t, "kv_start", start);
      param_int(t, "kv_len", len);
      common(t);
      param_int(t, "flags", 2);
      t.task.sm = s % p.target->num_workers();
    }
    const int64_t out = act(n.output, {B, m.q_dim()});
    const auto np = static_cast<int64_t>(part_bufs.size());
    PlanTask& c = task(Op::ATTENTION_COMBINE, {}, {out}, label("{}.comb", n.name),
                       p.add_group(n.name), ni, np * m.n_heads * (hd + 2) * d, np * m.n_heads * hd);
    c.task.inputs.assign(part_bufs.begin(), part_bufs.end());
    param_int(c, "head_dim", hd);
    param_int(c, "n_heads", m.n_heads);
    param_int(c, "n_kv_heads", m.n_kv_heads);
  }

  void node(const Node& n, int64_t ni) {
    const int64_t H = m.hidden, hd = m.head_dim;
    switch (n.op) {
      case NodeOp::Embed: {
        const int64_t out = act(n.output, {B, H});
        PlanTask& t = task(Op::EMBED, {id("token_id"), weight(n)}, {out}, n.name,
                           p.add_group(n.name), ni, B * H * d, 0);
        param_int(t, "hidden", H);
        return;
      }
      case NodeOp::RmsNorm: {
        const int64_t out = act(n.output, {B, H});
        PlanTask& t = task(Op::RMSNORM, {id(n.inputs[0]), weight(n)}, {out}, n.name,
                           p.add_group(n.name), ni, B * H * d, 4 * B * H);
        param_float(t, "eps", m.rms_eps);
        param_int(t, "hidden", H);
        return;
      }
      case NodeOp::Linear:
        return linear(n, ni);
      case NodeOp::Rope: {
        std::vector<int64_t> shape{B, n.heads, hd};
        if (B == 1 && n.role == "rope_q") shape = {n.heads, hd};  // AMK: q as [n_heads, hd]
        const int64_t hs = act(n.output + ".hs", shape);
        const int64_t rg = p.add_group(n.name + ".reshape");
        PlanTask& r = task(Op::EMBED, {id("reshape_id0"), id(n.inputs[0])}, {hs},
                           p.group_names.back(), rg, ni, 0, 0);
        param_int(r, "hidden", hd);
        const int64_t out = act(n.output, shape);
        PlanTask& t = task(Op::ROPE, {hs, id("pos")}, {out}, n.name, p.add_group(n.name), ni, 0,
                           6 * n.heads * hd);
        param_int(t, "head_dim", hd);
        param_float(t, "theta", m.rope_theta);
        return;
      }
      case NodeOp::KvAppend: {
        std::vector<int64_t> shape{m.max_seq, m.n_kv_heads, hd};
        if (B > 1) shape.insert(shape.begin(), B);
        const int64_t cache = buffer(n.output, BufferKind::KV_CACHE, p.opt.dtype, shape);
        PlanTask& t = task(Op::KV_APPEND, {id(n.inputs[0]), cache}, {cache}, n.name,
                           p.add_group(n.name), ni, B * m.n_kv_heads * hd * d, 0);
        param_int(t, "pos", p.opt.pos);
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

std::string tiling_key(Plan& p) {
  Tiler t(p);
  std::string key;
  std::vector<int64_t> widths_of;  // the distinct output widths of the linear nodes, so far
  for (const Node& n : p.graph) {
    if (n.op != NodeOp::Linear) continue;
    const int64_t N = n.weight_shape[0];
    if (std::find(widths_of.begin(), widths_of.end(), N) != widths_of.end()) continue;
    widths_of.push_back(N);
    key += fmt::format("{}:{},", N, t.tile_width(N));
  }
  key += fmt::format("p{}", t.partitions());
  return key;
}

void tile(Plan& p) {
  Tiler t(p);
  size_t count = 0;  // the exact task count up front: the tasks are written in place
  for (const Node& n : p.graph)
    count += n.op == NodeOp::Linear
                 ? static_cast<size_t>(ceil_div(n.weight_shape[0], t.tile_width(n.weight_shape[0])))
             : n.op == NodeOp::Rope      ? 2
             : n.op == NodeOp::Attention ? static_cast<size_t>(t.attention_tasks())
                                         : 1;
  resize_reusing(p.tasks, count, p.spare_plan);
  for (const char* io : {"token_id", "pos", "reshape_id0"})
    t.buffer(io, BufferKind::IO_INPUT, ir::DType::I32, {p.opt.batch});
  for (size_t i = 0; i < p.graph.size(); ++i) t.node(p.graph[i], static_cast<int64_t>(i));
  t.close();
  AMK_ASSERT(t.used == count, "tile wrote another number of tasks than it counted");
}

}  // namespace amk::lower
