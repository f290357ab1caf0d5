// Where a foreign file's reader puts what it finds: diagnostics with their JSON pointer and the
// line:column of their byte offset in the file's text.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/diagnostic.h"
#include "ir/json_text.h"

namespace amk::formats {

/// The diagnostics of one read of `text`.
class DiagnosticSink {
 public:
  /// Diagnostics about `text`.
  explicit DiagnosticSink(std::string_view text) : text_(text) {}

  /// The diagnostics added since the last take(), with their line:column (one pass over the
  /// text for all of them).
  ir::Diagnostics take() {
    ir::fill_line_columns(text_, diags_, offsets_);
    offsets_.clear();
    return std::move(diags_);
  }
  /// Whether nothing was added since the last take().
  bool empty() const { return diags_.empty(); }

  /// Adds one at pointer `ptr`, positioned at byte `at` of the text.
  void add(ir::Severity sev, std::string code, std::string msg, std::string ptr, size_t at) {
    ir::Diagnostic d = ir::error(std::move(code), std::move(msg), std::move(ptr));
    d.severity = sev;
    diags_.push_back(std::move(d));
    offsets_.push_back(at);
  }
  /// An error.
  void report(std::string code, std::string msg, std::string ptr, size_t at) {
    add(ir::Severity::Error, std::move(code), std::move(msg), std::move(ptr), at);
  }
  /// A warning.
  void warn(std::string code, std::string msg, std::string ptr, size_t at) {
    add(ir::Severity::Warning, std::move(code), std::move(msg), std::move(ptr), at);
  }

 protected:
  std::string_view text_;
  ir::Diagnostics diags_;
  std::vector<size_t> offsets_;
};

}  // namespace amk::formats
