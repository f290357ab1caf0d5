// Reading and writing AMK's on-disk JSON: AMK's load rules, byte-identical canonical output.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ir/diagnostic.h"
#include "ir/program.h"

namespace amk::ir {

/// A parsed program, or none with the error diagnostics that explain why (warnings either way).
struct LoadResult {
  std::optional<Program> program;
  Diagnostics diagnostics;
  /// True when a program was produced.
  bool ok() const { return program.has_value(); }
};

/// A parsed target record, or none with the diagnostics that explain why.
struct TargetLoadResult {
  std::optional<Target> target;
  Diagnostics diagnostics;
};

/// Parses one target record (AMK's GpuTarget fields; unknown fields land in Target::extra).
TargetLoadResult parse_target(std::string_view text);
/// A target record in AMK's canonical bytes (the same writer as a program's "target").
std::string write_target(const Target& t);
/// Parses AMK JSON text. Never throws on bad input: every problem is a diagnostic with a pointer.
LoadResult parse_program(std::string_view text);
/// Reads and parses a file; an unreadable file is an `io.read` diagnostic.
LoadResult load_program(const std::string& path);
/// The exact bytes AMK's MegakernelProgram.to_json() writes (unknown fields kept at the end).
std::string write_program(const Program& p);

}  // namespace amk::ir
