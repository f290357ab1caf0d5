// libFuzzer target for the incremental proof: every program the reader accepts is proved, then
// varied step by step as a search varies it (fixtures::vary, seeded by the input) and each
// variant proved by one incremental validator, which also keeps what it proved of earlier inputs;
// each result must be the full proof's, diagnostic for diagnostic.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fixtures/vary.h"
#include "ir/json_io.h"
#include "ir/rng.h"
#include "validate/validate.h"

namespace {

std::string everything(const amk::validate::Result& r) {
  return r.to_json() + "\n" + r.report();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  amk::ir::Result<amk::ir::Program> r = amk::ir::parse_program(text);
  if (!r) return 0;
  amk::ir::Program p = std::move(*r.value);
  amk::ir::Rng rng = amk::ir::Rng::seeded(std::hash<std::string_view>{}(text), 46);
  static amk::validate::Validator incremental = [] {
    amk::validate::Validator v;
    v.set_incremental(true);
    return v;
  }();
  amk::validate::Validator full;
  for (int step = 0; step < 6; ++step) {
    if (step > 0) amk::fixtures::vary(p, rng);
    const std::string got = everything(incremental.validate(p));
    if (got != everything(full.validate(p))) std::abort();
  }
  return 0;
}
