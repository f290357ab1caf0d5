// Shared plumbing of the `amk` command: the command table, option parsing, loading, output.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/program_options.hpp>

#include "app/load.h"
#include "ir/diagnostic.h"
#include "ir/program.h"

namespace amk::cli {

namespace po = boost::program_options;

/// Exit codes shared by the commands (DESIGN.md's CLI contract).
enum Exit : int { kOk = 0, kRejected = 1, kUnreadable = 2, kDeadlock = 3 };

/// One subcommand: its name, a one-line summary and its entry point (argv[0] is the name).
struct Command {
  std::string_view name;
  std::string_view summary;
  int (*run)(int argc, char** argv);
  /// False where stdin carries requests (serve, mcp): a "-" inside one is then never stdin.
  bool stdin_input = true;
};

/// Every subcommand, in help order.
std::span<const Command> commands();
/// The closest candidate by edit distance, or empty when none is close enough.
std::string closest(std::string_view word, const std::vector<std::string>& candidates);

/// A command's option parser: `usage` is the synopsis line; positional names map to options.
class Args {
 public:
  Args(std::string usage, std::string about);
  /// Declares options (the description is printed by --help).
  po::options_description_easy_init add();
  /// Maps the next `max` positional arguments (-1: all the rest) to option `name`.
  void positional(const char* name, int max);
  /// Refuses a value of the numeric option `name` outside [lo, hi] (checked by parse(), before
  /// any work: exit 2 naming the option, the value and the range).
  void range(const char* name, double lo, double hi);
  /// Parses; returns an exit code when the command must stop (help printed or usage error).
  std::optional<int> parse(int argc, char** argv);
  /// The parsed values.
  const po::variables_map& vm() const { return vm_; }
  /// True when an option was given.
  bool has(const char* name) const { return vm_.count(name) > 0; }
  /// An option's value.
  template <typename T>
  T get(const char* name) const {
    return vm_[name].as<T>();
  }

 private:
  std::string usage_, about_;
  po::options_description opts_;
  po::positional_options_description pos_;
  po::variables_map vm_;
  std::vector<std::string> positional_;
  po::options_description shown() const;
  struct Range {
    const char* name;
    double lo, hi;
  };
  std::vector<Range> ranges_;
};

/// The largest seed an option takes (seeds are signed on the command line so "-1" cannot wrap).
inline constexpr double kMaxSeed = 9007199254740992.0;  // 2^53: exact as a double

/// The exit code of a failure, decided by its first error's code (the one mapping): a program
/// the validator rejects or a --verify mismatch 1, a deadlock or watchdog timeout 3, anything
/// else (unreadable input, a bad option, a kernel error) 2.
int exit_code(const ir::Diagnostics& d);
/// Prints diagnostics to stderr with the one renderer; `where` names them when they name no file
/// ("amk lower", a path).
void print_diagnostics(const ir::Diagnostics& d, std::string_view where);
/// Prints `d` (see print_diagnostics) and returns exit_code(d).
int fail(const ir::Diagnostics& d, std::string_view where);
/// As fail(), or with `json` one document {ok: false, exit, errors, warnings} on stdout.
int fail(const ir::Diagnostics& d, std::string_view where, bool json);
/// The diagnostics of an unreadable file as one JSON document {ok: null, file, unreadable, errors,
/// warnings}.
std::string unreadable_json(const ir::Diagnostics& d, std::string_view file);
/// Declares the options that say how to read a program of another format: --format, --launch,
/// --scope-stats (--target, where a command has it, also sets the foreign runtimes' chip).
void add_format_options(Args& args);
/// The values of add_format_options' options (and --target when the command has it); nullopt
/// (the error printed) for an unknown --format.
std::optional<app::FormatOptions> format_options(const Args& args);
/// Loads a program of any format (app::load_program); on failure prints its diagnostics (to
/// stderr, or as JSON to stdout) and returns nullopt. Warnings are printed either way (stderr)
/// unless `quiet`.
std::optional<ir::Program> load(const std::string& path, bool json_errors, bool quiet = false,
                                const app::FormatOptions& o = {});
/// Keeps a program, unfreed, until the process exits: the system takes a process's memory back
/// at once, where destroying a million-task program frees its millions of blocks one by one.
void keep_until_exit(ir::Program&& p) noexcept;
/// Writes bytes to a file atomically, or to stdout for "-"; prints the error and returns false on
/// failure.
bool write_output(const std::string& path, std::string_view data);

}  // namespace amk::cli
