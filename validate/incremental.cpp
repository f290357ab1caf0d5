// The incremental proof (Validator::set_incremental). A program equal to the one proved last in
// everything but its tasks' SMs, its page allocation, its meta and its config is proved by running
// again the stages of the proof that read what changed, and taking the other stages' diagnostics
// from the last proof. Why the result is the full proof's:
//  - Equal means word for word on ProgramImage: every field of the program, bit for bit. The
//    tasks but their SMs are not compared when the caller's stamp promises them to be the last
//    proof's (Validator::validate: a warm lowerer's recalled run only moves SMs).
//  - Of the four, the proof reads tasks' SMs in check_placement and check_capacity only (Stats'
//    sm_assigned is what check_placement found: the last proof's when SMs did not change); the
//    page allocation in check_pages only; meta in check_outputs only; the config in
//    check_capacity only. A stage that reads none of what changed reports what it reported last
//    time (a proof is a function of the program).
//  - The scratch the re-run stages read (the counter graph, the buffers' writers, users and
//    element counts) is a function of the rest, and is the last proof's; the SM-queue graph is
//    built again with placement, or is the last proof's for the same SMs.
//  - Each rule code is reported by one stage only, so a stage run alone with fresh per-code counts
//    keeps and counts what it kept and counted inside a full proof; the summaries of capped codes
//    (Context::finish) are made again from the merged counts.
// Any other change (tasks, buffers, counters, target, runtime, versions) is proved in full. When
// only tasks changed (as many as before, the rest as above) and the last proof reported none of
// the tasks' own rules (refs, params, shapes), the full proof runs those rules only for the
// tasks that changed: they read nothing but the task itself, the buffers and the counters' count,
// so a task the same as the last proof's (ProgramImage::task_changed) reports none again, and its
// region (what the race rules read of it) is the last proof's. The buffers' rules, which read the
// buffers only, report none again either: the buffers are the last proof's, whose numel and bits
// are kept; only the tasks' estimates are summed again.
#include <algorithm>
#include <string>
#include <utility>

#include "validate/context.h"

namespace amk::validate {

std::string name(ProofPath p) {
  if (p.full) return p.tasks ? "tasks" : "full";
  std::string out;
  for (auto [ran, stage] : {std::pair{p.placement, "placement"},
                            {p.pages, "pages"},
                            {p.outputs, "outputs"},
                            {p.capacity, "capacity"}})
    if (ran) out += (out.empty() ? "" : "+") + std::string(stage);
  return out.empty() ? "same" : out;
}

namespace {

// The stages that read what changed: tasks' SMs (placement, capacity), the page allocation
// (pages), meta (outputs), the config (capacity); anything else is proved in full.
ProofPath path_of(const ProgramImage::Changes& c) {
  ProofPath path;
  if (c.core || c.tasks) return path;
  path.full = false;
  path.placement = c.sm;
  path.pages = c.pages;
  path.outputs = c.meta;
  path.capacity = c.sm || c.config;
  return path;
}

bool reruns(ProofPath path, Stage stage) {
  switch (stage) {
    case Stage::Structure:
      return false;
    case Stage::Placement:
      return path.placement;
    case Stage::Pages:
      return path.pages;
    case Stage::Outputs:
      return path.outputs;
    case Stage::Capacity:
      return path.capacity;
  }
  return true;
}

// The rule codes a stage reports.
std::span<const Rule> codes_of(Stage stage) {
  switch (stage) {
    case Stage::Placement:
      return placement_rules();
    case Stage::Pages:
      return page_rules();
    case Stage::Outputs:
      return output_rules();
    default:
      return capacity_rules();
  }
}

template <class List>
void append(List& to, const List& from, size_t begin, size_t end) {
  to.insert(to.end(), from.begin() + static_cast<std::ptrdiff_t>(begin),
            from.begin() + static_cast<std::ptrdiff_t>(end));
}

// The proof of `p` along `path` (not full): the last proof's stages, with the stages `path` runs
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
  r.stats = stats_of(p, s);
  r.ok = r.errors.empty();
  return r;
}

// True when the last proof reported no diagnostic of the tasks' own rules.
bool own_rules_silent(const LastProof& last) {
  for (auto family : {task_rules(), shape_rules()})
    for (const Rule& rule : family)
      if (const auto it = last.counts.find(rule.code); it != last.counts.end() && it->second)
        return false;
  return true;
}

// Scratch::task_changed for one proof, null again however it ends.
struct TasksChanged {
  Scratch& s;
  TasksChanged(Scratch& scratch, const std::vector<uint8_t>& changed) : s(scratch) {
    s.task_changed = &changed;
  }
  ~TasksChanged() { s.task_changed = nullptr; }
  TasksChanged(const TasksChanged&) = delete;
  TasksChanged& operator=(const TasksChanged&) = delete;
};

}  // namespace

Result prove_incrementally(Scratch& s, const ir::Program& p, Reuse reuse, uint64_t tasks_stamp) {
  LastProof& last = s.last;
  if (reuse == Reuse::Alone) {  // no image: the next call has nothing to compare with
    last.valid = false;
    s.path = ProofPath{};
    return prove(s, p, nullptr);
  }
  // The image of the last proof becomes p's; what it found changed picks the path. Tasks the
  // caller's stamp says are the last proof's (but for their SMs) are not compared. Nothing of the
  // last proof is trusted until this one completes: a rebuild or a proof that throws leaves a
  // partial image, which the next call then compares in full.
  const bool had_last = last.valid;
  last.valid = false;
  const bool promised = had_last && tasks_stamp != 0 && tasks_stamp == last.tasks_stamp;
  const size_t tasks_before = last.image.task_at.size();
  const ProgramImage::Changes changes = last.image.rebuild(p, promised && !s.check_stamps);
  s.broken_stamps += promised && changes.tasks;
  ProofPath path = had_last ? path_of(changes) : ProofPath{};
  path.tasks = had_last && !changes.core && changes.tasks && tasks_before == p.tasks.size() &&
               own_rules_silent(last);
  last.tasks_stamp = tasks_stamp;
  StageEnds ends;
  Result r;
  if (path.tasks) {
    TasksChanged changed(s, last.image.task_changed);
    r = prove(s, p, &ends);
  } else {
    r = path.full ? prove(s, p, &ends) : reprove(s, p, path, ends);
  }
  last.result = r;
  last.counts = s.rule_count;
  last.ends = ends;
  last.valid = true;
  s.path = path;
  return r;
}

}  // namespace amk::validate
