// Human-readable stuck reports and Chrome/Perfetto traces of a launch.
#include <fmt/format.h>

#include "ir/pyjson.h"
#include "vm/vm.h"

namespace amk::vm {
namespace {

std::string json_str(std::string_view s) {
  std::string out;
  ir::append_json_string(out, s);
  return out;
}

}  // namespace

std::string stuck_report(const ir::Program& p, const RunResult& r) {
  std::string out = r.error + "\n";
  for (const BlockedSm& b : r.blocked) {
    const ir::Task& t = p.tasks[static_cast<size_t>(b.task)];
    out += fmt::format("  SM {}: head task {} ({}, {}), {} task(s) left", b.sm, b.task, t.display(),
                       ir::name(t.op), b.remaining);
    if (b.counter >= 0) {
      const auto& note = static_cast<size_t>(b.counter) < p.counters.size()
                             ? p.counters[b.counter].note
                             : std::string();
      out += fmt::format("; waits on counter {}{} >= {} (value {})", b.counter,
                         note.empty() ? "" : fmt::format(" '{}'", note), b.threshold, b.value);
      if (b.idle_producers.empty()) {
        out += "; no producer of it is left to run";
      } else {
        out += "; producers that never ran:";
        size_t shown = 0;
        for (int64_t q : b.idle_producers) {
          if (shown++ == 8) {
            out += fmt::format(" ... ({} more)", b.idle_producers.size() - 8);
            break;
          }
          out += fmt::format(" {} ({})", q, p.tasks[static_cast<size_t>(q)].display());
        }
      }
    } else {
      out += "; its waits hold (it was never reached)";
    }
    out += "\n";
  }
  return out;
}

std::string chrome_trace(const ir::Program& p, const RunResult& r) {
  std::string out = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  bool first = true;
  auto add = [&](const std::string& ev) {
    if (!first) out += ",\n";
    first = false;
    out += ev;
  };
  int64_t max_sm = -1;
  for (const ir::Task& t : p.tasks) max_sm = std::max(max_sm, t.sm.value_or(0));
  for (int64_t s = 0; s <= max_sm; ++s)
    add(fmt::format(
        R"({{"ph": "M", "name": "thread_name", "pid": 1, "tid": {}, "args": {{"name": "SM {}"}}}})",
        s, s));
  auto us = [](int64_t ns) { return static_cast<double>(ns) / 1000.0; };
  for (const TraceEvent& e : r.trace) {
    const ir::Task& t = p.tasks[static_cast<size_t>(e.task)];
    const int64_t sm = t.sm.value_or(0);
    if (e.ready_ns > e.head_ns) {
      std::string waits;
      for (const ir::Wait& w : t.waits)
        waits += fmt::format("{}c{}>={}", waits.empty() ? "" : " ", w.counter, w.threshold);
      add(fmt::format(
          R"({{"ph": "X", "name": "wait", "cat": "wait", "pid": 1, "tid": {}, "ts": {:.3f}, "dur": {:.3f}, "args": {{"task": {}, "waits": {}}}}})",
          sm, us(e.head_ns), us(e.ready_ns - e.head_ns), e.task, json_str(waits)));
    }
    double bytes = static_cast<double>(t.est_bytes);
    add(fmt::format(
        R"({{"ph": "X", "name": {}, "cat": "task", "pid": 1, "tid": {}, "ts": {:.3f}, "dur": {:.3f}, "args": {{"task": {}, "op": "{}", "bytes": {:.0f}, "worker": {}}}}})",
        json_str(t.display()), sm, us(e.start_ns), us(std::max<int64_t>(e.end_ns - e.start_ns, 0)),
        e.task, ir::name(t.op), bytes, e.worker));
  }
  out += "\n]}\n";
  return out;
}

}  // namespace amk::vm
