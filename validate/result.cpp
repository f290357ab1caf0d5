#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/diagnostic_json.h"
#include "ir/pyjson.h"
#include "validate/context.h"
#include "validate/validate.h"

namespace amk::validate {

std::string Stats::repr() const {
  return fmt::format(
      "{{'tasks': {}, 'buffers': {}, 'counters': {}, 'edges': {}, 'acyclic': {}, 'weight_MB': {}, "
      "'sm_assigned': {}}}",
      tasks, buffers, counters, edges, acyclic ? "True" : "False", ir::py_float(weight_mb),
      sm_assigned ? "True" : "False");
}

namespace {

void details(std::string& out, const ir::Diagnostic& d) {
  out += fmt::format("\n      [{}]{}{}", d.code, d.pointer.empty() ? "" : " at ", d.pointer);
  for (const auto& n : d.notes)
    out +=
        fmt::format("\n      note: {}{}{}", n.message, n.pointer.empty() ? "" : " at ", n.pointer);
}

}  // namespace

std::string Result::report(bool with_details) const {
  std::string out = fmt::format("[{}] {}", ok ? "VALID" : "REJECTED", stats.repr());
  for (const auto& e : errors) {
    out += "\n  ERROR: " + e.message;
    if (with_details) details(out, e);
  }
  for (const auto& w : warnings) {
    out += "\n  warn:  " + w.message;
    if (with_details) details(out, w);
  }
  return out;
}

std::string Result::to_json(std::string_view file) const {
  nlohmann::ordered_json j;
  j["ok"] = ok;
  if (!file.empty()) j["file"] = std::string(file);
  j["errors"] = ir::to_json(errors);
  j["warnings"] = ir::to_json(warnings);
  j["stats"] = {{"tasks", stats.tasks},
                {"buffers", stats.buffers},
                {"counters", stats.counters},
                {"edges", stats.edges},
                {"acyclic", stats.acyclic},
                {"weight_MB", stats.weight_mb},
                {"sm_assigned", stats.sm_assigned}};
  std::string out;
  ir::append_json_value(out, j, 0);
  return out;
}

std::span<const Rule> rules() {
  static const std::vector<Rule> kAll = [] {
    std::vector<Rule> all;
    for (auto family : {task_rules, shape_rules, wait_rules, cycle_rules, read_rules, waw_rules,
                        coverage_rules, placement_rules, page_rules, output_rules})
      for (const Rule& rule : family()) all.push_back(rule);
    return all;
  }();
  return kAll;
}

}  // namespace amk::validate
