// Running a user's command with a time limit (search's --measure): its stdout, its exit status,
// and a kill of its whole process group when it overstays.
#pragma once

#include <string>

#include "ir/result.h"

namespace amk::app {

/// What a finished command printed and how it ended.
struct CommandOutput {
  int status = 0;  ///< exit status (128 + signal when killed by one)
  std::string out, err;
};

/// Runs `command` with /bin/sh -c (stdin from /dev/null) for at most `timeout_s` seconds; a
/// command that overstays is killed with its process group (`command.timeout`), one that cannot
/// start is `command.start`.
ir::Result<CommandOutput> run_command(const std::string& command, double timeout_s);

/// Single-quotes a word for /bin/sh.
std::string shell_quote(const std::string& s);
/// Runs `git ARGS` (ARGS quoted for the shell) in `dir` ("": the current folder) for at most two
/// minutes: its stdout, or a `git.failed` error carrying what git printed.
ir::Result<std::string> run_git(const std::string& dir, const std::string& args);

/// The --measure seam: runs `command PATH` (or `command` with "{}" replaced by PATH) and reads a
/// latency in µs, the last number it prints. A failing, hanging or silent command is an error
/// (`search.measure`) saying why.
ir::Result<double> measure_with_command(const std::string& command, const std::string& path,
                                        double timeout_s);

}  // namespace amk::app
