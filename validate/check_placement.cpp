// AMK steps 5b (on-chip buffers on one SM) and 6 (per-SM queue order, SM range), plus negative SMs
// checked even when the program has no target.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ir/digraph.h"
#include "ir/pyjson.h"
#include "validate/context.h"

namespace amk::validate {

// The rules this file checks, in emission order (rules() lists every family's).
constexpr Rule kOnchipCrossSm{"onchip.cross-sm",
                              "an SMEM/REGISTER buffer is used on more than one SM", true};
constexpr Rule kOnchipUnassigned{"onchip.unassigned",
                                 "warning: an on-chip buffer's users have no SM yet", true};
constexpr Rule kSmQueueOrder{"sm.queue-order",
                             "same-SM producer after its consumer in the SM's serial queue", true};
constexpr Rule kSmQueueDeadlock{
    "sm.queue-deadlock",
    "counter waits plus per-SM queue order form a cycle (AMK checks only same-SM edges)", false};
constexpr Rule kSmRange{"sm.range", "an SM outside [0, target.num_sms)", true};
constexpr Rule kSmNegative{"sm.negative", "a negative SM (checked even without a target)", false};
constexpr Rule kIoNeverProduced{"io.never-produced", "an IO_OUTPUT buffer is never written", true};
constexpr Rule kMetaGpuMismatch{"meta.gpu-mismatch", "warning: meta.gpu differs from target.name",
                                true};

std::span<const Rule> placement_rules() {
  static constexpr Rule kList[] = {kOnchipCrossSm,   kOnchipUnassigned, kSmQueueOrder,
                                   kSmQueueDeadlock, kSmRange,          kSmNegative};
  return kList;
}

std::span<const Rule> output_rules() {
  static constexpr Rule kList[] = {kIoNeverProduced, kMetaGpuMismatch};
  return kList;
}

namespace {

// AMK checks only same-SM edges against queue order; that is not enough. With x, y queued on SM 0
// and u, v on SM 1, "x waits on v" and "u waits on y" deadlock although no same-SM edge is out of
// order. The sound condition: counter edges plus each SM's queue order (consecutive tasks in list
// order) form an acyclic graph.
void check_queue_deadlock(Context& c) {
  const ir::Program& p = c.p;
  const uint32_t n = c.g.num_tasks();
  if (c.s.queues)
    c.s.queues->assign(p, ir::QueueEdges::Assigned);
  else
    c.s.queues.emplace(p, c.g, ir::QueueEdges::Assigned);
  c.s.queues_built = true;
  const ir::ScheduleGraph& d = *c.s.queues;
  if (d.acyclic()) return;
  // Witness: walk backwards from the lowest stuck task through stuck predecessors (its SM-queue
  // predecessor first, then producers by wait) until a task repeats.
  std::vector<uint8_t> stuck(n, 1);
  for (uint32_t t : d.order()) stuck[t] = 0;
  uint32_t v = static_cast<uint32_t>(std::find(stuck.begin(), stuck.end(), 1) - stuck.begin());
  std::vector<uint32_t> walk;
  std::vector<int64_t> seen_at(n, -1);
  while (seen_at[v] < 0) {
    seen_at[v] = static_cast<int64_t>(walk.size());
    walk.push_back(v);
    uint32_t pred = UINT32_MAX;
    d.for_each_pred(v, [&](uint32_t q) {
      if (pred == UINT32_MAX && stuck[q]) pred = q;
    });
    v = pred;
  }
  std::vector<uint32_t> cyc(walk.begin() + seen_at[v], walk.end());
  std::reverse(cyc.begin(), cyc.end());  // forward direction: each hop enables the next
  auto lowest = std::min_element(cyc.begin(), cyc.end());
  std::rotate(cyc.begin(), lowest, cyc.end());
  cyc.push_back(cyc.front());
  std::string path = fmt::format("{}:{}", cyc[0], p.tasks[cyc[0]].display());
  std::vector<ir::Note> notes;
  for (size_t i = 0; i + 1 < cyc.size(); ++i) {
    uint32_t a = cyc[i], b = cyc[i + 1];
    bool queue = d.queue_next(a) == static_cast<int64_t>(b);
    path += fmt::format(" {} {}:{}", queue ? "=>" : "->", b, p.tasks[b].display());
    if (notes.size() < 16)
      notes.push_back(
          queue ? ir::Note{fmt::format("t{} runs after t{} in SM {}'s queue", b, a, *p.tasks[a].sm),
                           ir::task_pointer(b, "sm")}
                : ir::Note{
                      fmt::format("t{} waits for counter {} of t{}", b, p.tasks[a].out_counter, a),
                      ir::task_pointer(b, "waits")});
  }
  c.error(kSmQueueDeadlock,
          fmt::format("SM queues deadlock: counter waits (->) and per-SM queue order (=>) form a "
                      "cycle: {}",
                      path),
          ir::task_pointer(cyc[0], "sm"), std::move(notes));
}

}  // namespace

void check_placement(Context& c) {
  const ir::Program& p = c.p;
  c.s.sm_assigned = p.sm_assigned();  // the proof's one walk for it (Stats reads it too)
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    const ir::Buffer& buf = p.buffers[b];
    if (!ir::is_onchip(buf.space)) continue;
    auto users = c.users(static_cast<int64_t>(b));
    std::set<int64_t> sms;
    for (uint32_t t : users)
      if (p.tasks[t].sm) sms.insert(*p.tasks[t].sm);
    if (sms.size() > 1) {
      std::string list;
      for (int64_t s : sms) list += (list.empty() ? "" : ", ") + std::to_string(s);
      c.error(kOnchipCrossSm,
              fmt::format("on-chip buffer '{}'(#{}, {}) is used across SMs [{}], counters give "
                          "ordering, not cross-SM data; promote to GLOBAL_SCRATCH/HBM or co-locate "
                          "on one SM",
                          buf.name, b, ir::name(buf.space), list),
              fmt::format("/buffers/{}/space", b));
    } else if (!users.empty() && sms.empty()) {
      c.warn(kOnchipUnassigned,
             fmt::format("on-chip buffer '{}'(#{}) requires same-SM placement (unverified until "
                         "sm_assignment runs)",
                         buf.name, b),
             fmt::format("/buffers/{}/space", b));
    }
  }
  if (!c.s.sm_assigned) return;
  auto queue_errors = [&] {
    const auto it = c.counts.find(kSmQueueOrder.code);
    return it == c.counts.end() ? size_t{0} : it->second;
  };
  const size_t queue_errors_before = queue_errors();
  for (uint32_t a = 0; a < c.g.num_tasks(); ++a) {
    const auto& sa = p.tasks[a].sm;
    if (!sa) continue;
    for (uint32_t b : c.g.consumers(a)) {
      if (p.tasks[b].sm == sa && a >= b)
        c.error(kSmQueueOrder,
                fmt::format("SM {} queue order violates dependency {}->{} (producer must precede "
                            "consumer in the same SM's serial queue)",
                            *sa, a, b),
                ir::task_pointer(b, "sm"),
                {{fmt::format("the producer {} is later in SM {}'s queue", task_ref(p.tasks[a], a),
                              *sa),
                  ir::task_pointer(a, "sm")}});
    }
  }
  if (c.g.acyclic() && queue_errors() == queue_errors_before) check_queue_deadlock(c);
  for (size_t t = 0; t < p.tasks.size(); ++t) {
    const auto& sm = p.tasks[t].sm;
    if (!sm) continue;
    if (p.target) {
      double n = p.target->num_sms.as_double();
      if (!(*sm >= 0 && static_cast<double>(*sm) < n))
        c.error(kSmRange,
                fmt::format("task {} assigned to SM {} out of range [0,{})", t, *sm,
                            number_repr(p.target->num_sms)),
                ir::task_pointer(t, "sm"));
    } else if (*sm < 0) {
      c.error(kSmNegative, fmt::format("task {} assigned to negative SM {}", t, *sm),
              ir::task_pointer(t, "sm"));
    }
  }
}

void check_outputs(Context& c) {
  const ir::Program& p = c.p;
  for (size_t b = 0; b < p.buffers.size(); ++b)
    if (p.buffers[b].kind == ir::BufferKind::IO_OUTPUT &&
        c.writers(static_cast<int64_t>(b)).empty())
      c.error(kIoNeverProduced,
              fmt::format("IO_OUTPUT buffer '{}'(#{}) is never produced", p.buffers[b].name, b),
              fmt::format("/buffers/{}", b));
  if (!p.target) return;
  const auto& meta = p.meta.json();
  if (!meta.is_object() || !meta.contains("gpu")) return;
  const auto& gpu = meta["gpu"];
  bool truthy = !(gpu.is_null() || (gpu.is_boolean() && !gpu.get<bool>()) ||
                  (gpu.is_number() && gpu.get<double>() == 0) ||
                  ((gpu.is_string() || gpu.is_array() || gpu.is_object()) && gpu.empty()));
  if (truthy && !(gpu.is_string() && gpu.get<std::string>() == p.target->name))
    c.warn(kMetaGpuMismatch,
           fmt::format("meta['gpu']={} != target.name={} - flywheel rows derive GPU from "
                       "target.name",
                       ir::py_repr(gpu), ir::py_repr_str(p.target->name)),
           "/meta/gpu");
}

}  // namespace amk::validate
