// What both foreign-format fuzz targets demand of a read: a refusal explains itself; an accepted
// graph validates, gets its smallest safe capacities and survives amk's JSON unchanged.
#pragma once

#include <cstdlib>

#include "ir/json_io.h"
#include "validate/validate.h"

inline int check_foreign_read(const amk::ir::Result<amk::ir::Program>& r) {
  if (!r) {
    if (r.diagnostics.empty()) std::abort();  // a refusal must explain itself
    return 0;
  }
  (void)amk::validate::validate(*r);
  (void)amk::validate::smallest_safe_capacities(*r);
  amk::ir::Result<amk::ir::Program> again = amk::ir::parse_program(amk::ir::write_program(*r));
  if (!again || !(*again == *r)) std::abort();
  return 0;
}
