// The one JSON shape of diagnostics, as a value (for front ends that build JSON documents).
#pragma once

#include <nlohmann/json.hpp>

#include "ir/diagnostic.h"

namespace amk::ir {

/// {code, severity, message, file?, pointer, line?, column?, task?, notes: [{message, pointer}]}.
nlohmann::ordered_json to_json(const Diagnostic& d);
/// An array of to_json(d).
nlohmann::ordered_json to_json(const Diagnostics& d);

}  // namespace amk::ir
