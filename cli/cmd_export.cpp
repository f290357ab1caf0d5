#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "formats/formats.h"
#include "ir/fileio.h"

namespace amk::cli {

int cmd_export(int argc, char** argv) {
  Args args(
      "amk export PROGRAM --format mpk|pto -o OUT [--scope-tasks N] [--depth D] [--outer-tasks K]\n"
      "       [--block-num N]"
      " [--runtime-outputs] [--launch K=V]...",
      "Writes a program as another megakernel runtime's task graph, byte for byte as that runtime\n"
      "writes its own: MPK's task_graph.json (OUT is the file; tasks in dependency levels, one\n"
      "event per level) or PTO's deps.json with scope_stats/scope_stats.jsonl (OUT is the\n"
      "folder; tasks in dependency order in scopes of --scope-tasks at --depth, capacities from\n"
      "--launch in the header). `amk import` reads them back; the corpus of capacity hangs\n"
      "(tests/formats/corpus) is made this way. Exit 0 written, 2 unreadable or inexpressible.");
  args.add()("file", po::value<std::string>(), "the program")(
      "format", po::value<std::string>(), "mpk or pto")("output,o", po::value<std::string>(),
                                                        "MPK: the file; PTO: the folder")(
      "scope-tasks", po::value<int64_t>()->default_value(0), "PTO: tasks per scope (0: one)")(
      "depth", po::value<int>()->default_value(1), "PTO: the scopes' depth (ring min(D, 3))")(
      "outer-tasks", po::value<int64_t>()->default_value(0),
      "PTO: tasks submitted first in the scope around them (depth D - 1)")(
      "block-num", po::value<int64_t>(),
      "PTO: every task's block_num (default: a PTO graph's own, else 1)")(
      "runtime-outputs", "PTO: single-writer activations as runtime-allocated (heap) outputs")(
      "launch", po::value<std::vector<std::string>>(),
      "PTO: KEY=VALUE capacities for scope_stats' header (task_window, heap, dep_pool, ...)");
  args.positional("file", 1);
  args.range("scope-tasks", 0, 1e12);
  args.range("depth", 1, 64);
  args.range("outer-tasks", 0, 1e12);
  args.range("block-num", 1, 1e6);
  if (auto rc = args.parse(argc, argv)) return *rc;
  if (!args.has("file") || !args.has("output") || !args.has("format")) {
    std::cerr << "amk export: give a PROGRAM, --format mpk|pto and -o OUT\n";
    return kUnreadable;
  }
  const auto file = args.get<std::string>("file"), out = args.get<std::string>("output");
  const auto format = args.get<std::string>("format");
  if (format != "mpk" && format != "pto") {
    std::cerr << fmt::format("amk export: --format {}: expected mpk or pto\n", format);
    return kUnreadable;
  }
  auto p = load(file, false);
  if (!p) return kUnreadable;
  if (format == "mpk") {
    ir::Result<std::string> text = formats::export_mpk(*p);
    if (!text) return fail(text.diagnostics, file);
    return write_output(out, *text) ? kOk : kUnreadable;
  }
  formats::PtoExport o;
  o.depth = args.get<int>("depth");
  o.scope_tasks = args.get<int64_t>("scope-tasks");
  o.outer_tasks = args.get<int64_t>("outer-tasks");
  if (args.has("block-num")) o.block_num = args.get<int64_t>("block-num");
  o.runtime_outputs = args.has("runtime-outputs");
  if (args.has("launch"))
    for (const std::string& kv : args.get<std::vector<std::string>>("launch"))
      if (ir::Status st = ir::apply_launch(o.launch, kv); !st) return fail(st.diagnostics, file);
  ir::Result<formats::PtoFiles> f = formats::export_pto(*p, o);
  if (!f) return fail(f.diagnostics, file);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(out) / "scope_stats", ec);
  if (ec) {
    std::cerr << fmt::format("amk export: cannot create {}: {}\n", out, ec.message());
    return kUnreadable;
  }
  const bool ok =
      write_output((std::filesystem::path(out) / "deps.json").string(), f->deps) &&
      write_output((std::filesystem::path(out) / "scope_stats" / "scope_stats.jsonl").string(),
                   f->scope_stats);
  return ok ? kOk : kUnreadable;
}

}  // namespace amk::cli
