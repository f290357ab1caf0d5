// The request loop of `amk serve --stdio` (JSON lines) and `amk mcp` (JSON-RPC): lines in,
// answers out, with the limits that keep one request from taking the machine: a line-size limit
// checked while reading, a time ceiling per request, cancellation, a bounded number of requests
// in flight, and answers in request order or as they finish.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "app/service.h"

namespace amk::app {

/// What a protocol makes of one line before any work is done.
struct Intake {
  enum class Kind : uint8_t {
    None,    ///< nothing to do and nothing to answer (an MCP notification)
    Answer,  ///< answered at once: `body` is the answer
    Work,    ///< a request for a worker: `body` is what Protocol::run takes, `id` its id
    Cancel,  ///< cancels the requests in flight whose id is `id`
  };
  Kind kind = Kind::None;
  ojson id;
  ojson body;
};

/// Why a request was stopped before it finished.
enum class Stop : uint8_t {
  Cancelled,   ///< a cancel (JSONL) or notifications/cancelled (MCP) named it
  EndOfInput,  ///< input ended with --on-eof cancel, or nobody reads the answers any more
  Timeout,     ///< it ran past the server's time ceiling
};

/// The error of a request stopped before it finished: `request.cancelled`, or `request.timeout`
/// naming the ceiling `limit_s`.
ir::Diagnostic stop_error(Stop why, double limit_s);

/// A wire protocol: how lines become work, and how work, stops and over-long lines are answered.
/// Stateless: workers call it concurrently.
class Protocol {
 public:
  virtual ~Protocol() = default;
  /// Sorts line `lineno` (parsed here, once).
  virtual Intake intake(std::string_view line, size_t lineno) const = 0;
  /// The answer to a Work intake, run on `service`; `stop` is set when it is no longer wanted.
  virtual ojson run(Service& service, const Intake& in, size_t lineno,
                    const std::atomic<bool>& stop) const = 0;
  /// The answer to a request stopped before it finished (null: none; `limit_s`: the ceiling).
  virtual ojson stopped(const Intake& in, size_t lineno, Stop why, double limit_s) const = 0;
  /// The answer to a Cancel intake that stopped `count` requests (null: none).
  virtual ojson cancelled(const Intake& in, size_t lineno, size_t count) const = 0;
  /// The answer to line `lineno`, `bytes` long, over the limit `limit` (its bytes were dropped).
  virtual ojson too_long(size_t lineno, size_t bytes, size_t limit) const = 0;
};

/// amk serve's JSON lines: {"id", "op", ...} answered {id, ok, result | error}; {"op": "cancel",
/// "request_id": X} cancels the requests in flight with id X and is answered {cancelled: N}.
std::unique_ptr<Protocol> jsonl_protocol();

/// The response to one line of `amk serve` (line number `lineno`): {id, ok, result[, warnings]}
/// or {id, ok: false, error: {code, message, diagnostics, line}} (id null when the line is not a
/// JSON object). One request at once, without a server (no cancel).
ojson serve_answer(Service& service, std::string_view line, size_t lineno);

/// The default longest request line: above an inline Llama-class program, and a line's parsed
/// JSON (up to ~25x its bytes for `[{},{},...]`) stays well under a gigabyte.
inline constexpr size_t kDefaultMaxLine = size_t(16) << 20;
/// The default time ceiling of one request, in seconds.
inline constexpr double kDefaultMaxSeconds = 600;

/// Reads lines of at most `max_line` bytes: a longer line is dropped as it comes, never held.
class LineReader {
 public:
  /// What next() found.
  enum class Got : uint8_t { Line, TooLong, End };
  /// `read(buf, n)` reads up to n bytes (as read(2) does: what is there, 0 at the end, < 0 an
  /// error, taken as the end).
  LineReader(std::function<long(char*, size_t)> read, size_t max_line);
  /// The next line without its newline (a last line without one counts), or TooLong with the
  /// line's length in `bytes`.
  Got next(std::string& line, size_t& bytes);
  /// Lines read so far (the last one's number).
  size_t lineno() const { return lineno_; }

 private:
  std::function<long(char*, size_t)> read_;
  size_t max_;
  std::vector<char> buf_;
  size_t pos_ = 0, end_ = 0, lineno_ = 0;
  bool eof_ = false;
};

/// How a server runs.
struct ServerOptions {
  int jobs = 1;  ///< worker threads: requests at once, and a search's most threads
  size_t max_line = kDefaultMaxLine;        ///< the longest request line, in bytes
  double max_seconds = kDefaultMaxSeconds;  ///< a request's time ceiling (0: none)
  bool unordered = false;      ///< answer as requests finish (default: in request order)
  bool cancel_at_eof = false;  ///< end of input cancels what is in flight (default: finish it)
  ServiceOptions service;  ///< its max_jobs, max_seconds and max_inline are taken from the above
};

/// A server: a protocol on `jobs` workers (each a warm Service), a watchdog for the time ceiling,
/// and the answers written in order (or as they finish) through `write`.
class Server {
 public:
  /// `write` sends one answer (without the newline); false means nobody reads any more, and
  /// everything in flight is stopped.
  Server(std::unique_ptr<Protocol> protocol, ServerOptions o,
         std::function<bool(std::string_view)> write);
  /// Stops what runs and joins the threads (a request that cannot be interrupted is waited for).
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  /// Reads `in` to its end, answering every line, then finishes what is in flight (or cancels
  /// it: cancel_at_eof, or `gone()` true, polled every 100 ms, when nobody reads the answers).
  /// Returns when every answer is written.
  void run(LineReader& in, const std::function<bool()>& gone = {});
  /// Takes line `lineno`: answers it at once, queues it, or cancels what it names. Waits while
  /// 4 x jobs requests (or max_line bytes of them) are in flight. False: nobody reads answers.
  bool line(std::string_view text, size_t lineno);
  /// Answers line `lineno`, `bytes` long and over max_line (read and dropped).
  void too_long(size_t lineno, size_t bytes);
  /// Stops every request in flight, answered as `why` says.
  void stop_all(Stop why);
  /// Waits up to `wait` for every answer to be written; true when none is left.
  bool wait_answered(std::chrono::milliseconds wait);
  /// Waits up to `wait` for the workers to be idle (a stopped request that cannot be interrupted
  /// keeps one busy); true when they are.
  bool wait_idle(std::chrono::milliseconds wait);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  bool nobody_reads();  // a write failed
};

}  // namespace amk::app
