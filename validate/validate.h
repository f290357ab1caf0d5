// The static proof: deadlock- and race-freedom of a program, with witnesses, at any size.
#pragma once

#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/diagnostic.h"
#include "ir/graph.h"
#include "ir/program.h"

namespace amk::ir {
class ScheduleGraph;
}  // namespace amk::ir

namespace amk::validate {

/// AMK's stats dict, in its key order.
struct Stats {
  uint64_t tasks = 0, buffers = 0, counters = 0, edges = 0;
  bool acyclic = true;
  double weight_mb = 0;  ///< round(Σ weight nbytes / 1e6, 2)
  bool sm_assigned = false;
  /// Python dict repr, as AMK's report prints it.
  std::string repr() const;
};

/// The verdict: errors reject, warnings never do.
struct Result {
  bool ok = true;
  ir::Diagnostics errors;
  ir::Diagnostics warnings;
  Stats stats;
  /// AMK's report: "[VALID] {stats}" / "[REJECTED] {stats}", "  ERROR: ..." and "  warn:  ..."
  /// lines; with `details`, each line is followed by its code, pointer and notes. At most
  /// `per_rule` lines of one rule are printed; one more line counts the rest and names where.
  std::string report(bool details = true,
                     size_t per_rule = std::numeric_limits<size_t>::max()) const;
  /// {ok, errors[], warnings[], stats} as one JSON object.
  std::string to_json(std::string_view file = {}) const;
};

/// One documented rule.
struct Rule {
  std::string_view code;
  std::string_view summary;
  bool from_amk;  ///< true for AMK's own checks (same verdict and message)
};

/// Every rule in emission order.
std::span<const Rule> rules();

struct Scratch;

/// How Validator::validate reached its result: in full, or by running again only the stages of
/// the proof that read what changed since the program it proved last (the rest is that proof's).
struct ProofPath {
  bool full = true;        ///< every rule ran
  bool tasks = false;      ///< (full) but the tasks' own rules (refs, params, shapes) ran only
                           ///< for the tasks that changed: none reported for the others last
  bool placement = false;  ///< on-chip buffers, SM queues and range (tasks' SMs)
  bool pages = false;      ///< the page rules (the page allocation)
  bool outputs = false;    ///< model outputs and meta.gpu (meta)
  bool capacity = false;   ///< the runtime's capacities (tasks' SMs, the config)
  bool operator==(const ProofPath&) const = default;
};
/// "full" ("tasks" with ProofPath::tasks); else the stages that ran again joined by '+'
/// ("placement+outputs+capacity"), or "same" when the program is the one proved last.
std::string name(ProofPath p);

/// What Validator::validate may take from the program proved last and keep for the next one, when
/// incremental (set_incremental): a caller who knows a program shares nothing with the last one
/// nor with the next saves the work of telling.
enum class Reuse : uint8_t {
  Compare,  ///< compared with the program proved last, and kept for the next (the default)
  Alone,    ///< proved in full, and nothing kept: the next call is proved in full too
};

/// A reusable validator: keeps its scratch memory across calls. One instance per thread; distinct
/// instances validate concurrently.
class Validator {
 public:
  Validator();
  ~Validator();
  Validator(Validator&&) noexcept;
  Validator& operator=(Validator&&) noexcept;
  /// Runs every rule on an in-memory program; never throws on a malformed program. `reuse` is a
  /// hint for an incremental validator: the result is the same whatever it says.
  Result validate(const ir::Program& p, Reuse reuse = Reuse::Compare);
  /// validate() with a caller's promise to an incremental validator: every program it passes with
  /// one non-zero `tasks_stamp` has the same tasks, but for their SMs (lower::Lowerer::
  /// tasks_stamp, whose recalled runs only move SMs). A program with the last proof's stamp is
  /// then compared with it in all but those tasks, which are neither read nor compared. Unlike
  /// `reuse`, the promise is trusted: a broken one gives a wrong result (set_check_stamps).
  Result validate(const ir::Program& p, uint64_t tasks_stamp);
  /// With `on`, a program with the last proof's stamp is compared in full all the same, and one
  /// whose tasks differ is proved as such and counted in broken_stamps() (for tests).
  void set_check_stamps(bool on);
  /// The programs whose stamp promised the last proof's tasks but whose tasks differed.
  uint64_t broken_stamps() const;
  /// The threads validate() may use: 0 (the default) splits the per-task passes of a program of
  /// 2^16 tasks or more over the hardware's threads (at most 8); n >= 1 over n, at any size. The
  /// result is the same for every n.
  void set_threads(unsigned n);
  /// The per-task rule families first screen a task in a few tests and report only when the
  /// screen finds something; false sends every task through the reporting itself (for tests:
  /// the result is the same).
  void set_screens(bool on);
  /// With `on`, validate() compares each program with the one it proved last (off by default: it
  /// keeps an image of the program and the result): where they differ only in tasks' SMs, the
  /// page allocation, meta or the config, it runs the stages that read those again and takes the
  /// rest from the last proof; else it proves in full. The result is the full proof's, always.
  void set_incremental(bool on);
  /// How the last validate() reached its result.
  ProofPath last_path() const;
  /// The counter graph of the program validated last (for the cost model: targets::estimate).
  const ir::Graph& graph() const;
  /// The SM-queue schedule graph (QueueEdges::Assigned) the last proof built over graph(), or
  /// nullptr (no task placed, or a proof that stopped before the queue check).
  const ir::ScheduleGraph* queue_graph() const;

 private:
  std::unique_ptr<Scratch> s_;
};

/// One capacity a program needs from the runtime that executes it: the smallest safe value for
/// one ring, worker, scope or launch, with its witness. The capacity.* rules report the needs
/// above what Program::runtime provides; `amk info` reports the largest per capacity and ring.
struct CapacityNeed {
  std::string_view rule;            ///< the rule that checks it ("capacity.task-window")
  ir::Cap key = ir::Cap::sms;       ///< the capacity
  int ring = -1;                    ///< the PTO ring, -1 for a capacity not per ring
  int64_t needed = 0;               ///< the smallest safe value
  std::optional<int64_t> capacity;  ///< what the runtime provides, when known
  /// Reported as a warning: a bound that is not proved to hang (scope boundaries derived without
  /// scope_stats; MPK blocks that cannot be resident but are dealt no task).
  bool warn_only = false;
  std::string what;     ///< the witness: scope/ring/worker and the amounts
  std::string pointer;  ///< the task (or field) it is about
};
/// Every need of a program (nothing for a program without a runtime record).
std::vector<CapacityNeed> capacity_needs(const ir::Program& p);
/// The largest need per capacity and ring: the capacities to size a runtime with.
std::vector<CapacityNeed> smallest_safe_capacities(const ir::Program& p);

/// Validates with a thread-local Validator.
Result validate(const ir::Program& p);

/// `sm.range` for a machine of `num_sms` SMs (the proof checks the program's own target, if any).
ir::Diagnostics sm_range_errors(const ir::Program& p, int64_t num_sms);
/// The structural rules any executor relies on even when the proof is skipped: the validator's
/// reference, ABI-capacity, rank and dimension rules (ref.*, abi.*, buffer.dims), sm_range_errors
/// and a task count that fits int32 ids.
ir::Diagnostics structural_errors(const ir::Program& p, int64_t num_sms);

}  // namespace amk::validate
