// Whole-file reads and atomic writes (temp file in the same folder + fsync + rename).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/result.h"

namespace amk::ir {

/// The one rule for what a front end may open. An input is a regular file (a device, FIFO,
/// socket or directory is refused up front, naming its kind: `io.not-a-file`) or "-", standard
/// input, only where the process allowed it (`io.stdin` otherwise); either is at most
/// max_input_bytes() long, checked before reading and again while reading (`io.too-large`). An
/// input that cannot be opened or read is `io.read`; running out of memory on one,
/// `io.out-of-memory`. Every error names the file.
///
/// Lets "-" name standard input in this process (off by default, so that a library caller,
/// such as the service whose requests arrive on stdin, never reads it by accident; the `amk`
/// command turns it on for the commands whose input stdin is).
void allow_stdin_input(bool on);
/// The most bytes one input may have: the environment's AMK_MAX_INPUT_BYTES (a count, or a count
/// with K, M, G or T: powers of 1024) or 2 GiB, unless set_max_input_bytes() says otherwise; a
/// malformed variable is an `io.limit` error.
Result<uint64_t> max_input_bytes();
/// Sets the ceiling for this process (an embedder, a test); 0 goes back to the environment's.
void set_max_input_bytes(uint64_t bytes);
/// Opens an input under the rule: a descriptor the caller closes, and the size of a regular file
/// (-1 for standard input, whose length is known only once read).
Result<std::pair<int, int64_t>> open_input(const std::string& path);
/// Reads a whole input under the rule.
Result<std::string> read_file(const std::string& path);
/// A whole input's bytes without a copy: a big regular file is mapped read-only (pages come
/// straight from the page cache, nothing is copied or held twice); a small file or standard input
/// ("-") is read into memory. A mapped file cut short by another process while it is read ends
/// the process (SIGBUS), as with any mapping.
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
/// Whether a model, target or runtime argument names a file rather than a built-in: "-", or a
/// string with a '/' or ending in .json (what read_builtin_or_file reads as a file).
bool names_a_file(std::string_view name_or_path);
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
/// name of one of this process's descriptors (/dev/stdout, /dev/stderr, /dev/fd/N,
/// /proc/self/fd/N) is written into that descriptor, where it stands (so `-o /dev/stdout >> log`
/// appends); a character device or a FIFO is written straight into; a directory or another
/// special file is refused. The temporary file is removed when SIGINT, SIGTERM or SIGHUP ends the
/// process while it is written (where those signals had no handler of their own).
Status write_file_atomic(const std::string& path, std::string_view data);

}  // namespace amk::ir
