// Whole-file reads and atomic writes (temp file in the same folder + fsync + rename).
#pragma once

#include <span>
#include <utility>
#include <vector>

#include <optional>
#include <string>
#include <string_view>

namespace amk::ir {

/// Reads a whole file into `out`; on failure returns a message naming the file and the reason.
std::optional<std::string> read_file(const std::string& path, std::string& out);
/// A data file shipped inside the binary: {stem, text}.
using BuiltinFile = std::pair<std::string_view, std::string_view>;
/// Resolves `name_or_path` against built-in files (by stem; origin "DIR/STEM.json") or, when it
/// looks like a path (has '/' or ends in .json), reads the file. On failure `error` names the
/// built-ins (`what`: "model", "target") or the unreadable file.
std::optional<std::pair<std::string, std::string>> read_builtin_or_file(
    std::string_view name_or_path, std::span<const BuiltinFile> builtins, std::string_view dir,
    std::string_view what, std::string_view hint, std::string& error);
/// The stems of built-in files, sorted.
std::vector<std::string> builtin_names(std::span<const BuiltinFile> builtins);
/// Writes `data` to `path` atomically: a failed write leaves an existing file as it was.
std::optional<std::string> write_file_atomic(const std::string& path, std::string_view data);

}  // namespace amk::ir
