#include <iostream>

#include <fmt/format.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "ir/json_io.h"

namespace amk::cli {

int cmd_import(int argc, char** argv) {
  Args args(
      "amk import FILE [--format amk|mpk|pto] [--scope-stats F] [--launch K=V]... [--target T]\n"
      "       -o OUT.json",
      "Reads another megakernel runtime's task graph, Mirage MPK's task_graph.json or PTO's\n"
      "deps.json (with scope_stats/scope_stats.jsonl beside it, or --scope-stats), and writes it\n"
      "as an amk program: one NOP task per foreign task (its kind in the label and in the\n"
      "program's \"runtime\" record), counters and waits with the runtime's semantics, SM queues\n"
      "from MPK's scheduler deal, tensor regions as buffers, and the runtime's launch shape and\n"
      "capacities. Every other command reads these files directly; import keeps the result.\n"
      "Exit 0 written, 2 unreadable.");
  args.add()("file", po::value<std::string>(), "the graph file ('-': standard input)")(
      "target,t", po::value<std::string>(),
      "the chip: SMs for MPK's defaults (132 without), AIC/AIV cores for PTO")(
      "output,o", po::value<std::string>(), "the amk program to write ('-': stdout)");
  add_format_options(args);
  args.positional("file", 1);
  if (auto rc = args.parse(argc, argv)) return *rc;
  if (!args.has("file") || !args.has("output")) {
    std::cerr << "amk import: give a FILE and -o OUT.json\n";
    return kUnreadable;
  }
  const std::optional<app::FormatOptions> fo = format_options(args);
  if (!fo) return kUnreadable;
  const auto file = args.get<std::string>("file");
  auto p = load(file, false, false, *fo);
  if (!p) return kUnreadable;
  return write_output(args.get<std::string>("output"), ir::write_program(*p)) ? kOk : kUnreadable;
}

}  // namespace amk::cli
