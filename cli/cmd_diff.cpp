#include <iostream>

#include "cli/cli.h"
#include "cli/commands.h"
#include "ir/diff.h"

namespace amk::cli {

int cmd_diff(int argc, char** argv) {
  Args args("amk diff A B [--json] [--match auto|id|label]",
            "Semantic diff of two programs. Tasks are matched by label when labels are unique in\n"
            "both (else by id), buffers by name; waits compare by which producers and threshold,\n"
            "so renumbered ids are not reported. Exit 0 same, 1 different, 2 unreadable.");
  args.add()("a", po::value<std::string>()->required(), "first program")(
      "b", po::value<std::string>()->required(), "second program")("json", "print JSON")(
      "match", po::value<std::string>()->default_value("auto"), "auto, id or label");
  args.positional("a", 1);
  args.positional("b", 1);
  if (auto rc = args.parse(argc, argv)) return *rc;
  const bool json = args.has("json");
  std::string m = args.get<std::string>("match");
  ir::DiffMatch match = m == "id"      ? ir::DiffMatch::Id
                        : m == "label" ? ir::DiffMatch::Label
                                       : ir::DiffMatch::Auto;
  if (m != "auto" && m != "id" && m != "label") {
    std::cerr << "amk diff: --match must be auto, id or label\n";
    return kUnreadable;
  }
  auto a = load(args.get<std::string>("a"), json);
  if (!a) return kUnreadable;
  auto b = load(args.get<std::string>("b"), json);
  if (!b) return kUnreadable;
  ir::DiffResult d = ir::diff_programs(*a, *b, match);
  std::cout << (json ? ir::diff_to_json(d) : ir::format_diff(d));
  return d.same() ? kOk : kRejected;
}

}  // namespace amk::cli
