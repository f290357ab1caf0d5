// The Model Context Protocol (JSON-RPC 2.0, one message per line) over the request seam: amk's
// operations (app::operations) as an agent's tools, with JSON Schemas for their arguments.
#pragma once

#include <string_view>

#include "app/service.h"

namespace amk::app {

/// The answer to one MCP message: initialize, ping, tools/list, tools/call (a failing operation
/// is a result with isError), or a JSON-RPC error (parse error, invalid request, unknown method
/// or tool, bad params); null for a notification or a client's response (nothing to send).
ojson mcp_answer(Service& service, std::string_view line);

}  // namespace amk::app
