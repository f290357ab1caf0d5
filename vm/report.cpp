// Human-readable stuck reports and Chrome/Perfetto traces of a launch.
#include <algorithm>

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
  std::string out = ir::error_messages(r.diagnostics) + "\n";
  if (!r.stall_class.empty()) {
    out += fmt::format("  stall class: {}; {} ready task(s) not dispatched\n", r.stall_class,
                       r.ready_left);
    for (const BusyCore& c : r.busy) {
      const ir::Task& t = p.tasks[static_cast<size_t>(c.task)];
      out += fmt::format(
          "  core {} ({}): task {} ({}, {}) {}\n", c.core, name(c.type), c.task, t.display(),
          ir::name(t.op),
          c.state == BusyCore::State::Running    ? "acknowledged (ACK) and never finished (no FIN)"
          : c.state == BusyCore::State::Finished ? "finished (FIN) and not retired by its scheduler"
                                                 : "dispatched and never acknowledged (no ACK)");
    }
  }
  for (const BlockedSm& b : r.blocked) {
    const ir::Task& t = p.tasks[static_cast<size_t>(b.task)];
    if (b.sm >= 0)
      out += fmt::format("  SM {}: head task {} ({}, {}), {} task(s) left", b.sm, b.task,
                         t.display(), ir::name(t.op), b.remaining);
    else
      out +=
          fmt::format("  task {} ({}, {}) never became ready", b.task, t.display(), ir::name(t.op));
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
  auto lane_name = [&](int64_t tid, const std::string& n) {
    add(fmt::format(
        R"({{"ph": "M", "name": "thread_name", "pid": 1, "tid": {}, "args": {{"name": {}}}}})", tid,
        json_str(n)));
  };
  const bool lanes = !r.lanes.empty();  // AICore mode: a lane per core, then per scheduler
  int64_t max_sm = -1;
  for (const ir::Task& t : p.tasks) max_sm = std::max(max_sm, t.sm.value_or(0));
  if (lanes)
    for (size_t k = 0; k < r.lanes.size(); ++k) lane_name(static_cast<int64_t>(k), r.lanes[k]);
  else
    for (int64_t s = 0; s <= max_sm; ++s) lane_name(s, fmt::format("SM {}", s));
  const int64_t sched_lane0 =
      lanes ? static_cast<int64_t>(r.lanes.size()) -
                  std::count_if(r.lanes.begin(), r.lanes.end(),
                                [](const std::string& n) { return n.starts_with("AICPU"); })
            : 0;
  auto us = [](int64_t ns) { return static_cast<double>(ns) / 1000.0; };
  for (const TraceEvent& e : r.trace) {
    const ir::Task& t = p.tasks[static_cast<size_t>(e.task)];
    const int64_t sm = lanes ? e.worker : t.sm.value_or(0);
    if (lanes && e.scheduler >= 0)
      for (auto [what, at] : {std::pair{"dispatch", e.dispatch_ns}, {"retire", e.retire_ns}})
        add(fmt::format(
            R"({{"ph": "i", "s": "t", "name": "{} t{}", "cat": "aicpu", "pid": 1, "tid": {}, "ts": {:.3f}, "args": {{"task": {}, "core": {}}}}})",
            what, e.task, sched_lane0 + e.scheduler, us(at), e.task, e.worker));
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
