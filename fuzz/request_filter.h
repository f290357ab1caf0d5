// What the request fuzzers skip: a request with an inline model spec (fuzz_model_config covers
// those, and a huge one would only be slow).
#pragma once

#include "app/service.h"

namespace amk::fuzz {

/// True when `j` (a JSONL request or an MCP message) carries a model spec inline.
inline bool has_inline_model(const app::ojson& j) {
  if (!j.is_object()) return false;
  if (j.contains("model") && !j["model"].is_string()) return true;
  for (const char* k : {"params", "arguments"})
    if (j.contains(k) && has_inline_model(j[k])) return true;
  return false;
}

}  // namespace amk::fuzz
