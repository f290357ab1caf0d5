#include "ir/json_text.h"

#include <algorithm>
#include <string>

namespace amk::ir {

std::pair<int, int> line_column(std::string_view text, size_t offset) {
  int line = 1, col = 1;
  offset = std::min(offset, text.size());
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

void fill_line_columns(std::string_view text, Diagnostics& d, const std::vector<size_t>& offsets) {
  std::vector<size_t> order(d.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return offsets[a] < offsets[b]; });
  size_t pos = 0;
  int line = 1, col = 1;
  for (size_t k : order) {
    size_t off = offsets[k];
    if (off == std::string::npos) continue;
    off = std::min(off, text.size());
    for (; pos < off; ++pos) {
      if (text[pos] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    d[k].line = line;
    d[k].column = col;
  }
}

std::string_view json_kind_at(std::string_view text, size_t off) {
  if (off >= text.size()) return "nothing";
  switch (text[off]) {
    case '{':
      return "an object";
    case '[':
      return "an array";
    case '"':
      return "a string";
    case 't':
    case 'f':
      return "a boolean";
    case 'n':
      return "null";
    default:
      return "a number";
  }
}

}  // namespace amk::ir
