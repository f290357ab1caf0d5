#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/csr.h"
#include "ir/pyjson.h"
#include "ir/result.h"
#include "validate/context.h"
#include "validate/parallel.h"

namespace amk::validate {

bool Context::admit(std::string_view code) {
  auto it = counts.find(code);
  if (it == counts.end()) it = counts.emplace(code, 0).first;
  return ++it->second <= kPerRuleCap;
}

void Context::error(const Rule& rule, std::string msg, std::string pointer,
                    std::vector<ir::Note> notes) {
  r.ok = false;
  if (!admit(rule.code)) return;
  ir::Diagnostic& d =
      r.errors.emplace_back(ir::error(std::string(rule.code), std::move(msg), std::move(pointer)));
  d.notes = std::move(notes);
}

void Context::warn(const Rule& rule, std::string msg, std::string pointer,
                   std::vector<ir::Note> notes) {
  if (!admit(rule.code)) return;
  ir::Diagnostic& d = r.warnings.emplace_back(
      ir::warning(std::string(rule.code), std::move(msg), std::move(pointer)));
  d.notes = std::move(notes);
}

void Context::absorb(Result& part, const RuleCounts& part_counts) {
  r.ok = r.ok && part.ok;
  // The part kept the first kPerRuleCap of each code it counted; of those, the ones still under
  // the cap after what this context counted before them are kept.
  auto keep = [&](ir::Diagnostics& from, ir::Diagnostics& to) {
    RuleCounts seen;
    for (ir::Diagnostic& d : from) {
      const auto before = counts.find(d.code);
      if ((before == counts.end() ? 0 : before->second) + ++seen[d.code] <= kPerRuleCap)
        to.push_back(std::move(d));
    }
  };
  keep(part.errors, r.errors);
  keep(part.warnings, r.warnings);
  for (const auto& [code, n] : part_counts) counts[code] += n;
}

void Context::finish() {
  for (const Rule& rule : rules()) {
    const auto it = counts.find(rule.code);
    if (it == counts.end() || it->second <= kPerRuleCap) continue;
    const std::string code(rule.code);
    const size_t n = it->second;
    bool is_error = false;
    for (const auto& d : r.errors) is_error = is_error || d.code == code;
    auto& list = is_error ? r.errors : r.warnings;
    const std::string msg = fmt::format("{} more '{}' diagnostics not shown (first {} kept)",
                                        n - kPerRuleCap, code, kPerRuleCap);
    list.push_back(is_error ? ir::error(code, msg) : ir::warning(code, msg));
  }
}

std::string task_ref(const ir::Task& t, size_t id) {
  return fmt::format("task {} ({})", id, t.label);
}

std::string number_repr(const ir::Number& n) {
  return n.is_int ? std::to_string(n.i) : ir::py_float(n.f);
}

Validator::Validator() : s_(std::make_unique<Scratch>()) {}
Validator::~Validator() = default;
Validator::Validator(Validator&&) noexcept = default;
Validator& Validator::operator=(Validator&&) noexcept = default;

void Validator::set_threads(unsigned n) {
  s_->threads = n;
}

void Validator::set_screens(bool on) {
  s_->screens = on;
}

const ir::Graph& Validator::graph() const {
  return s_->graph;
}

const ir::ScheduleGraph* Validator::queue_graph() const {
  return s_->queues_built ? &*s_->queues : nullptr;
}

void Validator::set_incremental(bool on) {
  s_->incremental = on;
  s_->last.valid = false;
}

ProofPath Validator::last_path() const {
  return s_->path;
}

Result Validator::validate(const ir::Program& p, Reuse reuse) {
  Scratch& s = *s_;
  if (s.incremental) return prove_incrementally(s, p, reuse, 0);
  s.path = ProofPath{};
  return prove(s, p, nullptr);
}

Result Validator::validate(const ir::Program& p, uint64_t tasks_stamp) {
  Scratch& s = *s_;
  if (s.incremental) return prove_incrementally(s, p, Reuse::Compare, tasks_stamp);
  return validate(p);
}

void Validator::set_check_stamps(bool on) {
  s_->check_stamps = on;
}

uint64_t Validator::broken_stamps() const {
  return s_->broken_stamps;
}

namespace {

// The rules that only read tasks, buffers and counters (and the graph they make): buffers, the
// per-task pass, counters, cycles and the race proofs.
void prove_structure(Context& c) {
  const ir::Program& p = c.p;
  Scratch& s = c.s;
  // The counter graph, the buffers' writers and users, and the buffer rules (the first to report)
  // do not depend on each other: a big program's run them on two threads.
  const size_t parts = parallel_parts(p.tasks.size(), s.threads);
  const bool buffers_known = s.task_changed != nullptr;
  if (parts < 2) {  // one thread: one pass indexes writers and users
    ir::index_buffer_tasks(p, nullptr, &s.writers, &s.users);
    check_buffers(c, buffers_known);
    s.graph.assign(p);
  } else {
    run_parts(2, 2, [&](size_t, size_t begin, size_t) {
      if (begin == 0) {
        ir::index_buffer_tasks(p, nullptr, &s.writers, nullptr);
        check_buffers(c, buffers_known);
      } else {
        s.graph.assign(p);
        ir::index_buffer_tasks(p, nullptr, nullptr, &s.users);
      }
    });
  }
  s.regions.resize(p.tasks.size());
  // One pass (each task is loaded once), over ranges of tasks on several threads for a big
  // program: the parts after the first report into their own results, merged in order.
  std::vector<Result> part_results(parts);
  std::vector<RuleCounts> part_counts(parts);
  const uint8_t* const changed = s.task_changed ? s.task_changed->data() : nullptr;
  run_parts(p.tasks.size(), parts, [&](size_t k, size_t begin, size_t end) {
    Context ck = k == 0 ? c : Context{p, s.graph, s, part_results[k], part_counts[k]};
    for (size_t id = begin; id < end; ++id) {
      if (changed && !changed[id]) {
        check_task_waits(ck, id);
        continue;
      }
      const ir::ParamTable pt = ir::ParamTable::of(p.tasks[id]);
      s.regions[id] = ir::tile_region(p.tasks[id].op, pt, c.foreign());
      const TaskScreen screen = check_task_refs(ck, id, pt);
      check_task_structure(ck, id, pt, screen.writes_readonly);
      check_task_shapes(ck, id, pt, screen.refs_clean);
      check_task_waits(ck, id);
    }
  });
  for (size_t k = 1; k < parts; ++k) c.absorb(part_results[k], part_counts[k]);
  check_counters(c);
  if (check_cycles(c).empty()) {
    s.reach.bind(s.graph);
    check_hazards(c);
  }
}

}  // namespace

void run_stage(Context& c, Stage stage) {
  switch (stage) {
    case Stage::Structure:
      prove_structure(c);
      return;
    case Stage::Placement:
      return check_placement(c);
    case Stage::Pages:
      return check_pages(c);
    case Stage::Outputs:
      return check_outputs(c);
    case Stage::Capacity:
      return check_capacity(c);
  }
}

Stats stats_of(const ir::Program& p, const Scratch& s) {
  const ir::Graph& g = s.graph;
  Stats st;
  st.tasks = p.tasks.size();
  st.buffers = p.buffers.size();
  st.counters = p.counters.size();
  st.edges = g.edge_count();
  st.acyclic = g.acyclic();
  st.weight_mb = std::stod(ir::py_round2(static_cast<double>(p.total_weight_bytes()) / 1e6));
  st.sm_assigned = s.sm_assigned;
  return st;
}

Result prove(Scratch& s, const ir::Program& p, StageEnds* ends) {
  s.rule_count.clear();
  s.queues_built = false;
  Result r;
  Context c{p, s.graph, s, r, s.rule_count};
  for (size_t k = 0; k < kStages; ++k) {
    run_stage(c, static_cast<Stage>(k));
    if (ends) ends->mark(k, r);
  }
  c.finish();
  r.stats = stats_of(p, s);
  r.ok = r.errors.empty();
  return r;
}

Result validate(const ir::Program& p) {
  thread_local Validator v;
  return v.validate(p);
}

ir::Diagnostics structural_errors(const ir::Program& p, int64_t num_sms) {
  if (p.tasks.size() >= (size_t{1} << 31))
    return {ir::error("abi.max-tasks", "too many tasks for the ABI (int32 ids)", "/tasks")};
  Scratch s;
  Result r;
  Context c{p, s.graph, s, r, s.rule_count};
  check_buffers(c);
  for (size_t id = 0; id < p.tasks.size(); ++id)
    check_task_refs(c, id, ir::ParamTable::of(p.tasks[id]));
  ir::Diagnostics out;
  for (ir::Diagnostic& d : r.errors)
    if (d.code.starts_with("ref.") || d.code.starts_with("abi.") || d.code == "buffer.dims" ||
        d.code == "buffer.size")
      out.push_back(std::move(d));
  ir::append(out, sm_range_errors(p, num_sms));
  return out;
}

ir::Diagnostics sm_range_errors(const ir::Program& p, int64_t num_sms) {
  ir::Diagnostics out;
  for (size_t t = 0; t < p.tasks.size(); ++t) {
    const auto& sm = p.tasks[t].sm;
    if (sm && (*sm < 0 || *sm >= num_sms))
      out.push_back(ir::error(
          "sm.range", fmt::format("task {} assigned to SM {} out of range [0,{})", t, *sm, num_sms),
          ir::task_pointer(t, "sm")));
  }
  return out;
}

}  // namespace amk::validate
