// amk serve --stdio: a long-lived JSONL worker. One request per line in, one response per line
// out, in request order, each with the request's id; --jobs workers each keep a warm Service.
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "app/service.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "ir/pyjson.h"

namespace amk::cli {
namespace {

using app::ojson;

std::string answer(app::Service& service, const std::string& text, size_t lineno) {
  return ir::dump_text(app::serve_answer(service, text, lineno));
}

void emit(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

// Requests answered by `jobs` threads, responses written in request order as they become ready.
class Pool {
 public:
  Pool(int jobs, app::ServiceOptions o) : options_(o) {
    for (int j = 0; j < jobs; ++j) threads_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard lock(m_);
      closed_ = true;
    }
    ready_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  // Queues one line; waits while too many are in flight (memory stays bounded).
  void submit(std::string line, size_t lineno) {
    std::unique_lock lock(m_);
    room_.wait(lock, [&] { return in_flight_ < 4 * threads_.size(); });
    queue_.push_back({next_in_++, lineno, std::move(line)});
    ++in_flight_;
    ready_.notify_one();
  }

 private:
  struct Job {
    size_t seq = 0, lineno = 0;
    std::string line;
  };
  void work() {
    app::Service service(options_);
    for (;;) {
      Job job;
      {
        std::unique_lock lock(m_);
        ready_.wait(lock, [&] { return closed_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      std::string out = answer(service, job.line, job.lineno);
      std::lock_guard lock(m_);
      done_.emplace(job.seq, std::move(out));
      for (auto it = done_.find(next_out_); it != done_.end(); it = done_.find(next_out_)) {
        emit(it->second);
        done_.erase(it);
        ++next_out_;
        --in_flight_;
      }
      room_.notify_all();
    }
  }

  const app::ServiceOptions options_;
  std::mutex m_;
  std::condition_variable ready_, room_;
  std::deque<Job> queue_;
  std::map<size_t, std::string> done_;
  size_t next_in_ = 0, next_out_ = 0, in_flight_ = 0;
  bool closed_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace

int cmd_serve(int argc, char** argv) {
  Args args(
      "amk serve --stdio [--jobs J] [--no-files]",
      "A long-lived JSONL worker: one JSON request per line on stdin, one JSON response per\n"
      "line on stdout, in request order, each with the request's id:\n"
      "  {\"id\": 1, \"op\": \"validate\", \"path\": \"prog.json\"}\n"
      "  -> {\"id\": 1, \"ok\": true, \"result\": {\"ok\": true, \"errors\": [], ...}}\n"
      "Operations: validate (program | path | text), lower (model, target, config, pos,\n"
      "batch, dtype, quant, output), cost (program | path | text, target), search_eval (model,\n"
      "target, config or configs, objective, pos, batch, dtype, quant), info (program | path |\n"
      "text, target, unsafe; without a program: version, operations, models, targets), diff\n"
      "(a, b), search (model, target, budget, time, seed, jobs, algo, objective, start,\n"
      "output). A program is an inline AMK IR object, a file path, or its JSON text (text).\n"
      "A failed request answers {\"ok\": false, \"error\": {code, message, diagnostics, line}};\n"
      "so does a line that is not JSON (id null), and the worker goes on. Each of the --jobs\n"
      "threads keeps a warm lowering and validator. End of input ends it with exit 0.");
  args.add()("stdio", "requests on stdin, responses on stdout (the only transport)")(
      "jobs,j", po::value<int>()->default_value(1), "worker threads")(
      "no-files", "read and write no files named in requests (programs, models, configs inline)");
  args.range("jobs", 1, 256);
  if (auto rc = args.parse(argc, argv)) return *rc;
  const int jobs = args.get<int>("jobs");
  app::ServiceOptions options;
  options.files = !args.has("no-files");
  std::string line;
  size_t lineno = 0;
  std::optional<app::Service> one;  // --jobs 1 answers on this thread
  std::optional<Pool> pool;
  if (jobs == 1)
    one.emplace(options);
  else
    pool.emplace(jobs, options);
  while (std::getline(std::cin, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines
    if (one)
      emit(answer(*one, line, lineno));
    else
      pool->submit(std::move(line), lineno);
  }
  return kOk;
}

}  // namespace amk::cli
