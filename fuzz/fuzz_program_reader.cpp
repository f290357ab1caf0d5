// libFuzzer target for the program reader: any bytes must give a program or diagnostics, never a
// crash, and an accepted program must round-trip (write, read back, equal, same bytes).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "ir/graph.h"
#include "ir/json_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  amk::ir::Result<amk::ir::Program> r = amk::ir::parse_program(text);
  if (!r) {
    if (r.diagnostics.empty()) std::abort();  // a refusal must explain itself
    return 0;
  }
  std::string out = amk::ir::write_program(*r);
  amk::ir::Result<amk::ir::Program> again = amk::ir::parse_program(out);
  if (!again || !(*again == *r)) std::abort();
  if (amk::ir::write_program(*again) != out) std::abort();
  (void)amk::ir::Graph::build(*r);
  return 0;
}
