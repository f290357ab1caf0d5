// The `amk` command: dispatches the command table; unknown commands get "did you mean".
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "cli/cli.h"
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

// A program of a million tasks is millions of small objects, and on a kernel that gives
// transparent huge pages only on request (the "madvise" mode) every 4 KiB of new heap is a page
// fault: asked to, glibc's malloc requests huge pages for its heap, which cut loading a 1M-task
// program from 4.4 s to 2.5 s here. glibc reads the request only at start-up, so amk starts itself
// again once with it (unless GLIBC_TUNABLES already sets it, or AMK_SMALL_PAGES is set).
void restart_with_huge_pages(char** argv) {
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (std::getenv("AMK_SMALL_PAGES") ||
      (tunables && std::strstr(tunables, "glibc.malloc.hugetlb") != nullptr))
    return;
  const std::string value = (tunables && *tunables ? std::string(tunables) + ":" : std::string()) +
                            "glibc.malloc.hugetlb=1";
  if (::setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  ::execv("/proc/self/exe", argv);  // returns only on failure: go on as we are
#else
  (void)argv;
#endif
}

}  // namespace

// Nothing may crash amk: an exception that escapes a command is a bug, reported as one.
int main(int argc, char** argv) {
  restart_with_huge_pages(argv);
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
