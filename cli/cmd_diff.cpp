#include <algorithm>
#include <array>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/view.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/lowering.h"
#include "cli/progress.h"
#include "ir/diff.h"
#include "ir/fileio.h"
#include "ir/json_io.h"
#include "ir/pyjson.h"
#include "lower/config.h"
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
  return ir::dump_text(j, 2) + "\n";
}

// Whether a JSON text that is not a program reads as a ScheduleConfig: an object that is empty
// or sets a knob (a package manifest sets none, and goes to the program path's refusal).
bool looks_like_config(const std::string& text) {
  ir::Result<ir::JsonValue> doc = ir::parse_json_object(text, "a ScheduleConfig");
  if (!doc) return true;  // parse_config reports why
  const nlohmann::ordered_json known = ir::config_json(ir::ScheduleConfig::defaults()).json();
  const nlohmann::ordered_json& j = doc->json();
  if (j.empty()) return true;
  for (const auto& item : j.items())
    if (known.contains(item.key())) return true;
  return false;
}

// Two ScheduleConfig files (neither a program): their knob lines that differ, "- " and "+ ".
// nullopt when either file is a program or no config (or unreadable: the program path reports
// it).
std::optional<int> config_diff(const std::string& a, const std::string& b) {
  for (const std::string& f : {a, b}) {  // configs are small files; a program is never read twice
    std::error_code ec;
    if (f == "-" || std::filesystem::file_size(f, ec) > (1u << 20) || ec) return std::nullopt;
  }
  ir::Result<std::string> ta = ir::read_file(a), tb = ir::read_file(b);
  if (!ta || !tb || app::detect_format(*ta) || app::detect_format(*tb) || !looks_like_config(*ta) ||
      !looks_like_config(*tb))
    return std::nullopt;
  ir::Result<ir::ScheduleConfig> ca = lower::parse_config(*ta, a), cb = lower::parse_config(*tb, b);
  if (!ca) return fail(ca.diagnostics, a);
  if (!cb) return fail(cb.diagnostics, b);
  auto lines = [](const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  };
  const auto la = lines(app::show_config(*ca)), lb = lines(app::show_config(*cb));
  std::string out;
  for (const std::string& l : la)
    if (std::find(lb.begin(), lb.end(), l) == lb.end()) out += "- " + l + "\n";
  for (const std::string& l : lb)
    if (std::find(la.begin(), la.end(), l) == la.end()) out += "+ " + l + "\n";
  std::cout << (out.empty() ? "configs are the same\n" : out);
  return out.empty() ? kOk : kRejected;
}

// git's external diff: PATH OLD OLD-HEX OLD-MODE NEW NEW-HEX NEW-MODE.
int git_diff(const std::vector<std::string>& f) {
  const std::string& path = f[0];
  std::cout << fmt::format("diff --amk a/{0} b/{0}\n", path) << std::flush;
  const bool added = f[1] == "/dev/null", deleted = f[4] == "/dev/null";
  if (added || deleted) {
    const std::string& file = added ? f[4] : f[1];
    ir::Result<std::string> text = ir::read_file(file);
    if (text && ir::looks_like_program(*text)) {
      ir::Result<ir::Program> p = ir::parse_program(*text);
      if (p) {
        std::cout << fmt::format("{} program: {} tasks, {} buffers, {} counters\n",
                                 added ? "new" : "deleted", p->tasks.size(), p->buffers.size(),
                                 p->counters.size());
        return kOk;
      }
    }
    std::cout << fmt::format("{} file\n", added ? "new" : "deleted");
    return kOk;
  }
  if (config_diff(f[1], f[4])) return kOk;
  auto a = load(f[1], false), b = load(f[4], false);
  if (!a || !b) {
    std::cout << "(not a program amk can read; see the messages above)\n";
    return kOk;  // git stops at a failing external diff: report and let it go on
  }
  std::cout << ir::format_diff(ir::diff_programs(*a, *b, ir::DiffMatch::Auto));
  return kOk;
}

}  // namespace

int cmd_diff(int argc, char** argv) {
  Args args(
      "amk diff A B [--json] [--match auto|id|label] [--stat [--target T] [--runtime R]]"
      " [--format F]\n"
      "       amk diff PATH OLD OLD-HEX OLD-MODE NEW NEW-HEX NEW-MODE   (git's external diff)",
      "Semantic diff of two programs. Tasks are matched by label when labels are unique in\n"
      "both (else by id), buffers by name; waits compare by which producers and threshold,\n"
      "so renumbered ids are not reported. --stat prints a summary instead: tasks changed,\n"
      "added and removed per layer, the other entities' counts and, with --target, the\n"
      "cost model's predicted latency of each side. Two ScheduleConfig files are compared knob\n"
      "by knob. Exit 0 same, 1 different, 2 unreadable.\n"
      "Given git's seven arguments (GIT_EXTERNAL_DIFF, diff.<driver>.command; `amk git-setup`\n"
      "sets it up) it prints a `diff --amk` section per file, /dev/null for an added or deleted\n"
      "file, and exits 0 so git goes on.");
  args.add()("files", po::value<std::vector<std::string>>(), "A B, or git's seven arguments")(
      "json", "print JSON")("match", po::value<std::string>()->default_value("auto"),
                            "auto, id or label")(
      "stat", "summary: task changes per layer, other entities' counts")(
      "target,t", po::value<std::string>(),
      "--stat: the predicted latency of both programs on this target");
  add_runtime_option(args);
  add_format_options(args);
  args.positional("files", -1);
  if (auto rc = args.parse(argc, argv)) return *rc;
  const std::optional<app::FormatOptions> fo = format_options(args);
  if (!fo) return kUnreadable;
  const auto files =
      args.has("files") ? args.get<std::vector<std::string>>("files") : std::vector<std::string>();
  if (files.size() == 7) return git_diff(files);
  if (files.size() != 2) {
    std::cerr << "amk diff: give two files A B (or git's seven external-diff arguments)\n";
    return kUnreadable;
  }
  const bool json = args.has("json");
  if ((args.has("target") || args.has("runtime")) && !args.has("stat")) {
    std::cerr << "amk diff: --target and --runtime go with --stat\n";
    return kUnreadable;
  }
  auto runtime = resolve_runtime_option(args);
  if (!runtime) return fail(runtime.diagnostics, "amk diff", json);
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
  if (auto rc = config_diff(files[0], files[1])) return *rc;
  Progress progress("amk diff");
  progress.step("loading " + sized(files[0]));
  auto a = load(files[0], json, false, *fo);
  if (!a) return kUnreadable;
  progress.step("loading " + sized(files[1]));
  auto b = load(files[1], json, false, *fo);
  if (!b) return kUnreadable;
  progress.step(fmt::format("comparing {} and {} tasks", a->tasks.size(), b->tasks.size()));
  ir::DiffResult d = ir::diff_programs(*a, *b, match);
  progress.clear();
  if (args.has("stat")) {
    std::optional<std::pair<double, double>> us;
    if (target) {
      const targets::Runtime& rt = *runtime ? **runtime : targets::default_runtime(*target);
      us = {targets::estimate(*a, target->record, rt).makespan_us,
            targets::estimate(*b, target->record, rt).makespan_us};
    }
    std::cout << (json ? stat_json(d, *a, *b, target ? target->record.name : "", us)
                       : stat_text(d, *a, *b, target ? target->record.name : "", us));
  } else {
    std::cout << (json ? ir::diff_to_json(d) : ir::format_diff(d));
  }
  return d.same() ? kOk : kRejected;
}

}  // namespace amk::cli
