// Where a foreign file's reader puts what it finds: diagnostics with their JSON pointer and the
// line:column of their byte offset in the file's text.
#pragma once

#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "ir/diagnostic.h"
#include "ir/json_cursor.h"

namespace amk::formats {

/// The diagnostics of one read of `text`.
class DiagnosticSink {
 public:
  /// Diagnostics about `text`.
  explicit DiagnosticSink(std::string_view text) : text_(text) {}

 protected:
  /// Adds one at pointer `ptr`, positioned at byte `at` of the text.
  void add(ir::Severity sev, std::string code, std::string msg, std::string ptr, size_t at) {
    ir::Diagnostic d = ir::error(std::move(code), std::move(msg), std::move(ptr));
    d.severity = sev;
    std::tie(d.line, d.column) = ir::line_column(text_, at);
    diags_.push_back(std::move(d));
  }
  /// An error.
  void report(std::string code, std::string msg, std::string ptr, size_t at) {
    add(ir::Severity::Error, std::move(code), std::move(msg), std::move(ptr), at);
  }
  /// A warning.
  void warn(std::string code, std::string msg, std::string ptr, size_t at) {
    add(ir::Severity::Warning, std::move(code), std::move(msg), std::move(ptr), at);
  }

  std::string_view text_;
  ir::Diagnostics diags_;
};

}  // namespace amk::formats
