#include "app/server.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "ir/diagnostic_json.h"
#include "ir/pyjson.h"

namespace amk::app {
namespace {

using Clock = std::chrono::steady_clock;
// A line up to this long is parsed before it waits for room (a cancel must get through).
constexpr size_t kSmallLine = 64 << 10;

// {id, ok: false, error: {code, message, diagnostics, line}}.
ojson failed(const ojson& id, const ir::Diagnostics& d, size_t lineno) {
  ojson out = ojson::object();
  out["id"] = id;
  out["ok"] = false;
  out["error"] = error_json(d);
  out["error"]["line"] = lineno;
  return out;
}

class Jsonl final : public Protocol {
 public:
  Intake intake(std::string_view line, size_t lineno) const override {
    Intake in;
    ir::Result<ojson> req = parse_request(line);
    if (!req) {
      for (ir::Diagnostic& d : req.diagnostics) {  // the request's line in the stream
        d.file = "<stdin>";
        d.line = static_cast<int>(lineno);
      }
      in.kind = Intake::Kind::Answer;
      in.body = failed(nullptr, req.diagnostics, lineno);
      return in;
    }
    ojson& r = *req;
    in.id = r.contains("id") ? r["id"] : ojson();
    if (r.contains("op") && r["op"] == "cancel") {
      ir::Diagnostics bad;
      for (const auto& [k, v] : r.items())
        if (k != "op" && k != "id" && k != "request_id")
          bad.push_back(ir::error(
              "request.invalid", fmt::format("unknown argument '{}' (cancel takes: request_id)", k),
              "/" + ir::pointer_token(k)));
      if (!r.contains("request_id") || r["request_id"].is_null())
        bad.push_back(ir::error("request.invalid",
                                "cancel needs 'request_id': the id of the request to cancel",
                                "/request_id"));
      if (!bad.empty()) {
        in.kind = Intake::Kind::Answer;
        in.body = failed(in.id, bad, lineno);
        return in;
      }
      in.kind = Intake::Kind::Cancel;
      in.body = {{"id", in.id}};  // the cancel's own id; in.id is the one it cancels
      in.id = r["request_id"];
      return in;
    }
    in.kind = Intake::Kind::Work;
    in.body = std::move(r);
    return in;
  }

  ojson run(Service& service, const Intake& in, size_t lineno,
            const std::atomic<bool>& stop) const override {
    ir::Result<ojson> r = service.handle(in.body, &stop);
    if (!r) return failed(in.id, r.diagnostics, lineno);
    ojson out = ojson::object();
    out["id"] = in.id;
    out["ok"] = true;
    out["result"] = std::move(*r.value);
    if (!r.diagnostics.empty()) out["warnings"] = ir::to_json(r.diagnostics);
    return out;
  }

  ojson stopped(const Intake& in, size_t lineno, Stop why, double limit_s) const override {
    return failed(in.id, {stop_error(why, limit_s)}, lineno);
  }

  ojson cancelled(const Intake& in, size_t, size_t count) const override {
    return {{"id", in.body["id"]}, {"ok", true}, {"result", {{"cancelled", count}}}};
  }

  ojson too_long(size_t lineno, size_t bytes, size_t limit) const override {
    return failed(nullptr,
                  {ir::error("request.too-long",
                             fmt::format("line {} is {} bytes, over the limit of {} (--max-line); "
                                         "it was dropped as it was read",
                                         lineno, bytes, limit))},
                  lineno);
  }
};

}  // namespace

ir::Diagnostic stop_error(Stop why, double limit_s) {
  switch (why) {
    case Stop::Cancelled:
      return ir::error("request.cancelled", "cancelled by a cancel request");
    case Stop::EndOfInput:
      return ir::error("request.cancelled",
                       "cancelled: the input ended (--on-eof cancel) or nobody reads the answers");
    case Stop::Timeout:
      break;
  }
  return ir::error("request.timeout",
                   fmt::format("stopped after {} s, the server's time ceiling (--max-time)",
                               ir::py_float(limit_s)));
}

std::unique_ptr<Protocol> jsonl_protocol() {
  return std::make_unique<Jsonl>();
}

ojson serve_answer(Service& service, std::string_view line, size_t lineno) {
  const Jsonl p;
  const Intake in = p.intake(line, lineno);
  if (in.kind == Intake::Kind::Answer) return in.body;
  if (in.kind == Intake::Kind::Cancel) return p.cancelled(in, lineno, 0);  // nothing in flight
  const std::atomic<bool> never{false};
  return p.run(service, in, lineno, never);
}

LineReader::LineReader(std::function<long(char*, size_t)> read, size_t max_line)
    : read_(std::move(read)), max_(max_line), buf_(size_t(64) << 10) {}

LineReader::Got LineReader::next(std::string& line, size_t& bytes) {
  line.clear();
  bytes = 0;
  bool over = false;
  for (;;) {
    if (pos_ == end_) {
      if (!eof_) {
        const long n = read_(buf_.data(), buf_.size());
        if (n <= 0) {
          eof_ = true;
        } else {
          pos_ = 0;
          end_ = static_cast<size_t>(n);
        }
        continue;
      }
      if (bytes == 0) return Got::End;
      ++lineno_;  // a last line without a newline
      return over ? Got::TooLong : Got::Line;
    }
    const char* from = buf_.data() + pos_;
    const auto* nl = static_cast<const char*>(std::memchr(from, '\n', end_ - pos_));
    const size_t n = nl ? static_cast<size_t>(nl - from) : end_ - pos_;
    bytes += n;
    if (!over && line.size() + n > max_) {  // dropped from here on: never held whole
      over = true;
      std::string().swap(line);
    }
    if (!over) line.append(from, n);
    pos_ += n;
    if (nl) {
      ++pos_;
      ++lineno_;
      return over ? Got::TooLong : Got::Line;
    }
  }
}

namespace {

// One request in flight.
struct Job {
  Intake in;
  size_t seq = 0, lineno = 0, bytes = 0;
  std::atomic<bool> stop{false};
  bool settled = false, running = false;
  Clock::time_point deadline;
};

}  // namespace

struct Server::Impl {
  std::unique_ptr<Protocol> protocol;
  ServerOptions o;
  std::function<bool(std::string_view)> write;
  size_t cap = 4;  // requests in flight (queued, running or answered and held for the order)
  std::mutex m;
  std::condition_variable work_cv, room_cv, watch_cv, done_cv;
  std::deque<std::shared_ptr<Job>> queue;
  std::vector<std::shared_ptr<Job>> live;             // not settled yet
  std::map<size_t, std::optional<std::string>> held;  // answers waiting for earlier ones
  size_t next_seq = 0, next_out = 0, in_flight = 0, bytes = 0, busy = 0;
  bool closing = false, gone = false;
  std::vector<std::thread> threads;

  void send(const std::string& text) {
    if (gone || write(text)) return;
    gone = true;  // nobody reads: stop everything (their answers go nowhere)
    for (const std::shared_ptr<Job>& j : live) j->stop = true;
    room_cv.notify_all();
  }

  // Records answer `text` (nullopt: none) of sequence number `seq` and writes what is due.
  void record(size_t seq, std::optional<std::string> text) {
    if (o.unordered) {
      if (text) send(*text);
      --in_flight;
    } else {
      held.emplace(seq, std::move(text));
      for (auto it = held.find(next_out); it != held.end(); it = held.find(next_out)) {
        if (it->second) send(*it->second);
        held.erase(it);
        ++next_out;
        --in_flight;
      }
    }
    room_cv.notify_all();
    done_cv.notify_all();
  }

  void settle(Job& j, std::optional<std::string> text) {
    j.settled = true;
    bytes -= j.bytes;
    std::erase_if(live, [&](const std::shared_ptr<Job>& x) { return x.get() == &j; });
    record(j.seq, std::move(text));
  }

  static std::optional<std::string> text_of(const ojson& answer) {
    if (answer.is_null()) return std::nullopt;
    return ir::dump_text(answer);
  }

  void stop(Job& j, Stop why) {
    j.stop = true;
    settle(j, text_of(protocol->stopped(j.in, j.lineno, why, o.max_seconds)));
  }

  // Waits for room for one more request (`counted`) of `size` bytes (`work`: held until it is
  // answered): at most `cap` requests and max_line bytes of them (or one longer) in flight.
  void wait_room(std::unique_lock<std::mutex>& lock, bool work, size_t size, bool counted = true) {
    room_cv.wait(lock, [&] {
      return gone || closing ||
             ((!counted || in_flight < cap) && (!work || bytes == 0 || bytes + size <= o.max_line));
    });
  }

  void work() {
    Service service(o.service);
    for (;;) {
      std::shared_ptr<Job> j;
      {
        std::unique_lock lock(m);
        work_cv.wait(lock, [&] { return closing || !queue.empty(); });
        if (queue.empty()) return;
        j = std::move(queue.front());
        queue.pop_front();
        if (j->settled) continue;
        if (j->stop) {  // nobody reads its answer
          settle(*j, std::nullopt);
          continue;
        }
        j->running = true;
        j->deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(o.max_seconds));
        ++busy;
        watch_cv.notify_one();
      }
      std::optional<std::string> text = text_of(protocol->run(service, j->in, j->lineno, j->stop));
      std::lock_guard lock(m);
      j->running = false;
      --busy;
      if (!j->settled) settle(*j, std::move(text));
      done_cv.notify_all();
    }
  }

  // Stops each running request at its deadline.
  void watch() {
    std::unique_lock lock(m);
    while (!closing) {
      const Clock::time_point now = Clock::now();
      Clock::time_point next = Clock::time_point::max();
      std::vector<std::shared_ptr<Job>> late;
      for (const std::shared_ptr<Job>& j : live)
        if (j->running) {
          if (j->deadline <= now)
            late.push_back(j);
          else
            next = std::min(next, j->deadline);
        }
      for (const std::shared_ptr<Job>& j : late) stop(*j, Stop::Timeout);
      if (next == Clock::time_point::max())
        watch_cv.wait(lock);
      else
        watch_cv.wait_until(lock, next);
    }
  }
};

Server::Server(std::unique_ptr<Protocol> protocol, ServerOptions o,
               std::function<bool(std::string_view)> write)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.protocol = std::move(protocol);
  o.jobs = std::max(1, o.jobs);
  o.service.max_jobs = o.jobs;
  o.service.max_seconds = o.max_seconds;
  o.service.max_inline = o.max_line;  // an answer no bigger than a request may be
  s.o = o;
  s.write = std::move(write);
  s.cap = 4 * static_cast<size_t>(o.jobs);
  for (int j = 0; j < o.jobs; ++j) s.threads.emplace_back([&s] { s.work(); });
  if (o.max_seconds > 0) s.threads.emplace_back([&s] { s.watch(); });
}

Server::~Server() {
  {
    std::lock_guard lock(impl_->m);
    impl_->closing = true;
    for (const std::shared_ptr<Job>& j : impl_->live) j->stop = true;
  }
  impl_->work_cv.notify_all();
  impl_->watch_cv.notify_all();
  impl_->room_cv.notify_all();
  for (std::thread& t : impl_->threads) t.join();
}

bool Server::line(std::string_view text, size_t lineno) {
  if (text.find_first_not_of(" \t\r") == std::string_view::npos) return true;  // blank
  Impl& s = *impl_;
  if (text.size() > kSmallLine) {  // its parsed JSON waits for the bytes in flight to allow it
    std::unique_lock lock(s.m);
    s.wait_room(lock, true, text.size(), false);
  }
  Intake in = s.protocol->intake(text, lineno);  // parsed outside the lock
  std::unique_lock lock(s.m);
  if (in.kind == Intake::Kind::None) return !s.gone;
  if (in.kind == Intake::Kind::Cancel) {  // never waits: it makes room
    size_t n = 0;
    const std::vector<std::shared_ptr<Job>> live = s.live;
    for (const std::shared_ptr<Job>& j : live)
      if (!in.id.is_null() && j->in.id == in.id) {
        s.stop(*j, Stop::Cancelled);
        ++n;
      }
    std::optional<std::string> answer = Impl::text_of(s.protocol->cancelled(in, lineno, n));
    if (answer) {
      ++s.in_flight;
      s.record(s.next_seq++, std::move(answer));
    }
    return !s.gone;
  }
  const bool work = in.kind == Intake::Kind::Work;
  s.wait_room(lock, work, text.size());
  if (s.gone || s.closing) return false;
  ++s.in_flight;
  if (!work) {
    s.record(s.next_seq++, Impl::text_of(in.body));
    return !s.gone;
  }
  auto j = std::make_shared<Job>();
  j->in = std::move(in);
  j->seq = s.next_seq++;
  j->lineno = lineno;
  j->bytes = text.size();
  s.bytes += j->bytes;
  s.live.push_back(j);
  s.queue.push_back(std::move(j));
  s.work_cv.notify_one();
  return true;
}

void Server::too_long(size_t lineno, size_t bytes) {
  Impl& s = *impl_;
  std::unique_lock lock(s.m);
  s.wait_room(lock, false, 0);
  if (s.gone || s.closing) return;
  ++s.in_flight;
  s.record(s.next_seq++, Impl::text_of(s.protocol->too_long(lineno, bytes, s.o.max_line)));
}

void Server::stop_all(Stop why) {
  Impl& s = *impl_;
  std::lock_guard lock(s.m);
  const std::vector<std::shared_ptr<Job>> live = s.live;
  for (const std::shared_ptr<Job>& j : live) s.stop(*j, why);
}

bool Server::nobody_reads() {
  std::lock_guard lock(impl_->m);
  return impl_->gone;
}

bool Server::wait_answered(std::chrono::milliseconds wait) {
  std::unique_lock lock(impl_->m);
  return impl_->done_cv.wait_for(lock, wait, [&] { return impl_->in_flight == 0; });
}

bool Server::wait_idle(std::chrono::milliseconds wait) {
  std::unique_lock lock(impl_->m);
  return impl_->done_cv.wait_for(lock, wait,
                                 [&] { return impl_->busy == 0 && impl_->live.empty(); });
}

void Server::run(LineReader& in, const std::function<bool()>& gone) {
  std::string text;
  size_t bytes = 0;
  for (;;) {
    const LineReader::Got got = in.next(text, bytes);
    if (got == LineReader::Got::End) break;
    if (got == LineReader::Got::TooLong)
      too_long(in.lineno(), bytes);
    else if (!line(text, in.lineno()))
      break;
  }
  std::string().swap(text);
  if (impl_->o.cancel_at_eof) stop_all(Stop::EndOfInput);
  while (!wait_answered(std::chrono::milliseconds(100)))
    if ((gone && gone()) || nobody_reads()) stop_all(Stop::EndOfInput);
}

}  // namespace amk::app
