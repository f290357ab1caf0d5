// libFuzzer target for the search's inputs: a search-space file (for the toy model on h100) and a
// trial-log line (--resume). Any bytes give a space, a trial or diagnostics, never a crash.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "lower/config.h"
#include "lower/model.h"
#include "search/search.h"
#include "search/space.h"
#include "targets/target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const amk::lower::ModelSpec model = *amk::lower::load_model("toy-1L");
  static const amk::targets::TargetSpec target = *amk::targets::load_target("h100");
  static const amk::ir::ScheduleConfig base = amk::lower::default_config();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto space = amk::search::parse_space(text, "space.json", model, target, base);
  if (!space && space.diagnostics.empty()) std::abort();
  auto trial = amk::search::parse_trial(text);
  if (!trial && trial.diagnostics.empty()) std::abort();
  return 0;
}
