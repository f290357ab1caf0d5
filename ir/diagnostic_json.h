// The one JSON shape of diagnostics, as a value (for front ends that build JSON documents).
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "ir/diagnostic.h"

namespace amk::ir {

/// {code, severity, message, file?, pointer, line?, column?, task?, notes: [{message, pointer}]}.
nlohmann::ordered_json to_json(const Diagnostic& d);
/// An array of to_json(d).
nlohmann::ordered_json to_json(const Diagnostics& d);
/// The diagnostic a to_json object describes (fields of the wrong type are left empty); nullopt
/// when it is not an object with a string "code".
std::optional<Diagnostic> diagnostic_from_json(const nlohmann::ordered_json& j);

}  // namespace amk::ir
