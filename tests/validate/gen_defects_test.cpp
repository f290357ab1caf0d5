// Proves `amk gen --defect` keeps its word: over every shape x defect x seeds 1-20 (plain, with
// pages, with SMs assigned and as NOPs), a defect is either refused up front (not_planted says why)
// or planted where the validator rejects the program; and every defect has a shape it plants in.
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <string>

#include "fixtures/gen.h"
#include "validate/validate.h"

namespace amk::validate {
namespace {

constexpr std::array kShapes = {fixtures::GenShape::Llama, fixtures::GenShape::Mesh,
                                fixtures::GenShape::Chain, fixtures::GenShape::Fan};
constexpr int kDefects = 10;  // GenDefect::DropWait .. GenDefect::KvBeforeAppend

TEST(GenDefects, APlantedDefectIsAlwaysRejectedAndAnUnplantableOneIsRefused) {
  std::map<int, int> planted;  // defect -> programs it was planted in
  Validator v;
  for (int variant = 0; variant < 4; ++variant) {
    for (fixtures::GenShape shape : kShapes) {
      for (int d = 1; d <= kDefects; ++d) {
        for (uint64_t seed = 1; seed <= 20; ++seed) {
          fixtures::GenOptions o;
          o.shape = shape;
          o.tasks = 60;
          o.seed = seed;
          o.defect = static_cast<fixtures::GenDefect>(d);
          o.pages = variant == 1;
          o.num_sms = variant == 2 ? 4 : 0;
          o.nop = variant == 3;
          const fixtures::GenResult r = fixtures::generate(o);
          const std::string what = "shape " + std::to_string(static_cast<int>(shape)) + " defect " +
                                   std::to_string(d) + " seed " + std::to_string(seed) +
                                   " variant " + std::to_string(variant);
          if (!r.not_planted.empty()) {
            EXPECT_LT(r.defect_task, 0) << what;
            continue;
          }
          ++planted[d];
          EXPECT_GE(r.defect_task, 0) << what;
          EXPECT_FALSE(v.validate(r.program).ok) << what << ": " << r.defect_note;
        }
      }
    }
  }
  for (int d = 1; d <= kDefects; ++d) EXPECT_GT(planted[d], 0) << "defect " << d;
}

TEST(GenDefects, ACycleInAMeshIsPlantedForEverySeedAndRejectedAsACycle) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    fixtures::GenOptions o;
    o.shape = fixtures::GenShape::Mesh;
    o.tasks = 200;
    o.seed = seed;
    o.defect = fixtures::GenDefect::Cycle;
    const fixtures::GenResult r = fixtures::generate(o);
    ASSERT_TRUE(r.not_planted.empty()) << seed << ": " << r.not_planted;
    const Result res = validate(r.program);
    ASSERT_FALSE(res.ok) << seed;
    bool cycle = false;
    for (const ir::Diagnostic& e : res.errors)
      cycle = cycle || e.code.find("cycle") != std::string::npos;
    EXPECT_TRUE(cycle) << seed << ": " << res.report();
  }
}

TEST(GenDefects, ADataRaceCannotBePlantedInANopProgram) {
  fixtures::GenOptions o;
  o.nop = true;
  o.defect = fixtures::GenDefect::DropWait;
  EXPECT_NE(fixtures::generate(o).not_planted.find("--nop"), std::string::npos);
  o.defect = fixtures::GenDefect::SelfWait;
  EXPECT_TRUE(fixtures::generate(o).not_planted.empty());
}

}  // namespace
}  // namespace amk::validate
