// libFuzzer target for the MPK reader: any bytes must give a program or diagnostics, never a
// crash; an accepted graph must validate, survive amk's JSON and run (as timed no-ops) to an end.
#include <cstdint>
#include <string_view>

#include "formats/formats.h"
#include "fuzz/foreign_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  amk::formats::ReadOptions o;
  o.origin = "fuzz";
  return check_foreign_read(amk::formats::read_mpk(text, o));
}
