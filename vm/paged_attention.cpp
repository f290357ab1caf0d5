#include "vm/paged_attention.h"

#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include <fmt/format.h>

namespace amk::vm {

namespace {

ir::Param iparam(const char* k, int64_t v) {
  return {k, ir::ParamValue::of_int(v)};
}

}  // namespace

PagedAttentionResult run_paged_attention(const PagedAttentionCase& c,
                                         const OrchestratorOptions& o) {
  PagedAttentionResult res;
  const int64_t B = c.batch, S = c.chunk, D = c.head_dim, T = c.context, bs = c.block;
  if (B <= 0 || S <= 0 || B % S != 0 || D <= 0 || T <= 0 || bs <= 0 || T % bs != 0 || T / bs > 8) {
    res.error = fmt::format(
        "paged attention: batch {} in chunks of {}, context {} in blocks of {} (need batch a "
        "multiple of chunk and 1..8 whole blocks)",
        B, S, T, bs);
    return res;
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
    auto fail = [&] {
      res.error = orch.error();
      return res;
    };
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
      res.program = orch.record();
      if (!res.program) return fail();
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
  res.ok = true;
  if (c.record) {
    res.q = std::move(q);
    res.k = std::move(k);
    res.v = std::move(v);
    res.out = std::move(out);
  }
  return res;
}

}  // namespace amk::vm
