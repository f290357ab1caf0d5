#include "app/mcp.h"

#include <array>
#include <string>

#include <fmt/format.h>

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

ojson tools(const ServiceOptions& o) {
  ojson list = ojson::array();
  for (const Operation& op : operations())
    list.push_back({{"name", op.name},
                    {"description", op.description},
                    {"inputSchema", operation_schema(op, o)}});
  return list;
}

bool is_tool(std::string_view name) {
  for (const Operation& op : operations())
    if (op.name == name) return true;
  return false;
}

// A tool error the agent reads (isError), not a protocol error.
ojson tool_error(const ir::Diagnostics& d) {
  const ojson e = error_json(d);
  return {{"content", ojson::array({{{"type", "text"}, {"text", e["message"]}}})},
          {"structuredContent", {{"error", e}}},
          {"isError", true}};
}

// The result of tools/call: the operation's answer as text and as structured content.
ojson call(Service& service, const std::string& name, const ojson& arguments,
           const std::atomic<bool>* stop) {
  ir::Result<ojson> r = service.call(name, arguments, stop);
  if (!r) return tool_error(r.diagnostics);
  return {{"content", ojson::array({{{"type", "text"}, {"text", ir::dump_text(*r, 2)}}})},
          {"structuredContent", *r},
          {"isError", false}};
}

Intake answer(ojson a) {
  return {Intake::Kind::Answer, nullptr, std::move(a)};
}

// What one message asks for: an answer now (or none), a tool call, or a cancellation.
Intake intake(const ServiceOptions& o, std::string_view line) {
  ir::Result<ojson> parsed = parse_request(line);
  if (!parsed) {
    const size_t first = line.find_first_not_of(" \t\r");
    const bool json_but_not_object = first != std::string_view::npos && line[first] == '[';
    return answer(rpc_error(
        nullptr, json_but_not_object ? kInvalidRequest : kParseError,
        json_but_not_object ? std::string("batches are not supported: send one message per line")
                            : "parse error: " + ir::error_messages(parsed.diagnostics)));
  }
  const ojson& m = *parsed;
  const bool has_id = m.contains("id");
  const ojson id = has_id ? m["id"] : ojson();
  if (has_id && !(id.is_string() || id.is_number_integer()))
    return answer(rpc_error(nullptr, kInvalidRequest, "\"id\" must be a string or an integer"));
  if (!m.contains("method")) {
    if (m.contains("result") || m.contains("error")) return {};  // a client's response
    return answer(rpc_error(id, kInvalidRequest, "a request needs \"method\""));
  }
  const bool v2 = m.contains("jsonrpc") && m["jsonrpc"].is_string() && m["jsonrpc"] == "2.0";
  if (!v2 || !m["method"].is_string())
    return has_id ? answer(rpc_error(
                        id, kInvalidRequest,
                        "not a JSON-RPC 2.0 request (\"jsonrpc\": \"2.0\", \"method\": string)"))
                  : Intake{};
  const std::string method = m["method"].get<std::string>();
  const ojson params = m.contains("params") ? m["params"] : ojson::object();
  if (!has_id) {  // a notification: none is answered; a cancellation names a call in flight
    if (method == "notifications/cancelled" && params.is_object() && params.contains("requestId") &&
        (params["requestId"].is_string() || params["requestId"].is_number_integer()))
      return {Intake::Kind::Cancel, params["requestId"], nullptr};
    return {};
  }
  if (!params.is_object())
    return answer(rpc_error(id, kInvalidParams, "\"params\" must be an object"));

  if (method == "initialize") {
    std::string version(kVersions.back());
    if (params.contains("protocolVersion") && params["protocolVersion"].is_string())
      for (std::string_view v : kVersions)
        if (params["protocolVersion"].get<std::string>() == v) version = v;
    return answer(rpc_result(
        id, {{"protocolVersion", version},
             {"capabilities", {{"tools", {{"listChanged", false}}}}},
             {"serverInfo", {{"name", "amk"}, {"version", AMK_VERSION}}},
             {"instructions",
              "amk proves megakernel schedules (AMK's IR) deadlock- and race-free, lowers Llama-"
              "family models into them, predicts their latency and searches ScheduleConfigs. Call "
              "info without arguments for the built-in models and targets."}}));
  }
  if (method == "ping") return answer(rpc_result(id, ojson::object()));
  if (method == "tools/list") return answer(rpc_result(id, {{"tools", tools(o)}}));
  if (method == "tools/call") {
    if (!params.contains("name") || !params["name"].is_string())
      return answer(rpc_error(id, kInvalidParams, "tools/call needs \"name\": the tool"));
    const std::string name = params["name"].get<std::string>();
    if (!is_tool(name)) return answer(rpc_error(id, kInvalidParams, "unknown tool: " + name));
    ojson arguments = params.contains("arguments") ? params["arguments"] : ojson::object();
    if (!arguments.is_object())
      return answer(rpc_error(id, kInvalidParams, "\"arguments\" must be an object"));
    return {Intake::Kind::Work, id, {{"name", name}, {"arguments", std::move(arguments)}}};
  }
  return answer(rpc_error(id, kMethodNotFound, "method not found: " + method));
}

class Mcp final : public Protocol {
 public:
  explicit Mcp(const ServiceOptions& o) : o_(o) {}
  Intake intake(std::string_view line, size_t) const override { return app::intake(o_, line); }
  ojson run(Service& service, const Intake& in, size_t,
            const std::atomic<bool>& stop) const override {
    return rpc_result(
        in.id, call(service, in.body["name"].get<std::string>(), in.body["arguments"], &stop));
  }
  ojson stopped(const Intake& in, size_t, Stop why, double limit_s) const override {
    if (why != Stop::Timeout) return nullptr;  // a cancelled call gets no response
    return rpc_result(in.id, tool_error({stop_error(why, limit_s)}));
  }
  ojson cancelled(const Intake&, size_t, size_t) const override { return nullptr; }
  ojson too_long(size_t lineno, size_t bytes, size_t limit) const override {
    return rpc_error(nullptr, kInvalidRequest,
                     fmt::format("message {} is {} bytes, over the limit of {} (--max-line); it "
                                 "was dropped as it was read",
                                 lineno, bytes, limit));
  }

 private:
  ServiceOptions o_;
};

}  // namespace

std::unique_ptr<Protocol> mcp_protocol(const ServiceOptions& o) {
  return std::make_unique<Mcp>(o);
}

ojson mcp_answer(Service& service, std::string_view line) {
  const Intake in = intake(service.options(), line);
  if (in.kind == Intake::Kind::Answer) return in.body;
  if (in.kind != Intake::Kind::Work) return nullptr;
  return rpc_result(
      in.id, call(service, in.body["name"].get<std::string>(), in.body["arguments"], nullptr));
}

}  // namespace amk::app
