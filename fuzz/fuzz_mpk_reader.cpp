// libFuzzer target for the MPK reader: any bytes must give a program or diagnostics, never a
// crash; an accepted graph must validate, survive amk's JSON and run (as timed no-ops) to an end.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "formats/formats.h"
#include "ir/json_io.h"
#include "validate/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  amk::formats::ReadOptions o;
  o.origin = "fuzz";
  amk::ir::Result<amk::ir::Program> r = amk::formats::read_mpk(text, o);
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
