// Whole-file reads and atomic writes (temp file in the same folder + fsync + rename).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/result.h"

namespace amk::ir {

/// Reads a whole file ("-": standard input); an unreadable one is an `io.read` error naming the
/// file and the reason.
Result<std::string> read_file(const std::string& path);
/// A data file shipped inside the binary: {stem, text}.
using BuiltinFile = std::pair<std::string_view, std::string_view>;
/// Resolves `name_or_path` against built-in files (by stem; origin "DIR/STEM.json") or, when it
/// looks like a path (has '/' or ends in .json), reads the file: {origin, text}. An unknown name
/// is a `WHAT.unknown` error listing the built-ins (`what`: "model", "target").
Result<std::pair<std::string, std::string>> read_builtin_or_file(
    std::string_view name_or_path, std::span<const BuiltinFile> builtins, std::string_view dir,
    std::string_view what, std::string_view hint);
/// The stems of built-in files, sorted.
std::vector<std::string> builtin_names(std::span<const BuiltinFile> builtins);
/// Writes `data` to `path` atomically: a failed write (an `io.write` error) leaves an existing
/// file as it was. A symlink is written through (atomically at its target, keeping its mode); a
/// character device or a FIFO is written straight into; a directory or another special file is
/// refused.
Status write_file_atomic(const std::string& path, std::string_view data);

}  // namespace amk::ir
