// The incremental proof equals the full proof: each corpus program (invalid, valid, AMK's
// conformance programs) and generated ones (with SMs, pages, an MPK runtime, capped rules), then
// variants of it that move tasks between SMs, rebind or drop pages, change the config or change
// the rest (the full path), are proved in a row by one incremental validator and each by a fresh
// full one; every result must be the same, and each change must take the path it reaches.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "fixtures/gen.h"
#include "fixtures/vary.h"
#include "ir/json_io.h"
#include "ir/rng.h"
#include "ir/runtime.h"
#include "support.h"
#include "validate/validate.h"

namespace amk::validate {
namespace {

namespace fs = std::filesystem;

using Rng = ir::Rng;

// Everything a result says: verdict, stats, and each diagnostic with its notes.
std::string everything(const Result& r) {
  return r.to_json() + "\n" + r.report();
}

// What changed from `last` to `p`, as the path the incremental proof should take: the stages
// that read it (tasks' SMs: placement, capacity; pages; meta: outputs; config: capacity). A full
// proof may run the tasks' own rules only for the tasks that changed ("tasks") when nothing but
// tasks changed and they are as many as before (and the last proof reported none of those rules,
// which the tests of that path look at).
ProofPath expected_path(const ir::Program& last, const ir::Program& p, bool& tasks_may_be_kept) {
  ir::Program core = p;  // p but for what the image keeps apart from its core
  core.tasks = last.tasks;
  core.pages = last.pages;
  core.meta = last.meta;
  core.config = last.config;
  tasks_may_be_kept =
      last.tasks.size() == p.tasks.size() && ir::write_program(core) == ir::write_program(last);
  ir::Program rest = last;
  bool sm = false;
  for (size_t t = 0; t < p.tasks.size() && t < rest.tasks.size(); ++t) {
    sm = sm || rest.tasks[t].sm != p.tasks[t].sm;
    rest.tasks[t].sm = p.tasks[t].sm;
  }
  ProofPath path;
  path.placement = sm;
  path.pages = rest.pages != p.pages;
  path.outputs = !(rest.meta == p.meta);
  path.capacity = sm || rest.config != p.config;
  rest.pages = p.pages;
  rest.meta = p.meta;
  rest.config = p.config;
  path.full = ir::write_program(rest) != ir::write_program(p);
  return path.full ? ProofPath{} : path;
}

// Proves `base` and `variants` of it in a row with one incremental validator, each against a
// fresh full proof; counts the paths taken.
void prove_in_a_row(const ir::Program& base, uint64_t seed, int variants,
                    std::map<std::string, int>& paths) {
  Rng rng = Rng::seeded(seed, 46);
  Validator incremental;
  incremental.set_incremental(true);
  ir::Program p = base, last;
  for (int k = 0; k <= variants; ++k) {
    if (k > 0) {
      if (rng.below(5) == 0) p = base;  // back to the start: a search's incumbent
      fixtures::vary(p, rng);
    }
    const Result got = incremental.validate(p);
    Validator full;
    const Result want = full.validate(p);
    ASSERT_EQ(everything(got), everything(want)) << "variant " << k;
    ASSERT_EQ(got.ok, want.ok);
    bool tasks_may_be_kept = false;
    const ProofPath path = k == 0 ? ProofPath{} : expected_path(last, p, tasks_may_be_kept);
    if (tasks_may_be_kept && name(incremental.last_path()) == "tasks")
      EXPECT_EQ(name(path), "full") << "variant " << k;
    else
      EXPECT_EQ(name(incremental.last_path()), name(path)) << "variant " << k;
    ++paths[name(incremental.last_path())];
    last = p;
  }
}

// A generated program placed on four SMs.
ir::Program on_four_sms() {
  fixtures::GenOptions o;
  o.num_sms = 4;
  return fixtures::generate(o).program;
}

// The first task of `p` that `has` holds for (p.tasks.size() when none does).
template <class Has>
size_t first_task(const ir::Program& p, Has has) {
  size_t at = 0;
  while (at < p.tasks.size() && !has(p.tasks[at])) ++at;
  return at;
}

std::vector<fs::path> corpus() {
  std::vector<fs::path> v;
  for (const char* dir :
       {"tests/validate/invalid", "tests/validate/valid", "tests/conformance/programs"})
    for (const auto& e : fs::directory_iterator(test::source_dir() / dir))
      if (e.path().extension() == ".json") v.push_back(e.path());
  std::sort(v.begin(), v.end());
  return v;
}

TEST(Incremental, EveryCorpusProgramAndItsVariantsAreProvedAsInFull) {
  std::map<std::string, int> paths;
  uint64_t seed = 0;
  for (const fs::path& f : corpus()) {
    SCOPED_TRACE(f.filename().string());
    ir::Result<ir::Program> p = ir::load_program(f.string());
    if (!p) continue;  // a file the reader refuses has no proof
    prove_in_a_row(*p, ++seed, 12, paths);
  }
  for (const char* path : {"full", "tasks", "same", "capacity", "placement+capacity", "pages",
                           "outputs", "placement+pages+outputs+capacity"})
    EXPECT_GT(paths[path], 0) << path;
}

TEST(Incremental, GeneratedProgramsWithSmsPagesARuntimeAndCappedRulesAreProvedAsInFull) {
  std::map<std::string, int> paths;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    fixtures::GenOptions o;
    o.shape = seed % 3 == 0 ? fixtures::GenShape::Mesh : fixtures::GenShape::Llama;
    o.seed = seed;
    o.tasks = seed == 12 ? 3000 : 150 + seed * 40;
    o.pages = seed % 2 == 0;
    o.num_sms = seed % 4 == 1 ? 0 : 4;
    ir::Program p = fixtures::generate(o).program;
    if (seed % 4 == 3) {  // an MPK runtime: its capacities read the SMs
      p.runtime.emplace();
      p.runtime->kind = ir::RuntimeKind::Mpk;
      p.runtime->set(ir::Cap::workers, {3});
      p.runtime->set(ir::Cap::worker_queue, {int64_t(o.tasks / 8)});
    }
    if (seed == 12)  // more sm.negative errors than a rule keeps: the cap and its summary
      for (ir::Task& t : p.tasks) t.sm = -1;
    SCOPED_TRACE(seed);
    prove_in_a_row(p, seed, 16, paths);
  }
  EXPECT_GT(paths["placement+capacity"], 0);
  EXPECT_GT(paths["pages"], 0);
  EXPECT_GT(paths["tasks"], 0);
}

TEST(Incremental, IsOffByDefaultAndAFullProofAfterItIsTurnedOn) {
  fixtures::GenOptions o;
  o.num_sms = 4;
  const ir::Program p = fixtures::generate(o).program;
  Validator v;
  v.validate(p);
  v.validate(p);
  EXPECT_EQ(name(v.last_path()), "full");
  v.set_incremental(true);
  v.validate(p);
  EXPECT_EQ(name(v.last_path()), "full");
  v.validate(p);
  EXPECT_EQ(name(v.last_path()), "same");
}

TEST(Incremental, AProgramSaidToStandAloneIsProvedInFullAndLeavesNothingToCompareWith) {
  fixtures::GenOptions o;
  o.num_sms = 4;
  const ir::Program p = fixtures::generate(o).program;
  o.seed = 7;
  o.defect = fixtures::GenDefect::DropWait;
  const ir::Program bad = fixtures::generate(o).program;
  Validator v;
  v.set_incremental(true);
  v.validate(p);
  EXPECT_EQ(everything(v.validate(bad, Reuse::Alone)), everything(Validator().validate(bad)));
  EXPECT_EQ(name(v.last_path()), "full");
  v.validate(bad);  // nothing was kept of the lone program: in full again
  EXPECT_EQ(name(v.last_path()), "full");
  v.validate(bad);
  EXPECT_EQ(name(v.last_path()), "same");
  EXPECT_EQ(everything(v.validate(p, Reuse::Alone)), everything(Validator().validate(p)));
  v.validate(p);
  EXPECT_EQ(name(v.last_path()), "full");
}

// When only tasks change (as many as before), the full proof runs the tasks' own rules (refs,
// params, shapes) for the changed ones alone and the buffers' rules not at all, and only after a
// proof that reported none of those rules; the other rules (waits, cycles, races, pages) run for
// every task. Each result is a fresh validator's.
TEST(Incremental, OnlyTheTasksThatChangedRunTheirOwnRulesAgainAfterAProofThatReportedNoneOfThem) {
  const ir::Program p = on_four_sms();
  const size_t gemv = first_task(p, [](const ir::Task& t) {
    return t.op == ir::Op::GEMV_TILE && t.int_param("N_tile") && t.int_param("n_off");
  });
  const size_t waits = first_task(p, [](const ir::Task& t) { return !t.waits.empty(); });
  ASSERT_LT(gemv, p.tasks.size());
  ASSERT_LT(waits, p.tasks.size());
  ir::Program bad_param = p;  // a shape rule of that task reports
  bad_param.tasks[gemv].set_param("N_tile", ir::ParamValue::of_int(-1));
  ir::Program bad_param_relabeled = bad_param;  // the report stands: every task's own rules run
  bad_param_relabeled.tasks.back().label += " (renamed)";
  ir::Program moved_tile = p;  // its tile moves: the race rules read its region
  moved_tile.tasks[gemv].set_param("n_off",
                                   ir::ParamValue::of_int(*p.tasks[gemv].int_param("n_off") + 1));
  ir::Program dropped = p;  // a race, which no task's own rule reports
  dropped.tasks[waits].waits.pop_back();
  ir::Program relabeled = dropped;
  relabeled.tasks.back().label += " (renamed)";
  ir::Program fewer = relabeled;
  fewer.tasks.pop_back();
  ir::Program same_name = p;  // a buffer rule reports (a warning): every buffer's rules run again
  same_name.buffers[1].name = same_name.buffers[0].name;
  ir::Program same_name_relabeled = same_name;
  same_name_relabeled.tasks.back().label += " (renamed)";
  Validator v;
  v.set_incremental(true);
  v.validate(p);
  struct Step {
    const ir::Program* program;
    const char* path;
  };
  for (const Step& step :
       {Step{&bad_param, "tasks"}, Step{&bad_param_relabeled, "full"}, Step{&p, "full"},
        Step{&moved_tile, "tasks"}, Step{&p, "tasks"}, Step{&dropped, "tasks"},
        Step{&relabeled, "tasks"}, Step{&relabeled, "same"}, Step{&fewer, "full"},
        Step{&same_name, "full"}, Step{&same_name_relabeled, "full"}, Step{&relabeled, "full"},
        Step{&p, "tasks"}}) {
    const Result want = Validator().validate(*step.program);
    EXPECT_EQ(everything(v.validate(*step.program)), everything(want)) << step.path;
    EXPECT_EQ(name(v.last_path()), step.path);
  }
  EXPECT_FALSE(Validator().validate(bad_param).ok);
  EXPECT_FALSE(Validator().validate(moved_tile).ok);
  EXPECT_FALSE(Validator().validate(dropped).ok);
}

// A caller's stamp stands in for the comparison of the tasks (but their SMs) only when it is the
// last proof's: a program that moves SMs under the same stamp is proved along the placement path,
// as in full; under another stamp, or no stamp, its tasks are compared; a program whose tasks
// differ under another stamp is proved in full.
TEST(Incremental, AStampStandsInForTheTaskComparisonOnlyWhenItIsTheLastProofs) {
  fixtures::GenOptions o;
  o.num_sms = 4;
  const ir::Program a = fixtures::generate(o).program;
  ir::Program moved = a;
  for (ir::Task& t : moved.tasks) t.sm = (t.sm.value_or(0) + 1) % o.num_sms;
  o.seed = 7;
  o.defect = fixtures::GenDefect::DropWait;
  const ir::Program other = fixtures::generate(o).program;
  Validator v;
  v.set_incremental(true);
  v.validate(a, uint64_t{5});
  EXPECT_EQ(name(v.last_path()), "full");
  EXPECT_EQ(everything(v.validate(moved, uint64_t{5})), everything(Validator().validate(moved)));
  EXPECT_EQ(name(v.last_path()), "placement+capacity");
  EXPECT_EQ(everything(v.validate(other, uint64_t{6})), everything(Validator().validate(other)));
  EXPECT_EQ(name(v.last_path()), "tasks");  // compared: a few tasks differ
  v.validate(a, uint64_t{0});
  EXPECT_EQ(name(v.last_path()), "tasks");
  v.validate(a, uint64_t{0});  // no promise: compared, and found the same
  EXPECT_EQ(name(v.last_path()), "same");
  EXPECT_EQ(v.broken_stamps(), 0u);
}

// The stamp is a promise the validator trusts: with set_check_stamps it compares the tasks all the
// same, proves a program whose tasks differ as it is (in full, as a fresh validator does) and
// counts the broken promise; without it, only SMs' changes are looked for.
TEST(Incremental, ABrokenStampIsCountedAndProvedAsItIsWhenStampsAreChecked) {
  const ir::Program good = on_four_sms();
  ir::Program bad = good;  // the same tasks but one wait: a race
  const size_t at = first_task(bad, [](const ir::Task& t) { return !t.waits.empty(); });
  ASSERT_LT(at, bad.tasks.size());
  bad.tasks[at].waits.pop_back();
  const Result want = Validator().validate(bad);
  ASSERT_FALSE(want.ok);
  Validator checked;
  checked.set_incremental(true);
  checked.set_check_stamps(true);
  checked.validate(good, uint64_t{9});
  EXPECT_EQ(everything(checked.validate(bad, uint64_t{9})), everything(want));
  EXPECT_EQ(name(checked.last_path()), "tasks");  // compared: one task differs
  EXPECT_EQ(checked.broken_stamps(), 1u);
  Validator trusting;
  trusting.set_incremental(true);
  trusting.validate(good, uint64_t{9});
  // Trusted, the promise hides the dropped wait: the result is the last proof's.
  EXPECT_TRUE(trusting.validate(bad, uint64_t{9}).ok);
  EXPECT_EQ(name(trusting.last_path()), "same");
  EXPECT_EQ(trusting.broken_stamps(), 0u);
}

// A param is told apart by each of its parts, whichever way the image writes it (a key of up to 7
// bytes in one word with its kind, a longer one spelled out): for each pair of programs that
// differ in one part of one param, the second, proved right after the first, is proved in full,
// as a fresh validator proves it, and proved again after itself is the same. (The first, after the
// base program, runs its one changed task's own rules; its unknown param is reported, so the
// second runs every task's.)
TEST(Incremental, EveryPartOfAParamTellsProgramsApart) {
  const ir::Program base = on_four_sms();
  const size_t at = first_task(base, [](const ir::Task& t) { return !t.params.empty(); });
  ASSERT_LT(at, base.tasks.size());
  using V = ir::ParamValue;
  struct Differ {
    const char* what;
    ir::Param a, b;
  };
  const ir::Param one{"extra1", V::of_int(1)};
  const std::vector<Differ> pairs = {
      {"its key's last byte", one, {"extra2", V::of_int(1)}},
      {"its key a byte longer", one, {"extra12", V::of_int(1)}},
      {"its key 7 and 8 bytes long", {"extra12", V::of_int(1)}, {"extra123", V::of_int(1)}},
      {"its key empty", one, {"", V::of_int(1)}},
      {"a bool for an int, the same words", one, {"extra1", V::of_bool(true)}},
      {"1.0 for 1", one, {"extra1", V::of_float(1.0)}},
      {"-0.0 for 0.0", {"extra1", V::of_float(0.0)}, {"extra1", V::of_float(-0.0)}},
      {"a JSON value", one, {"extra1", V::of_json(ir::JsonValue(nlohmann::ordered_json(1)))}},
      {"another int", one, {"extra1", V::of_int(2)}},
      {"a long key's last byte",
       {"extra_long_key", V::of_int(1)},
       {"extra_long_kez", V::of_int(1)}},
  };
  Validator v;
  v.set_incremental(true);
  for (const Differ& d : pairs) {
    ir::Program a = base, b = base;
    a.tasks[at].params.push_back(d.a);
    b.tasks[at].params.push_back(d.b);
    v.validate(base);
    v.validate(a);
    EXPECT_EQ(name(v.last_path()), "tasks") << d.what;
    EXPECT_EQ(everything(v.validate(b)), everything(Validator().validate(b))) << d.what;
    EXPECT_EQ(name(v.last_path()), "full") << d.what;
    v.validate(b);
    EXPECT_EQ(name(v.last_path()), "same") << d.what;
  }
}

}  // namespace
}  // namespace amk::validate
