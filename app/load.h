// A program of any format: amk's JSON, Mirage MPK's task_graph.json or PTO's deps.json (with its
// scope_stats.jsonl), told apart by their top-level keys or forced. Every front end (the amk
// command, the Python module, serve and MCP) loads programs through here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/program.h"
#include "ir/result.h"

namespace amk::app {

/// The on-disk formats amk reads programs from.
enum class Format : uint8_t { Amk, Mpk, Pto };

/// "amk", "mpk" or "pto".
std::string_view format_name(Format f);
/// A format by name, or nullopt.
std::optional<Format> parse_format(std::string_view s);
/// The format of a JSON text by its top-level keys (amk's program fields; MPK's all_tasks,
/// all_events, first_tasks; PTO's tasks, tensors, edges), or nullopt for none of them.
std::optional<Format> detect_format(std::string_view text);

/// How to read a program beyond its bytes.
struct FormatOptions {
  std::optional<Format> format;  ///< forced (`--format`); nullopt: detected
  std::string scope_stats;  ///< PTO: scope_stats.jsonl (load_program: "" finds it beside the file)
  std::vector<std::string> launch;  ///< `--launch KEY=VALUE` overrides of the runtime record
  std::string target;               ///< chip for the foreign runtimes' defaults ("": theirs)
};

/// Reads a program file of any format ("-": standard input). Diagnostics name the file.
ir::Result<ir::Program> load_program(const std::string& path, const FormatOptions& o = {});
/// Parses a program text of any format; `origin` names it in diagnostics only (a PTO dump's
/// scope_stats is `o.scope_stats`, never looked for beside `origin`).
ir::Result<ir::Program> parse_program(std::string_view text, const std::string& origin,
                                      const FormatOptions& o = {});

}  // namespace amk::app
