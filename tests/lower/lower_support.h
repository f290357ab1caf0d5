// Helpers of the lowering tests: built-in models, targets and configs by name (throw on failure:
// a broken fixture is a test bug).
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "lower/config.h"
#include "lower/model.h"
#include "support.h"
#include "targets/target.h"

namespace amk::lower::test_support {

/// A built-in model spec.
inline ModelSpec model(const std::string& n) {
  return amk::test::must(load_model(n));
}

/// A built-in target.
inline targets::TargetSpec target(const std::string& n) {
  return amk::test::must(targets::load_target(n));
}

/// A ScheduleConfig from JSON (missing fields take AMK's defaults).
inline ir::ScheduleConfig config(const nlohmann::ordered_json& j) {
  return amk::test::must(parse_config(j.dump(), "test.json"));
}

}  // namespace amk::lower::test_support
