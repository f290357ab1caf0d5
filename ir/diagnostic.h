// Diagnostics as values: severity, stable code, message, JSON pointer and notes, for every layer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace amk::ir {

/// How bad a diagnostic is; only errors make a program unreadable or rejected.
enum class Severity : uint8_t { Error, Warning };

/// A pointer at the other party of a problem (the conflicting writer, the next hop of a cycle).
struct Note {
  std::string message;
  std::string pointer;
  bool operator==(const Note&) const = default;
};

/// One problem found in a file or program; `pointer` is an RFC 6901 JSON pointer.
struct Diagnostic {
  Severity severity = Severity::Error;
  std::string code;
  std::string message;
  std::string pointer;
  int line = 0;    ///< 1-based source line, 0 when not from a file position
  int column = 0;  ///< 1-based source column (bytes)
  std::vector<Note> notes;
  std::string file;  ///< the file it is about, when known (the caller may name it instead)
  bool operator==(const Diagnostic&) const = default;
};

/// A list of diagnostics with convenience queries.
using Diagnostics = std::vector<Diagnostic>;

/// True when any diagnostic is an error.
bool has_errors(const Diagnostics& d);
/// Number of errors in the list.
size_t count_errors(const Diagnostics& d);
/// Escapes one reference token of a JSON pointer ("~" -> "~0", "/" -> "~1").
std::string pointer_token(std::string_view key);
/// Pointer of a task field, e.g. task_pointer(12, "waits/0/threshold") ->
/// "/tasks/12/waits/0/threshold".
std::string task_pointer(size_t task, std::string_view rest = {});
/// The messages of the errors, joined by "; " (empty when there is none).
std::string error_messages(const Diagnostics& d);
/// The task a pointer is about ("/tasks/12/waits/0" -> 12), or nullopt.
std::optional<int64_t> pointer_task(std::string_view pointer);
/// Sets `file` on every diagnostic that does not name one yet.
void set_file(Diagnostics& d, std::string_view file);
/// "file:line:col: pointer: error[code]: message" plus indented notes, for human output; `file`
/// is used when the diagnostic names none.
std::string format_diagnostic(const Diagnostic& d, std::string_view file);
/// The one JSON shape of diagnostics (an array of {code, severity, message, file?, pointer,
/// line?, column?, task?, notes}), laid out like json.dumps(indent=2) at nesting `level`.
std::string diagnostics_json(const Diagnostics& d, int level);

}  // namespace amk::ir
