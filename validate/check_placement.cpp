// AMK steps 5b (on-chip buffers on one SM) and 6 (per-SM queue order, SM range), plus negative SMs
// checked even when the program has no target.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ir/pyjson.h"
#include "validate/context.h"

namespace amk::validate {

void check_placement(Context& c) {
  const ir::Program& p = c.p;
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
      c.error("onchip.cross-sm",
              fmt::format("on-chip buffer '{}'(#{}, {}) is used across SMs [{}], counters give "
                          "ordering, not cross-SM data; promote to GLOBAL_SCRATCH/HBM or co-locate "
                          "on one SM",
                          buf.name, b, ir::name(buf.space), list),
              fmt::format("/buffers/{}/space", b));
    } else if (!users.empty() && sms.empty()) {
      c.warn("onchip.unassigned",
             fmt::format("on-chip buffer '{}'(#{}) requires same-SM placement (unverified until "
                         "sm_assignment runs)",
                         buf.name, b),
             fmt::format("/buffers/{}/space", b));
    }
  }
  if (!p.sm_assigned()) return;
  for (uint32_t a = 0; a < c.g.num_tasks(); ++a) {
    const auto& sa = p.tasks[a].sm;
    if (!sa) continue;
    for (uint32_t b : c.g.consumers(a)) {
      if (p.tasks[b].sm == sa && a >= b)
        c.error("sm.queue-order",
                fmt::format("SM {} queue order violates dependency {}->{} (producer must precede "
                            "consumer in the same SM's serial queue)",
                            *sa, a, b),
                ir::task_pointer(b, "sm"),
                {{fmt::format("the producer {} is later in SM {}'s queue", task_ref(p.tasks[a], a),
                              *sa),
                  ir::task_pointer(a, "sm")}});
    }
  }
  for (size_t t = 0; t < p.tasks.size(); ++t) {
    const auto& sm = p.tasks[t].sm;
    if (!sm) continue;
    if (p.target) {
      double n = p.target->num_sms.as_double();
      if (!(*sm >= 0 && static_cast<double>(*sm) < n))
        c.error("sm.range",
                fmt::format("task {} assigned to SM {} out of range [0,{})", t, *sm,
                            number_repr(p.target->num_sms)),
                ir::task_pointer(t, "sm"));
    } else if (*sm < 0) {
      c.error("sm.negative", fmt::format("task {} assigned to negative SM {}", t, *sm),
              ir::task_pointer(t, "sm"));
    }
  }
}

void check_outputs(Context& c) {
  const ir::Program& p = c.p;
  for (size_t b = 0; b < p.buffers.size(); ++b)
    if (p.buffers[b].kind == ir::BufferKind::IO_OUTPUT &&
        c.writers(static_cast<int64_t>(b)).empty())
      c.error("io.never-produced",
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
    c.warn("meta.gpu-mismatch",
           fmt::format("meta['gpu']={} != target.name={} - flywheel rows derive GPU from "
                       "target.name",
                       ir::py_repr(gpu), ir::py_repr_str(p.target->name)),
           "/meta/gpu");
}

}  // namespace amk::validate
