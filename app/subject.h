// What a MODEL|PROGRAM argument names, read and parsed once: a model (a built-in name, an amk
// model spec or a Hugging Face config.json) or a program file.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ir/program.h"
#include "ir/result.h"
#include "lower/model.h"

namespace amk::app {

/// Exactly one of `model` and `program` is set.
struct Subject {
  std::optional<lower::ModelSpec> model;
  std::optional<ir::Program> program;
  std::string origin;  ///< the file (or "schedules/NAME.json" for a built-in model)
};

/// Loads `arg`: a built-in model name, or a file that is a program (its first key is a program
/// field) or else a model. Load warnings ride along.
ir::Result<Subject> load_subject(std::string_view arg);

}  // namespace amk::app
