#include "app/mcp.h"

#include <array>
#include <string>

#include "ir/pyjson.h"

namespace amk::app {
namespace {

// JSON-RPC 2.0 error codes.
constexpr int kParseError = -32700, kInvalidRequest = -32600, kMethodNotFound = -32601,
              kInvalidParams = -32602;
// The protocol revisions this server speaks, oldest first; a client asking for another one gets
// the newest.
constexpr std::array<std::string_view, 3> kVersions = {"2024-11-05", "2025-03-26", "2025-06-18"};

ojson rpc_error(const ojson& id, int code, std::string message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

ojson rpc_result(const ojson& id, ojson result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

ojson tools() {
  ojson list = ojson::array();
  for (const Operation& op : operations())
    list.push_back({{"name", op.name},
                    {"description", op.description},
                    {"inputSchema", ojson::parse(op.schema)}});
  return list;
}

bool is_tool(std::string_view name) {
  for (const Operation& op : operations())
    if (op.name == name) return true;
  return false;
}

// The result of tools/call: the operation's answer as text and as structured content; a failed
// operation is a tool error (isError) the agent reads, not a protocol error.
ojson call(Service& service, const std::string& name, const ojson& arguments) {
  ir::Result<ojson> r = service.call(name, arguments);
  if (!r) {
    const ojson e = error_json(r.diagnostics);
    return {{"content", ojson::array({{{"type", "text"}, {"text", e["message"]}}})},
            {"structuredContent", {{"error", e}}},
            {"isError", true}};
  }
  return {{"content", ojson::array({{{"type", "text"}, {"text", ir::dump_text(*r, 2)}}})},
          {"structuredContent", *r},
          {"isError", false}};
}

}  // namespace

ojson mcp_answer(Service& service, std::string_view line) {
  ir::Result<ojson> parsed = parse_request(line);
  if (!parsed) {
    const size_t first = line.find_first_not_of(" \t\r");
    const bool json_but_not_object = first != std::string_view::npos && line[first] == '[';
    return rpc_error(nullptr, json_but_not_object ? kInvalidRequest : kParseError,
                     json_but_not_object
                         ? std::string("batches are not supported: send one message per line")
                         : "parse error: " + ir::error_messages(parsed.diagnostics));
  }
  const ojson& m = *parsed;
  const bool has_id = m.contains("id");
  const ojson id = has_id ? m["id"] : ojson();
  if (has_id && !(id.is_string() || id.is_number_integer()))
    return rpc_error(nullptr, kInvalidRequest, "\"id\" must be a string or an integer");
  if (!m.contains("method")) {
    if (m.contains("result") || m.contains("error")) return nullptr;  // a client's response
    return rpc_error(id, kInvalidRequest, "a request needs \"method\"");
  }
  const bool v2 = m.contains("jsonrpc") && m["jsonrpc"].is_string() && m["jsonrpc"] == "2.0";
  if (!v2 || !m["method"].is_string())
    return has_id
               ? rpc_error(id, kInvalidRequest,
                           "not a JSON-RPC 2.0 request (\"jsonrpc\": \"2.0\", \"method\": string)")
               : ojson();
  const std::string method = m["method"].get<std::string>();
  if (!has_id) return nullptr;  // notifications (initialized, cancelled, ...) need no answer
  const ojson params = m.contains("params") ? m["params"] : ojson::object();
  if (!params.is_object()) return rpc_error(id, kInvalidParams, "\"params\" must be an object");

  if (method == "initialize") {
    std::string version(kVersions.back());
    if (params.contains("protocolVersion") && params["protocolVersion"].is_string())
      for (std::string_view v : kVersions)
        if (params["protocolVersion"].get<std::string>() == v) version = v;
    return rpc_result(
        id, {{"protocolVersion", version},
             {"capabilities", {{"tools", {{"listChanged", false}}}}},
             {"serverInfo", {{"name", "amk"}, {"version", AMK_VERSION}}},
             {"instructions",
              "amk proves megakernel schedules (AMK's IR) deadlock- and race-free, lowers Llama-"
              "family models into them, predicts their latency and searches ScheduleConfigs. Call "
              "info without arguments for the built-in models and targets."}});
  }
  if (method == "ping") return rpc_result(id, ojson::object());
  if (method == "tools/list") return rpc_result(id, {{"tools", tools()}});
  if (method == "tools/call") {
    if (!params.contains("name") || !params["name"].is_string())
      return rpc_error(id, kInvalidParams, "tools/call needs \"name\": the tool");
    const std::string name = params["name"].get<std::string>();
    if (!is_tool(name)) return rpc_error(id, kInvalidParams, "unknown tool: " + name);
    const ojson arguments = params.contains("arguments") ? params["arguments"] : ojson::object();
    if (!arguments.is_object())
      return rpc_error(id, kInvalidParams, "\"arguments\" must be an object");
    return rpc_result(id, call(service, name, arguments));
  }
  return rpc_error(id, kMethodNotFound, "method not found: " + method);
}

}  // namespace amk::app
