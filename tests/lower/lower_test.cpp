// The lowering: model specs and HF configs, config checks, each pass's effect (fusion, placement,
// pages, split-KV, quantisation), the TensorMap, and the property that every random valid config
// of every small shipped model validates with zero errors.
#include "lower/lower.h"
#include "lower_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/json_io.h"
#include "lower/config.h"
#include "lower/deps.h"
#include "lower/random_config.h"
#include "targets/cost.h"
#include "validate/validate.h"

namespace amk::lower {
namespace {

using test_support::config;
using test_support::model;
using test_support::target;

using json = nlohmann::ordered_json;

LowerResult run(const std::string& m, const std::string& t,
                const std::optional<ir::ScheduleConfig>& c, LowerOptions o = {}) {
  return lower(model(m), target(t), c, o);
}

ir::Program must(LowerResult r) {
  return amk::test::must(ir::Result<ir::Program>(std::move(r)));
}

void expect_valid(const ir::Program& p, const std::string& what) {
  validate::Result v = validate::validate(p);
  EXPECT_TRUE(v.ok) << what << "\n" << v.report(true);
}

TEST(ModelSpecs, BuiltinsParseAndRoundTrip) {
  for (const auto& n : builtin_model_names()) {
    ModelSpec m = model(n);
    EXPECT_EQ(m.name, n);
    EXPECT_TRUE(amk::test::ok(check_model(m)));
    auto back = parse_model(write_model(m), "rt");
    ASSERT_TRUE(back) << amk::test::text(back.diagnostics);
    EXPECT_EQ(*back, m);
  }
  EXPECT_EQ(model("llama-3.2-1b").q_dim(), 2048);
  EXPECT_TRUE(model("llama-3.2-1b").tie_embeddings);
  EXPECT_EQ(model("smollm2-135m").n_kv_heads, 3);
}

TEST(ModelSpecs, HuggingFaceConfigLoadsAndUnsupportedFeaturesAreRejected) {
  json hf = {{"model_type", "llama"},        {"hidden_size", 2048},
             {"num_attention_heads", 32},    {"num_key_value_heads", 4},
             {"intermediate_size", 5632},    {"vocab_size", 32000},
             {"num_hidden_layers", 22},      {"rms_norm_eps", 1e-5},
             {"rope_theta", 10000.0},        {"max_position_embeddings", 2048},
             {"tie_word_embeddings", false}, {"hidden_act", "silu"}};
  auto m = parse_model(hf.dump(), "config.json");
  ASSERT_TRUE(m) << amk::test::text(m.diagnostics);
  EXPECT_EQ(m->head_dim, 64);
  EXPECT_EQ(m->keys, WeightKeys::HuggingFace);
  EXPECT_EQ(layer_weight_key(*m, 3, "q"), "model.layers.3.self_attn.q_proj.weight");
  EXPECT_EQ(layer_weight_key(*m, 0, "post_norm"), "model.layers.0.post_attention_layernorm.weight");
  EXPECT_EQ(global_weight_key(*m, "lm_head"), "lm_head.weight");
  struct Bad {
    json patch;
    const char* pointer;
    const char* words;
  };
  const Bad bad[] = {
      {{{"num_local_experts", 8}}, "/num_local_experts", "mixture-of-experts"},
      {{{"kv_lora_rank", 512}}, "/kv_lora_rank", "latent attention"},
      {{{"attention_bias", true}}, "/attention_bias", "biases"},
      {{{"mlp_bias", true}}, "/mlp_bias", "biases"},
      {{{"hidden_act", "gelu"}}, "/hidden_act", "gelu"},
      {{{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 32.0}}}}, "/rope_scaling", "llama3"},
      {{{"model_type", "qwen2_moe"}}, "/model_type", "not a Llama"},
      {{{"hidden_size", 2050}}, "/head_dim", "not a multiple"},
      {{{"num_key_value_heads", 5}}, "n_kv_heads", "multiple"},
      {{{"vocab_size", "many"}}, "/vocab_size", "integer"},
  };
  for (const Bad& b : bad) {
    json j = hf;
    j.update(b.patch);
    auto r = parse_model(j.dump(), "config.json");
    EXPECT_FALSE(r) << b.patch.dump();
    const std::string err = amk::test::text(r.diagnostics);
    EXPECT_NE(err.find(b.pointer), std::string::npos) << err;
    EXPECT_NE(err.find(b.words), std::string::npos) << err;
    EXPECT_EQ(err.rfind("config.json", 0), 0u) << err;
  }
  auto syntax = parse_model("{\"hidden\": 64", "x.json");
  ASSERT_FALSE(syntax);
  EXPECT_EQ(syntax.diagnostics[0].code, "json.syntax");
  EXPECT_EQ(syntax.diagnostics[0].line, 1);  // syntax errors name line:column
  auto bogus = parse_model("{\"hidden\": 64, \"bogus\": 1}", "x.json");
  EXPECT_FALSE(bogus);
  EXPECT_NE(amk::test::text(bogus.diagnostics).find("/bogus"), std::string::npos);
}

TEST(Config, EveryKnobIsCheckedWithAPointer) {
  struct Bad {
    json cfg;
    const char* target;
    const char* pointer;
  };
  const Bad bad[] = {
      {{{"tiling", {{"gemv", {{"N_tile", 0}}}}}}, "h100", "/config/tiling/gemv/N_tile"},
      {{{"tiling", {{"conv", json::object()}}}}, "h100", "/config/tiling/conv"},
      {{{"tiling", {{"attention", {{"n_parts", 2}}}}}}, "h100", "/config/tiling/attention/n_parts"},
      {{{"fusion_grouping", json::array({json::array({"rmsnorm"})})}},
       "h100",
       "/config/fusion_grouping/0"},
      {{{"sm_assignment", "random"}}, "h100", "/config/sm_assignment"},
      {{{"sm_assignment", {{"3", 132}}}}, "h100", "/config/sm_assignment/3"},
      {{{"pipelining_depth", -1}}, "h100", "/config/pipelining_depth"},
      {{{"page_allocation", "buddy"}}, "h100", "/config/page_allocation"},
      {{{"threads_per_block", 100}}, "h100", "/config/threads_per_block"},
      {{{"threads_per_block", 1024}}, "t4", ""},  // t4 allows 1024 threads per SM: fine
      {{{"smem_bytes_per_block", 70000}}, "t4", "/config/smem_bytes_per_block"},
  };
  for (const Bad& b : bad) {
    LowerResult r = run("toy-1L", b.target, config(b.cfg));
    if (std::string(b.pointer).empty()) {
      EXPECT_TRUE(r.value) << amk::test::text(r.diagnostics);
      continue;
    }
    EXPECT_FALSE(r.value) << b.cfg.dump();
    EXPECT_NE(amk::test::text(r.diagnostics).find(b.pointer), std::string::npos)
        << amk::test::text(r.diagnostics);
  }
  // A config file is read by the program reader: AMK int-parses an SM map's keys.
  auto not_int = parse_config(R"({"sm_assignment": {"x": 1}})", "c.json");
  ASSERT_FALSE(not_int);
  EXPECT_EQ(not_int.diagnostics[0].pointer, "/sm_assignment/x");
  auto typo = parse_config("{\"tilling\": {}}", "c.json");
  EXPECT_FALSE(typo);
  EXPECT_EQ(amk::test::text(typo.diagnostics)
                .rfind("c.json:1:2: /tilling: error[config.unknown-field]", 0),
            0u)
      << amk::test::text(typo.diagnostics);
  LowerOptions o;
  o.pos = 256;  // toy max_seq is 256
  EXPECT_FALSE(run("toy-1L", "h100", default_config(), o).value);
}

TEST(Meta, NamesTheModelSpecAndTheConfigHashExceptInAmkCompat) {
  const auto m = model("smollm2-135m");
  const auto t = target("h100");
  const auto c = config({{"tiling", {{"gemv", {{"N_tile", 32}}}}}, {"pipelining_depth", 1}});
  const auto p = lower(m, t, c, {});
  ASSERT_TRUE(p);
  const auto& meta = p.value->meta.json();
  EXPECT_EQ(meta["model"], "smollm2-135m");
  EXPECT_EQ(meta["config_hash"], fmt::format("{:016x}", ir::config_hash(ir::config_key(c))));
  const auto other = lower(m, t, config({{"pipelining_depth", 3}}), {});
  EXPECT_NE(other.value->meta.json()["config_hash"], meta["config_hash"]);
  LowerOptions o;
  o.amk_compat = true;
  const auto compat = lower(m, t, c, o);
  EXPECT_EQ(compat.value->meta.json()["model"], "_HFModel") << "AMK's bytes";
  EXPECT_FALSE(compat.value->meta.json().contains("config_hash"));
}

TEST(Passes, DefaultConfigAssignsEveryTaskAndAllocatesPages) {
  for (const auto& n : builtin_model_names()) {
    ir::Program p = must(run(n, "h100", default_config()));
    EXPECT_TRUE(std::all_of(p.tasks.begin(), p.tasks.end(),
                            [](const ir::Task& t) { return t.sm.has_value(); }));
    ASSERT_TRUE(p.pages.has_value()) << n;
    expect_valid(p, n);
  }
}

TEST(Passes, GraphColorUsesLessScratchThanLinearOnEveryModel) {
  for (const auto& n : builtin_model_names()) {
    ir::Program lin = must(
        run(n, "h100",
            config({{"tiling", {{"gemv", {{"N_tile", 64}}}}}, {"page_allocation", "linear"}})));
    ir::Program col = must(run(
        n, "h100",
        config({{"tiling", {{"gemv", {{"N_tile", 64}}}}}, {"page_allocation", "graph_color"}})));
    const int64_t a = lin.pages->total_scratch_bytes(), b = col.pages->total_scratch_bytes();
    EXPECT_LT(b, a) << n;
    expect_valid(lin, n + " linear");
    expect_valid(col, n + " graph_color");
    RecordProperty(n + "_linear_bytes", std::to_string(a));
    RecordProperty(n + "_graph_color_bytes", std::to_string(b));
  }
  EXPECT_FALSE(run("toy-1L", "h100", config({{"page_allocation", "none"}})).value->pages);
}

TEST(Passes, LoadBalanceNeverLosesToRoundRobinOnLlama1B) {
  // load_balance keeps the best of its list schedules and round robin by the runtime model's
  // prediction, so it can never predict worse (AMK's formula, which it does not read, may).
  for (const char* tn : {"h100", "t4", "a2a3", "tx8"}) {
    const targets::TargetSpec h = target(tn);
    ir::Program rr = must(run("llama-3.2-1b", tn, config({{"sm_assignment", "round_robin"}})));
    ir::Program lb = must(run("llama-3.2-1b", tn, config({{"sm_assignment", "load_balance"}})));
    const targets::CostEstimate a = targets::estimate(rr, h.record),
                                b = targets::estimate(lb, h.record);
    EXPECT_LE(b.queue_us, a.queue_us) << tn;
    EXPECT_LE(b.makespan_us, a.makespan_us) << tn;
    RecordProperty(std::string(tn) + "_round_robin_us", std::to_string(a.makespan_us));
    RecordProperty(std::string(tn) + "_load_balance_us", std::to_string(b.makespan_us));
  }
}

TEST(Passes, LoadBalanceRenumbersInCriticalPathOrderWhereThatBeatsRoundRobin) {
  // small-4L on a2a3 (72 cores): stages of 1.x rounds leave cores idle; ranking k_proj, whose
  // chain to attention (rope_k, k_append) is the longest, ahead of q_proj shortens the queues.
  const targets::TargetSpec h = target("a2a3");
  LowerOptions o;
  o.log = true;
  LowerResult r = run("small-4L", "a2a3", config({{"sm_assignment", "load_balance"}}), o);
  ir::Program rr = must(run("small-4L", "a2a3", config({{"sm_assignment", "round_robin"}})));
  ASSERT_TRUE(r.value) << amk::test::text(r.diagnostics);
  const ir::Program& lb = *r.value;
  expect_valid(lb, "load_balance");
  const targets::CostEstimate a = targets::estimate(rr, h.record),
                              b = targets::estimate(lb, h.record);
  EXPECT_LT(b.queue_us, a.queue_us);
  EXPECT_LT(b.amk_makespan_us, a.amk_makespan_us);
  bool said = false;
  for (const std::string& l : r.log) said = said || l.find("critical-path order") != l.npos;
  EXPECT_TRUE(said) << "the critical-path order did not win";
  // Same tasks, renumbered: labels as a multiset agree, the order does not.
  std::vector<std::string> la, lb_labels;
  for (const ir::Task& t : rr.tasks) la.push_back(t.label);
  for (const ir::Task& t : lb.tasks) lb_labels.push_back(t.label);
  EXPECT_NE(la, lb_labels);
  std::sort(la.begin(), la.end());
  std::sort(lb_labels.begin(), lb_labels.end());
  EXPECT_EQ(la, lb_labels);
  RecordProperty("round_robin_queue_us", std::to_string(a.queue_us));
  RecordProperty("load_balance_queue_us", std::to_string(b.queue_us));
}

TEST(Cost, PredictionNeverBeatsStreamingTheMovedBytes) {
  // Prefetching (pipelining_depth) hides latency but moves no byte faster: whatever the depth,
  // the prediction stays at or above the bytes the program moves, streamed at the spec bandwidth.
  for (const auto& tn : targets::builtin_target_names())
    for (int depth : {0, 2, 8}) {
      const targets::TargetSpec h = target(tn);
      ir::Program p = must(run("small-4L", tn, config({{"pipelining_depth", depth}})));
      double moved = 0;
      for (const ir::Task& t : p.tasks) moved += static_cast<double>(t.est_bytes);
      const targets::CostEstimate c = targets::estimate(p, h.record);
      ASSERT_GT(moved, 0) << tn;
      EXPECT_GE(c.makespan_us, h.record.bandwidth_bound_us(moved)) << tn << " depth " << depth;
    }
  // Llama-3.2-1B ties its embeddings, so every weight byte is streamed: the floor holds too.
  const targets::CostEstimate c =
      targets::estimate(must(run("llama-3.2-1b", "h100", default_config())), target("h100").record);
  EXPECT_GE(c.makespan_us, c.floor_us);
}

TEST(Cost, TheProofsQueueGraphGivesTheEstimateOfTheCostModelsOwn) {
  // The search hands the validator's SM-queue graph to the cost model; whatever the placement
  // (every task on an SM, some unplaced, one on a negative SM), the estimate is the one the cost
  // model makes with its own loader graph.
  auto same = [](const targets::CostEstimate& a, const targets::CostEstimate& b) {
    return a.makespan_us == b.makespan_us && a.amk_makespan_us == b.amk_makespan_us &&
           a.queue_us == b.queue_us && a.critical_path_us == b.critical_path_us &&
           a.total_us == b.total_us && a.cyclic == b.cyclic && a.sm_assigned == b.sm_assigned;
  };
  validate::Validator v;
  for (const char* tn : {"h100", "a2a3"}) {
    const targets::TargetSpec h = target(tn);
    for (const char* sm : {"load_balance", "round_robin"}) {
      ir::Program p = must(run("small-4L", tn, config({{"sm_assignment", sm}})));
      std::vector<ir::Program> variants(3, p);
      for (size_t t = 0; t < p.tasks.size(); t += 3) variants[1].tasks[t].sm.reset();
      variants[2].tasks[p.tasks.size() / 2].sm = -1;
      for (size_t k = 0; k < variants.size(); ++k) {
        v.validate(variants[k]);
        ASSERT_NE(v.queue_graph(), nullptr) << tn << " " << sm << " " << k;
        const targets::Runtime& rt = targets::default_runtime(h);
        const targets::CostEstimate own = targets::estimate(variants[k], h.record, rt, v.graph());
        EXPECT_TRUE(
            same(targets::estimate(variants[k], h.record, rt, v.graph(), v.queue_graph()), own))
            << tn << " " << sm << " variant " << k;
      }
    }
  }
}

TEST(Passes, ExplicitSmMapIsHonouredAndTheRestIsPlaced) {
  ir::Program p = must(run("toy-1L", "h100", config({{"sm_assignment", {{"0", 7}, {"5", 3}}}})));
  EXPECT_EQ(p.tasks[0].sm, 7);
  EXPECT_EQ(p.tasks[5].sm, 3);
  expect_valid(p, "explicit");
  LowerResult bad = run("toy-1L", "h100", config({{"sm_assignment", {{"999", 1}}}}));
  EXPECT_FALSE(bad.value);
  EXPECT_NE(amk::test::text(bad.diagnostics).find("/config/sm_assignment/999"), std::string::npos)
      << amk::test::text(bad.diagnostics);
}

TEST(Passes, FusionMakesFusedTasksWithValidRecipes) {
  ir::Program plain = must(run("toy-2L", "h100", default_config()));
  ir::Program f =
      must(run("toy-2L", "h100",
               config({{"tiling", {{"gemv", {{"N_tile", 64}}}}},
                       {"fusion_grouping", json::array({json::array({"rope_q.reshape", "rope_q"}),
                                                        json::array({"rope_k.reshape", "rope_k"}),
                                                        json::array({"swiglu", "down_proj"})})}})));
  const auto fused = std::count_if(f.tasks.begin(), f.tasks.end(),
                                   [](const ir::Task& t) { return t.op == ir::Op::FUSED; });
  EXPECT_EQ(fused, 6);  // three groups in each of two layers
  EXPECT_EQ(f.tasks.size(), plain.tasks.size() - 6);
  expect_valid(f, "fused");
  // A tiled op cannot be fused: the error names the group and the op.
  LowerResult bad =
      run("toy-2L", "h100",
          config({{"fusion_grouping", json::array({json::array({"gate_proj", "swiglu"})})}}));
  EXPECT_FALSE(bad.value);
  EXPECT_NE(amk::test::text(bad.diagnostics).find("/config/fusion_grouping/0"), std::string::npos)
      << amk::test::text(bad.diagnostics);
  EXPECT_NE(amk::test::text(bad.diagnostics).find("L0.gate_proj"), std::string::npos)
      << amk::test::text(bad.diagnostics);
  LowerResult none =
      run("toy-2L", "h100",
          config({{"fusion_grouping", json::array({json::array({"conv", "relu"})})}}));
  EXPECT_FALSE(none.value);
  EXPECT_NE(amk::test::text(none.diagnostics).find("op names"), std::string::npos)
      << amk::test::text(none.diagnostics);
}

TEST(Passes, KvBlockSplitsAttentionAndCombinesThePartials) {
  LowerOptions o;
  o.pos = 100;
  ir::Program p =
      must(run("toy-1L", "h100", config({{"tiling", {{"attention", {{"kv_block", 32}}}}}}), o));
  const auto shards = std::count_if(p.tasks.begin(), p.tasks.end(), [](const ir::Task& t) {
    return t.op == ir::Op::ATTENTION_TILE;
  });
  EXPECT_EQ(shards, 4);  // ceil(101 / 32)
  EXPECT_EQ(std::count_if(p.tasks.begin(), p.tasks.end(),
                          [](const ir::Task& t) { return t.op == ir::Op::ATTENTION_COMBINE; }),
            1);
  expect_valid(p, "split");
}

TEST(Passes, QuantisedAndReducedPrecisionLoweringsValidate) {
  for (Quant q : {Quant::Int8, Quant::Int4})
    for (ir::DType d : {ir::DType::F32, ir::DType::BF16, ir::DType::F16})
      for (bool compat : {false, true}) {
        LowerOptions o;
        o.quant = q;
        o.dtype = d;
        o.quant_group = 32;
        o.amk_compat = compat;
        ir::Program p = must(run("toy-2L", "h100", default_config(), o));
        expect_valid(p, "quant");
        EXPECT_TRUE(p.meta.json()["quantized"].get<bool>());
        const auto& t = p.tasks[2];
        EXPECT_EQ(t.int_param("qdtype"), q == Quant::Int8 ? 6 : 7);
        EXPECT_EQ(t.inputs.size(), 3u);
        // Int8 is I8 [N, K]; int4 the packed bytes U8 [N, K/2], or with --amk-compat I4 at the
        // logical [N, K] as AMK's lowering declares it.
        const ir::Buffer& w = p.buffers[static_cast<size_t>(t.inputs[1])];
        const int64_t K = *t.int_param("K");
        EXPECT_EQ(w.dtype, q == Quant::Int8 ? ir::DType::I8
                           : compat         ? ir::DType::I4
                                            : ir::DType::U8);
        EXPECT_EQ(w.shape.back(), q == Quant::Int4 && !compat ? K / 2 : K);
        // The scales are fp16, as AMK's quantizer writes them and its CUDA GEMV reads them
        // (F32 scales read as halves gave non-finite logits on the H100).
        EXPECT_EQ(p.buffers[static_cast<size_t>(t.inputs[2])].dtype, ir::DType::F16);
      }
}

TEST(Passes, EveryTargetLowersEveryModelToAValidProgram) {
  for (const auto& t : targets::builtin_target_names())
    for (const char* m : {"toy-2L", "small-4L"})
      expect_valid(must(run(m, t, default_config())), t + "/" + m);
}

TEST(TensorMapTest, RawWawWarAndDisjointRegions) {
  TensorMap tm;
  std::vector<uint32_t> d;
  const Access whole{0, {}}, left{0, {1, 0, 8}}, right{0, {1, 8, 16}}, other{1, {}};
  tm.record(0, {}, std::vector<Access>{left}, d);
  EXPECT_TRUE(d.empty());
  tm.record(1, {}, std::vector<Access>{right}, d);
  EXPECT_TRUE(d.empty());  // disjoint tiles of one buffer
  tm.record(2, std::vector<Access>{whole}, std::vector<Access>{other}, d);
  EXPECT_EQ(d, (std::vector<uint32_t>{0, 1}));  // RAW on both tiles
  d.clear();
  std::vector<uint8_t> war;
  tm.record(3, {}, std::vector<Access>{left}, d, &war);
  EXPECT_EQ(d, (std::vector<uint32_t>{0, 2}));  // WAW on the left tile, WAR on the reader
  EXPECT_EQ(war, (std::vector<uint8_t>{0, 1}));
  d.clear();
  tm.record(4, std::vector<Access>{other}, {}, d);
  EXPECT_EQ(d, (std::vector<uint32_t>{2}));
  // Task 2 both wrote `other` and read buffer 0: writing both, task 5 follows it by WAW, so the
  // edge is not WAR-only although a read entry of task 2 matches too.
  d.clear(), war.clear();
  tm.record(5, {}, std::vector<Access>{whole, other}, d, &war);
  EXPECT_EQ(d, (std::vector<uint32_t>{1, 3, 2, 4}));
  EXPECT_EQ(war, (std::vector<uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(tm.entries(), 2u);  // task 5's two writes cover everything before them
  tm.forget_before(6);
  EXPECT_EQ(tm.entries(), 0u);
}

// forget_before drops exactly the entries of tasks before its bound, whether or not a later
// write already covered them (and their nodes went to later tasks): after it, a task follows
// exactly the tasks at or past the bound that a TensorMap which never forgets would give it.
TEST(TensorMapTest, ForgettingDropsExactlyTheTasksBeforeTheBound) {
  std::mt19937 rng(7);
  TensorMap full, forgetting;
  uint32_t floor = 0;
  for (uint32_t t = 0; t < 20000; ++t) {
    std::vector<Access> reads, writes;
    const int n = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < n; ++i) {
      Access a{static_cast<int64_t>(rng() % 12), {}};
      if (rng() % 2) {  // a row range of axis 0, or the whole buffer
        const int64_t lo = rng() % 16;
        a.region = {0, lo, lo + 1 + static_cast<int64_t>(rng() % 4)};
      }
      (rng() % 3 ? reads : writes).push_back(a);
    }
    std::vector<uint32_t> want, got;
    full.record(t, reads, writes, want);
    forgetting.record(t, reads, writes, got);
    std::erase_if(want, [&](uint32_t d) { return d < floor; });
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    ASSERT_EQ(got, want) << "task " << t << ", forgotten before " << floor;
    if (rng() % 8 == 0) {
      floor = std::min(t + 1, floor + static_cast<uint32_t>(rng() % 24));
      forgetting.forget_before(floor);
    }
    ASSERT_LE(forgetting.entries(), full.entries());
  }
  forgetting.forget_before(20000);
  EXPECT_EQ(forgetting.entries(), 0u);
}

// The TensorMap against the rule it implements, written as plainly as possible: every live entry
// of every earlier access is scanned in insertion order; a write drops the entries it covers. The
// map's shortcuts (tiles of one output written in order skip the scan) must give the same
// dependencies in the same order, on random accesses and on runs of in-order tiles.
TEST(TensorMapTest, GivesTheDependenciesOfAPlainScanInTheSameOrder) {
  struct Entry {
    uint32_t task;
    int64_t buffer;
    bool read;
    Region region;
  };
  std::mt19937 rng(11);
  TensorMap tm;
  std::vector<Entry> live;
  uint32_t t = 0;
  for (int run = 0; run < 3000; ++run) {
    // A run of in-order tiles of one buffer along one axis (some runs out of order or empty).
    const int64_t b = rng() % 6;
    const int axis = static_cast<int>(rng() % 2);
    const int tiles = 1 + static_cast<int>(rng() % 6);
    int64_t lo = rng() % 4;
    for (int k = 0; k < tiles; ++k, ++t) {
      std::vector<Access> reads, writes;
      const int64_t w = rng() % 5 == 0 ? 0 : 1 + static_cast<int64_t>(rng() % 4);
      if (rng() % 7 == 0) lo = rng() % 12;  // back to an earlier column
      writes.push_back({b, rng() % 9 == 0 ? Region{} : Region{axis, lo, lo + w}});
      lo += w;
      for (int r = static_cast<int>(rng() % 3); r > 0; --r) {
        Access a{static_cast<int64_t>(rng() % 6), {}};
        if (rng() % 3 == 0) {
          const int64_t rl = rng() % 16;
          a.region = {static_cast<int>(rng() % 2), rl, rl + 1 + static_cast<int64_t>(rng() % 4)};
        }
        if (a.buffer != b) reads.push_back(a);
      }
      std::vector<uint32_t> want, got;
      std::vector<uint8_t> want_war, got_war;
      auto dep = [&](uint32_t d, bool war) {
        auto it = std::find(want.begin(), want.end(), d);
        if (it == want.end()) {
          want.push_back(d);
          want_war.push_back(war);
        } else if (!war) {
          want_war[static_cast<size_t>(it - want.begin())] = 0;
        }
      };
      auto scan = [&](const Access& a, bool reads_of_it, bool war) {
        for (const Entry& e : live)
          if (e.buffer == a.buffer && e.read == reads_of_it && e.task != t &&
              overlaps(e.region, a.region))
            dep(e.task, war);
      };
      for (const Access& a : reads) scan(a, false, false);
      for (const Access& a : writes) {
        scan(a, false, false);
        scan(a, true, true);
      }
      for (const Access& a : writes) {
        std::erase_if(live, [&](const Entry& e) {
          return e.buffer == a.buffer && e.task != t && covers(a.region, e.region);
        });
        live.push_back({t, a.buffer, false, a.region});
      }
      for (const Access& a : reads) live.push_back({t, a.buffer, true, a.region});
      tm.record(t, reads, writes, got, &got_war);
      ASSERT_EQ(got, want) << "task " << t;
      ASSERT_EQ(got_war, want_war) << "task " << t;
    }
  }
  EXPECT_EQ(tm.entries(), live.size());
}

TEST(Property, RandomValidConfigsOfSmallModelsAlwaysValidate) {
  validate::Validator v;
  int checked = 0;
  for (const char* name : {"toy-1L", "toy-2L", "small-4L"}) {
    const ModelSpec m = model(name);
    for (const char* tn : {"h100", "a2a3", "tx8"}) {
      const targets::TargetSpec t = target(tn);
      const int n = std::string(name) == "small-4L" ? 150 : 400;
      for (int s = 0; s < n; ++s) {
        const ir::ScheduleConfig c = random_config(static_cast<uint64_t>(s), m, t);
        LowerOptions o;
        o.pos = (s * 37) % 120;
        o.dtype = s % 5 == 0 ? ir::DType::BF16 : ir::DType::F32;
        o.quant = s % 7 == 0 ? Quant::Int8 : s % 11 == 0 ? Quant::Int4 : Quant::None;
        LowerResult r = lower(m, t, c, o);
        ASSERT_TRUE(r.value) << name << " " << tn << " seed " << s << ": "
                             << amk::test::text(r.diagnostics);
        validate::Result res = v.validate(*r.value);
        ASSERT_TRUE(res.ok) << name << " " << tn << " seed " << s << "\n" << res.report(true);
        ++checked;
      }
    }
  }
  RecordProperty("configs_checked", checked);
}

// Each step: the config, whether the warm lowerer reuses the previous step's structure; and
// structure_of() names a structure run() reuses, and only such a one, by a key seen before (the
// key structure() gives after the run).
void expect_reuse(const ModelSpec& m, const LowerOptions& o,
                  const std::vector<std::pair<json, bool>>& steps) {
  const targets::TargetSpec t = target("h100");
  Lowerer warm(m, t, o);
  std::set<std::string> keys;
  for (size_t i = 0; i < steps.size(); ++i) {
    const ir::ScheduleConfig c = config(steps[i].first);
    const std::string key = warm.structure_of(c);
    EXPECT_FALSE(key.empty()) << "step " << i;
    EXPECT_EQ(!keys.insert(key).second, steps[i].second) << "step " << i << ": " << key;
    const uint64_t before = warm.cache_hits();
    const LowerResult w = warm.run(c);
    ASSERT_FALSE(ir::has_errors(w.diagnostics)) << amk::test::text(w.diagnostics);
    EXPECT_EQ(warm.cache_hits() - before, steps[i].second ? 1u : 0u) << "step " << i;
    EXPECT_EQ(warm.structure(), key) << "step " << i;
    EXPECT_TRUE(amk::test::same_text(ir::write_program(warm.program()),
                                     ir::write_program(must(lower(m, t, c, o)))))
        << "step " << i;
  }
}

TEST(Lowerer, ConfigsTheTilingTreatsAlikeShareAStructureAndNoOthers) {
  const ModelSpec m = model("toy-2L");
  auto tiling = [](json gemv, json attention) {
    json c = {{"tiling", {{"gemv", std::move(gemv)}}}};
    if (!attention.is_null()) c["tiling"]["attention"] = std::move(attention);
    return c;
  };
  const json n64 = {{"N_tile", 64}};
  // A one-token KV length: the attention is one task whatever its knobs say.
  expect_reuse(m, {},
               {
                   {tiling(n64, nullptr), false},
                   {tiling(n64, {{"n_partitions", 4}}), true},
                   {tiling(n64, {{"kv_block", 16}}), true},
                   {tiling({{"N_tile", 64}, {"base_width", 16}}, nullptr), true},
                   {tiling({{"N_tile", 32}}, nullptr), false},     // other tile widths
                   {tiling({{"base_width", 32}}, nullptr), true},  // N_tile 32's widths
                   {tiling({{"base_width", 16}}, nullptr), false},
               });
  // 101 cached tokens: the partitions differ, unless kv_block only restates n_partitions' split.
  LowerOptions long_kv;
  long_kv.pos = 100;
  expect_reuse(m, long_kv,
               {
                   {tiling(n64, nullptr), false},
                   {tiling(n64, {{"n_partitions", 4}}), false},
                   {tiling(n64, {{"n_partitions", 4}, {"kv_block", 16}}), true},
                   {tiling(n64, {{"kv_block", 16}}), false},  // 7 partitions, capped at 8
                   {tiling(n64, {{"n_partitions", 2}}), false},
               });
}

TEST(Lowerer, StructureOfIsEmptyForKnobsTheLoweringRefusesAndLeavesTheLastProgram) {
  const ModelSpec m = model("toy-2L");
  const targets::TargetSpec t = target("h100");
  Lowerer warm(m, t, {});
  EXPECT_EQ(warm.structure_of(config(json{{"tiling", {{"gemv", {{"N_tile", 0}}}}}})), "");
  const ir::ScheduleConfig c = config(json{{"tiling", {{"gemv", {{"N_tile", 32}}}}}});
  ASSERT_FALSE(ir::has_errors(warm.run(c).diagnostics));
  const std::string before = ir::write_program(warm.program());
  EXPECT_NE(warm.structure_of(config(json{{"tiling", {{"gemv", {{"N_tile", 16}}}}}})), "");
  EXPECT_EQ(ir::write_program(warm.program()), before);
  ASSERT_FALSE(ir::has_errors(warm.run(c).diagnostics));  // and runs on as before
  EXPECT_EQ(ir::write_program(warm.program()), before);
}

TEST(Lowerer, RecallsAPlacementOrPagesOnlyWhereTheKnobsTheyReadAreTheSame) {
  // small-4L on l4 in 32-column tiles: at depth 0 load_balance renumbers the tasks (critical-path
  // order), at depth 2 the runtime's L2 prefetch makes round robin the best of its placements, so
  // a placement or page plan recalled for the wrong knobs shows in the bytes.
  const ModelSpec m = model("small-4L");
  const targets::TargetSpec t = target("l4");
  auto cfg = [](json sm, int64_t depth, const char* pages, int64_t threads = 256) {
    return config({{"tiling", {{"gemv", {{"N_tile", 32}}}}},
                   {"sm_assignment", std::move(sm)},
                   {"pipelining_depth", depth},
                   {"page_allocation", pages},
                   {"threads_per_block", threads}});
  };
  const std::vector<ir::ScheduleConfig> walk = {
      cfg("load_balance", 0, "graph_color"),
      cfg("load_balance", 0, "linear"),
      cfg("load_balance", 0, "graph_color", 128),
      cfg("round_robin", 0, "graph_color"),
      cfg("load_balance", 2, "graph_color"),
      cfg({{"0", 3}, {"5", 1}}, 0, "graph_color"),
      cfg({{"0", 3}, {"5", 2}}, 0, "graph_color"),
      cfg("load_balance", 0, "graph_color"),
      cfg("load_balance", 2, "linear"),
      cfg(json::object(), 0, "graph_color"),  // explicit, nothing pinned: no load balancing
      // At depth 1 the threads weigh the tasks differently enough that load_balance keeps round
      // robin at 256 and the critical-path order at 128.
      cfg("load_balance", 1, "graph_color", 256),
      cfg("load_balance", 1, "graph_color", 128),
  };
  Lowerer warm(m, t, {});
  std::vector<ir::Program> cold;
  std::vector<uint64_t> orders;  // emission_order() by step
  for (size_t i = 0; i < walk.size(); ++i) {
    const LowerResult w = warm.run(walk[i]);
    ASSERT_FALSE(ir::has_errors(w.diagnostics)) << amk::test::text(w.diagnostics);
    orders.push_back(warm.emission_order());
    cold.push_back(must(lower(m, t, walk[i], {})));
    EXPECT_TRUE(
        amk::test::same_text(ir::write_program(warm.program()), ir::write_program(cold.back())))
        << "step " << i;
  }
  // The walk has teeth: the knobs it changes change the placement and the pages.
  auto sms = [](const ir::Program& p) {
    std::vector<std::pair<std::string, int64_t>> v;
    for (const ir::Task& x : p.tasks) v.emplace_back(x.label, x.sm.value_or(-1));
    return v;
  };
  EXPECT_NE(sms(cold[0]), sms(cold[3]));    // sm_assignment
  EXPECT_NE(sms(cold[0]), sms(cold[4]));    // pipelining_depth
  EXPECT_NE(sms(cold[5]), sms(cold[6]));    // the explicit map
  EXPECT_NE(sms(cold[7]), sms(cold[9]));    // load_balance or not
  EXPECT_NE(sms(cold[10]), sms(cold[11]));  // threads_per_block
  // The emission order: renumbered at depth 0 (one order for both page plans), the tasks' own
  // under round robin.
  EXPECT_NE(orders[0], 0u);
  EXPECT_EQ(orders[0], orders[1]);
  EXPECT_EQ(orders[3], 0u);
  EXPECT_EQ(orders[10], 0u);
  EXPECT_NE(cold[0].pages, cold[3].pages);  // the emission order the pages are planned for
  EXPECT_NE(cold[0].pages, cold[1].pages);  // page_allocation
}

TEST(Lowerer, APlacementOfAStructurePlacedBeforeWeighsTheTasksAtItsOwnDepthAndThreads) {
  // toy-2L on l4 in 32-column tiles: load_balance places the tasks differently at 64 threads and
  // at 128, at every depth. The lowerer keeps what placing reads of a structure (its loads and
  // groups) from one placement to the next, so times kept from the last knobs would show here.
  const ModelSpec m = model("toy-2L");
  const targets::TargetSpec t = target("l4");
  Lowerer warm(m, t, {});
  std::vector<std::vector<int64_t>> placed;
  for (int64_t depth : {0, 1, 2, 3})
    for (int64_t threads : {64, 128}) {
      const ir::ScheduleConfig c = config({{"tiling", {{"gemv", {{"N_tile", 32}}}}},
                                           {"sm_assignment", "load_balance"},
                                           {"pipelining_depth", depth},
                                           {"page_allocation", "graph_color"},
                                           {"threads_per_block", threads}});
      const LowerResult w = warm.run(c);
      ASSERT_FALSE(ir::has_errors(w.diagnostics)) << amk::test::text(w.diagnostics);
      const ir::Program cold = must(lower(m, t, c, {}));
      EXPECT_TRUE(amk::test::same_text(ir::write_program(warm.program()), ir::write_program(cold)))
          << "depth " << depth << ", " << threads << " threads";
      placed.emplace_back();
      for (const ir::Task& x : cold.tasks) placed.back().push_back(x.sm.value_or(-1));
    }
  EXPECT_EQ(warm.cache_hits(), 7u);  // one structure
  for (size_t i = 0; i < placed.size(); i += 2) EXPECT_NE(placed[i], placed[i + 1]) << i;
}

TEST(Lowerer, AProgramTakenFromAWarmLowererLeavesItWholeForTheNextRuns) {
  // A program taken away takes the tasks the lowerer would otherwise reuse, and leaves a
  // moved-from program behind: the next runs, on the same structure or another, must still give
  // a cold lower's bytes (they lost the versions before this test).
  const ModelSpec m = model("small-4L");
  const targets::TargetSpec t = target("a2a3");
  const ir::ScheduleConfig a = config({{"tiling", {{"gemv", {{"N_tile", 16}}}}}});
  const ir::ScheduleConfig b = config({{"tiling", {{"gemv", {{"N_tile", 32}}}}}});
  const std::string cold_a = ir::write_program(must(lower(m, t, a, {})));
  const std::string cold_b = ir::write_program(must(lower(m, t, b, {})));
  Lowerer warm(m, t, {});
  ASSERT_FALSE(ir::has_errors(warm.run(a).diagnostics));
  EXPECT_TRUE(amk::test::same_text(ir::write_program(warm.take()), cold_a));
  for (const ir::ScheduleConfig* c : {&a, &b, &a, &a}) {
    ASSERT_FALSE(ir::has_errors(warm.run(*c).diagnostics));
    EXPECT_TRUE(amk::test::same_text(ir::write_program(warm.program()), c == &a ? cold_a : cold_b));
  }
  EXPECT_TRUE(amk::test::same_text(ir::write_program(warm.take()), cold_a));
}

TEST(Lowerer, ComesBackToTheTasksOfARecentStructureAsItEmittedThem) {
  // A search's next neighbourhood returns to the tilings of its last one: the program a structure
  // was emitted into is kept (for the eight most recent), and a run back to it in the same order
  // only sets the SMs. Every run still gives a cold lower's bytes.
  // small-4L on l4: at depth 0 load_balance renumbers the tasks of 32-column tiles (critical-path
  // order), where round_robin keeps task order.
  const ModelSpec m = model("small-4L");
  const targets::TargetSpec t = target("l4");
  LowerOptions o;
  o.pos = 100;  // the attention splits
  std::vector<ir::ScheduleConfig> configs;
  for (int64_t n : {32, 16, 64, 128})
    for (int64_t parts : {1, 2, 4})
      configs.push_back(
          config({{"tiling", {{"gemv", {{"N_tile", n}}}, {"attention", {{"n_partitions", parts}}}}},
                  {"sm_assignment", "load_balance"},
                  {"pipelining_depth", 0}}));
  ir::ScheduleConfig other_order = configs[0];  // configs[0]'s structure, placed otherwise
  other_order.sm_assignment = ir::JsonValue(json("round_robin"));
  auto labels = [&](const ir::ScheduleConfig& c) {
    std::vector<std::string> v;
    for (const ir::Task& x : must(lower(m, t, c, o)).tasks) v.push_back(x.label);
    return v;
  };
  ASSERT_NE(labels(configs[0]), labels(other_order)) << "the test has teeth";
  Lowerer warm(m, t, o);
  uint64_t recalled = 0;
  // A recalled run keeps the stamp of its structure's last run; any other takes a new one.
  std::map<std::string, uint64_t> stamp_of;  // by structure
  std::set<uint64_t> stamps;
  auto run = [&](const ir::ScheduleConfig& c) {
    const LowerResult w = warm.run(c);
    EXPECT_FALSE(ir::has_errors(w.diagnostics)) << amk::test::text(w.diagnostics);
    EXPECT_TRUE(amk::test::same_text(ir::write_program(warm.program()),
                                     ir::write_program(must(lower(m, t, c, o)))));
    const bool now = warm.emits_recalled() > recalled;
    recalled = warm.emits_recalled();
    const uint64_t stamp = warm.tasks_stamp();
    EXPECT_NE(stamp, 0u);
    if (now)
      EXPECT_EQ(stamp, stamp_of[warm.structure()]);
    else
      EXPECT_TRUE(stamps.insert(stamp).second) << "a new emission takes a new stamp";
    stamp_of[warm.structure()] = stamp;
    return now;
  };
  EXPECT_FALSE(run(configs[0]));
  EXPECT_FALSE(run(configs[1]));
  EXPECT_TRUE(run(configs[0]));  // back, in the same order
  EXPECT_TRUE(run(configs[1]));
  EXPECT_FALSE(run(other_order));  // back, in another order
  EXPECT_FALSE(run(configs[0]));   // the other order's tasks are the structure's last
  EXPECT_TRUE(run(configs[0]));
  // Eight structures keep their programs, the least recently used lets its go: after seven
  // others, configs[1]'s is let go, then each one's that a return to a let-go structure displaces.
  for (size_t i = 2; i <= 8; ++i) EXPECT_FALSE(run(configs[i])) << i;
  EXPECT_TRUE(run(configs[0]));
  EXPECT_FALSE(run(configs[1]));  // let go: emitted again (and configs[2]'s goes)
  EXPECT_FALSE(run(configs[2]));  // (configs[3]'s goes)
  EXPECT_TRUE(run(configs[8]));
  EXPECT_TRUE(run(configs[0]));
  EXPECT_FALSE(warm.take().tasks.empty());
  EXPECT_FALSE(run(configs[0]));  // taken away with the program
  EXPECT_TRUE(run(configs[0]));
}

TEST(Lowerer, KeepsTheStructuresOfANeighbourhoodWithinItsTaskBudget) {
  // llama-3.2-1b at a 101-token KV (the attention's partitions count) in 16- and 32-column tiles
  // (6,000-6,500 tasks a structure): 40 configs, each its own structure (28 are used).
  const ModelSpec m = model("llama-3.2-1b");
  const targets::TargetSpec t = target("h100");
  LowerOptions o;
  o.pos = 100;
  std::vector<ir::ScheduleConfig> distinct;
  const char* const fusions[] = {
      "[]", R"([["rope_q.reshape", "rope_q"], ["rope_k.reshape", "rope_k"]])",
      R"([["attn_residual", "post_norm"]])", R"([["rope_k.reshape", "rope_k"]])",
      R"([["rope_q.reshape", "rope_q"], ["rope_k.reshape", "rope_k"], ["attn_residual", "post_norm"]])"};
  for (const char* fusion : fusions)
    for (int64_t n : {16, 32})
      for (int64_t parts : {1, 2, 4, 8})
        distinct.push_back(config(
            {{"tiling", {{"gemv", {{"N_tile", n}}}, {"attention", {{"n_partitions", parts}}}}},
             {"fusion_grouping", json::parse(fusion)}}));
  Lowerer warm(m, t, o);
  auto run = [&](size_t i) {
    const uint64_t before = warm.cache_hits();
    const LowerResult w = warm.run(distinct[i]);
    EXPECT_FALSE(ir::has_errors(w.diagnostics)) << amk::test::text(w.diagnostics);
    return warm.cache_hits() > before;
  };
  for (size_t i = 0; i < 12; ++i) EXPECT_FALSE(run(i)) << "config " << i;
  // A neighbourhood's tilings are found again however many came between (more than two).
  for (size_t i = 0; i < 12; ++i) {
    EXPECT_TRUE(run(i)) << "config " << i;
    EXPECT_TRUE(amk::test::same_text(ir::write_program(warm.program()),
                                     ir::write_program(must(lower(m, t, distinct[i], o)))))
        << "config " << i;
  }
  // A config the fusion refuses (after tiling) holds no structure, so it takes no entry of its
  // own: ten refusals evict none of the twelve.
  const ir::ScheduleConfig refused =
      config({{"tiling", {{"gemv", {{"N_tile", 16}}}}},
              {"fusion_grouping", json::parse(R"([["swiglu", "down_proj"]])")}});
  // A refusal is kept with its errors: every run refuses it with the errors of a cold lower.
  const std::string why = amk::test::text(lower(m, t, refused, o).diagnostics);
  EXPECT_NE(why.find("cannot fuse"), std::string::npos) << why;
  for (int i = 0; i < 10; ++i) EXPECT_EQ(amk::test::text(warm.run(refused).diagnostics), why);
  for (size_t i = 0; i < 12; ++i) EXPECT_TRUE(run(i)) << "config " << i << " after the refusals";
  // The budget: about 19 structures of this size are kept (fewer than the 32 entries of small
  // programs), the least recently used go first.
  for (size_t i = 12; i < 28; ++i) EXPECT_FALSE(run(i)) << "config " << i;
  EXPECT_FALSE(run(0));
  EXPECT_TRUE(run(27));
}

// A search's walk: a fresh random config, or the previous one with a knob that tile, fuse and
// the dependency pass do not read changed (so the warm lowerer reuses their result), or a
// tiling knob that the tiling may ignore: the attention's (at a one-token KV length, or kv_block
// under n_partitions) and the gemv base_width (under an N_tile), or a fusion the tiling refuses.
ir::ScheduleConfig walk_step(uint64_t s, const ir::ScheduleConfig& prev, const ModelSpec& m,
                             const targets::TargetSpec& t) {
  if (s % 2 == 0) return random_config(s, m, t);
  ir::ScheduleConfig c = prev;
  json tiling = c.tiling.is_null() ? json::object() : c.tiling.json();
  switch (s % 7) {
    case 0:
      tiling["attention"] = {{"n_partitions", 1 + s % 8}, {"kv_block", int64_t{16} << (s % 5)}};
      c.tiling = ir::JsonValue(tiling);
      break;
    case 2:
      tiling["attention"] = {{"kv_block", int64_t{16} << (s % 5)}};
      c.tiling = ir::JsonValue(tiling);
      break;
    case 4:
      tiling["gemv"]["base_width"] = int64_t{16} << (s % 3);
      c.tiling = ir::JsonValue(tiling);
      break;
    case 1:
      c.sm_assignment = ir::JsonValue(json(s % 3 ? "round_robin" : "load_balance"));
      break;
    case 3:
      c.page_allocation = ir::JsonValue(json(s % 3 ? "linear" : "graph_color"));
      break;
    case 5:
      c.pipelining_depth = ir::JsonValue(json(static_cast<int64_t>(s % 5)));
      break;
    default:
      c.threads_per_block = ir::JsonValue(json(s % 3 ? 128 : 256));
      // and at times a fusion group that only a one-tile down_proj can fuse (mostly refused,
      // and then again at the next steps that keep it)
      if (s % 4 == 3)
        c.fusion_grouping = ir::JsonValue(json::parse(R"([["swiglu", "down_proj"]])"));
  }
  return c;
}

// The tasks of a program but their SMs, as text (what Lowerer::tasks_stamp promises).
std::string tasks_but_sms(const ir::Program& p) {
  ir::Program q;
  q.tasks = p.tasks;
  for (ir::Task& x : q.tasks) x.sm.reset();
  return ir::write_program(q);
}

TEST(Property, TheWarmLowererGivesTheBytesOfAColdLowerOnAThousandConfigs) {
  int checked = 0, refused = 0, stamps_met_again = 0;
  uint64_t hits = 0;
  // Programs with one stamp have the same tasks but for their SMs (their text's hash, by stamp).
  std::map<uint64_t, size_t> tasks_of_stamp;
  for (const char* name : {"toy-2L", "smollm2-135m", "llama-3.2-1b"}) {
    const ModelSpec m = model(name);
    for (const char* tn : {"h100", "a2a3"}) {
      const targets::TargetSpec t = target(tn);
      LowerOptions o;
      o.pos = std::string(tn) == "a2a3" ? 100 : 0;  // the attention splits only at a longer KV
      Lowerer warm(m, t, o);
      ir::ScheduleConfig c = default_config();
      for (uint64_t s = 0; s < 170; ++s) {
        c = walk_step(s, c, m, t);
        const LowerResult w = warm.run(c);
        const LowerResult cold = lower(m, t, c, o);
        ASSERT_EQ(ir::has_errors(w.diagnostics), ir::has_errors(cold.diagnostics))
            << name << " " << tn << " step " << s;
        if (!cold.value) {  // a config the tiling refuses is refused both ways, for one reason
          ASSERT_EQ(amk::test::text(w.diagnostics), amk::test::text(cold.diagnostics))
              << name << " " << tn << " step " << s;
          ++refused;
          continue;
        }
        ASSERT_TRUE(
            amk::test::same_text(ir::write_program(warm.program()), ir::write_program(*cold.value)))
            << name << " " << tn << " step " << s;
        const size_t tasks = std::hash<std::string>{}(tasks_but_sms(warm.program()));
        const auto [it, fresh] = tasks_of_stamp.try_emplace(warm.tasks_stamp(), tasks);
        ASSERT_EQ(it->second, tasks) << name << " " << tn << " step " << s;
        stamps_met_again += !fresh;
        ++checked;
      }
      hits += warm.cache_hits();
    }
  }
  EXPECT_GE(checked, 1000);
  EXPECT_GT(hits, 400u);             // the walk reused a structure about every other step
  EXPECT_GE(refused, 10);            // and came back to structures the fusion refuses
  EXPECT_GT(stamps_met_again, 100);  // and to a structure's tasks as emitted
  EXPECT_EQ(tasks_of_stamp.count(0), 0u);
  RecordProperty("configs_checked", checked);
}

}  // namespace
}  // namespace amk::lower
