// libFuzzer target for the PTO reader: the bytes are split at the first NUL into deps.json and
// scope_stats.jsonl (none: no scope_stats); any input must give a program or diagnostics, never a
// crash, and an accepted graph must validate and survive amk's JSON.
#include <cstdint>
#include <string_view>

#include "formats/formats.h"
#include "fuzz/foreign_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  amk::formats::ReadOptions o;
  o.origin = "fuzz";
  const size_t nul = text.find('\0');
  if (nul != std::string_view::npos) {
    o.scope_stats = std::string(text.substr(nul + 1));
    text = text.substr(0, nul);
  }
  return check_foreign_read(amk::formats::read_pto(text, o));
}
