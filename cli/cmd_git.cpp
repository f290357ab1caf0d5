// The git integration: `amk merge` (git's merge driver), `amk git-setup` and `amk log`.
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "app/command.h"
#include "app/history.h"
#include "app/merge.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/lowering.h"
#include "ir/fileio.h"
#include "ir/json_io.h"
#include "ir/pyjson.h"
#include "lower/model.h"
#include "targets/target.h"

namespace amk::cli {
namespace {

namespace fs = std::filesystem;

// The attributes lines git-setup writes: programs and ScheduleConfig files.
constexpr const char* kAttributes[] = {"*.amk.json diff=amk merge=amk",
                                       "*.schedule.json diff=amk merge=amk"};

// The running binary's absolute path (what git will call).
std::string self_path() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("amk");
}

// Runs a git command here; its stdout without the trailing newline.
ir::Result<std::string> git(const std::string& args) {
  ir::Result<std::string> out = app::run_git("", args);
  if (out)
    while (!out->empty() && (out->back() == '\n' || out->back() == '\r')) out->pop_back();
  return out;
}

}  // namespace

int cmd_merge(int argc, char** argv) {
  Args args(
      "amk merge BASE OURS THEIRS [-o OUT]",
      "Three-way merge of schedules (git's merge driver: `amk merge %O %A %B`, set up by\n"
      "`amk git-setup`). ScheduleConfig files merge knob by knob: changes to different\n"
      "knobs, `tiling` entries, `sm_assignment` keys or `fusion_grouping` entries combine; the\n"
      "same knob changed two ways is a conflict naming its JSON pointer and both values.\n"
      "Programs merge task by task (matched by label; buffers by name, counters by their\n"
      "producers, waits as sets), and the merged program is validated before it is written:\n"
      "if the two sides are each fine but unsafe together, the merge is a conflict naming the\n"
      "rule and the tasks. The result (canonical bytes) replaces OURS atomically, or goes to\n"
      "-o. Exit 0 merged, 1 conflict (nothing written), 2 unreadable input.");
  args.add()("files", po::value<std::vector<std::string>>(), "BASE OURS THEIRS")(
      "output,o", po::value<std::string>(), "write the merge here (default: over OURS)");
  args.positional("files", -1);
  if (auto rc = args.parse(argc, argv)) return *rc;
  const auto files =
      args.has("files") ? args.get<std::vector<std::string>>("files") : std::vector<std::string>();
  if (files.size() != 3) {
    std::cerr << "amk merge: give BASE OURS THEIRS\n";
    return kUnreadable;
  }
  std::vector<std::string> text;
  for (const std::string& f : files) {
    ir::Result<std::string> t = ir::read_file(f);
    if (!t) return fail(t.diagnostics, f);
    text.push_back(std::move(*t));
  }
  const bool program = ir::looks_like_program(text[1]);
  ir::Result<std::string> merged = program ? app::merge_program_texts(text[0], text[1], text[2])
                                           : app::merge_config_texts(text[0], text[1], text[2]);
  if (!merged) {
    std::cerr << fmt::format("amk merge: {} left as it was:\n", files[1]);
    return fail(merged.diagnostics, files[1]);
  }
  const std::string out = args.has("output") ? args.get<std::string>("output") : files[1];
  if (!write_output(out, *merged)) return kUnreadable;
  std::cerr << fmt::format("amk merge: merged {} ({}); validated\n", out,
                           program ? "program" : "ScheduleConfig");
  return kOk;
}

int cmd_git_setup(int argc, char** argv) {
  Args args(
      "amk git-setup [--global] [--print]",
      "Sets git up for schedules in this repository (or, with --global, for every\n"
      "repository of this user): .gitattributes lines marking `*.amk.json` programs and\n"
      "`*.schedule.json` ScheduleConfigs `diff=amk merge=amk`, and the matching config:\n"
      "diff.amk.textconv (`amk show`, a line view for `git diff --no-ext-diff`, `git log -p`\n"
      "and blame), diff.amk.command (`amk diff`, the semantic diff `git diff` shows) and\n"
      "merge.amk.driver (`amk merge %O %A %B`, which never writes an unsafe schedule).\n"
      "Idempotent; --print shows what it would write and changes nothing.");
  args.add()("global", "set up the user's git config and attributes file")(
      "print", "print what would be written; change nothing");
  if (auto rc = args.parse(argc, argv)) return *rc;
  const bool global = args.has("global"), dry = args.has("print");
  const std::string amk = self_path();
  std::string attributes;
  if (global) {
    ir::Result<std::string> f = git("config --global --get core.attributesFile");
    if (f && !f->empty()) {
      attributes = *f;
    } else {
      const char* xdg = std::getenv("XDG_CONFIG_HOME");
      const char* home = std::getenv("HOME");
      attributes = xdg && *xdg ? fmt::format("{}/git/attributes", xdg)
                               : fmt::format("{}/.config/git/attributes", home ? home : ".");
    }
  } else {
    ir::Result<std::string> top = git("rev-parse --show-toplevel");
    if (!top) {
      std::cerr << "amk git-setup: not inside a git repository (use --global for every one)\n";
      return kUnreadable;
    }
    attributes = *top + "/.gitattributes";
  }
  // git runs these values with the shell: the binary's path is quoted, so a folder with a space,
  // a leading dash or a `|` in its name is still one word; textconv and the external diff are
  // given the file's own name in the work tree, which `--` keeps from reading as an option.
  const std::string quoted = app::shell_quote(amk);
  const std::vector<std::pair<std::string, std::string>> config = {
      {"diff.amk.textconv", quoted + " show --"},
      {"diff.amk.command", quoted + " diff --"},
      {"merge.amk.name", "amk: three-way merge of schedules, validated before it is written"},
      {"merge.amk.driver", quoted + " merge %O %A %B"},
  };
  // The attributes lines still missing.
  std::string have;
  if (fs::exists(attributes)) {
    ir::Result<std::string> t = ir::read_file(attributes);
    if (!t) return fail(t.diagnostics, attributes);
    have = *t;
  }
  std::string add;
  for (const char* line : kAttributes)
    if (have.find(line) == std::string::npos) add += std::string(line) + "\n";
  if (dry) {
    std::cout << fmt::format("# {}\n{}", attributes, add.empty() ? "# (already there)\n" : add);
    for (const auto& [k, v] : config)
      std::cout << fmt::format("git config{} {} {}\n", global ? " --global" : "", k,
                               app::shell_quote(v));
    return kOk;
  }
  if (!add.empty()) {
    if (!have.empty() && have.back() != '\n') have += '\n';
    std::error_code ec;
    fs::create_directories(fs::path(attributes).parent_path(), ec);
    if (!write_output(attributes, have + add)) return kUnreadable;
  }
  for (const auto& [k, v] : config) {
    ir::Result<std::string> r =
        git(fmt::format("config{} {} {}", global ? " --global" : "", k, app::shell_quote(v)));
    if (!r) return fail(r.diagnostics, "amk git-setup");
  }
  std::cerr << fmt::format("amk git-setup: {} ({}), {} git config entr{} ({})\n", attributes,
                           add.empty() ? "already there" : "lines added", config.size(),
                           config.size() == 1 ? "y" : "ies", global ? "global" : "this repository");
  return kOk;
}

namespace {

// The revisions with their change from the one before: one JSON document, or a line each.
void print_log(const std::vector<app::Revision>& revs, bool json) {
  // The change from the revision before (the next older one with a prediction).
  std::vector<std::optional<double>> change(revs.size());
  for (size_t i = 0; i < revs.size(); ++i) {
    if (!revs[i].predicted_us) continue;
    for (size_t j = i + 1; j < revs.size(); ++j)
      if (revs[j].predicted_us) {
        change[i] = 100.0 * (*revs[i].predicted_us / *revs[j].predicted_us - 1.0);
        break;
      }
  }
  auto regression = [&](size_t i) { return change[i] && *change[i] > 0.5; };
  if (json) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (size_t i = 0; i < revs.size(); ++i) {
      const app::Revision& r = revs[i];
      nlohmann::ordered_json j;
      j["commit"] = r.commit;
      j["date"] = r.date;
      j["subject"] = r.subject;
      j["readable"] = r.readable;
      if (!r.problem.empty()) j["problem"] = r.problem;
      j["valid"] = r.valid;
      j["rules"] = r.rules;
      j["tasks"] = r.tasks;
      j["predicted_us"] = r.predicted_us ? nlohmann::ordered_json(*r.predicted_us) : nullptr;
      j["change_percent"] = change[i] ? nlohmann::ordered_json(*change[i]) : nullptr;
      j["regression"] = regression(i);
      a.push_back(std::move(j));
    }
    std::cout << ir::dump_text(a, 2) << "\n";
  } else {
    for (size_t i = 0; i < revs.size(); ++i) {
      const app::Revision& r = revs[i];
      std::string verdict = !r.readable ? "NOT SCORED"
                            : r.valid   ? "VALID"
                                        : fmt::format("REJECTED ({})", fmt::join(r.rules, ", "));
      std::string pred =
          r.predicted_us ? fmt::format("{:8.1f} us", *r.predicted_us) : std::string("       - us");
      std::string delta = change[i] ? fmt::format(" {:+6.1f}%", *change[i]) : std::string(8, ' ');
      std::cout << fmt::format("{} {} {:>6} tasks  {}{}  {:<10} {}{}\n", r.commit.substr(0, 10),
                               r.date, r.tasks, pred, delta, verdict, r.subject,
                               regression(i) ? "  << REGRESSION" : "");
      if (!r.readable && !r.problem.empty()) std::cout << "    " << r.problem << "\n";
    }
  }
}

}  // namespace

int cmd_log(int argc, char** argv) {
  Args args("amk log FILE [--target T] [--runtime R] [--model M] [-n N] [--json] [--svg OUT.svg]",
            "The git history of a schedule: for each commit that touched FILE (newest first,\n"
            "renames followed) its date and subject, the revision's task count, the validator's\n"
            "verdict (every revision is proven: a schedule that was unsafe at some commit shows\n"
            "REJECTED with its rules) and the predicted latency on --target (default: the\n"
            "program's own) with its change from the revision before; a slower one is marked\n"
            "REGRESSION. A ScheduleConfig file is lowered for --model at each revision. --svg\n"
            "draws the predicted latency over the commits.");
  args.add()("file", po::value<std::string>(), "program or ScheduleConfig tracked by git")(
      "target,t", po::value<std::string>(), "predict on this target")(
      "model", po::value<std::string>(), "lower ScheduleConfig revisions for this model")(
      "max-count,n", po::value<int>()->default_value(20), "newest revisions to read")(
      "json", "print one JSON document")("svg", po::value<std::string>(),
                                         "draw predicted latency over the commits");
  add_runtime_option(args);
  args.positional("file", 1);
  args.range("max-count", 1, 100000);
  if (auto rc = args.parse(argc, argv)) return *rc;
  if (!args.has("file")) {
    std::cerr << "amk log: give a FILE\n";
    return kUnreadable;
  }
  const bool json = args.has("json");
  std::optional<targets::TargetSpec> target;
  std::optional<lower::ModelSpec> model;
  auto runtime = resolve_runtime_option(args);
  if (!runtime) return fail(runtime.diagnostics, "amk log", json);
  if (args.has("target")) {
    auto t = targets::load_target(args.get<std::string>("target"));
    if (!t) return fail(t.diagnostics, "amk log", json);
    target = std::move(t.value);
  }
  if (args.has("model")) {
    auto m = lower::load_model(args.get<std::string>("model"));
    if (!m) return fail(m.diagnostics, "amk log", json);
    model = std::move(m.value);
    if (!target) target = targets::load_target("h100").value;  // as lower's default
  }
  app::HistoryOptions o;
  o.max_count = args.get<int>("max-count");
  o.target = target ? &*target : nullptr;
  o.model = model ? &*model : nullptr;
  o.runtime = runtime->get();
  const auto file = args.get<std::string>("file");
  ir::Result<std::vector<app::Revision>> revs = app::history(file, o);
  if (!revs) return fail(revs.diagnostics, "amk log", json);
  print_log(*revs, json);
  if (args.has("svg") &&
      !write_output(args.get<std::string>("svg"),
                    app::history_svg(*revs, "predicted latency of " + file + " over commits")))
    return kUnreadable;
  return kOk;
}

}  // namespace amk::cli
