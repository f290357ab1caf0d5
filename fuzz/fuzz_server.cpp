// libFuzzer target for the server loop (app::Server) of `amk serve --stdio` and `amk mcp`: an
// input is a sequence of request lines (the first two bytes pick the options and how the bytes
// arrive) fed through the line reader, with cancels, "-" and device paths among the requests and
// a line "HUGE" standing for one far over the line limit. JSON lines must get exactly one answer
// per request line, MCP at most one per line, every answer a JSON object of its protocol (read by
// amk's reader: a lone surrogate sent comes back as its escape); a client that stops reading must
// end the run; memory stays bounded. Searches take at most 4 evaluations and every request at
// most 1 s; inline model specs are skipped (fuzz_model_config covers them); with files, nothing
// is written and /proc and /sys are not read.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/mcp.h"
#include "app/server.h"
#include "fuzz/request_filter.h"
#include "ir/json_io.h"

namespace {

constexpr size_t kMaxLine = 16 << 10;
constexpr size_t kMaxLines = 24;
constexpr double kMaxRssMb = 1536;

// Whether the harness feeds `line` (with `files`: it writes nothing and reads no pseudo-files).
bool fed(std::string_view line, bool files) {
  if (files && (line.find("output") != std::string_view::npos ||
                line.find("/proc") != std::string_view::npos ||
                line.find("/sys") != std::string_view::npos || line.find('\\') != line.npos))
    return false;
  const amk::ir::Result<amk::app::ojson> parsed = amk::app::parse_request(line);
  return !(parsed && amk::fuzz::has_inline_model(*parsed));
}

double rss_mb() {
  std::ifstream f("/proc/self/statm");
  long pages = 0, resident = 0;
  f >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1e6;
}

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_server: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t opt = data[0];
  const size_t chunk = 1 + data[1] % 97;  // how many bytes each read returns
  const bool mcp = opt & 1, files = opt & 8;
  amk::app::ServerOptions o;
  o.jobs = 1 + (opt >> 4) % 3;
  o.unordered = opt & 2;
  o.cancel_at_eof = opt & 4;
  o.max_line = kMaxLine;
  o.max_seconds = 1;
  o.service.files = files;
  o.service.max_budget = 4;
  const size_t fail_after = (opt & 0x40) ? (opt >> 7) : SIZE_MAX;  // the client stops reading

  // The lines fed, and how many are requests (a JSON line's answers).
  std::string input;
  size_t requests = 0, lines = 0;
  std::string_view rest(reinterpret_cast<const char*>(data) + 2, size - 2);
  while (!rest.empty() && lines < kMaxLines) {
    const size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    std::string text(line);
    if (line == "HUGE") {
      text = "[";
      while (text.size() <= 4 * kMaxLine) text += "{},";
    } else if (!fed(line, files)) {
      continue;
    }
    ++lines;
    if (text.size() > kMaxLine || text.find_first_not_of(" \t\r") != std::string::npos) ++requests;
    input += text;
    input += '\n';
  }

  std::vector<std::string> answers;
  size_t at = 0;
  amk::app::LineReader reader(
      [&](char* buf, size_t n) -> long {
        const size_t k = std::min({n, chunk, input.size() - at});
        std::copy_n(input.data() + at, k, buf);
        at += k;
        return static_cast<long>(k);
      },
      o.max_line);
  {
    amk::app::Server server(mcp ? amk::app::mcp_protocol(o.service) : amk::app::jsonl_protocol(), o,
                            [&](std::string_view a) {
                              if (answers.size() >= fail_after) return false;
                              answers.emplace_back(a);
                              return true;
                            });
    server.run(reader);  // returns only once every request is answered or stopped
  }

  for (const std::string& a : answers) {
    // amk's reader: an answer may carry a lone surrogate's escape (an id or a name as it was
    // sent), which nlohmann's parser refuses.
    const amk::ir::Result<amk::ir::JsonValue> doc = amk::ir::parse_json_object(a, "an answer");
    if (!doc) fail("an answer is not a JSON object", a);
    const amk::app::ojson& j = doc->json();
    if (mcp && (!j.contains("jsonrpc") || (!j.contains("result") && !j.contains("error"))))
      fail("not a JSON-RPC answer", a);
    if (!mcp && (!j.contains("ok") || !j["ok"].is_boolean() ||
                 (!j["ok"].get<bool>() && !j.contains("error"))))
      fail("not a serve answer", a);
  }
  if (fail_after == SIZE_MAX && !mcp && answers.size() != requests)
    fail("not one answer per request",
         std::to_string(answers.size()) + " answers to " + std::to_string(requests));
  if (answers.size() > requests) fail("more answers than requests", std::to_string(answers.size()));
  if (rss_mb() > kMaxRssMb) fail("memory", std::to_string(rss_mb()) + " MB resident");
  return 0;
}
