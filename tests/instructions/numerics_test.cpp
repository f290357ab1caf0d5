// Proves the kernels compute AMK's numerics: every case of conformance/numerics/ops_golden.json
// on every SIMD path, independent double-precision references for random shapes and dtypes on every
// SIMD path (odd K, whole quantisation groups of the sizes the row kernels take,
// N_tile 1, ragged quantisation groups), split-KV equal to whole-window attention, FUSED equal to
// its unfused steps, and errors as values.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <random>

#include <nlohmann/json.hpp>

#include "instructions/dtype.h"
#include "instructions/kernel.h"
#include "instructions/simd.h"
#include "ir/opcodes.h"
#include "support.h"

namespace amk::inst {
namespace {

using ojson = nlohmann::ordered_json;

// A tensor that owns its bytes.
struct Owned {
  std::vector<uint8_t> bytes;
  Tensor t;
  Owned(ir::DType d, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    bytes.assign(static_cast<size_t>(ir::dtype_nbytes(d, n)) + 8, 0);
    t = Tensor::of(bytes.data(), d, shape);
  }
  float at(int64_t i) const { return load(t.data, t.dtype, i); }
  void set(int64_t i, float v) { store(t.data, t.dtype, i, v); }
};

ir::DType golden_dtype(const std::string& s) {
  if (s == "float32") return ir::DType::F32;
  if (s == "float16") return ir::DType::F16;
  if (s == "bfloat16") return ir::DType::BF16;
  if (s == "int32") return ir::DType::I32;
  if (s == "int8") return ir::DType::I8;
  if (s == "uint8") return ir::DType::U8;
  throw std::runtime_error("dtype " + s);
}

Owned from_json(const ojson& j) {
  Owned o(golden_dtype(j["dtype"]), j["shape"].get<std::vector<int64_t>>());
  int64_t i = 0;
  for (const auto& v : j["data"]) {
    float f = 0;
    if (v.is_string()) {  // the golden file spells non-finite values as strings
      std::string t = v.get<std::string>();
      f = t == "nan" ? NAN : t == "-inf" ? -INFINITY : t == "inf" ? INFINITY : std::stof(t);
    } else {
      f = v.get<float>();
    }
    o.set(i++, f);
  }
  return o;
}

ir::Task task_from(const ojson& c) {
  ir::Task t;
  t.op = *ir::parse_op(c["op"].get<std::string>());
  for (auto it = c["params"].begin(); it != c["params"].end(); ++it) {
    const auto& v = it.value();
    t.params.push_back({it.key(), v.is_number_integer() ? ir::ParamValue::of_int(v.get<int64_t>())
                                  : v.is_number_float()
                                      ? ir::ParamValue::of_float(v.get<double>())
                                      : ir::ParamValue::of_json(ir::JsonValue(v))});
  }
  return t;
}

void run_golden(const char* isa) {
  ASSERT_TRUE(simd::use_isa(isa)) << isa;
  auto g = ojson::parse(test::slurp(test::conformance_dir() / "numerics/ops_golden.json"));
  Workspace ws;
  int n = 0;
  for (const auto& c : g["cases"]) {
    SCOPED_TRACE(std::string(isa) + " " + c["name"].get<std::string>());
    std::vector<Owned> ins;
    for (const auto& x : c["inputs"]) ins.push_back(from_json(x));
    Owned out = from_json(c["out_init"]);
    std::vector<Tensor> in_t;
    for (auto& o : ins) in_t.push_back(o.t);
    ir::Task t = task_from(c);
    // KV_APPEND writes its cache in place: the output is input 1.
    Tensor out_t = t.op == ir::Op::KV_APPEND ? in_t[1] : out.t;
    Status s = run_task(t, in_t, std::span<const Tensor>(&out_t, 1), ws);
    ASSERT_TRUE(s.ok()) << ir::error_messages(s.diagnostics);
    const Owned& result = t.op == ir::Op::KV_APPEND ? ins[1] : out;
    Owned want = from_json(c["expected"]);
    ASSERT_EQ(want.t.numel, result.t.numel);
    double mag = 1;
    for (int64_t i = 0; i < want.t.numel; ++i)
      if (std::isfinite(want.at(i)))
        mag = std::max(mag, std::fabs(static_cast<double>(want.at(i))));
    const bool exact = want.t.dtype != ir::DType::F32;
    for (int64_t i = 0; i < want.t.numel; ++i) {
      float w = want.at(i), r = result.at(i);
      if (std::isinf(w)) {
        EXPECT_EQ(w, r) << i;
      } else if (exact) {
        EXPECT_EQ(w, r) << i;
      } else {
        EXPECT_LE(std::fabs(static_cast<double>(w) - r), 1e-5 * mag)
            << i << ": " << w << " vs " << r;
      }
    }
    ++n;
  }
  EXPECT_EQ(n, 36);
  simd::use_isa("best");
}

TEST(GoldenOps, EveryAmkCaseMatchesOnTheBestSimdPath) {
  run_golden("best");
}
TEST(GoldenOps, EveryAmkCaseMatchesOnTheScalarPath) {
  run_golden("scalar");
}
TEST(GoldenOps, EveryAmkCaseMatchesOnTheAvx2PathWhereAvailable) {
  if (!simd::use_isa("avx2")) GTEST_SKIP() << "this CPU has no AVX2";
  run_golden("avx2");
}

// ---- independent double-precision references -------------------------------------------------

struct Rng {
  std::mt19937_64 g;
  explicit Rng(uint64_t s) : g(s) {}
  float uni(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(g); }
  int64_t below(int64_t n) { return static_cast<int64_t>(g() % static_cast<uint64_t>(n)); }
};

ir::Task task(ir::Op op, std::vector<std::pair<const char*, int64_t>> ints,
              std::vector<std::pair<const char*, double>> reals = {}) {
  ir::Task t;
  t.op = op;
  for (auto [k, v] : ints) t.params.push_back({k, ir::ParamValue::of_int(v)});
  for (auto [k, v] : reals) t.params.push_back({k, ir::ParamValue::of_float(v)});
  return t;
}

// The SIMD paths this CPU has (the scalar one always).
std::vector<const char*> isas() {
  std::vector<const char*> out{"scalar"};
  for (const char* i : {"avx2", "avx512"})
    if (simd::use_isa(i)) out.push_back(i);
  simd::use_isa("best");
  return out;
}

TEST(GemvReference, FloatWeightsInEveryDtypeMatchDoubleLoops) {
  for (const char* isa : isas()) {
    SCOPED_TRACE(isa);
    ASSERT_TRUE(simd::use_isa(isa));
    Rng r(1);
    Workspace ws;
    for (ir::DType wd :
         {ir::DType::F32, ir::DType::BF16, ir::DType::F16, ir::DType::I8, ir::DType::F8E4M3}) {
      for (int trial = 0; trial < 12; ++trial) {
        const int64_t M = 1 + r.below(3), K = 1 + r.below(300), N = 1 + r.below(40);
        const int64_t n_off = r.below(N), n_tile = 1 + r.below(N - n_off);
        Owned x(ir::DType::F32, {M, K}), w(wd, {N, K}), b(ir::DType::F32, {N}),
            out(ir::DType::F32, {M, N});
        for (int64_t i = 0; i < M * K; ++i) x.set(i, r.uni(-1, 1));
        for (int64_t i = 0; i < N * K; ++i)
          w.set(i, wd == ir::DType::I8 ? std::round(r.uni(-100, 100)) : r.uni(-1, 1));
        for (int64_t i = 0; i < N; ++i) b.set(i, r.uni(-1, 1));
        const bool bias = trial % 2;
        ir::Task t = task(M > 1 ? ir::Op::GEMM_TILE : ir::Op::GEMV_TILE,
                          {{"K", K}, {"N_tile", n_tile}, {"n_off", n_off}, {"M_tile", M}});
        std::vector<Tensor> in{x.t, w.t};
        if (bias) in.push_back(b.t);
        Status s = run_task(t, in, std::span<const Tensor>(&out.t, 1), ws);
        ASSERT_TRUE(s.ok()) << ir::error_messages(s.diagnostics);
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            if (n < n_off || n >= n_off + n_tile) {
              EXPECT_EQ(out.at(m * N + n), 0.0f) << "outside the tile nothing is written";
              continue;
            }
            double ref = bias ? b.at(n) : 0, scale = 0;
            for (int64_t k = 0; k < K; ++k) {
              ref += static_cast<double>(x.at(m * K + k)) * w.at(n * K + k);
              scale += std::fabs(x.at(m * K + k) * w.at(n * K + k));
            }
            EXPECT_NEAR(out.at(m * N + n), ref, 1e-6 * (scale + 1)) << ir::name(wd) << " K=" << K;
          }
      }
    }
  }
  simd::use_isa("best");
}

TEST(GemvReference, QuantisedInt8AndInt4AsU8OrI4WithRaggedGroupsAndZerosMatchDoubleLoops) {
  for (const char* isa : isas()) {
    SCOPED_TRACE(isa);
    ASSERT_TRUE(simd::use_isa(isa));
    Rng r(2);
    Workspace ws;
    for (int64_t qd : {6, 7}) {
      for (int trial = 0; trial < 32; ++trial) {
        // Half the trials are whole groups of the sizes the row kernels take (32 to 256 columns).
        const bool whole = trial % 4 >= 2;
        const int64_t group = whole ? int64_t{32} << r.below(4) : 1 + r.below(40);
        const int64_t K = whole ? group * (1 + r.below(4)) : 1 + r.below(200), N = 1 + r.below(24);
        const int64_t groups = (K + group - 1) / group;
        const int64_t n_off = r.below(N), n_tile = 1 + r.below(N - n_off);
        const int64_t wcols = qd == 7 ? (K + 1) / 2 : K;
        Owned x(ir::DType::F32, {1, K}), w(qd == 7 ? ir::DType::U8 : ir::DType::I8, {N, wcols});
        Owned sc(ir::DType::F16, {N, groups}), z(ir::DType::F16, {N, groups}),
            out(ir::DType::F32, {1, N});
        for (int64_t i = 0; i < K; ++i) x.set(i, r.uni(-1, 1));
        for (int64_t i = 0; i < N * wcols; ++i)
          w.set(i, qd == 7 ? static_cast<float>(r.below(256))
                           : static_cast<float>(r.below(255) - 127));
        for (int64_t i = 0; i < N * groups; ++i) {
          sc.set(i, r.uni(0.001f, 0.1f));
          z.set(i, static_cast<float>(r.below(5) - 2));
        }
        const bool zeros = trial % 2;
        ir::Task t = task(
            ir::Op::GEMV_TILE,
            {{"K", K}, {"N_tile", n_tile}, {"n_off", n_off}, {"qdtype", qd}, {"group", group}});
        std::vector<Tensor> in{x.t, w.t, sc.t};
        if (zeros) in.push_back(z.t);
        Status s = run_task(t, in, std::span<const Tensor>(&out.t, 1), ws);
        ASSERT_TRUE(s.ok()) << ir::error_messages(s.diagnostics);
        if (qd == 7 && K % 2 == 0) {
          // The same bytes declared as AMK lowers them, I4 at the logical [N, K]: the same
          // outputs, bit for bit.
          const std::array<int64_t, 2> logical{N, K};
          in[1] = Tensor::of(w.t.data, ir::DType::I4, logical);
          Owned out4(ir::DType::F32, {1, N});
          s = run_task(t, in, std::span<const Tensor>(&out4.t, 1), ws);
          ASSERT_TRUE(s.ok()) << ir::error_messages(s.diagnostics);
          for (int64_t n = n_off; n < n_off + n_tile; ++n)
            EXPECT_EQ(out4.at(n), out.at(n)) << "I4 [N, K], K=" << K << " group=" << group;
        }
        for (int64_t n = n_off; n < n_off + n_tile; ++n) {
          double ref = 0, scale = 0;
          for (int64_t k = 0; k < K; ++k) {
            const auto* wb = static_cast<const uint8_t*>(w.t.data) + n * wcols;
            double q = qd == 7 ? ((k & 1 ? wb[k / 2] >> 4 : wb[k / 2] & 0xF) - 8.0)
                               : static_cast<double>(static_cast<int8_t>(wb[k]));
            const int64_t g = std::min(k / group, groups - 1);
            const double wv = (q - (zeros ? z.at(n * groups + g) : 0.0)) * sc.at(n * groups + g);
            ref += x.at(k) * wv;
            scale += std::fabs(x.at(k) * wv);
          }
          EXPECT_NEAR(out.at(n), ref, 1e-5 * (scale + 1))
              << "qdtype " << qd << " K=" << K << " group=" << group;
        }
      }
    }
  }
  simd::use_isa("best");
}

// A GEMV tile's case: N rows of K weights in `wd` (qdtype 6: int8, 7: int4 bytes, with F16 scales
// per `group`), random from a seed of K, x of K random floats.
struct GemvCase {
  ir::DType wd;
  int64_t qdtype, group, K;
};
struct GemvTiles {
  GemvCase c;
  int64_t N, wcols, groups;
  Owned x, w, sc;
  GemvTiles(const GemvCase& c_, int64_t n)
      : c(c_),
        N(n),
        wcols(c.qdtype == 7 ? c.K / 2 : c.K),
        groups(c.group ? c.K / c.group : 1),
        x(ir::DType::F32, {1, c.K}),
        w(c.wd, {N, wcols}),
        sc(ir::DType::F16, {N, groups}) {
    Rng r(static_cast<uint64_t>(c.K));
    for (int64_t i = 0; i < c.K; ++i) x.set(i, r.uni(-1, 1));
    for (int64_t i = 0; i < N * wcols; ++i)
      w.set(i, c.wd == ir::DType::U8   ? static_cast<float>(r.below(256))
               : c.wd == ir::DType::I8 ? static_cast<float>(r.below(255) - 127)
                                       : r.uni(-1, 1));
    for (int64_t i = 0; i < N * groups; ++i) sc.set(i, r.uni(0.001f, 0.1f));
  }
  std::string name() const {
    return std::string(ir::name(c.wd)) + " qdtype " + std::to_string(c.qdtype) + " K " +
           std::to_string(c.K);
  }
  // Rows [n_off, n_off + n_tile) of out, by the kernels in use.
  void run(int64_t n_off, int64_t n_tile, Owned& out) const {
    std::vector<std::pair<const char*, int64_t>> params{
        {"K", c.K}, {"N_tile", n_tile}, {"n_off", n_off}};
    if (c.qdtype) {
      params.emplace_back("qdtype", c.qdtype);
      params.emplace_back("group", c.group);
    }
    std::vector<Tensor> in{x.t, w.t};
    if (c.qdtype) in.push_back(sc.t);
    Workspace ws;
    Status s =
        run_task(task(ir::Op::GEMV_TILE, params), in, std::span<const Tensor>(&out.t, 1), ws);
    ASSERT_TRUE(s.ok()) << ir::error_messages(s.diagnostics);
  }
};

// The prefetch plans (simd.h: use_prefetch) are different instantiations of the row kernels:
// each must give the same bits as the other on every vector path, for every weight format.
TEST(GemvReference, EveryPrefetchPlanGivesTheSameBitsOnEveryVectorPath) {
  const GemvCase cases[] = {{ir::DType::F32, 0, 0, 2048},  {ir::DType::F32, 0, 0, 301},
                            {ir::DType::BF16, 0, 0, 2048}, {ir::DType::BF16, 0, 0, 77},
                            {ir::DType::F16, 0, 0, 515},   {ir::DType::I8, 0, 0, 300},
                            {ir::DType::I8, 6, 128, 1024}, {ir::DType::I8, 6, 32, 320},
                            {ir::DType::U8, 7, 128, 1024}, {ir::DType::U8, 7, 64, 448}};
  const int64_t N = 24;
  for (const char* isa : isas()) {
    if (std::string_view(isa) == "scalar") continue;  // no prefetch there
    SCOPED_TRACE(isa);
    ASSERT_TRUE(simd::use_isa(isa));
    for (const GemvCase& c : cases) {
      const GemvTiles g(c, N);
      SCOPED_TRACE(g.name());
      std::vector<std::vector<float>> outs;
      for (const char* plan : {"near", "split"}) {
        ASSERT_TRUE(simd::use_prefetch(plan));
        EXPECT_STREQ(simd::prefetch(), plan);
        Owned out(ir::DType::F32, {1, N});
        g.run(0, N, out);
        std::vector<float> o(static_cast<size_t>(N));
        for (int64_t n = 0; n < N; ++n) o[static_cast<size_t>(n)] = out.at(n);
        outs.push_back(std::move(o));
      }
      for (int64_t n = 0; n < N; ++n)
        EXPECT_EQ(std::bit_cast<uint32_t>(outs[0][static_cast<size_t>(n)]),
                  std::bit_cast<uint32_t>(outs[1][static_cast<size_t>(n)]))
            << "row " << n;
    }
  }
  EXPECT_FALSE(simd::use_prefetch("far"));
  simd::use_prefetch("best");
  simd::use_isa("best");
}

// Rows too long for x to stay in L1 go through the row kernels several at a time, sharing each
// load of x (simd_kernels.inc: by_row_blocks). A row's bits must not depend on that: a tile of
// many rows gives each row the bits of a tile of that row alone, on every vector path under
// every prefetch plan, and each matches a double-precision dot.
TEST(GemvReference, ARowsBitsDoNotDependOnTheRowsTiledBesideIt) {
  const GemvCase cases[] = {{ir::DType::F32, 0, 0, 8192},  {ir::DType::F32, 0, 0, 4097},
                            {ir::DType::BF16, 0, 0, 8192}, {ir::DType::BF16, 0, 0, 8205},
                            {ir::DType::I8, 6, 128, 8320}, {ir::DType::I8, 6, 32, 4128},
                            {ir::DType::F32, 0, 0, 4096},  {ir::DType::BF16, 0, 0, 2048}};
  const int64_t N = 31;  // blocks of each size (eight rows down to one) and what is left
  for (const char* isa : isas()) {
    SCOPED_TRACE(isa);
    ASSERT_TRUE(simd::use_isa(isa));
    for (const char* plan : {"near", "split"}) {
      SCOPED_TRACE(plan);
      ASSERT_TRUE(simd::use_prefetch(plan));
      for (const GemvCase& c : cases) {
        const GemvTiles g(c, N);
        SCOPED_TRACE(g.name());
        Owned all(ir::DType::F32, {1, N}), alone(ir::DType::F32, {1, N});
        g.run(0, N, all);
        for (int64_t n = 0; n < N; ++n) g.run(n, 1, alone);
        for (int64_t n = 0; n < N; ++n) {
          EXPECT_EQ(std::bit_cast<uint32_t>(all.at(n)), std::bit_cast<uint32_t>(alone.at(n)))
              << "row " << n;
          double ref = 0, scale = 0;
          for (int64_t k = 0; k < c.K; ++k) {
            const double wv =
                g.w.at(n * c.K + k) * (c.group ? g.sc.at(n * g.groups + k / c.group) : 1);
            ref += g.x.at(k) * wv;
            scale += std::fabs(g.x.at(k) * wv);
          }
          EXPECT_NEAR(all.at(n), ref, 1e-6 * (scale + 1)) << "row " << n;
        }
      }
    }
  }
  simd::use_prefetch("best");
  simd::use_isa("best");
}

TEST(GemvReference, AnI4WeightOfOddWidthIsAKernelErrorNotARead) {
  // I4 [N, K] of odd K: its buffer holds ceil(N K / 2) bytes, fewer than N rows of ceil(K / 2)
  // (the validator rejects it; a run that skips the validator must not read past it).
  Workspace ws;
  const int64_t K = 7, N = 4;
  Owned x(ir::DType::F32, {1, K}), w(ir::DType::I4, {N, K}), sc(ir::DType::F16, {N, 1}),
      out(ir::DType::F32, {1, N});
  ir::Task t =
      task(ir::Op::GEMV_TILE, {{"K", K}, {"N_tile", N}, {"n_off", 0}, {"qdtype", 7}, {"group", K}});
  std::vector<Tensor> in{x.t, w.t, sc.t};
  Status s = run_task(t, in, std::span<const Tensor>(&out.t, 1), ws);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(ir::error_messages(s.diagnostics).find("odd width"), std::string::npos)
      << ir::error_messages(s.diagnostics);
}

void naive_attention(const Owned& q, const Owned& k, const Owned& v, int64_t nh, int64_t nkv,
                     int64_t hd, int64_t start, int64_t len, double scale,
                     std::vector<double>& out) {
  out.assign(static_cast<size_t>(nh * hd), 0.0);
  for (int64_t h = 0; h < nh; ++h) {
    const int64_t g = h / (nh / nkv);
    std::vector<double> s(static_cast<size_t>(len));
    double mx = -1e300;
    for (int64_t j = 0; j < len; ++j) {
      double d = 0;
      for (int64_t c = 0; c < hd; ++c)
        d += q.at(h * hd + c) * k.at(((start + j) * nkv + g) * hd + c);
      s[static_cast<size_t>(j)] = d * scale;
      mx = std::max(mx, s[static_cast<size_t>(j)]);
    }
    double den = 0;
    for (auto& e : s) den += (e = std::exp(e - mx));
    for (int64_t j = 0; j < len; ++j)
      for (int64_t c = 0; c < hd; ++c)
        out[static_cast<size_t>(h * hd + c)] +=
            s[static_cast<size_t>(j)] / den * v.at(((start + j) * nkv + g) * hd + c);
  }
}

TEST(AttentionReference, GqaWindowsMatchDoubleLoopsAndSplitKvCombinesToTheSame) {
  Rng r(3);
  Workspace ws;
  for (int trial = 0; trial < 20; ++trial) {
    const int64_t nkv = 1 + r.below(3), rep = 1 + r.below(4), nh = nkv * rep,
                  hd = 2 * (1 + r.below(20));
    const int64_t seq = 4 + r.below(60), start = r.below(seq / 2), len = 1 + r.below(seq - start);
    const ir::DType cd = trial % 3 == 0 ? ir::DType::BF16 : ir::DType::F32;
    Owned q(ir::DType::F32, {nh, hd}), k(cd, {seq, nkv, hd}), v(cd, {seq, nkv, hd}),
        out(ir::DType::F32, {1, nh * hd});
    for (int64_t i = 0; i < nh * hd; ++i) q.set(i, r.uni(-1, 1));
    for (int64_t i = 0; i < seq * nkv * hd; ++i) {
      k.set(i, r.uni(-1, 1));
      v.set(i, r.uni(-1, 1));
    }
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    auto params = [&](int64_t s0, int64_t l, int64_t flags) {
      return task(ir::Op::ATTENTION_TILE,
                  {{"head_dim", hd},
                   {"kv_start", s0},
                   {"kv_len", l},
                   {"n_heads", nh},
                   {"n_kv_heads", nkv},
                   {"flags", flags}},
                  {{"scale", scale}});
    };
    std::vector<Tensor> in{q.t, k.t, v.t};
    ASSERT_TRUE(run_task(params(start, len, 0), in, std::span<const Tensor>(&out.t, 1), ws).ok());
    std::vector<double> ref;
    naive_attention(q, k, v, nh, nkv, hd, start, len, scale, ref);
    for (int64_t i = 0; i < nh * hd; ++i)
      EXPECT_NEAR(out.at(i), ref[static_cast<size_t>(i)], 2e-6) << trial;
    // Split the window into P shards (some possibly empty) and combine.
    const int64_t P = 1 + r.below(4), chunk = (len + P - 1) / P;
    std::vector<Owned> parts;
    for (int64_t p = 0; p < P; ++p) {
      parts.emplace_back(ir::DType::F32, std::vector<int64_t>{nh, hd + 2});
      const int64_t s0 = start + std::min(len, p * chunk),
                    l = std::max<int64_t>(0, std::min(chunk, len - p * chunk));
      ASSERT_TRUE(
          run_task(params(s0, l, 2), in, std::span<const Tensor>(&parts.back().t, 1), ws).ok());
    }
    std::vector<Tensor> pt;
    for (auto& p : parts) pt.push_back(p.t);
    Owned comb(ir::DType::F32, {1, nh * hd});
    ir::Task ct = task(ir::Op::ATTENTION_COMBINE, {{"head_dim", hd}, {"n_heads", nh}});
    ASSERT_TRUE(run_task(ct, pt, std::span<const Tensor>(&comb.t, 1), ws).ok());
    for (int64_t i = 0; i < nh * hd; ++i)
      EXPECT_NEAR(comb.at(i), ref[static_cast<size_t>(i)], 2e-6) << trial;
  }
}

TEST(Fused, AddThenRmsnormRecipeIsBitIdenticalToTheUnfusedSteps) {
  Rng r(4);
  Workspace ws;
  Owned a(ir::DType::F32, {1, 16}), b(ir::DType::F32, {1, 16}), w(ir::DType::F32, {16});
  for (int64_t i = 0; i < 16; ++i) {
    a.set(i, r.uni(-2, 2));
    b.set(i, r.uni(-2, 2));
    w.set(i, r.uni(0.5, 1.5));
  }
  Owned s(ir::DType::F32, {1, 16}), unfused(ir::DType::F32, {1, 16}),
      fused(ir::DType::F32, {1, 16});
  std::vector<Tensor> ab{a.t, b.t};
  ASSERT_TRUE(run_task(task(ir::Op::ADD, {}), ab, std::span<const Tensor>(&s.t, 1), ws).ok());
  std::vector<Tensor> sw{s.t, w.t};
  ASSERT_TRUE(run_task(task(ir::Op::RMSNORM, {{"hidden", 16}}, {{"eps", 1e-5}}), sw,
                       std::span<const Tensor>(&unfused.t, 1), ws)
                  .ok());
  ir::Task f;
  f.op = ir::Op::FUSED;
  f.params.push_back({"recipe", ir::ParamValue::of_json(ir::JsonValue(ojson::parse(R"({"steps": [
      {"op": 11, "args": [{"in": 0}, {"in": 1}], "out": 0, "out_shape": [1, 16], "out_dtype": "float32"},
      {"op": 3, "args": [{"s": 0}, {"in": 2}], "out": "final", "params": {"eps": 1e-05, "hidden": 16}}]})")))});
  std::vector<Tensor> abw{a.t, b.t, w.t};
  Status st = run_task(f, abw, std::span<const Tensor>(&fused.t, 1), ws);
  ASSERT_TRUE(st.ok()) << ir::error_messages(st.diagnostics);
  EXPECT_EQ(0, std::memcmp(fused.t.data, unfused.t.data, 64));
}

TEST(Errors, BadShapesAndRecipesAreValuesNotCrashes) {
  Workspace ws;
  Owned x(ir::DType::F32, {1, 8}), w(ir::DType::F32, {4, 8}), out(ir::DType::F32, {1, 4}),
      ids(ir::DType::I32, {1});
  std::vector<Tensor> in{x.t, w.t};
  Status s = run_task(task(ir::Op::GEMV_TILE, {{"K", 8}, {"N_tile", 4}, {"n_off", 2}}), in,
                      std::span<const Tensor>(&out.t, 1), ws);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(ir::error_messages(s.diagnostics).find("tile columns"), std::string::npos)
      << ir::error_messages(s.diagnostics);
  ids.set(0, 9);
  std::vector<Tensor> emb{ids.t, w.t};
  s = run_task(task(ir::Op::EMBED, {{"hidden", 8}}), emb, std::span<const Tensor>(&x.t, 1), ws);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(ir::error_messages(s.diagnostics).find("outside the table"), std::string::npos)
      << ir::error_messages(s.diagnostics);
  ir::Task f;
  f.op = ir::Op::FUSED;
  f.params.push_back({"recipe", ir::ParamValue::of_json(ir::JsonValue(
                                    ojson::parse(R"({"steps": [{"op": 19, "out": "final"}]})")))});
  s = run_task(f, in, std::span<const Tensor>(&out.t, 1), ws);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(ir::error_messages(s.diagnostics).find("nested FUSED"), std::string::npos)
      << ir::error_messages(s.diagnostics);
  s = run_task(task(ir::Op::ROPE, {{"head_dim", 7}}, {{"theta", 10000.0}}), emb,
               std::span<const Tensor>(&x.t, 1), ws);
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace amk::inst
