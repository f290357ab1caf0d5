// The `amk` command: dispatches the command table; unknown commands get "did you mean".
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>
#include <streambuf>
#include <string>

#include <fmt/format.h>

#include "app/heap.h"
#include "cli/cli.h"
#include "ir/fileio.h"
#include "ir/pyjson.h"
#include "ir/types.h"

namespace {

// What amk writes through std::cout and std::cerr reaches the terminal as valid UTF-8: a label
// read from "\ud800", a file name of other bytes, each shows U+FFFD. Writes pass straight on
// (stdio order kept); only a sequence cut at the end of one write waits for the next.
class Utf8Out final : public std::streambuf {
 public:
  explicit Utf8Out(std::streambuf* to) : to_(to) {}

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return sync() == 0 ? 0 : c;
    const char ch = traits_type::to_char_type(c);
    return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    held_.append(s, static_cast<size_t>(n));
    const size_t keep = cut_tail(held_);
    out_.clear();
    amk::ir::append_valid_utf8(out_, std::string_view(held_).substr(0, held_.size() - keep));
    held_.erase(0, held_.size() - keep);
    const auto m = static_cast<std::streamsize>(out_.size());
    return to_->sputn(out_.data(), m) == m ? n : 0;
  }
  int sync() override {
    out_ = amk::ir::valid_utf8(held_);  // a sequence still cut is not valid
    held_.clear();
    const auto m = static_cast<std::streamsize>(out_.size());
    return to_->sputn(out_.data(), m) == m ? to_->pubsync() : -1;
  }

 private:
  // How many bytes at the end of `s` begin a UTF-8 sequence that the next write may complete.
  static size_t cut_tail(const std::string& s) {
    for (size_t k = 1; k <= 3 && k <= s.size(); ++k) {
      const auto b = static_cast<unsigned char>(s[s.size() - k]);
      if ((b & 0xC0) == 0x80) continue;
      const size_t need = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
      return need > k ? k : 0;
    }
    return 0;
  }
  std::streambuf* to_;
  std::string held_, out_;
};

void filter_terminal_output() {
  // Never freed: the streams are flushed after every static is gone.
  std::cout.rdbuf(new Utf8Out(std::cout.rdbuf()));
  std::cerr.rdbuf(new Utf8Out(std::cerr.rdbuf()));
}

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
  for (const auto& c : amk::cli::commands()) {
    if (c.name != argv[1]) continue;
    amk::ir::allow_stdin_input(c.stdin_input);  // "-" is stdin only where it is the input
    return c.run(argc - 1, argv + 1);
  }
  std::vector<std::string> names;
  for (const auto& c : amk::cli::commands()) names.emplace_back(c.name);
  std::string hint = amk::cli::closest(argv[1], names);
  std::cerr << "amk: unknown command '" << argv[1] << "'"
            << (hint.empty() ? "" : "; did you mean '" + hint + "'?") << "\n";
  usage(std::cerr);
  return amk::cli::kUnreadable;
}

}  // namespace

// Nothing may crash amk: running out of memory is an error naming the command's inputs (exit 2);
// any other exception that escapes a command is a bug, reported as one.
int main(int argc, char** argv) {
  amk::app::restart_with_big_heap(argv);
  filter_terminal_output();
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {  // written without allocating: memory is what ran out
    std::fputs("amk: out of memory working on:", stderr);
    for (int i = 1; i < argc; ++i) std::fprintf(stderr, " %s", argv[i]);
    std::fputs(" (AMK_MAX_INPUT_BYTES bounds what one input may take)\n", stderr);
  } catch (const std::exception& e) {
    std::cerr << "amk: internal error (a bug; please report it with the input): " << e.what()
              << "\n";
  } catch (...) {
    std::cerr << "amk: internal error (a bug; please report it with the input)\n";
  }
  return amk::cli::kUnreadable;
}
