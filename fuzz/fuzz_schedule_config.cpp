// libFuzzer target for ScheduleConfig files: any bytes give a config or diagnostics naming a
// pointer; an accepted config is resolved for h100 and, when it resolves, lowers the toy model to
// a program the validator accepts, or fails with a lowering error (never `lower.rejected`: the
// lowering must not emit an unsafe schedule), never a crash.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "lower/compile.h"
#include "lower/config.h"
#include "lower/model.h"
#include "targets/target.h"
#include "validate/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const amk::lower::ModelSpec model = *amk::lower::load_model("toy-1L");
  static const amk::targets::TargetSpec target = *amk::targets::load_target("h100");
  std::string_view text(reinterpret_cast<const char*>(data), size);
  amk::ir::Result<amk::ir::ScheduleConfig> c = amk::lower::parse_config(text, "fuzz.json");
  if (!c) {
    if (c.diagnostics.empty()) std::abort();
    return 0;
  }
  if (!amk::lower::parse_knobs(*c, target)) return 0;
  amk::lower::LowerOptions opt;
  amk::ir::Result<amk::lower::Compiled> p = amk::lower::compile(model, target, *c, opt);
  if (!p) {
    // A config the knobs accept must never lower to a schedule the validator rejects.
    if (p.diagnostics.empty() || p.diagnostics[0].code == "lower.rejected") std::abort();
    return 0;
  }
  if (!amk::validate::validate(p->program).ok) std::abort();
  return 0;
}
