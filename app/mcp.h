// The Model Context Protocol (JSON-RPC 2.0, one message per line) over the request seam: amk's
// operations (app::operations) as an agent's tools, with JSON Schemas for their arguments.
#pragma once

#include <memory>
#include <string_view>

#include "app/server.h"
#include "app/service.h"

namespace amk::app {

/// MCP for a Server: initialize, ping, tools/list (schemas with `o`'s limits) and errors are
/// answered at once, tools/call goes to a worker, notifications/cancelled (params.requestId)
/// cancels a call, which then gets no response (as the protocol asks); a call past the time
/// ceiling is a tool result with isError.
std::unique_ptr<Protocol> mcp_protocol(const ServiceOptions& o);

/// The answer to one MCP message: initialize, ping, tools/list, tools/call (a failing operation
/// is a result with isError), or a JSON-RPC error (parse error, invalid request, unknown method
/// or tool, bad params); null for a notification or a client's response (nothing to send). One
/// message at once, without a server.
ojson mcp_answer(Service& service, std::string_view line);

}  // namespace amk::app
