#include <map>

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

// The lines of one list: at most `per_rule` of a code, then one line for the rest of it.
void lines(std::string& out, const ir::Diagnostics& ds, std::string_view head, bool with_details,
           size_t per_rule) {
  std::map<std::string_view, size_t> shown, total;
  for (const auto& d : ds) ++total[d.code];
  std::map<std::string_view, std::vector<std::string_view>> rest;  // pointers not shown
  for (const auto& d : ds) {
    if (shown[d.code]++ < per_rule) {
      out += fmt::format("\n  {}{}", head, d.message);
      if (with_details) details(out, d);
    } else {
      rest[d.code].push_back(d.pointer);
    }
    if (shown[d.code] != total[d.code] || rest[d.code].empty()) continue;
    const auto& r = rest[d.code];
    std::string where;
    for (size_t i = 0; i < r.size() && i < 4; ++i)
      where += fmt::format("{}{}", i ? ", " : "", r[i].empty() ? "-" : r[i]);
    out += fmt::format(
        "\n  {}... and {} more [{}] like the above (at {}{}; --all or --json lists "
        "each)",
        head, r.size(), d.code, where, r.size() > 4 ? ", ..." : "");
  }
}

}  // namespace

std::string Result::report(bool with_details, size_t per_rule) const {
  std::string out = fmt::format("[{}] {}", ok ? "VALID" : "REJECTED", stats.repr());
  lines(out, errors, "ERROR: ", with_details, per_rule);
  lines(out, warnings, "warn:  ", with_details, per_rule);
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
                        coverage_rules, placement_rules, page_rules, output_rules, capacity_rules})
      for (const Rule& rule : family()) all.push_back(rule);
    return all;
  }();
  return kAll;
}

}  // namespace amk::validate
