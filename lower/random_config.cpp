#include "lower/random_config.h"

#include <algorithm>
#include <random>

#include <nlohmann/json.hpp>

#include "lower/config.h"

namespace amk::lower {

ir::ScheduleConfig random_config(uint64_t seed, const ModelSpec& m, const targets::TargetSpec& t) {
  using json = nlohmann::ordered_json;
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 7);
  auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); };
  ir::ScheduleConfig c = ir::ScheduleConfig::defaults();
  json tiling = json::object();
  const int64_t widths[] = {8, 16, 32, 64, 128, 256, 512, 1024, 4096};
  int64_t n_tile = 0;
  if (pick(5) == 0) {
    tiling["gemv"] = {{"base_width", widths[pick(9)]}};
  } else {
    n_tile = widths[pick(9)];
    tiling["gemv"] = {{"N_tile", n_tile}};
  }
  json attn = json::object();
  if (pick(2)) attn["n_partitions"] = 1 + pick(8);
  if (pick(2)) attn["kv_block"] = int64_t{16} << pick(5);
  if (!attn.empty()) tiling["attention"] = attn;
  c.tiling = ir::JsonValue(tiling);
  // Fusion presets that are chains of single-task ops for this model and tiling.
  json fusion = json::array();
  if (pick(2)) fusion.push_back({"rope_q.reshape", "rope_q"});
  if (pick(2)) fusion.push_back({"rope_k.reshape", "rope_k"});
  if (pick(3) == 0) fusion.push_back({"attn_residual", "post_norm"});
  if (n_tile >= m.hidden && pick(2)) fusion.push_back({"swiglu", "down_proj"});
  if (n_tile >= m.hidden && attn.empty() && pick(3) == 0) fusion.push_back({"attention", "o_proj"});
  c.fusion_grouping = ir::JsonValue(fusion);
  const int64_t sms = t.num_workers();
  switch (pick(3)) {
    case 0:
      c.sm_assignment = ir::JsonValue(json("round_robin"));
      break;
    case 1:
      c.sm_assignment = ir::JsonValue(json("load_balance"));
      break;
    default: {
      json map = json::object();  // pins a few early tasks; the rest is load-balanced
      for (int k = 0; k < 4; ++k) map[std::to_string(pick(12))] = pick(sms);
      c.sm_assignment = ir::JsonValue(map);
    }
  }
  c.pipelining_depth = ir::JsonValue(json(pick(5)));
  const char* pages[] = {"linear", "graph_color", "none"};
  c.page_allocation = ir::JsonValue(json(pages[pick(3)]));
  c.threads_per_block = ir::JsonValue(json(pick(2) ? 128 : 256));
  const int64_t optin =
      t.record.smem_bytes_per_block_optin.is_int ? t.record.smem_bytes_per_block_optin.i : 0;
  const int64_t smem[] = {0, std::min<int64_t>(16384, optin), std::min<int64_t>(49152, optin)};
  c.smem_bytes_per_block = ir::JsonValue(json(smem[pick(3)]));
  return c;
}

}  // namespace amk::lower
