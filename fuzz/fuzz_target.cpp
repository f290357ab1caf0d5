// libFuzzer target for target records (targets/*.json, --target FILE): any bytes give a target or
// diagnostics, never a crash; an accepted one round-trips through write_target_spec.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "targets/target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  amk::ir::Result<amk::targets::TargetSpec> t =
      amk::targets::parse_target_spec(text, "target.json");
  if (!t) {
    if (t.diagnostics.empty()) std::abort();
    return 0;
  }
  const std::string out = amk::targets::write_target_spec(*t);
  amk::ir::Result<amk::targets::TargetSpec> again =
      amk::targets::parse_target_spec(out, "again.json");
  if (!again || amk::targets::write_target_spec(*again) != out) std::abort();
  return 0;
}
