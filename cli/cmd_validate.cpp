#include <iostream>

#include <fmt/format.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "ir/json_io.h"
#include "validate/validate.h"

namespace amk::cli {

namespace {

// Appends a file's JSON document to the "files" list, indented one level into it.
void append_indented(std::string& out, std::string doc, bool last) {
  while (!doc.empty() && doc.back() == '\n') doc.pop_back();
  std::string indented = "    ";
  for (char c : doc) {
    indented += c;
    if (c == '\n') indented += "    ";
  }
  out += indented + (last ? "\n" : ",\n");
}

}  // namespace

int cmd_validate(int argc, char** argv) {
  Args args(
      "amk validate FILE... [--json] [--brief] [--all] [--format F] [--launch K=V] [--target T]\n"
      "       amk validate --list-rules",
      "Proves each program deadlock- and race-free: every AMK rule with AMK's verdicts and\n"
      "messages, plus what AMK skips (no task-count cap; counter init, read-only writes, tile\n"
      "bounds and coverage, shapes, page tables). Prints AMK's report shape; each ERROR/warn\n"
      "line is followed by its rule code, JSON pointer and notes (omit with --brief); past\n"
      "three diagnostics of one rule, one line counts the rest (--all prints each).\n"
      "Exit 0 valid, 1 rejected, 2 unreadable.");
  args.add()("file", po::value<std::vector<std::string>>(), "program JSON file(s)")(
      "json",
      "print one JSON document {ok, exit, files: [{file, ok, errors, warnings, stats}...]}, "
      "for one file or many")("brief", "AMK's exact report lines only (every one)")(
      "all", "print every diagnostic (default: at most 3 of one rule, then a count)")(
      "list-rules", "print every rule and exit")(
      "target,t", po::value<std::string>(),
      "MPK/PTO: the chip whose SMs or cores the runtime's defaults assume");
  add_format_options(args);
  args.positional("file", -1);
  if (auto rc = args.parse(argc, argv)) return *rc;
  if (args.has("list-rules")) {
    for (const auto& r : validate::rules())
      std::cout << fmt::format("{:<22} {} {}\n", r.code, r.from_amk ? "[AMK]" : "[amk]", r.summary);
    return kOk;
  }
  if (!args.has("file")) {
    std::cerr << "amk validate: give at least one FILE (or --list-rules)\n";
    return kUnreadable;
  }
  const std::optional<app::FormatOptions> fo = format_options(args);
  if (!fo) return kUnreadable;
  const auto files = args.get<std::vector<std::string>>("file");
  const bool json = args.has("json");
  int rc = kOk;
  std::string out;

  validate::Validator v;
  Progress progress("amk validate");
  for (size_t i = 0; i < files.size(); ++i) {
    const auto& f = files[i];
    const std::string nth = files.size() > 1 ? fmt::format("[{}/{}] ", i + 1, files.size()) : "";
    std::string doc;
    progress.step(nth + "loading " + sized(f));
    ir::Result<ir::Program> lr = app::load_program(f, *fo);
    progress.clear();
    if (!json) print_diagnostics(lr.diagnostics, f);
    if (!lr) {
      rc = kUnreadable;
      if (json) doc = unreadable_json(lr.diagnostics, f);
    } else {
      progress.step(fmt::format("{}validating {} ({} tasks)", nth, f, lr->tasks.size()));
      validate::Result r = v.validate(*lr);
      progress.clear();
      // JSON: load warnings (a duplicate key, a BOM) are part of the verdict's warnings (human
      // output printed them above, before AMK's report).
      if (json) r.warnings.insert(r.warnings.begin(), lr.diagnostics.begin(), lr.diagnostics.end());
      if (!r.ok && rc == kOk) rc = kRejected;
      if (json) {
        doc = r.to_json(f) + "\n";
      } else {
        if (files.size() > 1) std::cout << "== " << f << " ==\n";
        const bool every = args.has("brief") || args.has("all");
        std::cout << r.report(!args.has("brief"), every ? SIZE_MAX : 3) << "\n";
      }
      if (i + 1 == files.size()) keep_until_exit(std::move(*lr));  // the others' memory is reused
    }
    if (json) append_indented(out, std::move(doc), i + 1 == files.size());
  }
  if (json)
    std::cout << fmt::format("{{\n  \"ok\": {},\n  \"exit\": {},\n  \"files\": [\n{}  ]\n}}\n",
                             rc == kOk ? "true" : "false", rc, out);
  return rc;
}

}  // namespace amk::cli
