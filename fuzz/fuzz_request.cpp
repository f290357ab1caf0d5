// libFuzzer target for the request seam (amk serve's JSONL lines and amk mcp's JSON-RPC
// messages): any line gets a JSON answer (or none, for a notification), never a crash. The worker
// touches no files and takes searches of at most 4 evaluations; inline model specs are skipped
// (fuzz_model_config covers them, and a huge one would only be slow).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "app/mcp.h"
#include "app/service.h"
#include "fuzz/request_filter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  if (line.find('\n') != std::string_view::npos) return 0;  // one line is one request
  amk::ir::Result<amk::app::ojson> parsed = amk::app::parse_request(line);
  if (parsed && amk::fuzz::has_inline_model(*parsed)) return 0;
  amk::app::ServiceOptions o;
  o.files = false;
  o.max_budget = 4;
  static amk::app::Service service(o);  // warm across inputs, as in a long-lived worker
  const amk::app::ojson a = amk::app::serve_answer(service, line, 1);
  if (!a.is_object() || !a.contains("ok") || (!a["ok"].get<bool>() && !a.contains("error")))
    std::abort();
  const amk::app::ojson m = amk::app::mcp_answer(service, line);
  if (!m.is_null() && (!m.contains("jsonrpc") || (!m.contains("result") && !m.contains("error"))))
    std::abort();
  return 0;
}
