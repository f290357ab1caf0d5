#include <algorithm>
#include <array>
#include <iostream>
#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "ir/diff.h"
#include "targets/cost.h"
#include "targets/target.h"

namespace amk::cli {
namespace {

using Us = std::optional<std::pair<double, double>>;

// Counts of the entities other than tasks: {entity: {changed, added, removed}}.
std::map<std::string, std::array<size_t, 3>> other_counts(const ir::DiffResult& d) {
  std::map<std::string, std::array<size_t, 3>> n;
  for (const ir::EntityChange& c : d.changes) {
    if (c.entity == "task") continue;
    auto& row = n[c.entity];
    ++row[c.kind == ir::EntityChange::Kind::Changed ? 0
          : c.kind == ir::EntityChange::Kind::Added ? 1
                                                    : 2];
  }
  return n;
}

std::string stat_text(const ir::DiffResult& d, const ir::Program& a, const ir::Program& b,
                      const std::string& target, const Us& us) {
  if (d.same()) return "programs are the same\n";
  const std::vector<ir::LayerChanges> rows = ir::diff_layers(d, a, b);
  std::string out;
  if (!rows.empty()) {
    out += fmt::format("{:<16} {:>8} {:>8} {:>8}\n", "tasks", "changed", "added", "removed");
    ir::LayerChanges total{"total"};
    for (const ir::LayerChanges& r : rows) {
      out += fmt::format("{:<16} {:>8} {:>8} {:>8}\n", r.layer, r.changed, r.added, r.removed);
      total.changed += r.changed, total.added += r.added, total.removed += r.removed;
    }
    if (rows.size() > 1)
      out += fmt::format("{:<16} {:>8} {:>8} {:>8}\n", total.layer, total.changed, total.added,
                         total.removed);
  }
  for (const auto& [entity, n] : other_counts(d))
    out += fmt::format("{}s: {} changed, {} added, {} removed\n",
                       entity == "program" ? "program field" : entity, n[0], n[1], n[2]);
  out += fmt::format("{} tasks -> {} tasks (matched by {})\n", a.tasks.size(), b.tasks.size(),
                     d.by_label ? "label" : "id");
  if (us)
    out += fmt::format("predicted on {}: {:.1f} us -> {:.1f} us ({:+.1f}%)\n", target, us->first,
                       us->second, 100.0 * (us->second - us->first) / std::max(us->first, 1e-9));
  return out;
}

std::string stat_json(const ir::DiffResult& d, const ir::Program& a, const ir::Program& b,
                      const std::string& target, const Us& us) {
  nlohmann::ordered_json j;
  j["same"] = d.same();
  j["match"] = d.by_label ? "label" : "id";
  j["tasks"] = {{"a", a.tasks.size()}, {"b", b.tasks.size()}};
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const ir::LayerChanges& r : ir::diff_layers(d, a, b))
    layers.push_back(
        {{"layer", r.layer}, {"changed", r.changed}, {"added", r.added}, {"removed", r.removed}});
  j["layers"] = std::move(layers);
  nlohmann::ordered_json others = nlohmann::ordered_json::object();
  for (const auto& [entity, n] : other_counts(d))
    others[entity] = {{"changed", n[0]}, {"added", n[1]}, {"removed", n[2]}};
  j["others"] = std::move(others);
  if (us) j["predicted_us"] = {{"target", target}, {"a", us->first}, {"b", us->second}};
  return j.dump(2) + "\n";
}

}  // namespace

int cmd_diff(int argc, char** argv) {
  Args args("amk diff A B [--json] [--match auto|id|label] [--stat [--target T]]",
            "Semantic diff of two programs. Tasks are matched by label when labels are unique in\n"
            "both (else by id), buffers by name; waits compare by which producers and threshold,\n"
            "so renumbered ids are not reported. --stat prints a summary instead: tasks changed,\n"
            "added and removed per layer, the other entities' counts and, with --target, the\n"
            "cost model's predicted latency of each side. Exit 0 same, 1 different, 2 unreadable.");
  args.add()("a", po::value<std::string>()->required(), "first program")(
      "b", po::value<std::string>()->required(), "second program")("json", "print JSON")(
      "match", po::value<std::string>()->default_value("auto"), "auto, id or label")(
      "stat", "summary: task changes per layer, other entities' counts")(
      "target,t", po::value<std::string>(),
      "--stat: the predicted latency of both programs on this target");
  args.positional("a", 1);
  args.positional("b", 1);
  if (auto rc = args.parse(argc, argv)) return *rc;
  const bool json = args.has("json");
  if (args.has("target") && !args.has("stat")) {
    std::cerr << "amk diff: --target goes with --stat\n";
    return kUnreadable;
  }
  std::optional<targets::TargetSpec> target;
  if (args.has("target")) {
    ir::Result<targets::TargetSpec> t = targets::load_target(args.get<std::string>("target"));
    if (!t) return fail(t.diagnostics, "amk diff", json);
    target = std::move(t.value);
  }
  std::string m = args.get<std::string>("match");
  ir::DiffMatch match = m == "id"      ? ir::DiffMatch::Id
                        : m == "label" ? ir::DiffMatch::Label
                                       : ir::DiffMatch::Auto;
  if (m != "auto" && m != "id" && m != "label") {
    std::cerr << "amk diff: --match must be auto, id or label\n";
    return kUnreadable;
  }
  Progress progress("amk diff");
  progress.step("loading " + sized(args.get<std::string>("a")));
  auto a = load(args.get<std::string>("a"), json);
  if (!a) return kUnreadable;
  progress.step("loading " + sized(args.get<std::string>("b")));
  auto b = load(args.get<std::string>("b"), json);
  if (!b) return kUnreadable;
  progress.step(fmt::format("comparing {} and {} tasks", a->tasks.size(), b->tasks.size()));
  ir::DiffResult d = ir::diff_programs(*a, *b, match);
  progress.clear();
  if (args.has("stat")) {
    std::optional<std::pair<double, double>> us;
    if (target)
      us = {targets::estimate(*a, target->record).makespan_us,
            targets::estimate(*b, target->record).makespan_us};
    std::cout << (json ? stat_json(d, *a, *b, target ? target->record.name : "", us)
                       : stat_text(d, *a, *b, target ? target->record.name : "", us));
  } else {
    std::cout << (json ? ir::diff_to_json(d) : ir::format_diff(d));
  }
  return d.same() ? kOk : kRejected;
}

}  // namespace amk::cli
