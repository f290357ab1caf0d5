// amk mcp: the Model Context Protocol server on stdio (app::mcp_answer), one message per line.
#include <cstdio>
#include <iostream>
#include <string>

#include "app/mcp.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "ir/pyjson.h"

namespace amk::cli {

int cmd_mcp(int argc, char** argv) {
  Args args(
      "amk mcp [--no-files]",
      "A Model Context Protocol server on stdio (JSON-RPC 2.0, one message per line) for AI\n"
      "agents: initialize, ping, tools/list and tools/call; notifications are accepted and not\n"
      "answered. The tools are amk's operations (see amk serve): validate, lower, cost,\n"
      "search_eval, info, diff and search, each with a JSON Schema of its arguments. A failing\n"
      "operation is a tool result with isError and the diagnostics; an unknown tool or method,\n"
      "or a malformed message, is a JSON-RPC error. End of input ends it with exit 0.\n"
      "Register it with an agent as the command `amk mcp`.");
  args.add()("no-files",
             "read and write no files named in tool calls (programs, models, configs inline)");
  if (auto rc = args.parse(argc, argv)) return *rc;
  app::ServiceOptions options;
  options.files = !args.has("no-files");
  app::Service service(options);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const app::ojson answer = app::mcp_answer(service, line);
    if (answer.is_null()) continue;
    const std::string out = ir::dump_text(answer);
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  return kOk;
}

}  // namespace amk::cli
