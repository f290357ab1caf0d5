// AMK parity: with --amk-compat the lowering writes AMK's programs byte for byte, and AMK's task
// counts hold for every tiling in its table (self-contained; the byte check needs conformance).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ir/json_io.h"
#include "lower/config.h"
#include "lower/lower.h"
#include "lower_support.h"
#include "support.h"

namespace amk::lower {
namespace {

using test_support::config;
using test_support::model;
using test_support::target;

std::optional<ir::ScheduleConfig> tiled(std::optional<int64_t> n_tile) {
  if (!n_tile) return std::nullopt;
  ir::ScheduleConfig c = default_config();
  c.tiling.mut()["gemv"]["N_tile"] = *n_tile;
  return c;
}

ir::Program compat(const std::string& m, std::optional<ir::ScheduleConfig> cfg, int64_t pos = 0,
                   int64_t batch = 1) {
  LowerOptions o;
  o.amk_compat = true;
  o.pos = pos;
  o.batch = batch;
  LowerResult r = lower(model(m), target("rtx5090"), cfg, o);
  if (!r.value) throw std::runtime_error(test::text(r.diagnostics));
  return std::move(*r.value);
}

TEST(AmkParity, TaskCountsMatchAmksTableForEveryTiling) {
  struct Row {
    const char* model;
    int64_t counts[5];  // config None, N_tile 64, 128, 256, 512
  };
  const Row rows[] = {{"toy-1L", {38, 27, 23, 22, 22}},
                      {"toy-2L", {66, 48, 42, 41, 41}},
                      {"small-4L", {1522, 1074, 690, 402, 257}},
                      {"tinyllama-1.1b", {7722, 5434, 3410, 1870, 1121}},
                      {"llama-3.2-1b", {5890, 4098, 3202, 1730, 994}}};
  const std::optional<int64_t> tiles[] = {std::nullopt, 64, 128, 256, 512};
  for (const Row& r : rows)
    for (int i = 0; i < 5; ++i)
      EXPECT_EQ(static_cast<int64_t>(compat(r.model, tiled(tiles[i])).tasks.size()), r.counts[i])
          << r.model << " column " << i;
  const ir::Program p = compat("llama-3.2-1b", default_config());
  EXPECT_EQ(p.buffers.size(), 456u);
  EXPECT_EQ(p.counters.size(), 307u);
  const ir::Program t = compat("tinyllama-1.1b", tiled(128));
  EXPECT_EQ(t.buffers.size(), 625u);
  EXPECT_EQ(t.counters.size(), 421u);
}

TEST(AmkParity, CompatLoweringIsByteIdenticalToAmksPrograms) {
  struct Case {
    const char* file;
    const char* model;
    int64_t pos, batch;
    bool with_config;
  };
  const Case cases[] = {
      {"toy_1L_default", "toy-1L", 0, 1, true},
      {"toy_2L_default", "toy-2L", 0, 1, true},
      {"toy_1L_pos5", "toy-1L", 5, 1, true},
      {"toy_1L_B4", "toy-1L", 0, 4, true},
      {"toy_1L_splitkv_pos63", "toy-1L", 63, 1, true},
      {"toy_1L_auto", "toy-1L", 0, 1, false},
      {"small_4L_default", "small-4L", 0, 1, true},
      {"tinyllama_1.1B_default", "tinyllama-1.1b", 0, 1, true},
      {"llama_1B_default", "llama-3.2-1b", 0, 1, true},
      {"llama_1B_auto", "llama-3.2-1b", 0, 1, false},
  };
  for (const Case& c : cases) {
    const auto path = test::conformance_dir() / "programs" / (std::string(c.file) + ".json");
    const std::string amk = test::slurp(path);
    auto lr = ir::parse_program(amk);
    ASSERT_TRUE(lr.ok()) << c.file;
    const ir::Program mine =
        compat(c.model, c.with_config ? lr.value->config : std::nullopt, c.pos, c.batch);
    EXPECT_TRUE(ir::write_program(mine) == amk) << c.file << " differs from AMK's lowering";
  }
}

}  // namespace
}  // namespace amk::lower
