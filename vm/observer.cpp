// The observers of a launch: the Chrome/Perfetto trace recorder and the stuck report, and PTO's
// stall classes.
#include <algorithm>

#include <fmt/format.h>

#include "ir/pyjson.h"
#include "vm/observer.h"

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
  if (r.stall_class != StallClass::None) {
    out += fmt::format("  stall class: {}; {} ready task(s) not dispatched\n", name(r.stall_class),
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

std::string chrome_trace(const ir::Program& p, const TraceRecorder& rec) {
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
  const std::vector<std::string>& lanes = rec.lanes();  // SMs, or cores then schedulers
  for (size_t k = 0; k < lanes.size(); ++k) lane_name(static_cast<int64_t>(k), lanes[k]);
  const int64_t sched_lane0 = static_cast<int64_t>(lanes.size()) -
                              std::count_if(lanes.begin(), lanes.end(), [](const std::string& n) {
                                return n.starts_with("AICPU");
                              });
  auto us = [](int64_t ns) { return static_cast<double>(ns) / 1000.0; };
  for (const TraceEvent& e : rec.events()) {
    if (e.task < 0 || static_cast<size_t>(e.task) >= p.tasks.size()) continue;
    const ir::Task& t = p.tasks[static_cast<size_t>(e.task)];
    const int64_t sm = e.worker;
    if (e.scheduler >= 0)
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

std::string_view name(StallClass c) {
  switch (c) {
    case StallClass::None:
      return "";
    case StallClass::RunningStalled:
      return "running-stalled";
    case StallClass::ReadyButIdle:
      return "ready-but-idle";
    case StallClass::DependencyDeadlock:
      return "dependency-deadlock";
    case StallClass::OrchestratorStarvation:
      return "orchestrator-starvation";
  }
  return "";
}

StallClass classify_stall(bool core_running, int64_t ready, int64_t waiting) {
  return core_running  ? StallClass::RunningStalled
         : ready > 0   ? StallClass::ReadyButIdle
         : waiting > 0 ? StallClass::DependencyDeadlock
                       : StallClass::OrchestratorStarvation;
}

// One task's events; -1: not seen yet.
struct TraceRecorder::Entry {
  std::atomic<int32_t> lane{-1};
  int32_t scheduler = -1;
  int64_t head = -1, ready = -1, dispatch = 0, start = 0, end = 0, retire = 0;
};

TraceRecorder::TraceRecorder() : chunks_(new std::atomic<Entry*>[kChunks]) {
  for (size_t i = 0; i < kChunks; ++i) chunks_[i].store(nullptr, std::memory_order_relaxed);
}

TraceRecorder::~TraceRecorder() {
  for (size_t i = 0; i < kChunks; ++i) delete[] chunks_[i].load(std::memory_order_relaxed);
}

TraceRecorder::Entry& TraceRecorder::at(uint32_t t) {
  const size_t c = std::min<size_t>(t / kChunk, kChunks - 1);  // beyond 64M tasks: shared
  Entry* chunk = chunks_[c].load(std::memory_order_acquire);
  if (!chunk) {
    std::lock_guard lk(grow_);
    chunk = chunks_[c].load(std::memory_order_relaxed);
    if (!chunk) {
      chunk = new Entry[kChunk];
      chunks_[c].store(chunk, std::memory_order_release);
    }
  }
  return chunk[t % kChunk];
}

void TraceRecorder::set_up(const ir::Program*, std::span<const std::string> lanes) {
  lanes_.assign(lanes.begin(), lanes.end());
}
void TraceRecorder::on_head(uint32_t t, int64_t ns) {
  at(t).head = ns;
}
void TraceRecorder::on_ready(uint32_t t, int64_t ns) {
  at(t).ready = ns;
}
void TraceRecorder::on_dispatch(uint32_t t, int32_t scheduler, int64_t ns) {
  Entry& e = at(t);
  e.scheduler = scheduler;
  e.dispatch = ns;
}
void TraceRecorder::on_entry(int32_t, uint32_t t, int64_t ns) {
  at(t).start = ns;
}
void TraceRecorder::on_exit(int32_t lane, uint32_t t, int64_t ns) {
  Entry& e = at(t);
  e.end = ns;
  e.lane.store(lane, std::memory_order_release);
}
void TraceRecorder::on_retire(uint32_t t, int64_t ns) {
  at(t).retire = ns;
}

std::vector<TraceEvent> TraceRecorder::events() const {
  std::vector<TraceEvent> out;
  for (size_t c = 0; c < kChunks; ++c) {
    const Entry* chunk = chunks_[c].load(std::memory_order_acquire);
    if (!chunk) continue;
    for (size_t i = 0; i < kChunk; ++i) {
      const Entry& e = chunk[i];
      const int32_t lane = e.lane.load(std::memory_order_acquire);
      if (lane < 0) continue;
      const int64_t ready = std::max<int64_t>(0, e.ready);
      const int64_t head = e.head < 0 ? ready : e.head;  // no SM queue: ready is the head
      out.push_back({static_cast<int64_t>(c * kChunk + i), lane, head, std::max(head, ready),
                     e.start, e.end, e.scheduler, e.dispatch, e.retire});
    }
  }
  return out;
}

void StuckReporter::on_finish(const ir::Program& p, const RunResult& r) {
  report_ = r.status == RunResult::Status::Stuck ? stuck_report(p, r) : std::string();
}

}  // namespace amk::vm
