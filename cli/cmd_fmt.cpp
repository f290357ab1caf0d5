#include <iostream>

#include "cli/cli.h"
#include "cli/commands.h"
#include "ir/fileio.h"
#include "ir/json_io.h"

namespace amk::cli {

int cmd_fmt(int argc, char** argv) {
  Args args(
      "amk fmt FILE... [-o OUT] [--check]",
      "Rewrites each program in AMK's canonical bytes (what AMK's to_json writes: key order,\n"
      "2-space indent, Python float repr, ASCII escapes, no trailing newline). Without -o the\n"
      "file is rewritten in place, atomically, only when it changes ('-': standard input to\n"
      "standard output). Unknown fields are kept.");
  args.add()("file", po::value<std::vector<std::string>>()->required(), "program JSON file(s)")(
      "output,o", po::value<std::string>(), "write the canonical program here ('-' = stdout)")(
      "check", "write nothing; exit 1 when a file is not canonical");
  args.positional("file", -1);
  if (auto rc = args.parse(argc, argv)) return *rc;
  auto files = args.get<std::vector<std::string>>("file");
  bool check = args.has("check");
  if (args.has("output") && (files.size() != 1 || check)) {
    std::cerr << "amk fmt: -o takes exactly one input file and excludes --check\n";
    return kUnreadable;
  }
  int rc = kOk;
  for (const auto& f : files) {
    ir::Result<std::string> text = ir::read_file(f);
    if (!text) {
      print_diagnostics(text.diagnostics, f);
      rc = kUnreadable;
      continue;
    }
    ir::Result<ir::Program> r = ir::parse_program(*text);
    print_diagnostics(r.diagnostics, f);
    if (!r) {
      rc = kUnreadable;
      continue;
    }
    std::string out = ir::write_program(*r);
    if (args.has("output")) {
      if (!write_output(args.get<std::string>("output"), out)) rc = kUnreadable;
    } else if (f == "-" && !check) {  // standard input: the canonical bytes go to stdout
      if (!write_output("-", out)) rc = kUnreadable;
    } else if (out != *text) {
      if (check) {
        std::cout << f << ": not canonical\n";
        if (rc == kOk) rc = kRejected;
      } else if (write_output(f, out)) {
        std::cout << f << ": reformatted\n";
      } else {
        rc = kUnreadable;
      }
    }
  }
  return rc;
}

}  // namespace amk::cli
