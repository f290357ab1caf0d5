// Runtimes as data: every built-in profile parses, round-trips byte for byte through the one
// field table, and every target names one; malformed profiles are errors naming the file, the
// pointer and a line:column. The runtime model on small hand-made programs: dependencies across
// workers cost what the profile says, bytes in flight follow the knobs monotonically until the
// bandwidth saturates, and no prediction is below the bounds.
#include "targets/runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/fileio.h"
#include "support.h"
#include "targets/calibrate.h"
#include "targets/cost.h"
#include "targets/simulate.h"
#include "targets/target.h"

namespace amk::targets {
namespace {

Runtime must_runtime(const std::string& name) {
  auto r = load_runtime(name);
  if (!r) throw std::runtime_error(test::text(r.diagnostics));
  return *r;
}

TEST(Runtimes, EveryBuiltinParsesRoundTripsAndIsNamedByItsFile) {
  const auto names = builtin_runtime_names();
  for (const char* want : {"amk-cuda", "hazy", "mpk", "pto", "host"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  for (const std::string& n : names) {
    auto text = ir::read_file(std::string(AMK_SOURCE_DIR) + "/runtimes/" + n + ".json");
    ASSERT_TRUE(text) << n;
    const Runtime r = must_runtime(n);
    EXPECT_EQ(r.name, n);
    EXPECT_EQ(write_runtime(r), *text) << n << ": not in the writer's bytes";
    auto again = parse_runtime(write_runtime(r), "again.json");
    ASSERT_TRUE(again) << test::text(again.diagnostics);
    EXPECT_EQ(*again, r);
    EXPECT_EQ(builtin_runtime(n)->name, n);
  }
  EXPECT_EQ(builtin_runtime("nope"), nullptr);
}

TEST(Runtimes, EveryTargetNamesABuiltinRuntimeOfItsFamily) {
  for (const std::string& n : builtin_target_names()) {
    auto t = load_target(n);
    ASSERT_TRUE(t) << n;
    const Runtime* r = builtin_runtime(t->runtime);
    ASSERT_NE(r, nullptr) << n << " names " << t->runtime;
    EXPECT_EQ(r->family, t->family) << n;
    EXPECT_EQ(&default_runtime(*t), r);
    EXPECT_EQ(&default_runtime(t->record), r);  // a record embedded in a program
  }
  ir::Target custom;
  custom.name = "my-gpu";
  EXPECT_EQ(default_runtime(custom).name, "amk-cuda");
}

TEST(Runtimes, ATargetFileWithoutARuntimeTakesItsFamilys) {
  std::string text = write_target_spec(*load_target("a2a3"));
  const std::string line = "\"runtime\": \"pto\",";
  const auto at = text.find(line);
  ASSERT_NE(at, std::string::npos);
  text.erase(at, line.size());
  auto t = parse_target_spec(text, "a.json");
  ASSERT_TRUE(t) << test::text(t.diagnostics);
  EXPECT_EQ(t->runtime, "pto");
  text.insert(at, "\"runtime\": \"warp9\",");
  auto bad = parse_target_spec(text, "a.json");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.diagnostics[0].pointer, "/amk/runtime");
}

TEST(Runtimes, MalformedProfilesAreErrorsWithPointersAndPositions) {
  const std::string base = write_runtime(must_runtime("mpk"));
  struct Case {
    std::string from, to, pointer;
  };
  const Case cases[] = {
      {"\"dispatch_ns\": 600", "\"dispatch_ns\": -1", "/dispatch_ns"},
      {"\"dispatch_ns\": 600", "\"dispatch_ns\": \"fast\"", "/dispatch_ns"},
      {"\"staging\": \"fixed\"", "\"staging\": \"cloud\"", "/staging"},
      {"\"family\": \"gpu\"", "\"family\": 3", "/family"},
      {"\"name\": \"mpk\",", "\"name\": \"mpk\", \"warp_speed\": 9,", "/warp_speed"},
      {"\"latency_ns\": 600,", "", "/latency_ns"},  // missing
      {"\"peak_fraction\": 0.92", "\"peak_fraction\": 1.5", "/peak_fraction"},
  };
  for (const Case& c : cases) {
    std::string text = base;
    const auto at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.from;
    text.replace(at, c.from.size(), c.to);
    auto r = parse_runtime(text, "r.json");
    ASSERT_FALSE(r) << c.to;
    const ir::Diagnostic& d = r.diagnostics[0];
    EXPECT_EQ(d.code, "runtime.field");
    EXPECT_EQ(d.pointer, c.pointer) << c.to;
    EXPECT_EQ(d.file, "r.json");
    if (!c.to.empty()) {
      EXPECT_GT(d.line, 1) << c.to;  // where the field is
    }
  }
  auto syntax = parse_runtime("{\"name\": ", "r.json");
  ASSERT_FALSE(syntax);
  EXPECT_GT(syntax.diagnostics[0].line, 0);
  EXPECT_FALSE(load_runtime("warp9"));
  EXPECT_FALSE(load_runtime("/nonexistent/r.json"));
}

TEST(Runtimes, TheFieldTableDocumentsEveryFieldOnce) {
  std::set<std::string_view> keys;
  for (const RuntimeField& f : runtime_fields()) {
    EXPECT_TRUE(keys.insert(f.key).second) << f.key;
    EXPECT_FALSE(f.doc.empty()) << f.key;
    EXPECT_NE(f.text == nullptr, f.number == nullptr) << f.key;
    if (f.number) {
      EXPECT_LT(f.min, f.max) << f.key;
    }
  }
  // Every field is written (an optional one when it is set): a profile's JSON has exactly the
  // table's keys (and no free-form ones when it has none).
  Runtime r = must_runtime("mpk");
  r.sources = {};
  r.fit = {};
  size_t optional = 0;
  for (const RuntimeField& f : runtime_fields()) {
    optional += f.optional;
    EXPECT_TRUE(!f.optional || f.number || !f.choices.empty())
        << f.key << ": an optional text field has choices";
    if (f.optional && f.number) r.*f.number = f.max;
    if (f.optional && f.text) r.*f.text = std::string(f.choices.back());
  }
  EXPECT_EQ(nlohmann::ordered_json::parse(write_runtime(r)).size(), keys.size());
  EXPECT_EQ(*parse_runtime(write_runtime(r), "written").value, r);
  for (const RuntimeField& f : runtime_fields()) {
    if (f.optional && f.number) r.*f.number = 0;
    if (f.optional && f.text) r.*f.text = {};
  }
  EXPECT_EQ(nlohmann::ordered_json::parse(write_runtime(r)).size(), keys.size() - optional);
}

TEST(Runtimes, FusionForARuntimeThatTrapsOnFusedTasksIsAWarning) {
  const Runtime cuda = must_runtime("amk-cuda"), mpk = must_runtime("mpk");
  EXPECT_EQ(cuda.fused_tasks, "trap") << "AMK's CUDA VM has no FUSED opcode";
  EXPECT_EQ(mpk.fused_tasks, "") << "not in its file: it runs them";
  ir::ScheduleConfig c = ir::ScheduleConfig::defaults();
  EXPECT_TRUE(runtime_limits(cuda, c).empty()) << "no fusion";
  c.fusion_grouping =
      ir::JsonValue(nlohmann::ordered_json::parse(R"([["attn_residual", "post_norm"]])"));
  const ir::Diagnostics d = runtime_limits(cuda, c);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].code, "runtime.limit");
  EXPECT_EQ(d[0].severity, ir::Severity::Warning);
  EXPECT_EQ(d[0].pointer, "/fusion_grouping");
  EXPECT_NE(d[0].message.find("amk-cuda"), std::string::npos) << d[0].message;
  EXPECT_TRUE(runtime_limits(mpk, c).empty());
  // The field is text with two choices.
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(write_runtime(mpk));
  j["fused_tasks"] = "sometimes";
  auto bad = parse_runtime(j.dump(), "r.json");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.diagnostics.front().pointer, "/fused_tasks") << bad.diagnostics.front().message;
}

TEST(Runtimes, AnL2HintThatMisSizesI4WeightsIsAWarningAtDepthAboveZero) {
  // AMK's VM sizes the L2 hint of an I4 weight as 4-byte elements (round 7 on the H100): a
  // program whose GEMV reads an I4 weight warns at pipelining_depth > 0, not at 0, not for the
  // same bytes declared U8, and not under a runtime that sizes it exactly.
  const Runtime cuda = must_runtime("amk-cuda"), mpk = must_runtime("mpk");
  EXPECT_EQ(cuda.i4_hint, "oversized");
  EXPECT_EQ(mpk.i4_hint, "");
  auto program = [](ir::DType d) {
    ir::Program p;
    const int64_t x = p.add_buffer("x", ir::BufferKind::IO_INPUT, ir::DType::F32, {1, 64});
    const int64_t w = p.add_buffer("w", ir::BufferKind::WEIGHT, d,
                                   {8, d == ir::DType::I4 ? int64_t{64} : int64_t{32}});
    const int64_t s = p.add_buffer("s", ir::BufferKind::WEIGHT, ir::DType::F16, {8, 1});
    const int64_t y = p.add_buffer("y", ir::BufferKind::IO_OUTPUT, ir::DType::F32, {1, 8});
    ir::Task t;
    t.op = ir::Op::GEMV_TILE;
    t.inputs = {x, w, s};
    t.outputs = {y};
    t.out_counter = p.add_counter();
    p.tasks.push_back(t);
    return p;
  };
  const ir::Program i4 = program(ir::DType::I4), u8 = program(ir::DType::U8);
  ir::ScheduleConfig c = ir::ScheduleConfig::defaults();  // depth 2
  const ir::Diagnostics d = runtime_limits(cuda, c, &i4);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].code, "runtime.limit");
  EXPECT_EQ(d[0].pointer, "/pipelining_depth");
  EXPECT_TRUE(runtime_limits(cuda, c, &u8).empty());
  EXPECT_TRUE(runtime_limits(cuda, c).empty()) << "no program: nothing to say";
  EXPECT_TRUE(runtime_limits(mpk, c, &i4).empty());
  c.pipelining_depth = ir::JsonValue(nlohmann::ordered_json(0));
  EXPECT_TRUE(runtime_limits(cuda, c, &i4).empty());
}

TEST(Runtimes, ALaunchLimitIsOptionalAndAConfigAboveItIsAWarning) {
  const Runtime cuda = must_runtime("amk-cuda"), mpk = must_runtime("mpk");
  EXPECT_EQ(cuda.max_threads_per_block, 256) << "amk-cuda's loader refuses more";
  EXPECT_EQ(mpk.max_threads_per_block, 0) << "not in its file: no limit but the target's";
  ir::ScheduleConfig c = ir::ScheduleConfig::defaults();
  c.threads_per_block = ir::JsonValue(nlohmann::ordered_json(512));
  const ir::Diagnostics d = runtime_limits(cuda, c);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].code, "runtime.limit");
  EXPECT_EQ(d[0].severity, ir::Severity::Warning);
  EXPECT_EQ(d[0].pointer, "/threads_per_block");
  EXPECT_TRUE(runtime_limits(mpk, c).empty());
  c.threads_per_block = ir::JsonValue(nlohmann::ordered_json(256));
  EXPECT_TRUE(runtime_limits(cuda, c).empty());
  // Out of range is an error with its pointer, like any number field.
  std::string text = write_runtime(cuda);
  const std::string at = "\"max_threads_per_block\": 256";
  ASSERT_NE(text.find(at), std::string::npos) << text;
  text.replace(text.find(at), at.size(), "\"max_threads_per_block\": -3");
  auto bad = parse_runtime(text, "r.json");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.diagnostics.front().pointer, "/max_threads_per_block");
}

// A weight-streaming tile of `bytes` (and as many flops) of p's weight buffer `w`, counting on
// `counter`.
ir::Task tile(int64_t w, int64_t counter, int64_t bytes) {
  ir::Task t;
  t.op = ir::Op::GEMV_TILE;
  t.inputs = {w};
  t.out_counter = counter;
  t.est_bytes = bytes;
  t.est_flops = bytes;
  return t;
}
int64_t weights(ir::Program& p) {
  return p.add_buffer("w", ir::BufferKind::WEIGHT, ir::DType::BF16, {512, 1024});
}

// A chain of `n` weight-streaming tasks (1 MiB each), task i on worker `sm(i)`, under `cfg`.
ir::Program chain(int n, const std::function<int64_t(int)>& sm, ir::ScheduleConfig cfg) {
  ir::Program p;
  const int64_t w = weights(p);
  for (int i = 0; i < n; ++i) {
    ir::Task t = tile(w, p.add_counter(), 1 << 20);
    t.sm = sm(i);
    if (i > 0) t.waits.push_back({i - 1, 1, {}});
    p.tasks.push_back(t);
  }
  p.config = std::move(cfg);
  return p;
}

ir::ScheduleConfig with(int threads, int smem, int depth) {
  ir::ScheduleConfig c = ir::ScheduleConfig::defaults();
  c.threads_per_block = ir::JsonValue(nlohmann::ordered_json(threads));
  c.smem_bytes_per_block = ir::JsonValue(nlohmann::ordered_json(smem));
  c.pipelining_depth = ir::JsonValue(nlohmann::ordered_json(depth));
  return c;
}

TEST(RuntimeModel, ADependencyAcrossWorkersCostsTheRemoteSignal) {
  const ir::Target h = load_target("h100")->record;
  const Runtime& rt = *builtin_runtime("amk-cuda");
  const auto cfg = with(256, 0, 0);  // no prefetch: an idle worker gains nothing by waiting
  const CostEstimate same = estimate(chain(
                                         8, [](int) { return 0; }, cfg),
                                     h, rt);
  const CostEstimate across = estimate(chain(
                                           8, [](int i) { return i % 2; }, cfg),
                                       h, rt);
  // 7 dependencies cross workers: each pays remote_ns more than one that stays on its worker.
  const double per = rt.remote_ns * 1e-3;
  EXPECT_NEAR(across.queue_us - same.queue_us, 7 * per, 1e-9);
  EXPECT_GT(across.breakdown.dependency_us, same.breakdown.dependency_us);
}

TEST(RuntimeModel, AnL2PrefetchSharesTheWorkersPartOfHbmWithTheTaskBeforeIt) {
  // Waves of tiles, one per SM, each wave after the whole wave before it: every SM streams at its
  // share of HBM. AMK's VM hints each next tile into L2 before its wait; the hint and the tile
  // still streaming share that part, so the schedule itself moves no more than HBM carries (it
  // is not the prediction's bandwidth bound that keeps it there).
  const ir::Target h = load_target("h100")->record;
  const Runtime& rt = *builtin_runtime("amk-cuda");
  ASSERT_EQ(rt.prefetch, "l2");
  const int sms = static_cast<int>(h.num_sms.i), waves = 8;
  for (int64_t bytes : {64 << 10, 256 << 10, 1 << 20})
    for (int threads : {256, 1024})
      for (int depth : {0, 1, 4}) {
        ir::Program p;
        const int64_t w = weights(p);
        for (int j = 0; j < waves; ++j) {
          const int64_t counter = p.add_counter();
          for (int s = 0; s < sms; ++s) {
            ir::Task t = tile(w, counter, bytes);
            t.sm = s;
            if (j > 0) t.waits.push_back({counter - 1, sms, {}});
            p.tasks.push_back(t);
          }
        }
        p.config = with(threads, 0, depth);
        const CostEstimate c = estimate(p, h, rt);
        const double streaming_us = c.queue_us - c.breakdown.launch_us;
        RecordProperty(fmt::format("{}B/{}t/d{}", bytes, threads, depth),
                       fmt::format("{:.1f} of {:.1f} us", streaming_us, c.bandwidth_us));
        EXPECT_GE(streaming_us, c.bandwidth_us * (1 - 1e-9))
            << bytes << " B, " << threads << " threads, depth " << depth;
      }
}

TEST(RuntimeModel, ADequantisingGemvStreamsAtItsOwnRate) {
  // AMK's int8 GEMV loads its weights otherwise than its bf16 one (quant_*): a chain of tiles
  // marked quantised (params.qdtype, as the quantised lowering marks them) streams at the quant
  // rate, from DRAM (depth 0) and after the L2 hint (depth 2); without quant_* a runtime streams
  // them like any other tile.
  const ir::Target h = load_target("h100")->record;
  const Runtime& rt = *builtin_runtime("amk-cuda");
  ASSERT_GT(rt.quant_latency_ns, 0);
  Runtime plain_rt = rt;
  plain_rt.quant_bytes_per_thread = plain_rt.quant_latency_ns =
      plain_rt.quant_prefetched_latency_ns = 0;
  plain_rt.quant_hint.clear();
  for (int depth : {0, 2}) {
    const ir::Program plain = chain(
        8, [](int) { return 0; }, with(256, 0, depth));
    ir::Program quant = plain;
    for (ir::Task& t : quant.tasks) t.set_param("qdtype", ir::ParamValue::of_int(6));
    const double base = estimate(plain, h, rt).queue_us;
    const CostEstimate q = estimate(quant, h, rt);
    EXPECT_DOUBLE_EQ(estimate(quant, h, plain_rt).queue_us, base) << depth;
    // Each tile's 1 MiB at the quant rate instead of the plain one, the rest unchanged.
    const Machine m(&*quant.config, h, rt);
    const double mib = 1 << 20;
    if (depth == 0) {
      EXPECT_NEAR(q.queue_us - base, 8 * (mib / m.qstream - mib / m.stream), 1e-6 * base);
    }
    EXPECT_GT(q.queue_us, base * 1.5) << depth;
    EXPECT_GT(m.qstream, 0);
    EXPECT_LT(m.qstream, m.stream);
  }
}

TEST(RuntimeModel, ADequantisingGemvStreamsAfterTheNextTasksHintWhereItsRuntimeSaysSo) {
  // quant_hint ahead (AMK's VM, round 9): a quantised tile's own loads wait behind the L2 hint of
  // the next weight task on its worker, each at most its bytes at the worker's share of HBM; a
  // plain tile, depth 0 (no hint) and quant_hint beside are unchanged.
  const ir::Target h = load_target("h100")->record;
  Runtime ahead = *builtin_runtime("amk-cuda");
  ASSERT_EQ(ahead.quant_hint, "ahead");
  Runtime beside = ahead;
  beside.quant_hint = "beside";
  for (int depth : {0, 1, 2}) {
    const ir::Program plain = chain(
        8, [](int) { return 0; }, with(256, 0, depth));
    ir::Program quant = plain;
    for (ir::Task& t : quant.tasks) t.set_param("qdtype", ir::ParamValue::of_int(6));
    EXPECT_DOUBLE_EQ(estimate(plain, h, ahead).queue_us, estimate(plain, h, beside).queue_us);
    const double a = estimate(quant, h, ahead).queue_us, b = estimate(quant, h, beside).queue_us;
    if (depth == 0) {
      EXPECT_DOUBLE_EQ(a, b);
      continue;
    }
    const Machine m(&*quant.config, h, ahead);
    const double per_hint = (1 << 20) / std::min(m.peak, m.hbm);  // seven tiles have a next one
    EXPECT_GT(a, b + per_hint) << depth;
    EXPECT_LE(a, b + 7 * per_hint * (1 + 1e-9)) << depth;
  }
}

TEST(RuntimeModel, MoreBytesInFlightIsNeverSlowerAndSaturates) {
  const ir::Target h = load_target("h100")->record;
  for (const char* name : {"amk-cuda", "mpk", "pto"}) {
    Runtime rt = must_runtime(name);
    rt.staging = "shared";  // threads, shared memory and stages all feed the bytes in flight
    double last = INFINITY, last_flight = 0;
    for (int threads : {64, 128, 256, 512, 1024})
      for (int depth : {1, 2, 4}) {
        const CostEstimate c =
            estimate(chain(
                         4, [](int) { return 0; }, with(threads, 1 << 17, depth)),
                     h, rt);
        if (c.bytes_in_flight > last_flight) {
          EXPECT_LE(c.queue_us, last + 1e-9) << name << " " << threads << "x" << depth;
          last = c.queue_us;
          last_flight = c.bytes_in_flight;
        }
      }
    // Saturated: one worker streams no faster than its peak, however much is in flight.
    const CostEstimate big = estimate(chain(
                                          4, [](int) { return 0; }, with(1024, 1 << 17, 4)),
                                      h, rt);
    EXPECT_LE(big.worker_gbs, rt.worker_bytes_per_cycle * h.clock_ghz.as_double() + 1e-9);
  }
}

TEST(RuntimeModel, APredictionIsNeverBelowTheFloorOrTheBandwidthBound) {
  for (const std::string& tn : builtin_target_names())
    for (const std::string& rn : builtin_runtime_names()) {
      const ir::Target t = load_target(tn)->record;
      const Runtime& rt = *builtin_runtime(rn);
      const CostEstimate c = estimate(chain(
                                          16, [](int i) { return i % 3; }, with(256, 0, 2)),
                                      t, rt);
      EXPECT_GE(c.makespan_us, c.floor_us) << tn << "/" << rn;
      EXPECT_GE(c.makespan_us, c.bandwidth_us) << tn << "/" << rn;
      EXPECT_GE(c.makespan_us, c.queue_us) << tn << "/" << rn;
      const Breakdown& b = c.breakdown;
      EXPECT_NEAR(
          b.launch_us + b.dispatch_us + b.dependency_us + b.sync_us + b.memory_us + b.compute_us,
          c.queue_us, 1e-6 * c.queue_us)
          << tn << "/" << rn;
    }
}

TEST(Calibration, RankCorrelationIsSpearmans) {
  const std::vector<double> a = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(rank_correlation(a, std::vector<double>{10, 20, 30, 40, 50}), 1.0);
  EXPECT_DOUBLE_EQ(rank_correlation(a, std::vector<double>{5, 4, 3, 2, 1}), -1.0);
  // Monotone but not linear: ranks only.
  EXPECT_DOUBLE_EQ(rank_correlation(a, std::vector<double>{1, 8, 27, 64, 1e9}), 1.0);
  // One swap of neighbours in five: 1 - 6*2/(5*24) = 0.9; ties share their mean rank.
  EXPECT_NEAR(rank_correlation(a, std::vector<double>{1, 3, 2, 4, 5}), 0.9, 1e-12);
  EXPECT_NEAR(rank_correlation(std::vector<double>{1, 1, 2}, std::vector<double>{1, 2, 3}),
              std::sqrt(0.75), 1e-12);
  EXPECT_EQ(rank_correlation(a, std::vector<double>(5, 7.0)), 0.0);
  EXPECT_EQ(rank_correlation(std::vector<double>{1}, std::vector<double>{2}), 0.0);
}

// `k` independent weight-streaming tasks of `bytes` each, placed by the runtime.
ir::Program wave(int k, int64_t bytes) {
  ir::Program p;
  const int64_t w = weights(p);
  for (int i = 0; i < k; ++i) p.tasks.push_back(tile(w, p.add_counter(), bytes));
  p.config = with(256, 0, 0);  // no L2 prefetch: a later tile is not loaded before its turn
  return p;
}

TEST(RuntimeModel, TilesGoOverTheWorkersInWaves) {
  const ir::Target h = load_target("h100")->record;  // 132 SMs
  for (const char* name : {"amk-cuda", "mpk"}) {
    const Runtime& rt = must_runtime(name);
    auto at = [&](int k) { return estimate(wave(k, 64 << 10), h, rt).makespan_us; };
    const double one = at(1), full = at(132), over = at(133), two = at(264);
    RecordProperty(std::string(name) + " 1/132/133/264",
                   fmt::format("{:.2f} {:.2f} {:.2f} {:.2f}", one, full, over, two));
    // One tile past a full wave waits for a worker: a second wave, at least one tile alone
    // long; a second full wave costs no less; fewer tiles than workers no more than a full wave.
    EXPECT_GE(over - full, 0.99 * (one - rt.launch_us)) << name << " " << one << " " << full;
    EXPECT_GE(two, over) << name;
    EXPECT_LT(at(100), full + 1e-9) << name;
  }
}

}  // namespace
}  // namespace amk::targets
