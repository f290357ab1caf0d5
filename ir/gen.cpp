#include "ir/gen.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/rng.h"

namespace amk::ir {
namespace {

// A tensor being produced: its buffer and the counter its producers share.
struct Tensor {
  int64_t buf = -1;
  int64_t counter = -1;
  int64_t producers = 0;
};

class Builder {
 public:
  Program p;
  // Buffers that may share a page carry the same key (assigned so that sharing is valid).
  std::vector<std::pair<int64_t, int64_t>> page_key;

  int64_t io(std::string name, DType dt, std::vector<int64_t> shape) {
    return p.add_buffer(std::move(name), BufferKind::IO_INPUT, dt, std::move(shape));
  }
  int64_t weight(std::string name, std::vector<int64_t> shape) {
    std::string src = name;
    return p.add_buffer(std::move(name), BufferKind::WEIGHT, DType::F32, std::move(shape),
                        MemSpace::HBM, std::move(src));
  }
  Tensor tensor(std::string name, std::vector<int64_t> shape,
                BufferKind kind = BufferKind::ACTIVATION) {
    Tensor t;
    t.buf = p.add_buffer(std::move(name), kind, DType::F32, std::move(shape));
    return t;
  }
  // Emits a task reading `reads` (waiting on each produced one with an all-join) and writing `out`.
  int64_t task(Op op, std::initializer_list<const Tensor*> reads,
               std::initializer_list<int64_t> extra_inputs, Tensor& out, std::vector<Param> params,
               std::string label, bool input_order_extra_first = false) {
    Task t;
    t.op = op;
    if (input_order_extra_first)
      for (int64_t b : extra_inputs) t.inputs.push_back(b);
    for (const Tensor* r : reads) {
      t.inputs.push_back(r->buf);
      if (r->counter >= 0 && std::none_of(t.waits.begin(), t.waits.end(),
                                          [&](const Wait& w) { return w.counter == r->counter; }))
        t.waits.push_back({r->counter, r->producers, {}});
    }
    if (!input_order_extra_first)
      for (int64_t b : extra_inputs) t.inputs.push_back(b);
    if (out.counter < 0) out.counter = p.add_counter(p.buffers[out.buf].name);
    t.outputs.push_back(out.buf);
    t.out_counter = out.counter;
    ++out.producers;
    t.params = std::move(params);
    t.label = std::move(label);
    return p.add_task(std::move(t));
  }
  // A tiled projection out[1, n] = x[1, k] @ W[n, k].T in tiles of `tile` columns.
  Tensor linear(const Tensor& x, int64_t k, int64_t n, int64_t tile, const std::string& name) {
    int64_t w = weight(name + ".weight", {n, k});
    Tensor out = tensor(name, {1, n});
    for (int64_t off = 0, i = 0; off < n; off += tile, ++i) {
      int64_t nt = std::min(tile, n - off);
      task(Op::GEMV_TILE, {&x}, {w}, out,
           {{"K", ParamValue::of_int(k)},
            {"N_tile", ParamValue::of_int(nt)},
            {"n_off", ParamValue::of_int(off)}},
           fmt::format("{}[t{}]", name, i));
      p.tasks.back().est_bytes = k * nt * 4;
      p.tasks.back().est_flops = 2 * k * nt;
    }
    return out;
  }
};

ParamValue I(int64_t v) {
  return ParamValue::of_int(v);
}
ParamValue F(double v) {
  return ParamValue::of_float(v);
}

// Llama-like decoder layers at toy width: ~44 tasks per layer.
constexpr int64_t kH = 64, kHeads = 4, kKvHeads = 2, kHd = 16, kI = 128, kVocab = 128, kSeq = 16,
                  kTile = 16;

struct LlamaIds {
  std::vector<int64_t> tile_tasks, attention_tasks, kv_append_tasks;
};

void gen_llama(Builder& b, uint64_t want, LlamaIds& ids) {
  int64_t tok = b.io("token_id", DType::I32, {1});
  int64_t pos = b.io("pos", DType::I32, {1});
  int64_t rid = b.io("reshape_id0", DType::I32, {1});
  Tensor h = b.tensor("h0", {1, kH});
  int64_t emb = b.weight("embed.weight", {kVocab, kH});
  b.task(Op::EMBED, {}, {tok, emb}, h, {{"hidden", I(kH)}}, "embed");
  constexpr int64_t per_layer = 12 + 4 + 2 + 2 + 4 + 8 + 8 + 4;
  constexpr int64_t fixed = 2 + kVocab / kTile;
  int64_t layers =
      std::max<int64_t>(1, (static_cast<int64_t>(want) - fixed + per_layer / 2) / per_layer);
  std::vector<Param> norm = {{"eps", F(1e-6)}, {"hidden", I(kH)}};
  // Pages: every task of layer L is an ancestor of L's mlp_residual, which precedes every writer
  // in later layers, so a layer's activations can share one page per slot with every other layer.
  // h_mlp is also read by the next layer, so it alternates between two pages (h0 acts as layer -1).
  b.page_key.emplace_back(h.buf, 1001);
  for (int64_t L = 0; L < layers; ++L) {
    size_t first_buffer = b.p.buffers.size();
    std::string pre = fmt::format("L{}.", L);
    std::string wpre = fmt::format("layers.{}.", L);
    Tensor an = b.tensor(pre + "an", {1, kH});
    int64_t w_in = b.weight(wpre + "input_norm", {kH});
    b.task(Op::RMSNORM, {&h}, {w_in}, an, norm, pre + "input_norm");
    size_t t0 = b.p.tasks.size();
    Tensor q = b.linear(an, kH, kHeads * kHd, kTile, wpre + "attn.q_proj");
    Tensor k = b.linear(an, kH, kKvHeads * kHd, kTile, wpre + "attn.k_proj");
    Tensor v = b.linear(an, kH, kKvHeads * kHd, kTile, wpre + "attn.v_proj");
    for (size_t t = t0; t < b.p.tasks.size(); ++t)
      ids.tile_tasks.push_back(static_cast<int64_t>(t));
    Tensor qhs = b.tensor(pre + "qr.hs", {kHeads, kHd});
    b.task(Op::EMBED, {&q}, {rid}, qhs, {{"hidden", I(kHd)}}, pre + "rope_q.reshape", true);
    Tensor qr = b.tensor(pre + "qr", {kHeads, kHd});
    b.task(Op::ROPE, {&qhs}, {pos}, qr, {{"head_dim", I(kHd)}, {"theta", F(10000.0)}},
           pre + "rope_q");
    Tensor khs = b.tensor(pre + "kr.hs", {1, kKvHeads, kHd});
    b.task(Op::EMBED, {&k}, {rid}, khs, {{"hidden", I(kHd)}}, pre + "rope_k.reshape", true);
    Tensor kr = b.tensor(pre + "kr", {1, kKvHeads, kHd});
    b.task(Op::ROPE, {&khs}, {pos}, kr, {{"head_dim", I(kHd)}, {"theta", F(10000.0)}},
           pre + "rope_k");
    Tensor kc = b.tensor(pre + "kcache", {kSeq, kKvHeads, kHd}, BufferKind::KV_CACHE);
    Tensor vc = b.tensor(pre + "vcache", {kSeq, kKvHeads, kHd}, BufferKind::KV_CACHE);
    ids.kv_append_tasks.push_back(
        b.task(Op::KV_APPEND, {&kr}, {kc.buf}, kc, {{"pos", I(0)}}, pre + "k_append"));
    ids.kv_append_tasks.push_back(
        b.task(Op::KV_APPEND, {&v}, {vc.buf}, vc, {{"pos", I(0)}}, pre + "v_append"));
    Tensor attn = b.tensor(pre + "attn", {1, kHeads * kHd});
    ids.attention_tasks.push_back(b.task(Op::ATTENTION_TILE, {&qr, &kc, &vc}, {}, attn,
                                         {{"head_dim", I(kHd)},
                                          {"kv_start", I(0)},
                                          {"kv_len", I(1)},
                                          {"scale", F(0.25)},
                                          {"n_heads", I(kHeads)},
                                          {"n_kv_heads", I(kKvHeads)}},
                                         pre + "attention"));
    t0 = b.p.tasks.size();
    Tensor o = b.linear(attn, kHeads * kHd, kH, kTile, wpre + "attn.o_proj");
    Tensor ha = b.tensor(pre + "h_attn", {1, kH});
    b.task(Op::ADD, {&h, &o}, {}, ha, {}, pre + "attn_residual");
    Tensor mn = b.tensor(pre + "mn", {1, kH});
    int64_t w_post = b.weight(wpre + "post_norm", {kH});
    b.task(Op::RMSNORM, {&ha}, {w_post}, mn, norm, pre + "post_norm");
    Tensor gate = b.linear(mn, kH, kI, kTile, wpre + "mlp.gate_proj");
    Tensor up = b.linear(mn, kH, kI, kTile, wpre + "mlp.up_proj");
    Tensor act = b.tensor(pre + "act", {1, kI});
    b.task(Op::SILU_MUL, {&gate, &up}, {}, act, {}, pre + "swiglu");
    Tensor d = b.linear(act, kI, kH, kTile, wpre + "mlp.down_proj");
    for (size_t t = t0; t < b.p.tasks.size(); ++t)
      if (b.p.tasks[t].op == Op::GEMV_TILE) ids.tile_tasks.push_back(static_cast<int64_t>(t));
    Tensor hm = b.tensor(pre + "h_mlp", {1, kH});
    b.task(Op::ADD, {&ha, &d}, {}, hm, {}, pre + "mlp_residual");
    int64_t slot = 0;
    for (size_t buf = first_buffer; buf < b.p.buffers.size(); ++buf)
      if (b.p.buffers[buf].kind == BufferKind::ACTIVATION && static_cast<int64_t>(buf) != hm.buf)
        b.page_key.emplace_back(static_cast<int64_t>(buf), slot++);
    b.page_key.emplace_back(hm.buf, 1000 + (L & 1));
    h = hm;
  }
  Tensor hf = b.tensor("hf", {1, kH});
  b.page_key.emplace_back(hf.buf, 2000);
  int64_t wf = b.weight("final_norm", {kH});
  b.task(Op::RMSNORM, {&h}, {wf}, hf, norm, "final_norm");
  int64_t wl = b.weight("lm_head.weight", {kVocab, kH});
  Tensor logits;
  logits.buf = b.p.add_buffer("logits", BufferKind::IO_OUTPUT, DType::F32, {1, kVocab});
  for (int64_t off = 0, i = 0; off < kVocab; off += kTile, ++i)
    b.task(Op::GEMV_TILE, {&hf}, {wl}, logits,
           {{"K", I(kH)}, {"N_tile", I(kTile)}, {"n_off", I(off)}}, fmt::format("lm_head[t{}]", i));
  b.p.meta.mut()["model"] = "amk-gen-llama";
  b.p.meta.mut()["n_layers"] = layers;
}

// A random DAG of elementwise tasks on [1, W] activations, with tile joins and reads that are only
// ordered transitively (through the producer of a producer).
constexpr int64_t kW = 16;

void gen_mesh(Builder& b, uint64_t want, Rng& rng, std::vector<int64_t>& tile_tasks) {
  int64_t x0 = b.io("x", DType::F32, {1, kW});
  std::vector<Tensor> made;
  std::vector<std::vector<size_t>> parents;  // producer-tensor indices each tensor was built from
  auto pick = [&](size_t window) {
    size_t lo = made.size() > window ? made.size() - window : 0;
    return lo + rng.below(made.size() - lo);
  };
  Tensor seed = b.tensor("m0", {1, kW});
  b.task(Op::COPY, {}, {x0}, seed, {}, "m0");
  made.push_back(seed);
  parents.emplace_back();
  while (b.p.tasks.size() + 2 < want) {
    std::string name = fmt::format("m{}", made.size());
    if (rng.chance(8) && b.p.tasks.size() + 6 < want) {
      // A join: 4 GEMV tiles of one output under one counter, read by an all-join consumer.
      size_t a = pick(64);
      int64_t w = b.weight(name + ".weight", {4 * kW, kW});
      Tensor out = b.tensor(name, {1, 4 * kW});
      for (int64_t i = 0; i < 4; ++i) {
        tile_tasks.push_back(b.task(Op::GEMV_TILE, {&made[a]}, {w}, out,
                                    {{"K", I(kW)}, {"N_tile", I(kW)}, {"n_off", I(i * kW)}},
                                    fmt::format("{}[t{}]", name, i)));
      }
      Tensor red = b.tensor(name + ".sum", {1, kW});
      Tensor lo = b.tensor(name + ".lo", {1, kW});  // fold the 4W-wide join back to width W
      b.task(Op::GEMV_TILE, {&out}, {b.weight(name + ".fold", {kW, 4 * kW})}, lo,
             {{"K", I(4 * kW)}, {"N_tile", I(kW)}, {"n_off", I(0)}}, name + ".fold");
      b.task(Op::ADD, {&lo, &made[a]}, {}, red, {}, name + ".sum");
      made.push_back(red);
      parents.push_back({a});
      continue;
    }
    size_t a = pick(48);
    Tensor out = b.tensor(name, {1, kW});
    if (rng.chance(30) && !parents[a].empty()) {
      // Read a grandparent through the parent only: ordered transitively, not by a direct wait.
      size_t g = parents[a][rng.below(parents[a].size())];
      b.task(Op::ADD, {&made[a]}, {}, out, {}, name);
      b.p.tasks.back().inputs.push_back(made[g].buf);
      parents.push_back({a});
    } else if (rng.chance(50)) {
      size_t c = pick(48);
      b.task(rng.chance(50) ? Op::ADD : Op::MUL, {&made[a], &made[c]}, {}, out, {}, name);
      parents.push_back({a, c});
    } else {
      b.task(Op::MUL, {&made[a]}, {}, out, {{"scale", F(0.5)}}, name);
      parents.push_back({a});
    }
    made.push_back(out);
  }
  Tensor y;
  y.buf = b.p.add_buffer("y", BufferKind::IO_OUTPUT, DType::F32, {1, kW});
  b.task(Op::COPY, {&made.back()}, {}, y, {}, "y");
  b.p.meta.mut()["model"] = "amk-gen-mesh";
}

void gen_chain(Builder& b, uint64_t want) {
  int64_t x0 = b.io("x", DType::F32, {1, kW});
  Tensor prev;
  prev.buf = x0;
  for (uint64_t i = 0; i + 1 < std::max<uint64_t>(want, 2); ++i) {
    Tensor out = b.tensor(fmt::format("c{}", i), {1, kW});
    b.task(Op::COPY, {&prev}, {}, out, {}, fmt::format("c{}", i));
    b.page_key.emplace_back(out.buf,
                            static_cast<int64_t>(i & 1));  // c[i] is dead once c[i+1] exists
    prev = out;
  }
  Tensor y;
  y.buf = b.p.add_buffer("y", BufferKind::IO_OUTPUT, DType::F32, {1, kW});
  b.task(Op::COPY, {&prev}, {}, y, {}, "y");
  b.p.meta.mut()["model"] = "amk-gen-chain";
}

void gen_fan(Builder& b, uint64_t want, std::vector<int64_t>& tile_tasks) {
  int64_t n = static_cast<int64_t>(std::max<uint64_t>(want, 3) - 2);
  int64_t x0 = b.io("x", DType::F32, {1, kW});
  Tensor root = b.tensor("root", {1, kW});
  b.task(Op::COPY, {}, {x0}, root, {}, "root");
  int64_t w = b.weight("fan.weight", {n, kW});
  Tensor wide = b.tensor("wide", {1, n});
  for (int64_t i = 0; i < n; ++i)
    tile_tasks.push_back(b.task(Op::GEMV_TILE, {&root}, {w}, wide,
                                {{"K", I(kW)}, {"N_tile", I(1)}, {"n_off", I(i)}},
                                fmt::format("fan[t{}]", i)));
  Tensor y;
  y.buf = b.p.add_buffer("y", BufferKind::IO_OUTPUT, DType::F32, {1, n});
  b.task(Op::COPY, {&wide}, {}, y, {}, "sink");
  b.p.meta.mut()["model"] = "amk-gen-fan";
}

// One page per page key (buffers without a key get a page of their own); live ranges in list order.
void add_pages(Program& p, const std::vector<std::pair<int64_t, int64_t>>& keys) {
  const size_t nb = p.buffers.size();
  std::vector<int64_t> first(nb, -1), last(nb, -1);
  for (size_t t = 0; t < p.tasks.size(); ++t) {
    auto touch = [&](int64_t b) {
      auto u = static_cast<size_t>(b);
      if (first[u] < 0) first[u] = static_cast<int64_t>(t);
      last[u] = static_cast<int64_t>(t);
    };
    for (int64_t b : p.tasks[t].inputs) touch(b);
    for (int64_t b : p.tasks[t].outputs) touch(b);
  }
  std::vector<int64_t> key(nb, -1);
  int64_t next_private = 1 << 30;
  for (auto [b, k] : keys) key[static_cast<size_t>(b)] = k;
  PageAllocation a;
  std::unordered_map<int64_t, int64_t> page_of_key;
  for (size_t b = 0; b < nb; ++b) {
    const Buffer& buf = p.buffers[b];
    if (buf.kind != BufferKind::ACTIVATION || first[b] < 0) continue;
    int64_t k = key[b] >= 0 ? key[b] : next_private++;
    auto it = page_of_key.find(k);
    int64_t page;
    if (it == page_of_key.end()) {
      page = static_cast<int64_t>(a.pages.size());
      page_of_key.emplace(k, page);
      Page pg;
      pg.space = MemSpace::GLOBAL_SCRATCH;
      pg.live_start = first[b];
      a.pages.push_back(pg);
    } else {
      page = it->second;
    }
    Page& pg = a.pages[static_cast<size_t>(page)];
    pg.nbytes = std::max(pg.nbytes, buf.nbytes());
    pg.live_start = std::min(pg.live_start, first[b]);
    pg.live_end = std::max(pg.live_end, last[b]);
    a.buffer_to_page.emplace_back(static_cast<int64_t>(b), page);
  }
  p.pages = std::move(a);
}

void make_nop(Program& p) {
  for (Task& t : p.tasks) {
    t.op = Op::NOP;
    t.inputs.clear();
    t.outputs.clear();
    t.params.clear();
    t.est_bytes = t.est_flops = 0;
  }
  p.buffers.clear();
  p.pages.reset();
}

// Makes a cycle: a task waits on the counter of a task that (transitively) waits on it. Returns
// the task, or -1 when no task has one that depends on it.
int64_t plant_cycle(Program& p, Rng& rng, std::string& note) {
  const size_t n = p.tasks.size();
  std::vector<std::vector<size_t>> waiters(p.counters.size());  // counter -> tasks waiting on it
  for (size_t t = 0; t < n; ++t)
    for (const Wait& w : p.tasks[t].waits)
      if (w.counter >= 0 && static_cast<size_t>(w.counter) < waiters.size())
        waiters[static_cast<size_t>(w.counter)].push_back(t);
  const size_t start = rng.below(n);
  std::vector<uint8_t> seen(n);
  for (size_t k = 0; k < n; ++k) {
    const size_t early = (start + k) % n;
    std::vector<size_t> after;  // the tasks that depend on `early`, breadth first
    std::fill(seen.begin(), seen.end(), 0);
    for (size_t at = 0, from = early;; from = after[at++]) {
      const auto c = static_cast<size_t>(p.tasks[from].out_counter);
      if (c < waiters.size())
        for (size_t w : waiters[c])
          if (!seen[w]) {
            seen[w] = 1;
            after.push_back(w);
          }
      if (at == after.size()) break;
    }
    if (after.empty()) continue;
    const size_t late = after[rng.below(after.size())];
    const int64_t c = p.tasks[late].out_counter;
    int64_t producers = 0;
    for (const Task& t : p.tasks) producers += t.out_counter == c;
    p.tasks[early].waits.push_back({c, producers, {}});
    note =
        fmt::format("task {} waits on counter {} of task {}, which depends on it", early, c, late);
    return static_cast<int64_t>(early);
  }
  return -1;
}

// Plants a defect; returns the task it went into.
int64_t plant(Program& p, GenDefect d, const LlamaIds& llama, const std::vector<int64_t>& tiles,
              const std::vector<std::pair<int64_t, int64_t>>& keys, Rng& rng, std::string& note) {
  auto pick = [&](const std::vector<int64_t>& v) -> int64_t {
    return v.empty() ? -1 : v[rng.below(v.size())];
  };
  auto tile = pick(tiles.empty() ? llama.tile_tasks : tiles);
  switch (d) {
    case GenDefect::None:
      return -1;
    case GenDefect::DropWait: {
      if (tile < 0 || p.tasks[static_cast<size_t>(tile)].waits.empty()) break;
      p.tasks[static_cast<size_t>(tile)].waits.clear();
      note = fmt::format("task {} no longer waits for the producer of its input", tile);
      return tile;
    }
    case GenDefect::PartialWait: {
      // A consumer of a multi-producer counter waits for one producer fewer than all of them.
      size_t start = rng.below(p.tasks.size());
      for (size_t k = 0; k < p.tasks.size(); ++k) {
        size_t t = (start + k) % p.tasks.size();
        for (Wait& w : p.tasks[t].waits) {
          if (w.threshold > 1) {
            w.threshold -= 1;
            note = fmt::format("task {} waits for {} of counter {}'s producers", t, w.threshold,
                               w.counter);
            return static_cast<int64_t>(t);
          }
        }
      }
      break;
    }
    case GenDefect::Cycle:
      if (const int64_t t = plant_cycle(p, rng, note); t >= 0) return t;
      break;
    case GenDefect::SelfWait: {
      size_t t = rng.below(p.tasks.size());
      p.tasks[t].waits.push_back({p.tasks[t].out_counter, 1, {}});
      note = fmt::format("task {} waits on its own counter", t);
      return static_cast<int64_t>(t);
    }
    case GenDefect::Unsatisfiable: {
      for (size_t k = 0; k < p.tasks.size(); ++k) {
        size_t t = (k + rng.below(p.tasks.size())) % p.tasks.size();
        if (!p.tasks[t].waits.empty()) {
          p.tasks[t].waits[0].threshold += 1;
          note = fmt::format("task {} waits for more producers than counter {} has", t,
                             p.tasks[t].waits[0].counter);
          return static_cast<int64_t>(t);
        }
      }
      break;
    }
    case GenDefect::OverlapTiles: {
      // Shift a tile that is not the first of its output onto its left neighbour.
      for (size_t k = 0; k < 64; ++k) {
        int64_t t = pick(tiles.empty() ? llama.tile_tasks : tiles);
        if (t < 0) break;
        Task& task = p.tasks[static_cast<size_t>(t)];
        auto off = task.int_param("n_off");
        if (off && *off > 0) {
          task.set_param("n_off", ParamValue::of_int(*off - 1));
          note = fmt::format("task {}'s tile overlaps its neighbour", t);
          return t;
        }
      }
      break;
    }
    case GenDefect::ExtraWriter: {
      int64_t t = tile;
      if (t < 0) break;
      const Task& victim = p.tasks[static_cast<size_t>(t)];
      Task w;
      w.op = Op::COPY;
      w.inputs =
          victim.inputs.empty() ? std::vector<int64_t>{} : std::vector<int64_t>{victim.inputs[0]};
      w.outputs = victim.outputs;
      w.waits = victim.waits;
      w.out_counter = p.add_counter("extra writer");
      w.label = "extra_writer";
      p.add_task(std::move(w));
      note = fmt::format("task {} writes the output of task {} unordered", p.tasks.size() - 1, t);
      return static_cast<int64_t>(p.tasks.size()) - 1;
    }
    case GenDefect::SharePage: {
      // The first layer's q and k projections are written concurrently (both wait on input_norm).
      if (llama.tile_tasks.empty()) break;
      if (!p.pages) add_pages(p, keys);
      int64_t a = p.tasks[static_cast<size_t>(llama.tile_tasks[0])].outputs[0];
      int64_t b = -1;
      for (int64_t t : llama.tile_tasks) {
        int64_t o = p.tasks[static_cast<size_t>(t)].outputs[0];
        if (o != a) {
          b = o;
          break;
        }
      }
      auto& b2p = p.pages->buffer_to_page;
      int64_t pa = -1;
      for (auto& e : b2p)
        if (e.first == a) pa = e.second;
      for (auto& e : b2p)
        if (e.first == b) e.second = pa;
      note = fmt::format("buffers {} and {} share page {} while both are live", a, b, pa);
      return llama.tile_tasks[0];
    }
    case GenDefect::MissingBuffer: {
      size_t t = rng.below(p.tasks.size());
      p.tasks[t].inputs.push_back(static_cast<int64_t>(p.buffers.size()) + 7);
      note = fmt::format("task {} reads a buffer that does not exist", t);
      return static_cast<int64_t>(t);
    }
    case GenDefect::KvBeforeAppend: {
      int64_t t = pick(llama.attention_tasks);
      if (t < 0) break;
      Task& at = p.tasks[static_cast<size_t>(t)];
      int64_t kc = p.tasks[static_cast<size_t>(llama.kv_append_tasks[0])].out_counter;
      for (int64_t ka : llama.kv_append_tasks) {
        // Drop the wait on this layer's k append (the first KV wait).
        int64_t c = p.tasks[static_cast<size_t>(ka)].out_counter;
        auto it = std::find_if(at.waits.begin(), at.waits.end(),
                               [&](const Wait& w) { return w.counter == c; });
        if (it != at.waits.end()) {
          kc = c;
          at.waits.erase(it);
          break;
        }
      }
      note = fmt::format("attention task {} no longer waits for the KV append (counter {})", t, kc);
      return t;
    }
  }
  note = fmt::format("this {}-task program has no place for it", p.tasks.size());
  return -1;
}

constexpr std::array<std::string_view, 11> kDefectNames = {
    "none",       "drop-wait",      "partial-wait",    "cycle",
    "self-wait",  "unsatisfiable",  "overlap-tiles",   "extra-writer",
    "share-page", "missing-buffer", "kv-before-append"};

}  // namespace

GenResult generate(const GenOptions& opt) {
  Rng rng{opt.seed * 0x2545F4914F6CDD1Dull + 1};  // the stream amk gen has always drawn
  Builder b;
  LlamaIds llama;
  std::vector<int64_t> tiles;
  switch (opt.shape) {
    case GenShape::Llama:
      gen_llama(b, opt.tasks, llama);
      break;
    case GenShape::Mesh:
      gen_mesh(b, opt.tasks, rng, tiles);
      break;
    case GenShape::Chain:
      gen_chain(b, opt.tasks);
      break;
    case GenShape::Fan:
      gen_fan(b, opt.tasks, tiles);
      break;
  }
  b.p.meta.mut()["generator"] = "amk gen";
  b.p.meta.mut()["seed"] = opt.seed;
  GenResult res;
  if (opt.pages && !opt.nop) add_pages(b.p, b.page_key);
  const bool counters_only = opt.defect == GenDefect::Cycle || opt.defect == GenDefect::SelfWait ||
                             opt.defect == GenDefect::Unsatisfiable;
  if (opt.defect != GenDefect::None && opt.nop && !counters_only) {
    res.not_planted =
        "a --nop program has no buffers, so no data race: only cycle, self-wait and "
        "unsatisfiable can be planted in it";
  } else if (opt.defect != GenDefect::None) {
    res.defect_task = plant(b.p, opt.defect, llama, tiles, b.page_key, rng, res.defect_note);
    if (res.defect_task < 0) std::swap(res.not_planted, res.defect_note);
  }
  if (opt.nop) make_nop(b.p);
  if (opt.num_sms > 0)
    for (size_t t = 0; t < b.p.tasks.size(); ++t)
      b.p.tasks[t].sm = static_cast<int64_t>(t) % opt.num_sms;
  res.program = std::move(b.p);
  return res;
}

std::optional<GenShape> parse_gen_shape(std::string_view s) {
  if (s == "llama") return GenShape::Llama;
  if (s == "mesh") return GenShape::Mesh;
  if (s == "chain") return GenShape::Chain;
  if (s == "fan") return GenShape::Fan;
  return std::nullopt;
}

std::optional<GenDefect> parse_gen_defect(std::string_view s) {
  for (size_t i = 0; i < kDefectNames.size(); ++i)
    if (kDefectNames[i] == s) return static_cast<GenDefect>(i);
  return std::nullopt;
}

std::string_view gen_defect_names() {
  return "none, drop-wait, partial-wait, cycle, self-wait, unsatisfiable, overlap-tiles, "
         "extra-writer, share-page, missing-buffer, kv-before-append";
}

}  // namespace amk::ir
