// End to end: a lowered program run on the VM (several workers, modes, KV carried across steps)
// gives the direct evaluation's logits (one untiled task per graph node, serial) within 1e-5, for
// tilings, fusion on and off, split-KV, pages, explicit placement and several positions.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "app/decode.h"
#include "app/machine.h"
#include "lower/config.h"
#include "lower/lower.h"
#include "lower_support.h"
#include "support.h"
#include "vm/safetensors.h"
#include "vm/vm.h"
#include "vm/weights.h"

namespace amk::lower {
namespace {

using test_support::config;
using test_support::model;
using test_support::target;

using json = nlohmann::ordered_json;

// Decodes `steps` positions (prompt token 3, then greedy) with the scheduled program and checks
// every step against the direct evaluation (app::decode with verify, the loop amk generate runs);
// returns the largest |logit difference|. In AICore mode the topology, scheduler count and core
// types come from the target and `workers` is the core threads.
double max_error(const std::string& name, const std::string& tgt, const ir::ScheduleConfig& cfg,
                 int steps, int workers, vm::Mode mode, ir::DType dtype = ir::DType::F32) {
  const ModelSpec m = model(name);
  const targets::TargetSpec t = target(tgt);
  app::DecodeSource src;
  src.model = &m;
  src.target = &t;
  src.config = cfg;
  src.lower.dtype = dtype;
  LowerOptions ro;
  ro.reference = true;
  ro.dtype = dtype;
  const auto image =
      amk::test::must(vm::random_weights_image(amk::test::must(lower(m, t, cfg, ro)), 11));
  auto w = amk::test::must(vm::SafeTensors::parse(image, "random"));
  app::DecodeOptions o;
  o.prompt = {3};
  o.max_tokens = steps;
  o.verify = true;
  o.tolerance = INFINITY;  // report the error; the tests compare it
  o.weights = w.get();
  o.run.workers = workers;
  o.run.seed = 5;
  if (mode == vm::Mode::Aicore) {
    if (ir::Status st = app::set_mode("aicore", &t, o.run); !st)
      throw std::runtime_error(amk::test::text(st.diagnostics));
    o.run.aicore.core_threads = workers;
  } else {
    o.run.mode = mode;
  }
  auto r = app::decode(src, o);
  if (!r) throw std::runtime_error(amk::test::text(r.diagnostics));
  EXPECT_EQ(r->steps, static_cast<size_t>(steps));
  return r->max_error;
}

struct Case {
  const char* name;
  json cfg;
};

const Case kCases[] = {
    {"default", json::object()},
    {"narrow_tiles_pages_linear",
     {{"tiling", {{"gemv", {{"N_tile", 16}}}}}, {"page_allocation", "linear"}}},
    {"split_kv_graph_color",
     {{"tiling", {{"gemv", {{"N_tile", 32}}}, {"attention", {{"n_partitions", 4}}}}},
      {"page_allocation", "graph_color"}}},
    {"kv_block_round_robin",
     {{"tiling", {{"attention", {{"kv_block", 8}}}}}, {"sm_assignment", "round_robin"}}},
    {"fusion_all",
     {{"tiling", {{"gemv", {{"N_tile", 64}}}}},
      {"fusion_grouping",
       json::array({json::array({"rope_q.reshape", "rope_q"}),
                    json::array({"rope_k.reshape", "rope_k"}),
                    json::array({"attn_residual", "post_norm"}),
                    json::array({"swiglu", "down_proj"}), json::array({"attention", "o_proj"})})}}},
    {"explicit_map_no_pages",
     {{"sm_assignment", {{"0", 5}, {"3", 1}}}, {"page_allocation", "none"}}},
};

TEST(VmEquivalence, LoweredProgramsMatchTheDirectEvaluationAcrossConfigsAndPositions) {
  for (const char* name : {"toy-1L", "toy-2L"})
    for (const Case& c : kCases)
      for (int workers : {1, 2, 3}) {
        const double e = max_error(name, "h100", config(c.cfg), 24, workers, vm::Mode::Multiplexed);
        EXPECT_LE(e, 1e-5) << name << " " << c.name << " workers " << workers;
      }
}

TEST(VmEquivalence, SmallFourLayerModelMatchesTooIncludingACriticalPathRenumbering) {
  // On a2a3, load_balance renumbers small-4L's tasks in critical-path order (see the lowering
  // test); the renumbered schedule computes the same logits.
  const json cases[] = {
      {{"sm_assignment", "load_balance"}},
      {{"tiling", {{"gemv", {{"N_tile", 32}}}, {"attention", {{"n_partitions", 4}}}}},
       {"sm_assignment", "round_robin"},
       {"page_allocation", "linear"}},
      {{"fusion_grouping", json::array({json::array({"rope_q.reshape", "rope_q"}),
                                        json::array({"rope_k.reshape", "rope_k"}),
                                        json::array({"attn_residual", "post_norm"})})}},
  };
  for (const json& c : cases)
    for (int workers : {1, 3})
      EXPECT_LE(max_error("small-4L", "a2a3", config(c), 3, workers, vm::Mode::Multiplexed), 1e-5)
          << c.dump() << " workers " << workers;
}

TEST(VmEquivalence, DeterministicSeedsAndThreadPerSmAgreeToo) {
  for (const Case& c : kCases) {
    EXPECT_LE(max_error("toy-2L", "a2a3", config(c.cfg), 12, 1, vm::Mode::Deterministic), 1e-5)
        << c.name;
    EXPECT_LE(max_error("toy-1L", "tx8", config(c.cfg), 12, 2, vm::Mode::ThreadPerSm), 1e-5)
        << c.name;
  }
}

TEST(VmEquivalence, AicoreModeOnAscendTargetsMatchesTheDirectEvaluation) {
  for (const Case& c : kCases)
    for (int core_threads : {0, 2}) {
      EXPECT_LE(max_error("toy-2L", "a2a3", config(c.cfg), 8, core_threads, vm::Mode::Aicore), 1e-5)
          << c.name << " core threads " << core_threads;
      EXPECT_LE(max_error("toy-1L", "a5", config(c.cfg), 8, core_threads, vm::Mode::Aicore), 1e-5)
          << c.name << " core threads " << core_threads;
    }
}

TEST(VmEquivalence, Bf16SchedulesMatchTheirDirectEvaluation) {
  for (const Case& c : kCases)
    EXPECT_LE(
        max_error("toy-2L", "h100", config(c.cfg), 8, 2, vm::Mode::Multiplexed, ir::DType::BF16),
        1e-5)
        << c.name;
}

// vm::random_weights_image draws a quantised weight's scales so that its tiles dequantise within
// +-1/sqrt(K), the bound of the float matrices it draws (and not three orders of magnitude past
// it), every scale positive, for int8 and int4 as amk and as AMK declare them.
TEST(VmEquivalence, RandomQuantisedWeightsDequantiseWithinTheFloatMatricesBound) {
  for (Quant q : {Quant::Int8, Quant::Int4})
    for (bool compat : {false, true}) {
      LowerOptions o;
      o.quant = q;
      o.amk_compat = compat;
      o.quant_group = 32;
      const ir::Program p =
          amk::test::must(lower(model("toy-2L"), target("h100"), default_config(), o));
      const auto image = amk::test::must(vm::random_weights_image(p, 3));
      auto w = amk::test::must(vm::SafeTensors::parse(image, "random"));
      std::set<int64_t> seen;
      for (const ir::Task& t : p.tasks) {
        if (ir::gemv_quant(t.int_param("qdtype").value_or(0), t.inputs.size()) == Quant::None ||
            !seen.insert(t.inputs[2]).second)
          continue;
        const ir::Buffer& wb = p.buffers[static_cast<size_t>(t.inputs[1])];
        const ir::Buffer& sb = p.buffers[static_cast<size_t>(t.inputs[2])];
        const vm::StTensor* wt = w->find(wb.source.value_or(wb.name));
        const vm::StTensor* st = w->find(sb.source.value_or(sb.name));
        ASSERT_TRUE(wt && st) << wb.name;
        std::vector<float> s(static_cast<size_t>(st->numel()));
        vm::st_convert(*st, s.data(), ir::DType::F32, st->numel());
        const int64_t K = *t.int_param("K"), N = sb.shape[0], G = sb.shape[1];
        const int64_t group = (K + G - 1) / G, row = q == Quant::Int8 ? K : (K + 1) / 2;
        double top = 0;
        for (int64_t n = 0; n < N; ++n)
          for (int64_t k = 0; k < K; ++k) {
            const uint8_t byte =
                wt->data[static_cast<size_t>(n * row + (q == Quant::Int8 ? k : k / 2))];
            const int code = q == Quant::Int8 ? static_cast<int8_t>(byte)
                                              : ((k & 1) ? byte >> 4 : byte & 0xF) - 8;
            const float scale = s[static_cast<size_t>(n * G + k / group)];
            ASSERT_GT(scale, 0.0f) << sb.name;
            top = std::max(top, std::abs(code * static_cast<double>(scale)));
          }
        const double bound = 1.0 / std::sqrt(static_cast<double>(K));
        EXPECT_LE(top, bound * (1 + 1e-3)) << wb.name << " K=" << K;  // + the scales' fp16 rounding
        EXPECT_GE(top, 0.25 * bound) << wb.name << " K=" << K;
      }
      EXPECT_GE(seen.size(), 7u) << ir::quant_name(q);  // q, k, v, o, gate, up, down at least
    }
}

}  // namespace
}  // namespace amk::lower
