// Proves the limits of `amk serve --stdio` and `amk mcp` against a live process on pipes: "-" is
// never a file inside a request, an over-long line is refused while it is read, a search's jobs
// are capped, cancel (JSONL and MCP) and the time ceiling stop a long search at once, answers go
// out unordered when asked, and the end of input (or a client gone) ends a running search. The
// searches asked for would run for minutes: every wait here is bounded and ends long before.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support.h"

namespace amk {
namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // the shadow memory inflates a process's peak RSS
#else
constexpr bool kSanitized = false;
#endif

// A running `amk ARGS` with its stdin and stdout on pipes.
class Child {
 public:
  explicit Child(const std::vector<std::string>& args) {
    ::signal(SIGPIPE, SIG_IGN);  // an amk that died is a failed write, not a dead test
    int in[2], out[2];
    if (::pipe(in) != 0 || ::pipe(out) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      for (int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
      std::vector<std::string> all{test::amk_binary()};
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (std::string& a : all) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    in_ = in[1];
    out_ = out[0];
  }
  ~Child() {
    close_in();
    close_out();
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  void send(const std::string& line) {
    const std::string l = line + "\n";
    for (size_t at = 0; at < l.size();) {
      const ssize_t n = ::write(in_, l.data() + at, l.size() - at);
      if (n <= 0) throw std::runtime_error("write to amk failed");
      at += static_cast<size_t>(n);
    }
  }
  // The next answer, or nullopt when none came within `seconds` (or stdout ended).
  std::optional<json> answer(double seconds = 60) {
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
      if (const size_t nl = buf_.find('\n'); nl != std::string::npos) {
        json j = json::parse(buf_.substr(0, nl));
        buf_.erase(0, nl + 1);
        return j;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
      pollfd p{out_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0)
        return std::nullopt;
      char chunk[65536];
      const ssize_t n = ::read(out_, chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }
  void close_in() {
    if (in_ >= 0) ::close(in_);
    in_ = -1;
  }
  void close_out() {
    if (out_ >= 0) ::close(out_);
    out_ = -1;
  }
  // Waits up to `seconds` for the exit: {exit code, peak RSS in MB}, or nullopt.
  std::optional<std::pair<int, double>> wait(double seconds = 60) {
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
      int status = 0;
      rusage ru{};
      if (::wait4(pid_, &status, WNOHANG, &ru) == pid_) {
        reaped_ = true;
        return std::pair{WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                         static_cast<double>(ru.ru_maxrss) / 1024};
      }
      if (Clock::now() > until) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

 private:
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1;
  bool reaped_ = false;
  std::string buf_;
};

// A search that runs for minutes unless something stops it.
json long_search(json id) {
  return {{"id", std::move(id)},
          {"op", "search"},
          {"model", "small-4L"},
          {"target", "h100"},
          {"budget", 100000}};
}

json info(json id) {
  return {{"id", std::move(id)}, {"op", "info"}};
}

TEST(ServeLimits, DashIsNeverAFileInAnyRequestWithOrWithoutFiles) {
  const char* toy = "toy-1L";
  // An empty program (a bare {} is not one: ir.not-a-program), so that only the '-' is wrong.
  const json empty = {
      {"buffers", json::array()}, {"counters", json::array()}, {"tasks", json::array()}};
  // Every argument of every operation that names a file, as "-", with its pointer.
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"op", "validate"}, {"path", "-"}}, "/path"},
      {{{"op", "validate"}, {"program", "-"}}, "/program"},
      {{{"op", "cost"}, {"path", "-"}, {"target", "h100"}}, "/path"},
      {{{"op", "cost"}, {"text", empty.dump()}, {"target", "-"}}, "/target"},
      {{{"op", "info"}, {"program", "-"}}, "/program"},
      {{{"op", "info"}, {"text", empty.dump()}, {"target", "-"}}, "/target"},
      {{{"op", "diff"}, {"a", "-"}, {"b", empty}}, "/a"},
      {{{"op", "diff"}, {"a", empty}, {"b", "-"}}, "/b"},
      {{{"op", "lower"}, {"model", "-"}, {"target", "h100"}}, "/model"},
      {{{"op", "lower"}, {"model", toy}, {"target", "-"}}, "/target"},
      {{{"op", "lower"}, {"model", toy}, {"target", "h100"}, {"config", "-"}}, "/config"},
      {{{"op", "lower"}, {"model", toy}, {"target", "h100"}, {"output", "-"}}, "/output"},
      {{{"op", "search_eval"}, {"model", "-"}, {"target", "h100"}}, "/model"},
      {{{"op", "search_eval"}, {"model", toy}, {"target", "-"}}, "/target"},
      {{{"op", "search_eval"}, {"model", toy}, {"target", "h100"}, {"config", "-"}}, "/config"},
      {{{"op", "search_eval"},
        {"model", toy},
        {"target", "h100"},
        {"configs", json::array({json::object(), "-"})}},
       "/configs/1"},
      {{{"op", "search"}, {"model", "-"}, {"target", "h100"}}, "/model"},
      {{{"op", "search"}, {"model", toy}, {"target", "-"}}, "/target"},
      {{{"op", "search"}, {"model", toy}, {"target", "h100"}, {"start", "-"}}, "/start"},
      {{{"op", "search"}, {"model", toy}, {"target", "h100"}, {"output", "-"}}, "/output"},
  };
  for (const bool files : {true, false}) {
    std::vector<std::string> args{"serve", "--stdio"};
    if (!files) args.push_back("--no-files");
    Child amk(args);
    for (size_t i = 0; i < cases.size(); ++i) {
      json r = cases[i].first;
      r["id"] = i;
      amk.send(r.dump());
    }
    amk.send(info("after").dump());  // not swallowed: stdin stays the request stream
    for (size_t i = 0; i < cases.size(); ++i) {
      const std::optional<json> a = amk.answer();
      ASSERT_TRUE(a) << "no answer to " << cases[i].first.dump();
      EXPECT_EQ((*a)["id"], i);
      EXPECT_FALSE((*a)["ok"].get<bool>()) << a->dump();
      EXPECT_EQ((*a)["error"]["code"], "request.stdin") << a->dump();
      EXPECT_EQ((*a)["error"]["diagnostics"][0]["pointer"], cases[i].second) << a->dump();
    }
    const std::optional<json> last = amk.answer();
    ASSERT_TRUE(last);
    EXPECT_EQ((*last)["id"], "after");
    EXPECT_TRUE((*last)["ok"].get<bool>());
    amk.close_in();
    EXPECT_EQ(amk.wait()->first, 0);
  }
}

// A foreign graph's chip ('target' of validate, info and cost, which picks the runtime's
// defaults) is a file like any other: never "-", and none at all under --no-files. A PTO text
// given inline has no folder, so no scope_stats is looked for beside it (a file there is not read).
TEST(ServeLimits, AForeignProgramsTargetAndScopeStatsAreFilesLikeAnyOther) {
  const std::string pto = test::slurp(test::source_dir() / "tests/formats/data/pto/deps.json");
  const std::filesystem::path dir = test::temp_dir() / "foreign-target";
  std::filesystem::create_directories(dir);
  const std::string chip = (dir / "chip.json").string();
  { std::ofstream(chip) << test::slurp(test::source_dir() / "targets/a2a3.json"); }
  for (const bool files : {true, false}) {
    std::vector<std::string> args{"serve", "--stdio"};
    if (!files) args.push_back("--no-files");
    Child amk(args);
    const std::vector<std::string> ops = {"validate", "info", "cost"};
    for (size_t i = 0; i < ops.size(); ++i) {
      amk.send(json{{"id", i}, {"op", ops[i]}, {"text", pto}, {"target", "-"}}.dump());
      amk.send(json{{"id", 10 + i}, {"op", ops[i]}, {"text", pto}, {"target", chip}}.dump());
    }
    amk.send(info("after").dump());  // not swallowed by a read of standard input
    for (size_t i = 0; i < ops.size(); ++i) {
      const std::optional<json> dash = amk.answer(), file = amk.answer();
      ASSERT_TRUE(dash && file) << ops[i];
      EXPECT_EQ((*dash)["id"], i);
      EXPECT_EQ((*dash)["error"]["code"], "request.stdin") << dash->dump();
      EXPECT_EQ((*dash)["error"]["diagnostics"][0]["pointer"], "/target") << dash->dump();
      EXPECT_EQ((*file)["id"], 10 + i);
      if (files) {
        EXPECT_TRUE((*file)["ok"].get<bool>()) << file->dump();
      } else {
        EXPECT_EQ((*file)["error"]["code"], "request.files") << file->dump();
        EXPECT_EQ((*file)["error"]["diagnostics"][0]["pointer"], "/target") << file->dump();
      }
    }
    const std::optional<json> last = amk.answer();
    ASSERT_TRUE(last);
    EXPECT_EQ((*last)["id"], "after");
    amk.close_in();
    EXPECT_EQ(amk.wait()->first, 0);
  }
}

TEST(ServeLimits, AnOverlongLineIsRefusedWhileReadAndTheNextIsAnswered) {
  {  // a small limit: the line is answered request.too-long with its length
    Child amk({"serve", "--stdio", "--max-line", "4096"});
    const std::string line =
        json{{"id", 1}, {"op", "info"}, {"x", std::string(100000, 'a')}}.dump();
    amk.send(line);
    amk.send(info(2).dump());
    const std::optional<json> a = amk.answer(), b = amk.answer();
    ASSERT_TRUE(a && b);
    EXPECT_TRUE((*a)["id"].is_null());
    EXPECT_EQ((*a)["error"]["code"], "request.too-long");
    EXPECT_EQ((*a)["error"]["line"], 1);
    EXPECT_NE(
        (*a)["error"]["message"].get<std::string>().find(std::to_string(line.size()) + " bytes"),
        std::string::npos)
        << a->dump();
    EXPECT_EQ((*b)["id"], 2);
    EXPECT_TRUE((*b)["ok"].get<bool>());
    amk.close_in();
    EXPECT_EQ(amk.wait()->first, 0);
  }
  // The default limit: a 48 MB line of [{},{},...] is never held, let alone parsed.
  Child amk({"serve", "--stdio"});
  std::string big = "[{}";
  big.reserve(48u << 20);
  while (big.size() < (48u << 20)) big += ",{}";
  big += "]";
  std::thread feed([&] {
    amk.send(big);
    amk.send(info(2).dump());
    amk.close_in();
  });
  const std::optional<json> a = amk.answer(), b = amk.answer();
  feed.join();
  ASSERT_TRUE(a && b);
  EXPECT_EQ((*a)["error"]["code"], "request.too-long");
  EXPECT_EQ((*b)["id"], 2);
  const auto done = amk.wait();
  ASSERT_TRUE(done);
  EXPECT_EQ(done->first, 0);
  if (!kSanitized) {
    EXPECT_LT(done->second, 200) << "peak RSS in MB";  // parsed, it is 1.8 GB
  }
}

TEST(ServeLimits, AnAnswerIsNoBiggerThanARequestMayBe) {
  // lower's program inline is at most --max-line bytes (as a tree it would take ~25x that): a
  // bigger one is refused, pointing at 'output', which writes it instead.
  const std::string out = (test::temp_dir() / "llama.json").string();
  Child amk({"serve", "--stdio", "--max-line", "100000"});
  amk.send(json{{"id", 1}, {"op", "lower"}, {"model", "toy-1L"}, {"target", "h100"}}.dump());
  amk.send(json{{"id", 2}, {"op", "lower"}, {"model", "llama-3.2-1b"}, {"target", "h100"}}.dump());
  amk.send(json{
      {"id", 3}, {"op", "lower"}, {"model", "llama-3.2-1b"}, {"target", "h100"}, {"output", out}}
               .dump());
  const std::optional<json> a = amk.answer(), b = amk.answer(), c = amk.answer();
  ASSERT_TRUE(a && b && c);
  EXPECT_TRUE((*a)["ok"].get<bool>()) << a->dump();
  EXPECT_EQ((*b)["error"]["diagnostics"][0]["pointer"], "/output") << b->dump();
  EXPECT_TRUE((*c)["ok"].get<bool>()) << c->dump();
  EXPECT_GT(test::slurp(out).size(), 100000u);
  amk.close_in();
  EXPECT_EQ(amk.wait()->first, 0);
}

TEST(ServeLimits, ASearchFromAStartBeyondItsRuntimesLaunchSaysSo) {
  Child amk({"serve", "--stdio"});
  amk.send(json{{"id", 1},
                {"op", "search"},
                {"model", "toy-1L"},
                {"target", "h100"},
                {"budget", 3},
                {"start", {{"threads_per_block", 512}}}}
               .dump());
  const std::optional<json> a = amk.answer();
  ASSERT_TRUE(a);
  ASSERT_TRUE((*a)["ok"].get<bool>()) << a->dump();
  ASSERT_EQ((*a)["warnings"].size(), 1u) << a->dump();
  EXPECT_EQ((*a)["warnings"][0]["code"], "runtime.limit");
  EXPECT_EQ((*a)["warnings"][0]["pointer"], "/threads_per_block");
  EXPECT_EQ((*a)["warnings"][0]["file"], "/start");
  amk.close_in();
  EXPECT_EQ(amk.wait()->first, 0);
}

TEST(ServeLimits, ASearchsJobsAreCappedAtTheServersJobs) {
  Child amk({"serve", "--stdio", "--jobs", "2"});
  amk.send(json{
      {"id", 1},
      {"op", "search"},
      {"model", "toy-1L"},
      {"target", "h100"},
      {"budget", 4},
      {"jobs",
       256}}.dump());
  const std::optional<json> a = amk.answer();
  ASSERT_TRUE(a);
  ASSERT_TRUE((*a)["ok"].get<bool>()) << a->dump();
  ASSERT_EQ((*a)["warnings"].size(), 1u) << a->dump();
  EXPECT_EQ((*a)["warnings"][0]["code"], "request.jobs");
  EXPECT_EQ((*a)["warnings"][0]["pointer"], "/jobs");
  EXPECT_NE((*a)["warnings"][0]["message"].get<std::string>().find("capped at 2"),
            std::string::npos);
  amk.close_in();
  const auto done = amk.wait();
  ASSERT_TRUE(done);
  if (!kSanitized) {
    EXPECT_LT(done->second, 500) << "peak RSS in MB";
  }
}

TEST(ServeLimits, CancelStopsALongSearchAndAnswersItCancelled) {
  Child amk({"serve", "--stdio"});
  amk.send(long_search("s").dump());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // it is running
  amk.send(json{{"id", "c"}, {"op", "cancel"}, {"request_id", "s"}}.dump());
  amk.send(json{{"id", "c2"}, {"op", "cancel"}, {"request_id", "nothing"}}.dump());
  amk.send(json{{"id", "c3"}, {"op", "cancel"}}.dump());
  amk.send(info(4).dump());
  const std::optional<json> s = amk.answer(30);
  ASSERT_TRUE(s) << "the search was not stopped";
  EXPECT_EQ((*s)["id"], "s");
  EXPECT_EQ((*s)["error"]["code"], "request.cancelled") << s->dump();
  const std::optional<json> c = amk.answer(), c2 = amk.answer(), c3 = amk.answer(),
                            i = amk.answer();
  ASSERT_TRUE(c && c2 && c3 && i);
  EXPECT_EQ((*c)["result"]["cancelled"], 1);
  EXPECT_EQ((*c2)["result"]["cancelled"], 0);
  EXPECT_EQ((*c3)["error"]["diagnostics"][0]["pointer"], "/request_id");
  EXPECT_EQ((*i)["id"], 4);
  amk.close_in();
  EXPECT_EQ(amk.wait(30)->first, 0);
}

TEST(ServeLimits, McpNotificationsCancelledStopsACallThatThenGetsNoResponse) {
  Child amk({"mcp"});
  amk.send(json{{"jsonrpc", "2.0"},
                {"id", 7},
                {"method", "tools/call"},
                {"params", {{"name", "search"}, {"arguments", long_search(nullptr)}}}}
               .dump());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  amk.send(
      R"({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})");
  amk.send(R"({"jsonrpc": "2.0", "id": 8, "method": "ping"})");
  const std::optional<json> a = amk.answer(30);
  ASSERT_TRUE(a) << "the call was not stopped";
  EXPECT_EQ((*a)["id"], 8);  // the cancelled call is not answered
  amk.close_in();
  EXPECT_EQ(amk.wait(30)->first, 0);
  EXPECT_FALSE(amk.answer(1));
}

TEST(ServeLimits, TheTimeCeilingStopsARequestAndTheSchemaShowsTheLimits) {
  Child amk({"mcp", "--max-time", "0.5", "--max-budget", "5000"});
  amk.send(R"({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})");
  json call = {{"jsonrpc", "2.0"},
               {"id", 2},
               {"method", "tools/call"},
               {"params", {{"name", "search"}, {"arguments", long_search(nullptr)}}}};
  call["params"]["arguments"].erase("id");
  call["params"]["arguments"].erase("op");
  amk.send(call.dump());  // budget 100000: over the ceiling
  call["id"] = 3;
  call["params"]["arguments"]["budget"] = 5000;
  // Runs past 0.5 s: Llama-3.2-1B's 5,000 evaluations take some 2 s on one job here (small-4L's
  // came to take 0.47 s once a search stopped reading recalled tasks into its proofs).
  call["params"]["arguments"]["model"] = "llama-3.2-1b";
  amk.send(call.dump());
  const std::optional<json> list = amk.answer(), over = amk.answer(), late = amk.answer(30);
  ASSERT_TRUE(list && over && late);
  for (const json& t : (*list)["result"]["tools"])
    if (t["name"] == "search") {
      EXPECT_EQ(t["inputSchema"]["properties"]["budget"]["maximum"], 5000);
      EXPECT_EQ(t["inputSchema"]["properties"]["time"]["maximum"], 0.5);
    }
  EXPECT_TRUE((*over)["result"]["isError"].get<bool>());
  EXPECT_EQ((*over)["result"]["structuredContent"]["error"]["diagnostics"][0]["pointer"],
            "/budget");
  EXPECT_TRUE((*late)["result"]["isError"].get<bool>()) << late->dump();
  EXPECT_EQ((*late)["result"]["structuredContent"]["error"]["code"], "request.timeout");
  amk.close_in();
  EXPECT_EQ(amk.wait(30)->first, 0);
}

TEST(ServeLimits, UnorderedAnswersGoOutAsReadyAndInOrderByDefault) {
  for (const bool unordered : {true, false}) {
    std::vector<std::string> args{"serve", "--stdio", "--jobs", "2"};
    if (unordered) args.push_back("--unordered");
    Child amk(args);
    amk.send(long_search("s").dump());
    amk.send(info(2).dump());
    std::optional<json> first = amk.answer(unordered ? 30 : 1);
    if (unordered) {  // the info, while the search runs
      ASSERT_TRUE(first);
      EXPECT_EQ((*first)["id"], 2);
    } else {  // held behind the search
      EXPECT_FALSE(first);
    }
    amk.send(json{{"id", "c"}, {"op", "cancel"}, {"request_id", "s"}}.dump());
    std::vector<json> rest;
    for (size_t k = 0; k < (unordered ? 2u : 3u); ++k) {
      std::optional<json> a = amk.answer(30);
      ASSERT_TRUE(a);
      rest.push_back(*a);
    }
    EXPECT_EQ(rest[0]["id"], "s");
    EXPECT_EQ(rest[0]["error"]["code"], "request.cancelled");
    EXPECT_EQ(rest.back()["id"], "c");
    if (!unordered) {
      EXPECT_EQ(rest[1]["id"], 2);
    }
    amk.close_in();
    EXPECT_EQ(amk.wait(30)->first, 0);
  }
}

TEST(ServeLimits, EndOfInputEndsARunningSearch) {
  {  // --on-eof cancel: the search is answered cancelled and the process exits
    Child amk({"serve", "--stdio", "--on-eof", "cancel"});
    amk.send(long_search("s").dump());
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    amk.close_in();
    const std::optional<json> a = amk.answer(30);
    ASSERT_TRUE(a);
    EXPECT_EQ((*a)["error"]["code"], "request.cancelled");
    const auto done = amk.wait(30);
    ASSERT_TRUE(done) << "still running after the end of input";
    EXPECT_EQ(done->first, 0);
  }
  for (const char* cmd : {"serve", "mcp"}) {  // the client is gone: both pipes closed
    Child amk({cmd});
    if (std::string_view(cmd) == "serve")
      amk.send(long_search("s").dump());
    else
      amk.send(json{{"jsonrpc", "2.0"},
                    {"id", 1},
                    {"method", "tools/call"},
                    {"params", {{"name", "search"}, {"arguments", long_search(nullptr)}}}}
                   .dump());
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    amk.close_out();
    amk.close_in();
    const auto done = amk.wait(30);
    ASSERT_TRUE(done) << cmd << " still running after its client left";
    EXPECT_EQ(done->first, 0) << cmd;
  }
}

}  // namespace
}  // namespace amk
