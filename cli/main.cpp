// The `amk` command: dispatches the command table; unknown commands get "did you mean".
#include <cstring>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "cli/cli.h"
#include "app/heap.h"
#include "ir/types.h"

namespace {

void usage(std::ostream& os) {
  os << "usage: amk <command> [options]   (amk <command> --help for details)\n\ncommands:\n";
  for (const auto& c : amk::cli::commands()) os << fmt::format("  {:<10} {}\n", c.name, c.summary);
  os << "\nexit codes: 0 ok, 1 rejected / different / not canonical, 2 unreadable input or usage,"
        " 3 deadlock or timeout\n";
}

int run(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    if (argc >= 3 && std::strcmp(argv[1], "help") == 0) {
      for (const auto& c : amk::cli::commands()) {
        if (c.name == argv[2]) {
          char help[] = "--help";
          char* args[] = {argv[2], help, nullptr};
          return c.run(2, args);
        }
      }
    }
    usage(std::cout);
    return argc < 2 ? amk::cli::kUnreadable : amk::cli::kOk;
  }
  if (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "version") == 0) {
    std::cout << fmt::format("amk {} (IR {}, ABI {})\n", AMK_VERSION, amk::ir::kIrVersion,
                             amk::ir::kAbiVersion);
    return 0;
  }
  std::vector<std::string> names;
  for (const auto& c : amk::cli::commands()) {
    if (c.name == argv[1]) return c.run(argc - 1, argv + 1);
    names.emplace_back(c.name);
  }
  std::string hint = amk::cli::closest(argv[1], names);
  std::cerr << "amk: unknown command '" << argv[1] << "'"
            << (hint.empty() ? "" : "; did you mean '" + hint + "'?") << "\n";
  usage(std::cerr);
  return amk::cli::kUnreadable;
}

}  // namespace

// Nothing may crash amk: an exception that escapes a command is a bug, reported as one.
int main(int argc, char** argv) {
  amk::app::restart_with_big_heap(argv);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "amk: internal error (a bug; please report it with the input): " << e.what()
              << "\n";
  } catch (...) {
    std::cerr << "amk: internal error (a bug; please report it with the input)\n";
  }
  return amk::cli::kUnreadable;
}
