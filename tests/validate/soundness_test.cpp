// Soundness evidence: mutate valid generated programs (drop or retarget a wait, change a threshold,
// close a cycle, overlap tiles, share a page, add a writer, move tasks between SMs, set a counter
// init). Every mutant the validator accepts must run to completion without a race in many
// adversarial interleavings: zero false accepts. False rejects (rejected, yet no interleaving shows
// a problem) are counted and reported, not asserted: the oracle samples, the proof does not.
// And the per-task screens: a validator that skips them reports exactly what one that uses them
// does, on programs with every kind of per-task defect.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fixtures/gen.h"
#include "ir/graph.h"
#include "validate/simulate.h"
#include "validate/validate.h"

namespace amk::validate {
namespace {

struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  size_t below(size_t n) { return n ? static_cast<size_t>(next() % n) : 0; }
};

// Applies one random mutation; returns a short name of what was done.
const char* mutate(ir::Program& p, Rng& r) {
  auto& tasks = p.tasks;
  ir::Task& t = tasks[r.below(tasks.size())];
  switch (r.below(11)) {
    case 0:
      if (t.waits.empty()) return "none";
      t.waits.erase(t.waits.begin() + static_cast<long>(r.below(t.waits.size())));
      return "drop-wait";
    case 1:
      if (t.waits.empty()) return "none";
      t.waits[r.below(t.waits.size())].threshold -= 1;
      return "lower-threshold";
    case 2:
      if (t.waits.empty()) return "none";
      t.waits[r.below(t.waits.size())].threshold += 1;
      return "raise-threshold";
    case 3: {  // wait on a later task's counter (usually closes a cycle)
      const ir::Task& later = tasks[r.below(tasks.size())];
      int64_t np = 0;
      for (const auto& x : tasks) np += x.out_counter == later.out_counter;
      t.waits.push_back({later.out_counter, np, {}});
      return "add-edge";
    }
    case 4: {
      for (int k = 0; k < 8; ++k) {
        ir::Task& x = tasks[r.below(tasks.size())];
        if (auto off = x.int_param("n_off")) {
          x.set_param("n_off", ir::ParamValue::of_int(std::max<int64_t>(
                                   0, *off + static_cast<int64_t>(r.below(7)) - 3)));
          return "move-tile";
        }
      }
      return "none";
    }
    case 5: {
      if (!p.pages || p.pages->buffer_to_page.empty()) return "none";
      auto& b2p = p.pages->buffer_to_page;
      b2p[r.below(b2p.size())].second = b2p[r.below(b2p.size())].second;
      return "share-page";
    }
    case 6: {  // an extra writer of some activation, waiting on a random counter
      std::vector<int64_t> acts;
      for (size_t b = 0; b < p.buffers.size(); ++b)
        if (p.buffers[b].kind == ir::BufferKind::ACTIVATION)
          acts.push_back(static_cast<int64_t>(b));
      if (acts.empty()) return "none";
      int64_t dst = acts[r.below(acts.size())];
      int64_t src = acts[r.below(acts.size())];
      if (p.buffers[static_cast<size_t>(dst)].numel() !=
          p.buffers[static_cast<size_t>(src)].numel())
        return "none";
      ir::Task w;
      w.op = ir::Op::COPY;
      w.inputs = {src};
      w.outputs = {dst};
      w.out_counter = p.add_counter("extra");
      const ir::Task& after = tasks[r.below(tasks.size())];
      int64_t np = 0;
      for (const auto& x : tasks) np += x.out_counter == after.out_counter;
      w.waits.push_back({after.out_counter, np, {}});
      w.label = "extra-writer";
      p.add_task(std::move(w));
      return "add-writer";
    }
    case 7:
      t.sm = static_cast<int64_t>(r.below(3));
      return "set-sm";
    case 8:
      if (t.waits.empty()) return "none";
      t.waits[r.below(t.waits.size())].counter = tasks[r.below(tasks.size())].out_counter;
      return "retarget-wait";
    case 9:
      p.counters[r.below(p.counters.size())].init = 1;
      return "counter-init";
    default: {  // swap two tasks' SMs when both are assigned
      ir::Task& u = tasks[r.below(tasks.size())];
      std::swap(t.sm, u.sm);
      return "swap-sm";
    }
  }
}

TEST(Soundness, NoMutantTheValidatorAcceptsRacesOrDeadlocksUnderAdversarialInterleavings) {
  Rng rng{0x1234567};
  Validator v;
  size_t mutants = 0, accepted = 0, rejected = 0, false_rejects = 0, false_accepts = 0;
  const fixtures::GenShape shapes[] = {fixtures::GenShape::Llama, fixtures::GenShape::Mesh,
                                       fixtures::GenShape::Chain, fixtures::GenShape::Fan};
  for (uint64_t base = 0; base < 60; ++base) {
    fixtures::GenOptions o;
    o.shape = shapes[base % 4];
    o.seed = base + 1;
    o.tasks = 40 + base % 7 * 20;
    o.pages = base % 2 == 0;
    o.num_sms = base % 3 == 0 ? 3 : 0;
    const ir::Program original = fixtures::generate(o).program;
    ASSERT_TRUE(v.validate(original).ok) << "generated programs are valid by construction";
    for (int k = 0; k < 40; ++k) {
      ir::Program p = original;
      int n_mut = 1 + static_cast<int>(rng.below(2));
      for (int j = 0; j < n_mut; ++j) mutate(p, rng);
      ++mutants;
      Result res = v.validate(p);
      ir::Graph g = ir::Graph::build(p);
      CounterSim cs = simulate_counters(p, g, true);
      AdversarialOptions ao;
      ao.seeds = 24;
      ao.first_seed = rng.next() % 1000;
      Adversarial adv = simulate_adversarial(p, g, ao);
      const bool dynamic_problem = !cs.stuck.empty() || !adv.races.empty() || !adv.stuck.empty();
      if (res.ok) {
        ++accepted;
        if (dynamic_problem) {
          ++false_accepts;
          ADD_FAILURE() << "false accept (base " << base << ", mutant " << k
                        << "): " << (adv.races.empty() ? "stuck" : adv.races[0].message);
        }
      } else {
        ++rejected;
        false_rejects += !dynamic_problem;
      }
    }
  }
  std::printf(
      "soundness: %zu mutants, %zu accepted, %zu rejected, %zu false accepts, %zu false "
      "rejects (rejected; no sampled interleaving showed it)\n",
      mutants, accepted, rejected, false_accepts, false_rejects);
  ::testing::Test::RecordProperty("mutants", static_cast<int>(mutants));
  ::testing::Test::RecordProperty("false_rejects", static_cast<int>(false_rejects));
  EXPECT_EQ(false_accepts, 0u);
  EXPECT_GT(accepted, mutants / 10) << "mutations should not all be fatal";
}

// One defect of the kinds the per-task rule families report, in a random task or buffer.
const char* break_task(ir::Program& p, Rng& r) {
  ir::Task& t = p.tasks[r.below(p.tasks.size())];
  const auto nb = static_cast<int64_t>(p.buffers.size());
  const auto nc = static_cast<int64_t>(p.counters.size());
  const int64_t far[] = {-1, -7, 0, 0};  // "0": the first id past the end, set below
  auto any_buffer = [&] { return static_cast<int64_t>(r.below(p.buffers.size())); };
  switch (r.below(21)) {
    case 0:
      if (t.inputs.empty()) return "none";
      t.inputs[r.below(t.inputs.size())] = r.below(2) ? nb : far[r.below(2)];
      return "missing input";
    case 1:
      if (t.outputs.empty()) return "none";
      t.outputs[r.below(t.outputs.size())] = r.below(2) ? nb + 3 : -1;
      return "missing output";
    case 2:
      t.out_counter = r.below(2) ? nc : -2;
      return "missing out_counter";
    case 3:
      while (t.inputs.size() <= ir::kMaxInputs) t.inputs.push_back(any_buffer());
      return "too many inputs";
    case 4:
      while (t.outputs.size() <= ir::kMaxOutputs) t.outputs.push_back(any_buffer());
      return "too many outputs";
    case 5:
      while (t.waits.size() <= ir::kMaxWaits)
        t.waits.push_back({t.waits.size() % 2 ? 0 : 1, 1, {}});
      return "too many waits";
    case 6:
      p.buffers[static_cast<size_t>(any_buffer())].shape = {1, 1, 2, 1, 4};
      return "rank 5";
    case 7:
      if (t.waits.empty()) return "none";
      t.waits[r.below(t.waits.size())].counter = r.below(2) ? nc + 1 : -1;
      return "missing wait counter";
    case 8:
      if (t.waits.empty()) return "none";
      t.waits[r.below(t.waits.size())].threshold = r.below(2) ? 0 : 1000;
      return "threshold";
    case 9:
      t.waits.push_back({t.out_counter, 1, {}});
      return "self wait";
    case 10:
      t.inputs.clear();
      return "arity";
    case 11:
      t.outputs.push_back(t.outputs.empty() ? 0 : t.outputs[0]);
      return "outputs";
    case 12:
      if (t.params.empty()) return "none";
      t.params.erase(t.params.begin() + static_cast<ptrdiff_t>(r.below(t.params.size())));
      return "param dropped";
    case 13:
      t.set_param("not_a_field", ir::ParamValue::of_int(1));
      return "unknown param";
    case 14:
      if (t.params.empty()) return "none";
      t.params[r.below(t.params.size())].value =
          r.below(2) ? ir::ParamValue::of_float(0.5)
                     : ir::ParamValue::of_json(ir::JsonValue(nlohmann::ordered_json("x")));
      return "param type";
    case 15:
      t.set_param("eps", ir::ParamValue::of_float(r.below(2) ? std::nan("") : -HUGE_VAL));
      return "param not finite";
    case 16:
      for (size_t b = 0; b < p.buffers.size(); ++b)
        if (p.buffers[b].kind == ir::BufferKind::WEIGHT && !t.outputs.empty()) {
          t.outputs[0] = static_cast<int64_t>(b);
          return "writes a weight";
        }
      return "none";
    case 17:
      if (t.params.empty()) return "none";
      t.params[r.below(t.params.size())].value = ir::ParamValue::of_int(r.below(2) ? 0 : -3);
      return "param range";
    case 18:
      p.counters[static_cast<size_t>(r.below(p.counters.size()))].init = 2;
      return "counter init";
    case 19:  // a FUSED task whose recipe AMK's rules refuse
      t.op = ir::Op::FUSED;
      t.set_param("recipe", ir::ParamValue::of_json(ir::JsonValue(nlohmann::ordered_json::parse(
                                r.below(2) ? R"({"steps": []})" : R"({"steps": [{"op": 11}]})"))));
      return "bad recipe";
    default:
      t.op = static_cast<ir::Op>(r.below(ir::kOpCount));
      return "op";
  }
}

std::vector<std::string> lines(const Result& res) {
  std::vector<std::string> out;
  for (const auto& list : {res.errors, res.warnings})
    for (const ir::Diagnostic& d : list) out.push_back(d.code + " " + d.pointer + " " + d.message);
  return out;
}

TEST(Screens, EveryDefectAPerTaskScreenPassesOnIsReportedAsWithoutTheScreens) {
  Rng rng{0xC0FFEE};
  Validator screened, thorough;
  thorough.set_screens(false);
  size_t mutants = 0, rejected = 0;
  for (uint64_t base = 0; base < 24; ++base) {
    fixtures::GenOptions o;
    o.shape = base % 3 == 2 ? fixtures::GenShape::Mesh : fixtures::GenShape::Llama;
    o.seed = base + 11;
    o.tasks = 60 + base % 5 * 30;
    o.pages = base % 2 == 0;
    o.num_sms = base % 3 == 0 ? 4 : 0;
    const ir::Program original = fixtures::generate(o).program;
    ASSERT_EQ(lines(screened.validate(original)), lines(thorough.validate(original)));
    for (int k = 0; k < 40; ++k) {
      ir::Program p = original;
      std::string what;
      for (int j = 0, n = 1 + static_cast<int>(rng.below(2)); j < n; ++j)
        what += std::string(break_task(p, rng)) + "; ";
      const Result a = screened.validate(p), b = thorough.validate(p);
      ++mutants;
      rejected += !b.ok;
      ASSERT_EQ(a.ok, b.ok) << what;
      ASSERT_EQ(lines(a), lines(b)) << what;
    }
  }
  EXPECT_GT(rejected, mutants * 3 / 4);
  ::testing::Test::RecordProperty("mutants", static_cast<int>(mutants));
}

}  // namespace
}  // namespace amk::validate
