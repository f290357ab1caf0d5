#include "ir/diagnostic.h"

#include <fmt/format.h>

#include <algorithm>

namespace amk::ir {

bool has_errors(const Diagnostics& d) {
  return std::any_of(d.begin(), d.end(),
                     [](const Diagnostic& x) { return x.severity == Severity::Error; });
}

size_t count_errors(const Diagnostics& d) {
  return static_cast<size_t>(std::count_if(
      d.begin(), d.end(), [](const Diagnostic& x) { return x.severity == Severity::Error; }));
}

std::string pointer_token(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string task_pointer(size_t task, std::string_view rest) {
  if (rest.empty()) return fmt::format("/tasks/{}", task);
  return fmt::format("/tasks/{}/{}", task, rest);
}

std::string format_diagnostic(const Diagnostic& d, std::string_view file) {
  std::string out(file);
  if (d.line > 0) out += fmt::format(":{}:{}", d.line, d.column);
  if (!d.pointer.empty()) out += fmt::format(": {}", d.pointer);
  out += fmt::format(": {}[{}]: {}", d.severity == Severity::Error ? "error" : "warning", d.code,
                     d.message);
  for (const Note& n : d.notes) {
    out += "\n    note: " + n.message;
    if (!n.pointer.empty()) out += " (" + n.pointer + ")";
  }
  return out;
}

}  // namespace amk::ir
