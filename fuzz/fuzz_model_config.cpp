// libFuzzer target for model files (amk specs and Hugging Face config.json): any bytes give a
// spec or diagnostics, never a crash; an accepted spec round-trips through write_model.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "lower/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  amk::ir::Result<amk::lower::ModelSpec> m = amk::lower::parse_model(text, "config.json");
  if (!m) {
    if (m.diagnostics.empty()) std::abort();
    return 0;
  }
  const std::string spec = amk::lower::write_model(*m);
  amk::ir::Result<amk::lower::ModelSpec> again = amk::lower::parse_model(spec, "spec.json");
  if (!again || amk::lower::write_model(*again) != spec) std::abort();
  return 0;
}
