// amk serve --stdio (JSONL) and amk mcp (the Model Context Protocol): app::Server on stdin and
// stdout, with the limits of both as options.
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "app/mcp.h"
#include "app/server.h"
#include "cli/cli.h"
#include "cli/commands.h"

namespace amk::cli {
namespace {

// The limits both servers take.
void add_limits(Args& args) {
  args.add()("jobs,j", po::value<int>()->default_value(1),
             "worker threads: requests answered at once, and the most threads a search gets")(
      "no-files", "read and write no files named in requests (programs, models, configs inline)")(
      "max-line", po::value<int64_t>()->default_value(static_cast<int64_t>(app::kDefaultMaxLine)),
      "the longest request line in bytes: a longer one is dropped as it is read and answered "
      "with an error")(
      "max-time", po::value<double>()->default_value(app::kDefaultMaxSeconds),
      "a request's time ceiling in seconds (0: none): past it, it is stopped and answered "
      "request.timeout")("max-budget", po::value<int64_t>()->default_value(100000),
                         "the largest search budget a request may ask for")(
      "unordered",
      "write each answer when it is ready (each carries its id), not in request order")(
      "on-eof", po::value<std::string>()->default_value("finish"),
      "at the end of input: finish what is in flight, or cancel it");
  args.range("jobs", 1, 256);
  args.range("max-line", 64, 1e12);
  args.range("max-time", 0, 1e7);
  args.range("max-budget", 1, 1e9);
}

bool write_line(std::string_view s) {
  return std::fwrite(s.data(), 1, s.size(), stdout) == s.size() &&
         std::fputc('\n', stdout) != EOF && std::fflush(stdout) == 0;
}

// Nobody reads stdout any more (the client closed its end of the pipe or the socket).
bool stdout_gone() {
  pollfd p{STDOUT_FILENO, 0, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLERR | POLLHUP)) != 0;
}

long read_stdin(char* buf, size_t n) {
  for (;;) {
    const ssize_t r = ::read(STDIN_FILENO, buf, n);
    if (r >= 0 || errno != EINTR) return static_cast<long>(r);
  }
}

// Runs a server of `protocol` on stdin and stdout with the options of `args`.
int serve(const Args& args, const char* name, bool mcp) {
  app::ServerOptions o;
  o.jobs = args.get<int>("jobs");
  o.max_line = static_cast<size_t>(args.get<int64_t>("max-line"));
  o.max_seconds = args.get<double>("max-time");
  o.unordered = args.has("unordered");
  const std::string eof = args.get<std::string>("on-eof");
  if (eof != "finish" && eof != "cancel") {
    std::cerr << name << ": --on-eof " << eof << ": use finish or cancel\n";
    return kUnreadable;
  }
  o.cancel_at_eof = eof == "cancel";
  o.service.files = !args.has("no-files");
  o.service.max_budget = args.get<int64_t>("max-budget");
  o.service.max_jobs = o.jobs;
  o.service.max_seconds = o.max_seconds;
  std::signal(SIGPIPE, SIG_IGN);  // a client gone is a failed write, seen and handled
  app::LineReader in(read_stdin, o.max_line);
  {
    app::Server server(mcp ? app::mcp_protocol(o.service) : app::jsonl_protocol(), o, write_line);
    server.run(in, stdout_gone);
    // A stopped request that cannot be interrupted (a lowering, a proof) is not waited for.
    if (!server.wait_idle(std::chrono::seconds(2))) std::_Exit(kOk);
  }
  return kOk;
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  Args args(
      "amk serve --stdio [--jobs J] [--no-files] [--max-line BYTES] [--max-time S] "
      "[--max-budget N] [--unordered] [--on-eof finish|cancel]",
      "A long-lived JSONL worker: one JSON request per line on stdin, one JSON response per\n"
      "line on stdout, in request order (--unordered: as each is ready), each with the request's\n"
      "id:\n"
      "  {\"id\": 1, \"op\": \"validate\", \"path\": \"prog.json\"}\n"
      "  -> {\"id\": 1, \"ok\": true, \"result\": {\"ok\": true, \"errors\": [], ...}}\n"
      "Operations: validate (program | path | text), lower (model, target, config, pos,\n"
      "batch, dtype, quant, output), cost (program | path | text, target), search_eval (model,\n"
      "target, config or configs, objective, pos, batch, dtype, quant), info (program | path |\n"
      "text, target, unsafe; without a program: version, operations, models, targets), diff\n"
      "(a, b), search (model, target, budget, time, seed, jobs, algo, objective, start,\n"
      "output), and cancel (request_id): the requests in flight with that id are answered\n"
      "request.cancelled at once and stopped; the cancel is answered {\"cancelled\": N}.\n"
      "A program is an inline AMK IR object, a file path, or its JSON text (text); \"-\" is\n"
      "never a file here (stdin is the request stream).\n"
      "A failed request answers {\"ok\": false, \"error\": {code, message, diagnostics, line}};\n"
      "so does a line that is not JSON (id null) or is longer than --max-line, and the worker\n"
      "goes on. A request running longer than --max-time is stopped (request.timeout); a\n"
      "search's jobs are capped at --jobs. At most 4 x --jobs requests are in flight (reading\n"
      "waits). End of input finishes what is in flight (--on-eof cancel: cancels it) and exits\n"
      "0; when nobody reads stdout any more, everything is cancelled at once.");
  args.add()("stdio", "requests on stdin, responses on stdout (the only transport)");
  add_limits(args);
  if (auto rc = args.parse(argc, argv)) return *rc;
  return serve(args, "amk serve", false);
}

int cmd_mcp(int argc, char** argv) {
  Args args(
      "amk mcp [--jobs J] [--no-files] [--max-line BYTES] [--max-time S] [--max-budget N] "
      "[--unordered] [--on-eof finish|cancel]",
      "A Model Context Protocol server on stdio (JSON-RPC 2.0, one message per line) for AI\n"
      "agents: initialize, ping, tools/list and tools/call; notifications are accepted and not\n"
      "answered, and notifications/cancelled (params.requestId) stops a tool call, which then\n"
      "gets no response. The tools are amk's operations (see amk serve): validate, lower, cost,\n"
      "search_eval, info, diff and search, each with a JSON Schema of its arguments (with this\n"
      "server's limits). A failing operation, or one past --max-time, is a tool result with\n"
      "isError and the diagnostics; an unknown tool or method, or a malformed or over-long\n"
      "message, is a JSON-RPC error. The limits are amk serve's. End of input finishes what is in\n"
      "flight (--on-eof cancel: cancels it) and exits 0.\n"
      "Register it with an agent as the command `amk mcp`.");
  add_limits(args);
  if (auto rc = args.parse(argc, argv)) return *rc;
  return serve(args, "amk mcp", true);
}

}  // namespace amk::cli
