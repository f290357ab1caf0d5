// The observer seam of a run (the shape of Taskflow's ObserverInterface): the executors and the
// orchestrator call it from their worker threads. The Chrome/Perfetto trace and the stuck report
// are observers.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "ir/program.h"
#include "vm/run_result.h"

namespace amk::vm {

/// Sees a run as it happens. Times are nanoseconds since the launch; calls for one task come from
/// one thread at a time, calls for different tasks concurrently.
class Observer {
 public:
  virtual ~Observer() = default;
  /// Before the first task: the program (null for an orchestration) and the lanes.
  virtual void set_up(const ir::Program* /*p*/, std::span<const std::string> /*lanes*/) {}
  /// Task t became the head of its SM's queue (SM modes).
  virtual void on_head(uint32_t /*t*/, int64_t /*ns*/) {}
  /// Every wait of task t holds.
  virtual void on_ready(uint32_t /*t*/, int64_t /*ns*/) {}
  /// AICore mode: a scheduler wrote t's token into a core's dispatch register.
  virtual void on_dispatch(uint32_t /*t*/, int32_t /*scheduler*/, int64_t /*ns*/) {}
  /// Task t starts on `lane`.
  virtual void on_entry(int32_t /*lane*/, uint32_t /*t*/, int64_t /*ns*/) {}
  /// Task t finished on `lane`.
  virtual void on_exit(int32_t /*lane*/, uint32_t /*t*/, int64_t /*ns*/) {}
  /// AICore mode: t's FIN was seen by its scheduler (its consumers released).
  virtual void on_retire(uint32_t /*t*/, int64_t /*ns*/) {}
  /// After the launch, with its outcome.
  virtual void on_finish(const ir::Program& /*p*/, const RunResult& /*r*/) {}
};

/// One executed task, as a TraceRecorder saw it.
struct TraceEvent {
  int64_t task = 0;
  int32_t worker = 0;    ///< its lane
  int64_t head_ns = 0;   ///< became its SM's queue head (AICore mode: ready_ns)
  int64_t ready_ns = 0;  ///< all its waits held
  int64_t start_ns = 0, end_ns = 0;
  int32_t scheduler = -1;   ///< AICore mode: the scheduler thread that dispatched it
  int64_t dispatch_ns = 0;  ///< AICore mode: its token written to the core's dispatch register
  int64_t retire_ns = 0;    ///< AICore mode: its FIN seen by the scheduler
};

/// Records one slice per task (what chrome_trace() draws). Thread-safe as Observer requires;
/// grows with the task ids it sees, so it also traces an orchestration.
class TraceRecorder : public Observer {
 public:
  TraceRecorder();
  ~TraceRecorder() override;
  void set_up(const ir::Program* p, std::span<const std::string> lanes) override;
  void on_head(uint32_t t, int64_t ns) override;
  void on_ready(uint32_t t, int64_t ns) override;
  void on_dispatch(uint32_t t, int32_t scheduler, int64_t ns) override;
  void on_entry(int32_t lane, uint32_t t, int64_t ns) override;
  void on_exit(int32_t lane, uint32_t t, int64_t ns) override;
  void on_retire(uint32_t t, int64_t ns) override;
  /// The finished tasks in id order.
  std::vector<TraceEvent> events() const;
  /// The lanes set_up() named.
  const std::vector<std::string>& lanes() const { return lanes_; }

 private:
  struct Entry;
  Entry& at(uint32_t t);
  static constexpr size_t kChunk = 4096, kChunks = 1 << 14;  // up to 64M tasks
  std::unique_ptr<std::atomic<Entry*>[]> chunks_;
  std::mutex grow_;
  std::vector<std::string> lanes_;
};

/// The stuck report as an observer: after a stuck launch, report() is stuck_report()'s text.
class StuckReporter : public Observer {
 public:
  void on_finish(const ir::Program& p, const RunResult& r) override;
  /// The report ("" when the launch was not stuck).
  const std::string& report() const { return report_; }

 private:
  std::string report_;
};

/// The stuck report: the cause, one line per blocked SM (or core), then the idle producers.
std::string stuck_report(const ir::Program& p, const RunResult& r);
/// A Chrome/Perfetto trace (JSON): one lane per SM (or core, then scheduler), a slice per task,
/// wait slices before it, AICore dispatch and retire instants.
std::string chrome_trace(const ir::Program& p, const TraceRecorder& t);

}  // namespace amk::vm
