// Broken internal invariants (bugs, never user mistakes): AMK_ASSERT throws InvariantError with
// the file and line, which the front ends report as an internal error instead of crashing.
#pragma once

#include <stdexcept>
#include <string>

namespace amk::ir {

/// Thrown when an internal invariant does not hold; what() names the file, line and condition.
class InvariantError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// Throws InvariantError("file:line: invariant 'cond' broken: message").
[[noreturn]] void invariant_failed(const char* file, int line, const char* cond,
                                   const std::string& message);

}  // namespace amk::ir

/// Checks an internal invariant in every build type; throws amk::ir::InvariantError when broken.
#define AMK_ASSERT(cond, message)                                                   \
  do {                                                                              \
    if (!(cond)) [[unlikely]]                                                       \
      ::amk::ir::invariant_failed(__FILE__, __LINE__, #cond, std::string(message)); \
  } while (false)
