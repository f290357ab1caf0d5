// Positions and values in a JSON text as diagnostics name them: line:column of a byte offset, and
// what kind of value starts at one.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/diagnostic.h"

namespace amk::ir {

/// What the JSON value starting at byte `off` of `text` is, as messages name it ("an object",
/// "an array", "a string", "a boolean", "null", "a number"; "nothing" past the end).
std::string_view json_kind_at(std::string_view text, size_t off);
/// Line and column (1-based) of byte `offset` in `text`.
std::pair<int, int> line_column(std::string_view text, size_t offset);
/// Sets line:column on each of `d` from its byte offset into `text` (offsets[k] for d[k];
/// std::string::npos: none), in one pass over the text.
void fill_line_columns(std::string_view text, Diagnostics& d, const std::vector<size_t>& offsets);

}  // namespace amk::ir
