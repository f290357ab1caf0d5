// Proves that a search's incremental proof is the full proof: every candidate of searches on three
// models and two targets, in the order the search hands them to its evaluator, is lowered and
// proved by the incremental validator of its structure and emission order and by a fresh full one,
// with the same result; the evaluator's logged path is the one that validator took, or "full"
// where the evaluator had let that validator go; and its predictions (whose task loads it takes
// from the last candidate when the proof found the same tasks) are those of a fresh estimate. The
// evaluator takes its lowering's stamps on trust; the test's validators check every promise.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include <fmt/format.h>

#include "ir/json_io.h"
#include "lower/config.h"
#include "lower/lower.h"
#include "lower_support.h"
#include "search/search.h"
#include "search/space.h"
#include "support.h"
#include "targets/cost.h"
#include "validate/validate.h"

namespace amk::search {
namespace {

namespace ts = lower::test_support;

std::string everything(const validate::Result& r) {
  return r.to_json() + "\n" + r.report();
}

TEST(SearchProof, EveryCandidateOfSearchesOnThreeModelsAndTwoTargetsIsProvedAsInFull) {
  for (const char* model : {"toy-2L", "smollm2-135m", "llama-3.2-1b"}) {
    for (const char* target : {"h100", "a2a3"}) {
      SCOPED_TRACE(std::string(model) + " / " + target);
      const lower::ModelSpec m = ts::model(model);
      const targets::TargetSpec t = ts::target(target);
      SearchOptions o;
      o.budget = std::string(model) == "toy-2L" ? 300 : 90;
      o.seed = 46;
      Evaluator evaluator(m, t, o.lower);
      lower::Lowerer lowerer(m, t, o.lower);
      std::map<std::string, validate::Validator> by_structure;  // every structure and order met
      std::map<std::string, uint64_t> stamp_of;                 // the last one each was given
      int promised = 0;  // programs whose lowering stamp promised the last proof's tasks
      std::map<std::string, int> paths;
      std::string last;  // the structure of the last config proved
      int returns_proved_incrementally = 0;
      o.evaluate = [&](const std::vector<Trial*>& batch) {
        for (Trial* trial : batch) {
          evaluator.evaluate(*trial, o.objective);
          const lower::LowerResult lr = lowerer.run(trial->config);
          if (ir::has_errors(lr.diagnostics)) {
            EXPECT_EQ(trial->proof, "");
            continue;
          }
          // The warm lowering's program is a cold lowering's, byte for byte.
          const lower::LowerResult cold = lower::lower(m, t, trial->config, o.lower);
          EXPECT_TRUE(cold.value) << trial->key;
          if (cold.value) {
            EXPECT_EQ(ir::write_program(lowerer.program()), ir::write_program(*cold.value))
                << trial->key;
          }
          // A validator per structure and emission order, as the evaluator keeps them.
          const std::string structure =
              fmt::format("{}#{:x}", lowerer.structure_of(trial->config), lowerer.emission_order());
          auto [it, first] = by_structure.try_emplace(structure);
          validate::Validator& incremental = it->second;
          if (first) {
            incremental.set_incremental(true);
            // The lowering's stamp, checked: a broken promise is counted (and proved as it is).
            incremental.set_check_stamps(true);
          }
          const uint64_t stamp = lowerer.tasks_stamp();
          promised += !first && stamp == stamp_of[structure];
          stamp_of[structure] = stamp;
          const validate::Result got = incremental.validate(lowerer.program(), stamp);
          const validate::Result want = validate::Validator().validate(lowerer.program());
          EXPECT_EQ(everything(got), everything(want)) << trial->key;
          // The evaluator's own verdict and reasons are the full proof's.
          EXPECT_EQ(trial->valid, want.ok) << trial->key;
          for (size_t k = 0; k < trial->diagnostics.size() && k < want.errors.size(); ++k) {
            EXPECT_EQ(trial->diagnostics[k].code, want.errors[k].code) << trial->key;
            EXPECT_EQ(trial->diagnostics[k].message, want.errors[k].message) << trial->key;
          }
          EXPECT_EQ(trial->diagnostics.size(), std::min<size_t>(want.errors.size(), 3))
              << trial->key;
          const std::string path(validate::name(incremental.last_path()));
          // The evaluator keeps the validators of its recent structures only.
          if (trial->proof != "full") {
            EXPECT_EQ(trial->proof, path) << trial->key;
          }
          ++paths[trial->proof];
          // A config back to a structure met before another one (a search's next neighbourhood).
          returns_proved_incrementally += !first && structure != last && trial->proof != "full";
          last = structure;
          if (!want.ok) continue;
          const targets::CostEstimate fresh =
              targets::estimate(lowerer.program(), t.record, targets::default_runtime(t));
          EXPECT_EQ(trial->predicted_us, fresh.makespan_us) << trial->key;
          EXPECT_EQ(trial->amk_formula_us, fresh.amk_makespan_us) << trial->key;
        }
        return ir::Status();
      };
      Space space = test::must(default_space(m, t, lower::default_config()));
      const SearchResult r = test::must(Search(m, t, std::move(space), o).run());
      EXPECT_GT(r.evaluations, 0);
      EXPECT_GT(paths["full"], 0);
      EXPECT_GT(r.evaluations, paths["full"]) << "some candidates proved incrementally";
      EXPECT_GT(returns_proved_incrementally, 0)
          << "some configs that came back to a structure after others were proved incrementally";
      uint64_t broken = 0;
      for (const auto& [structure, v] : by_structure) broken += v.broken_stamps();
      EXPECT_EQ(broken, 0u) << "programs with one stamp have the same tasks but for their SMs";
      EXPECT_GT(promised, 0) << "some programs came with the last proof's stamp";
      std::string seen;
      for (const auto& [path, n] : paths) seen += path + " " + std::to_string(n) + "; ";
      ::testing::Test::RecordProperty(std::string(model) + "/" + target, seen);
    }
  }
}

}  // namespace
}  // namespace amk::search
