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
/// A whole file's bytes without a copy: a big regular file is mapped read-only (pages come
/// straight from the page cache, nothing is copied or held twice); a small file, standard input
/// ("-") or a FIFO is read into memory. A mapped file cut short by another process while it is
/// read ends the process (SIGBUS), as with any mapping.
class FileBytes {
 public:
  /// Opens `path`; errors as read_file's.
  static Result<FileBytes> open(const std::string& path);
  FileBytes() = default;
  FileBytes(FileBytes&& o) noexcept;
  FileBytes& operator=(FileBytes&& o) noexcept;
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  ~FileBytes();
  /// The bytes.
  std::string_view view() const { return map_ ? std::string_view(map_, size_) : owned_; }
  /// Drops the mapped pages wholly inside [from, to) from this process's memory (they stay in the
  /// page cache and come back if read again): a reader calls it behind itself.
  void release(size_t from, size_t to) const;

 private:
  std::string owned_;
  const char* map_ = nullptr;
  size_t size_ = 0;
};

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
