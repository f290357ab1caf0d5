// The incremental proof (Validator::set_incremental). A program equal to the one proved last in
// everything but its tasks' SMs, its page allocation and its config is proved by running again the
// stages of the proof that read those, and taking the other stages' diagnostics from the last
// proof. Why the result is the full proof's:
//  - Equal means word for word on ProgramImage: every field of the program, bit for bit.
//  - Of the three, the proof reads tasks' SMs in check_placement, check_capacity and
//    Stats::sm_assigned only; the page allocation in check_pages only; the config in
//    check_capacity only. Every other stage reads none of them, so on an equal rest it reports
//    what it reported last time (a proof is a function of the program).
//  - The scratch the re-run stages read (the counter graph, the buffers' writers and users) is a
//    function of the rest, and is the last proof's; the SM-queue graph is built again with
//    placement, or is the last proof's for the same SMs.
//  - Each rule code is reported by one stage only, so a stage run alone with fresh per-code counts
//    keeps and counts what it kept and counted inside a full proof; the summaries of capped codes
//    (Context::finish) are made again from the merged counts.
// Any other change (tasks, buffers, counters, target, runtime, meta, versions) is proved in full.
#include <algorithm>

#include "validate/context.h"

namespace amk::validate {

std::string_view name(ProofPath p) {
  switch (p) {
    case ProofPath::Full:
      return "full";
    case ProofPath::Same:
      return "same";
    case ProofPath::Config:
      return "config";
    case ProofPath::Placement:
      return "placement";
    case ProofPath::Pages:
      return "pages";
    case ProofPath::PlacementPages:
      return "placement+pages";
  }
  return "full";
}

namespace {

ProofPath path_between(const ProgramImage& last, const ProgramImage& next) {
  if (last.core != next.core) return ProofPath::Full;
  const bool sm = last.sm != next.sm, pages = last.pages != next.pages;
  if (sm) return pages ? ProofPath::PlacementPages : ProofPath::Placement;
  if (pages) return ProofPath::Pages;
  return last.config != next.config ? ProofPath::Config : ProofPath::Same;
}

// Whether `path` runs `stage` again: the stages that read what changed (see the top of the file).
bool reruns(ProofPath path, Stage stage) {
  switch (stage) {
    case Stage::Placement:
      return path == ProofPath::Placement || path == ProofPath::PlacementPages;
    case Stage::Pages:
      return path == ProofPath::Pages || path == ProofPath::PlacementPages;
    case Stage::Capacity:
      return path != ProofPath::Same;
    case Stage::Structure:
    case Stage::Outputs:
      return false;
  }
  return true;
}

// The rule codes a re-runnable stage reports.
std::span<const Rule> codes_of(Stage stage) {
  switch (stage) {
    case Stage::Placement:
      return placement_rules();
    case Stage::Pages:
      return page_rules();
    default:
      return capacity_rules();
  }
}

template <class List>
void append(List& to, const List& from, size_t begin, size_t end) {
  to.insert(to.end(), from.begin() + static_cast<std::ptrdiff_t>(begin),
            from.begin() + static_cast<std::ptrdiff_t>(end));
}

// The proof of `p` along `path` (not Full): the last proof's stages, with the stages `path` runs
// again in their places.
Result reprove(Scratch& s, const ir::Program& p, ProofPath path, StageEnds& ends) {
  const LastProof& last = s.last;
  Result r;
  RuleCounts counts = last.counts;
  size_t error_from = 0, warning_from = 0;
  for (size_t k = 0; k < kStages; ++k) {
    const auto stage = static_cast<Stage>(k);
    if (reruns(path, stage)) {
      for (const Rule& rule : codes_of(stage)) counts.erase(std::string(rule.code));
      if (stage == Stage::Placement) s.queues_built = false;
      Result fresh;
      RuleCounts fresh_counts;
      Context c{p, s.graph, s, fresh, fresh_counts};
      run_stage(c, stage);
      std::move(fresh.errors.begin(), fresh.errors.end(), std::back_inserter(r.errors));
      std::move(fresh.warnings.begin(), fresh.warnings.end(), std::back_inserter(r.warnings));
      for (const auto& [code, n] : fresh_counts) counts[code] += n;
    } else {
      append(r.errors, last.result.errors, error_from, last.ends.errors[k]);
      append(r.warnings, last.result.warnings, warning_from, last.ends.warnings[k]);
    }
    error_from = last.ends.errors[k];
    warning_from = last.ends.warnings[k];
    ends.mark(k, r);
  }
  Context c{p, s.graph, s, r, counts};
  c.finish();
  s.rule_count = std::move(counts);
  r.stats = stats_of(p, s.graph);
  r.ok = r.errors.empty();
  return r;
}

}  // namespace

Result prove_incrementally(Scratch& s, const ir::Program& p) {
  LastProof& last = s.last;
  last.next.build(p);
  const ProofPath path = last.valid ? path_between(last.image, last.next) : ProofPath::Full;
  last.valid = false;
  StageEnds ends;
  Result r = path == ProofPath::Full ? prove(s, p, &ends) : reprove(s, p, path, ends);
  std::swap(last.image, last.next);
  last.result = r;
  last.counts = s.rule_count;
  last.ends = ends;
  last.valid = true;
  s.path = path;
  return r;
}

}  // namespace amk::validate
