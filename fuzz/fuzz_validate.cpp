// libFuzzer target for the validator: every program the reader accepts is validated; the verdict
// must be deterministic, the validator must never crash, hang or throw, and one that skips the
// per-task screens (Validator::set_screens) must report exactly the same diagnostics.
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
  static amk::validate::Validator thorough = [] {
    amk::validate::Validator t;
    t.set_screens(false);
    return t;
  }();
  const amk::validate::Result c = thorough.validate(*r);
  auto same = [](const amk::ir::Diagnostics& x, const amk::ir::Diagnostics& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i].code != y[i].code || x[i].pointer != y[i].pointer || x[i].message != y[i].message)
        return false;
    return true;
  };
  if (a.ok != c.ok || !same(a.errors, c.errors) || !same(a.warnings, c.warnings)) std::abort();
  return 0;
}
