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

// What a change touched, as the path the incremental proof should take for it.
constexpr unsigned kNone = 0, kSm = 1, kPages = 2, kConfig = 4, kRest = 8;

ProofPath path_for(unsigned touched) {
  if (touched & kRest) return ProofPath::Full;
  if ((touched & kSm) && (touched & kPages)) return ProofPath::PlacementPages;
  if (touched & kSm) return ProofPath::Placement;
  if (touched & kPages) return ProofPath::Pages;
  return touched & kConfig ? ProofPath::Config : ProofPath::Same;
}

unsigned move_tasks(ir::Program& p, Rng& r) {
  if (p.tasks.empty()) return kNone;
  const auto sms = static_cast<int64_t>(1 + r.below(6));
  switch (r.below(4)) {
    case 0:  // a few tasks elsewhere, some out of range, some off every SM
      for (size_t k = 0, n = 1 + r.below(4); k < n; ++k) {
        auto& sm = p.tasks[r.below(p.tasks.size())].sm;
        sm = r.below(5) == 0 ? std::nullopt : std::optional<int64_t>(r.below(9) - 1);
      }
      break;
    case 1:  // every task, round robin
      for (size_t t = 0; t < p.tasks.size(); ++t) p.tasks[t].sm = static_cast<int64_t>(t) % sms;
      break;
    case 2:  // every task, in blocks (queue order against the counters, on-chip buffers split)
      for (size_t t = 0; t < p.tasks.size(); ++t)
        p.tasks[t].sm = static_cast<int64_t>(t * static_cast<size_t>(sms) / p.tasks.size());
      break;
    default:  // none
      for (ir::Task& t : p.tasks) t.sm.reset();
  }
  return kSm;
}

unsigned rebind_pages(ir::Program& p, Rng& r) {
  if (!p.pages || r.below(6) == 0) {  // a new allocation: one page shared by a few buffers
    if (p.buffers.empty()) return kNone;
    ir::PageAllocation pa;
    pa.pages.push_back({ir::MemSpace::GLOBAL_SCRATCH, int64_t{1} << 40, -1, -1, {}});
    for (size_t k = 0, n = 2 + r.below(3); k < n; ++k)
      pa.buffer_to_page.emplace_back(static_cast<int64_t>(r.below(p.buffers.size())), 0);
    p.pages = std::move(pa);
    return kPages;
  }
  ir::PageAllocation& pa = *p.pages;
  switch (r.below(4)) {
    case 0:  // two buffers swap pages
      if (pa.buffer_to_page.size() < 2) return kNone;
      std::swap(pa.buffer_to_page[r.below(pa.buffer_to_page.size())].second,
                pa.buffer_to_page[r.below(pa.buffer_to_page.size())].second);
      break;
    case 1:  // a buffer on a page that does not exist, or on page 0
      if (pa.buffer_to_page.empty()) return kNone;
      pa.buffer_to_page[r.below(pa.buffer_to_page.size())].second =
          r.below(2) ? static_cast<int64_t>(pa.pages.size()) + 3 : 0;
      break;
    case 2:  // a smaller page
      if (pa.pages.empty()) return kNone;
      pa.pages[r.below(pa.pages.size())].nbytes /= 3;
      break;
    default:  // no allocation
      p.pages.reset();
  }
  return kPages;
}

unsigned change_config(ir::Program& p, Rng& r) {
  if (!p.config) p.config = ir::ScheduleConfig::defaults();
  p.config->threads_per_block =
      ir::JsonValue(nlohmann::ordered_json(int64_t{128} << static_cast<int>(r.below(5))));
  p.config->smem_bytes_per_block =
      ir::JsonValue(nlohmann::ordered_json(int64_t{1} << static_cast<int>(8 + r.below(12))));
  return kConfig;
}

unsigned change_rest(ir::Program& p, Rng& r) {
  if (p.tasks.empty()) return kNone;
  ir::Task& t = p.tasks[r.below(p.tasks.size())];
  switch (r.below(4)) {
    case 0:
      if (t.waits.empty()) return kNone;
      t.waits.pop_back();
      break;
    case 1:
      t.label += "'";
      break;
    case 2:  // a float param's sign: equal by ==, not in a report
      t.set_param("eps", ir::ParamValue::of_float(r.below(2) ? 0.0 : -0.0));
      break;
    default:
      if (p.buffers.empty()) return kNone;
      p.buffers[r.below(p.buffers.size())].space = ir::MemSpace::SMEM;
  }
  return kRest;
}

unsigned mutate(ir::Program& p, Rng& r) {
  unsigned touched = kNone;
  for (size_t k = 0, n = 1 + r.below(2); k < n; ++k) {
    switch (r.below(9)) {
      case 0:
      case 1:
      case 2:
        touched |= move_tasks(p, r);
        break;
      case 3:
      case 4:
      case 5:
        touched |= rebind_pages(p, r);
        break;
      case 6:
      case 7:
        touched |= change_config(p, r);
        break;
      default:
        touched |= change_rest(p, r);
    }
  }
  return touched;
}

// What changed from `last` to `p`, as the path the incremental proof should take.
ProofPath expected_path(const ir::Program& last, const ir::Program& p) {
  ir::Program rest = last;
  bool sm = false;
  for (size_t t = 0; t < p.tasks.size() && t < rest.tasks.size(); ++t) {
    sm = sm || rest.tasks[t].sm != p.tasks[t].sm;
    rest.tasks[t].sm = p.tasks[t].sm;
  }
  const bool pages = rest.pages != p.pages, config = rest.config != p.config;
  rest.pages = p.pages;
  rest.config = p.config;
  unsigned touched = (sm ? kSm : 0) | (pages ? kPages : 0) | (config ? kConfig : 0);
  if (ir::write_program(rest) != ir::write_program(p)) touched |= kRest;
  return path_for(touched);
}

// Proves `base` and `variants` of it in a row with one incremental validator, each against a
// fresh full proof; counts the paths taken.
void prove_in_a_row(const ir::Program& base, uint64_t seed, int variants,
                    std::map<ProofPath, int>& paths) {
  Rng rng = Rng::seeded(seed, 46);
  Validator incremental;
  incremental.set_incremental(true);
  ir::Program p = base, last;
  for (int k = 0; k <= variants; ++k) {
    if (k > 0) {
      if (rng.below(5) == 0) p = base;  // back to the start: a search's incumbent
      mutate(p, rng);
    }
    const Result got = incremental.validate(p);
    Validator full;
    const Result want = full.validate(p);
    ASSERT_EQ(everything(got), everything(want)) << "variant " << k;
    ASSERT_EQ(got.ok, want.ok);
    const ProofPath path = k == 0 ? ProofPath::Full : expected_path(last, p);
    EXPECT_EQ(name(incremental.last_path()), name(path)) << "variant " << k;
    ++paths[incremental.last_path()];
    last = p;
  }
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
  std::map<ProofPath, int> paths;
  uint64_t seed = 0;
  for (const fs::path& f : corpus()) {
    SCOPED_TRACE(f.filename().string());
    ir::Result<ir::Program> p = ir::load_program(f.string());
    if (!p) continue;  // a file the reader refuses has no proof
    prove_in_a_row(*p, ++seed, 12, paths);
  }
  for (ProofPath path : {ProofPath::Full, ProofPath::Same, ProofPath::Config, ProofPath::Placement,
                         ProofPath::Pages, ProofPath::PlacementPages})
    EXPECT_GT(paths[path], 0) << name(path);
}

TEST(Incremental, GeneratedProgramsWithSmsPagesARuntimeAndCappedRulesAreProvedAsInFull) {
  std::map<ProofPath, int> paths;
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
  EXPECT_GT(paths[ProofPath::Placement], 0);
  EXPECT_GT(paths[ProofPath::Pages], 0);
}

TEST(Incremental, IsOffByDefaultAndAFullProofAfterItIsTurnedOn) {
  fixtures::GenOptions o;
  o.num_sms = 4;
  const ir::Program p = fixtures::generate(o).program;
  Validator v;
  v.validate(p);
  v.validate(p);
  EXPECT_EQ(v.last_path(), ProofPath::Full);
  v.set_incremental(true);
  v.validate(p);
  EXPECT_EQ(v.last_path(), ProofPath::Full);
  v.validate(p);
  EXPECT_EQ(v.last_path(), ProofPath::Same);
}

}  // namespace
}  // namespace amk::validate
