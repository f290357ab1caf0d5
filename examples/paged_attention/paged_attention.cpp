#include "examples/paged_attention/paged_attention.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace amk::examples {

using vm::ArgDir;
using vm::CoreType;
using vm::KernelId;
using vm::Orchestrator;
using vm::Scope;
using vm::TensorArg;

namespace {

ir::Param iparam(const char* k, int64_t v) {
  return {k, ir::ParamValue::of_int(v)};
}

// The seed's kernels (kernel_config.py: QK, SF, PV, UP, AIV_HUB), F32, registered with
// Orchestrator::kernel(). Shapes: q [S, D]; a K or V block [bs, S, D] (a row view of the
// chunk's cache: position t, sequence i); s and p [S, bs]; m and l [S]; o [S, D].

bool shaped(const inst::Tensor& t, std::initializer_list<int64_t> dims) {
  if (t.dtype != ir::DType::F32 || t.rank != static_cast<int>(dims.size())) return false;
  int r = 0;
  for (int64_t d : dims)
    if (t.shape[r++] != d) return false;
  return true;
}

float* f32(const inst::Tensor& t) {
  return static_cast<float*>(t.data);
}

inst::Status bad(const char* kernel, const char* want) {
  return inst::kernel_error(fmt::format("{}: expects {}", kernel, want));
}

// QK (AIC): s[i, t] = scale * q[i] . k[t, i].
inst::Status qk_matmul(const inst::KernelArgs& a) {
  const char* want = "q [S, D] and a K block [bs, S, D] in, s [S, bs] out";
  if (a.in.size() != 2 || a.out.size() != 1 || a.in[0].rank != 2 || a.in[1].rank != 3)
    return bad("QK", want);
  const int64_t S = a.in[0].shape[0], D = a.in[0].shape[1], bs = a.in[1].shape[0];
  if (!shaped(a.in[0], {S, D}) || !shaped(a.in[1], {bs, S, D}) || !shaped(a.out[0], {S, bs}))
    return bad("QK", want);
  const auto scale = static_cast<float>(
      a.params.real(ir::ParamField::scale, 1.0 / std::sqrt(static_cast<double>(D))));
  const float *q = f32(a.in[0]), *k = f32(a.in[1]);
  float* s = f32(a.out[0]);
  for (int64_t i = 0; i < S; ++i)
    for (int64_t t = 0; t < bs; ++t) {
      float dot = 0;
      for (int64_t d = 0; d < D; ++d) dot += q[i * D + d] * k[(t * S + i) * D + d];
      s[i * bs + t] = dot * scale;
    }
  return {};
}

// SF (AIV): m = max_t s, p = exp(s - m), l = sum_t p (softmax-prepare).
inst::Status softmax_prepare(const inst::KernelArgs& a) {
  const char* want = "s [S, bs] in, p [S, bs], m [S], l [S] out";
  if (a.in.size() != 1 || a.out.size() != 3 || a.in[0].rank != 2) return bad("SF", want);
  const int64_t S = a.in[0].shape[0], bs = a.in[0].shape[1];
  if (!shaped(a.in[0], {S, bs}) || !shaped(a.out[0], {S, bs}) || !shaped(a.out[1], {S}) ||
      !shaped(a.out[2], {S}))
    return bad("SF", want);
  const float* s = f32(a.in[0]);
  float *p = f32(a.out[0]), *m = f32(a.out[1]), *l = f32(a.out[2]);
  for (int64_t i = 0; i < S; ++i) {
    float mx = -INFINITY, sum = 0;
    for (int64_t t = 0; t < bs; ++t) mx = std::max(mx, s[i * bs + t]);
    for (int64_t t = 0; t < bs; ++t) sum += p[i * bs + t] = std::exp(s[i * bs + t] - mx);
    m[i] = mx;
    l[i] = sum;
  }
  return {};
}

// PV (AIC): o[i] = sum_t p[i, t] v[t, i].
inst::Status pv_matmul(const inst::KernelArgs& a) {
  const char* want = "p [S, bs] and a V block [bs, S, D] in, o [S, D] out";
  if (a.in.size() != 2 || a.out.size() != 1 || a.in[0].rank != 2 || a.in[1].rank != 3)
    return bad("PV", want);
  const int64_t S = a.in[0].shape[0], bs = a.in[0].shape[1], D = a.in[1].shape[2];
  if (!shaped(a.in[0], {S, bs}) || !shaped(a.in[1], {bs, S, D}) || !shaped(a.out[0], {S, D}))
    return bad("PV", want);
  const float *p = f32(a.in[0]), *v = f32(a.in[1]);
  float* o = f32(a.out[0]);
  for (int64_t i = 0; i < S; ++i)
    for (int64_t d = 0; d < D; ++d) {
      float acc = 0;
      for (int64_t t = 0; t < bs; ++t) acc += p[i * bs + t] * v[(t * S + i) * D + d];
      o[i * D + d] = acc;
    }
  return {};
}

// UP (AIV): folds a block (o_new, m_new, l_new) into the running accumulators (oi, li, mi:
// in-outs, so they are outputs 0..2 too); with a 4th output (the last block) also writes
// out = oi / li.
inst::Status online_update(const inst::KernelArgs& a) {
  const char* want = "o_new [S, D], m [S], l [S] in; oi [S, D], li [S], mi [S] in-out; [out]";
  if (a.in.size() != 6 || (a.out.size() != 3 && a.out.size() != 4) || a.in[0].rank != 2)
    return bad("UP", want);
  const int64_t S = a.in[0].shape[0], D = a.in[0].shape[1];
  if (!shaped(a.in[0], {S, D}) || !shaped(a.in[1], {S}) || !shaped(a.in[2], {S}) ||
      !shaped(a.out[0], {S, D}) || !shaped(a.out[1], {S}) || !shaped(a.out[2], {S}) ||
      (a.out.size() == 4 && !shaped(a.out[3], {S, D})))
    return bad("UP", want);
  const float *on = f32(a.in[0]), *mn = f32(a.in[1]), *ln = f32(a.in[2]);
  float *oi = f32(a.out[0]), *li = f32(a.out[1]), *mi = f32(a.out[2]);
  for (int64_t i = 0; i < S; ++i) {
    const float m = std::max(mi[i], mn[i]);
    const float wo = std::exp(mi[i] - m), wn = std::exp(mn[i] - m);  // mi = -inf: wo = 0
    li[i] = wo * li[i] + wn * ln[i];
    for (int64_t d = 0; d < D; ++d) oi[i * D + d] = wo * oi[i * D + d] + wn * on[i * D + d];
    mi[i] = m;
  }
  if (a.out.size() == 4) {
    float* out = f32(a.out[3]);
    for (int64_t i = 0; i < S; ++i)
      for (int64_t d = 0; d < D; ++d) out[i * D + d] = oi[i * D + d] / li[i];
  }
  return {};
}

// AIV_HUB: initialises the accumulators oi = 0, li = 0, mi = -inf.
inst::Status hub(const inst::KernelArgs& a) {
  const char* want = "oi [S, D], li [S], mi [S] out";
  if (a.in.size() != 0 || a.out.size() != 3 || a.out[0].rank != 2) return bad("AIV_HUB", want);
  const int64_t S = a.out[0].shape[0], D = a.out[0].shape[1];
  if (!shaped(a.out[0], {S, D}) || !shaped(a.out[1], {S}) || !shaped(a.out[2], {S}))
    return bad("AIV_HUB", want);
  std::fill_n(f32(a.out[0]), S * D, 0.0f);
  std::fill_n(f32(a.out[1]), S, 0.0f);
  std::fill_n(f32(a.out[2]), S, -INFINITY);
  return {};
}

struct SeedKernels {
  KernelId qk, sf, pv, up, hub;
};

// One chunk in the seed's decomposition: the hub, then QK -> SF -> PV -> UP per KV block (the
// UPs chained through their in-out accumulators). False when a submit failed.
bool submit_seed_chunk(Orchestrator& orch, const SeedKernels& kn, int64_t ch, int64_t S, int64_t D,
                       int64_t bs, int64_t nb, int64_t qc, int64_t kc, int64_t vc, int64_t oc) {
  const auto n = [&](const std::string& what) { return fmt::format("c{}.{}", ch, what); };
  auto oi = orch.make_tensor(n("oi"), ir::DType::F32, {S, D});
  auto li = orch.make_tensor(n("li"), ir::DType::F32, {S});
  auto mi = orch.make_tensor(n("mi"), ir::DType::F32, {S});
  if (!oi || !li || !mi) return false;
  if (!orch.submit(kn.hub, CoreType::Aiv,
                   {{*oi, ArgDir::Output}, {*li, ArgDir::Output}, {*mi, ArgDir::Output}}, {},
                   n("hub")))
    return false;
  const ir::Param scale{"scale", ir::ParamValue::of_float(1.0 / std::sqrt(static_cast<double>(D)))};
  for (int64_t j = 0; j < nb; ++j) {
    const std::string b = fmt::format("b{}", j);
    auto sij = orch.make_tensor(n(b + ".s"), ir::DType::F32, {S, bs});
    auto pij = orch.make_tensor(n(b + ".p"), ir::DType::F32, {S, bs});
    auto mij = orch.make_tensor(n(b + ".m"), ir::DType::F32, {S});
    auto lij = orch.make_tensor(n(b + ".l"), ir::DType::F32, {S});
    auto oij = orch.make_tensor(n(b + ".o"), ir::DType::F32, {S, D});
    if (!sij || !pij || !mij || !lij || !oij) return false;
    const ir::Region rows{0, j * bs, (j + 1) * bs};
    std::vector<TensorArg> up = {{*oij, ArgDir::Input}, {*mij, ArgDir::Input},
                                 {*lij, ArgDir::Input}, {*oi, ArgDir::InOut},
                                 {*li, ArgDir::InOut},  {*mi, ArgDir::InOut}};
    if (j == nb - 1) up.push_back({oc, ArgDir::Output});
    if (!orch.submit(kn.qk, CoreType::Aic,
                     {{qc, ArgDir::Input}, {kc, ArgDir::Input, rows}, {*sij, ArgDir::Output}},
                     {scale}, n(b + ".qk")) ||
        !orch.submit(kn.sf, CoreType::Aiv,
                     {{*sij, ArgDir::Input},
                      {*pij, ArgDir::Output},
                      {*mij, ArgDir::Output},
                      {*lij, ArgDir::Output}},
                     {}, n(b + ".sf")) ||
        !orch.submit(kn.pv, CoreType::Aic,
                     {{*pij, ArgDir::Input}, {vc, ArgDir::Input, rows}, {*oij, ArgDir::Output}}, {},
                     n(b + ".pv")) ||
        !orch.submit(kn.up, CoreType::Aiv, up, {}, n(b + ".up")))
      return false;
  }
  return true;
}

}  // namespace

ir::Result<PagedAttentionResult> run_paged_attention(const PagedAttentionCase& c,
                                                     const OrchestratorOptions& o) {
  PagedAttentionResult res;
  const int64_t B = c.batch, S = c.chunk, D = c.head_dim, T = c.context, bs = c.block;
  if (B <= 0 || S <= 0 || B % S != 0 || D <= 0 || T <= 0 || bs <= 0 || T % bs != 0 ||
      (!c.seed_kernels && T / bs > 8)) {
    return ir::error(
        "example.option",
        fmt::format(
            "paged attention: batch {} in chunks of {}, context {} in blocks of {} (need batch a "
            "multiple of chunk and whole blocks, at most 8 without seed_kernels)",
            B, S, T, bs));
  }
  const int64_t chunks = B / S, nb = T / bs;
  // Per chunk: q [S, D]; K and V caches [T, S, D] (sequence i of the chunk is kv head i).
  std::mt19937 rng(static_cast<uint32_t>(c.seed));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> q(static_cast<size_t>(B * D)), k(static_cast<size_t>(B * T * D)),
      v(static_cast<size_t>(B * T * D)), out(static_cast<size_t>(B * D), 0.0f);
  for (auto* a : {&q, &k, &v})
    for (float& x : *a) x = u(rng);

  const auto t0 = std::chrono::steady_clock::now();
  {
    Orchestrator orch(o);
    // The orchestrator's first error is sticky: finish() returns it.
    auto fail = [&] { return ir::Result<PagedAttentionResult>(orch.finish().diagnostics); };
    SeedKernels kn;
    if (c.seed_kernels)
      kn = {orch.kernel("QK", qk_matmul), orch.kernel("SF", softmax_prepare),
            orch.kernel("PV", pv_matmul), orch.kernel("UP", online_update),
            orch.kernel("AIV_HUB", hub)};
    for (int64_t ch = 0; ch < chunks; ++ch) {
      const auto n = [&](const char* what) { return fmt::format("c{}.{}", ch, what); };
      const int64_t qc = orch.tensor(n("q"), ir::DType::F32, {S, D}, q.data() + ch * S * D,
                                     ir::BufferKind::IO_INPUT);
      const int64_t kc = orch.tensor(n("k_cache"), ir::DType::F32, {T, S, D},
                                     k.data() + ch * T * S * D, ir::BufferKind::KV_CACHE);
      const int64_t vc = orch.tensor(n("v_cache"), ir::DType::F32, {T, S, D},
                                     v.data() + ch * T * S * D, ir::BufferKind::KV_CACHE);
      const int64_t oc = orch.tensor(n("out"), ir::DType::F32, {S, D}, out.data() + ch * S * D,
                                     ir::BufferKind::IO_OUTPUT);
      Scope scope(orch);
      if (c.seed_kernels) {
        if (!submit_seed_chunk(orch, kn, ch, S, D, bs, nb, qc, kc, vc, oc)) return fail();
        continue;
      }
      auto qs = orch.make_tensor(n("q_staged"), ir::DType::F32, {S, D});
      if (!qs) return fail();
      // Hub: stage the chunk's queries (the accumulators are the partials below).
      if (!orch.submit(ir::Op::COPY, CoreType::Aiv, {{qc, ArgDir::Input}, {*qs, ArgDir::Output}},
                       {}, n("hub")))
        return fail();
      std::vector<TensorArg> parts;
      for (int64_t j = 0; j < nb; ++j) {
        auto pj = orch.make_tensor(n(fmt::format("part{}", j).c_str()), ir::DType::F32, {S, D + 2});
        if (!pj) return fail();
        // QK -> softmax -> PV over KV block j: an un-normalised split-KV partial [acc | m | l].
        if (!orch.submit(ir::Op::ATTENTION_TILE, CoreType::Aic,
                         {{*qs, ArgDir::Input},
                          {kc, ArgDir::Input},
                          {vc, ArgDir::Input},
                          {*pj, ArgDir::Output}},
                         {iparam("head_dim", D),
                          iparam("n_heads", S),
                          iparam("n_kv_heads", S),
                          iparam("kv_start", j * bs),
                          iparam("kv_len", bs),
                          {"scale", ir::ParamValue::of_float(1.0 / std::sqrt(double(D)))},
                          iparam("flags", 2)},
                         n(fmt::format("block{}", j).c_str())))
          return fail();
        parts.push_back({*pj, ArgDir::Input});
      }
      parts.push_back({oc, ArgDir::Output});
      if (!orch.submit(ir::Op::ATTENTION_COMBINE, CoreType::Aiv, parts,
                       {iparam("head_dim", D), iparam("n_heads", S), iparam("n_kv_heads", S)},
                       n("combine")))
        return fail();
    }
    if (!orch.finish()) return fail();
    res.stats = orch.stats();
    if (c.record) {
      ir::Result<ir::Program> rec = orch.record();
      if (!rec) return fail();
      res.program = std::move(rec.value);
    }
  }
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Direct evaluation in double: softmax(q k^T / sqrt(D)) v per sequence.
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> s(static_cast<size_t>(T));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t ch = b / S, i = b % S;
    auto kv_at = [&](const std::vector<float>& a, int64_t t, int64_t d) {
      return static_cast<double>(a[static_cast<size_t>(((ch * T + t) * S + i) * D + d)]);
    };
    double m = -1e300;
    for (int64_t t = 0; t < T; ++t) {
      double dot = 0;
      for (int64_t d = 0; d < D; ++d) dot += q[static_cast<size_t>(b * D + d)] * kv_at(k, t, d);
      s[static_cast<size_t>(t)] = dot * scale;
      m = std::max(m, s[static_cast<size_t>(t)]);
    }
    double l = 0;
    for (double& x : s) l += (x = std::exp(x - m));
    for (int64_t d = 0; d < D; ++d) {
      double y = 0;
      for (int64_t t = 0; t < T; ++t) y += s[static_cast<size_t>(t)] * kv_at(v, t, d);
      res.max_abs_error =
          std::max(res.max_abs_error,
                   std::abs(y / l - static_cast<double>(out[static_cast<size_t>(b * D + d)])));
    }
  }
  if (c.record) {
    res.q = std::move(q);
    res.k = std::move(k);
    res.v = std::move(v);
    res.out = std::move(out);
  }
  return res;
}

}  // namespace amk::examples
