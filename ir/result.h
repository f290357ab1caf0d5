// Outcomes as values: a value, or the diagnostics that say why there is none. Every layer reports
// user mistakes this way; only cli/ (and the Python module) turn them into text or exit codes.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "ir/assert.h"
#include "ir/diagnostic.h"

namespace amk::ir {

/// An error diagnostic with a code, a message and (optionally) the JSON pointer it is about.
Diagnostic error(std::string code, std::string message, std::string pointer = {});
/// A warning diagnostic.
Diagnostic warning(std::string code, std::string message, std::string pointer = {});

/// A value, or at least one error diagnostic explaining why there is none. Warnings may accompany
/// a value. Construct from a value, or from diagnostics that contain an error.
template <class T>
struct [[nodiscard]] Result {
  std::optional<T> value;
  Diagnostics diagnostics;

  Result() = default;
  /// A successful result.
  Result(T v) : value(std::move(v)) {}  // NOLINT(google-explicit-constructor)
  /// A failed result with one error.
  Result(Diagnostic d) { diagnostics.push_back(std::move(d)); }  // NOLINT
  /// A failed result; `d` must hold an error.
  Result(Diagnostics d) : diagnostics(std::move(d)) {  // NOLINT
    AMK_ASSERT(has_errors(diagnostics), "a failed Result needs an error diagnostic");
  }
  /// True when there is a value.
  bool ok() const { return value.has_value(); }
  explicit operator bool() const { return ok(); }
  T& operator*() & { return checked(); }
  const T& operator*() const& { return const_cast<Result*>(this)->checked(); }
  T&& operator*() && { return std::move(checked()); }
  T* operator->() { return &checked(); }
  const T* operator->() const { return &const_cast<Result*>(this)->checked(); }

 private:
  T& checked() {
    AMK_ASSERT(value.has_value(), "the value of a failed Result was used");
    return *value;
  }
};

/// Success (possibly with warnings) or failure with at least one error: Result without a value.
template <>
struct [[nodiscard]] Result<void> {
  Diagnostics diagnostics;

  Result() = default;
  /// A failure with one error (or a success carrying one warning).
  Result(Diagnostic d) { diagnostics.push_back(std::move(d)); }  // NOLINT
  /// The outcome the diagnostics describe (ok when none is an error).
  Result(Diagnostics d) : diagnostics(std::move(d)) {}  // NOLINT
  /// True when no diagnostic is an error.
  bool ok() const { return !has_errors(diagnostics); }
  explicit operator bool() const { return ok(); }
};

/// Success or failure, without a value.
using Status = Result<void>;

/// Appends `from`'s diagnostics to `to`.
inline void append(Diagnostics& to, Diagnostics from) {
  if (to.empty()) {
    to = std::move(from);
    return;
  }
  for (Diagnostic& d : from) to.push_back(std::move(d));
}

}  // namespace amk::ir
