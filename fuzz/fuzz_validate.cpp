// libFuzzer target for the validator: every program the reader accepts is validated; the verdict
// must be deterministic and the validator must never crash, hang or throw.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "ir/json_io.h"
#include "validate/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  amk::ir::Result<amk::ir::Program> r =
      amk::ir::parse_program(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!r) return 0;
  static amk::validate::Validator v;
  amk::validate::Result a = v.validate(*r);
  amk::validate::Result b = v.validate(*r);  // scratch reuse must not change the verdict
  if (a.ok != b.ok || a.errors.size() != b.errors.size()) std::abort();
  if (!a.ok && a.errors.empty()) std::abort();
  return 0;
}
