// Whole-file reads and atomic writes (temp file in the same folder + fsync + rename).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace amk::ir {

/// Reads a whole file into `out`; on failure returns a message naming the file and the reason.
std::optional<std::string> read_file(const std::string& path, std::string& out);
/// Writes `data` to `path` atomically: a failed write leaves an existing file as it was.
std::optional<std::string> write_file_atomic(const std::string& path, std::string_view data);

}  // namespace amk::ir
