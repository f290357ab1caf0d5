// Helpers of the lowering tests: built-in models, targets and configs by name (throw on failure:
// a broken fixture is a test bug).
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "lower/config.h"
#include "lower/model.h"
#include "targets/target.h"

namespace amk::lower::test_support {

/// A built-in model spec.
inline ModelSpec model(const std::string& n) {
  std::string err;
  auto m = load_model(n, err);
  if (!m) throw std::runtime_error(err);
  return *m;
}

/// A built-in target.
inline targets::TargetSpec target(const std::string& n) {
  std::string err;
  auto t = targets::load_target(n, err);
  if (!t) throw std::runtime_error(err);
  return *t;
}

/// A ScheduleConfig from JSON (missing fields take AMK's defaults).
inline ir::ScheduleConfig config(const nlohmann::ordered_json& j) {
  std::string err;
  auto c = parse_config(j.dump(), "test.json", err);
  if (!c) throw std::runtime_error(err);
  return *c;
}

}  // namespace amk::lower::test_support
