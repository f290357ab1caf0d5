#include "ir/assert.h"

#include <fmt/format.h>

namespace amk::ir {

void invariant_failed(const char* file, int line, const char* cond, const std::string& message) {
  throw InvariantError(fmt::format("{}:{}: invariant '{}' broken: {}", file, line, cond, message));
}

}  // namespace amk::ir
