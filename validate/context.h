// Internal: state shared by the rule passes of one validation run.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/csr.h"
#include "ir/digraph.h"
#include "ir/graph.h"
#include "ir/opcodes.h"
#include "ir/program.h"
#include "validate/image.h"
#include "validate/reach.h"
#include "validate/validate.h"

namespace amk::validate {

/// The part of its output buffer a task writes, as AMK's WAW rule models it: GEMV/GEMM tiles write
/// columns [c0, c1) and (GEMM with m_off/M_tile) rows [r0, r1); r1 < 0 means all rows; anything
/// else writes the whole buffer.
using ir::TileRegion;

/// Hashes a rule code held as any string type, so that RuleCounts is searched by string_view.
struct CodeHash {
  using is_transparent = void;
  size_t operator()(std::string_view code) const { return std::hash<std::string_view>{}(code); }
};
/// Diagnostics reported per rule code (kept or not).
using RuleCounts = std::unordered_map<std::string, size_t, CodeHash, std::equal_to<>>;

/// The stages of a proof in emission order: the incremental proof runs Placement, Pages, Outputs
/// and Capacity again where they read what changed, and takes Structure from the last proof.
enum class Stage : uint8_t {
  Structure,  ///< buffers, the per-task pass, counters, cycles, races
              ///< (check_buffers..check_hazards)
  Placement,  ///< check_placement
  Pages,      ///< check_pages
  Outputs,    ///< check_outputs
  Capacity,   ///< check_capacity
};
inline constexpr size_t kStages = 5;

/// Where each stage's diagnostics end in a proof's lists (Context::finish's summaries come after).
struct StageEnds {
  std::array<size_t, kStages> errors{}, warnings{};
  void mark(size_t stage, const Result& r) {
    errors[stage] = r.errors.size();
    warnings[stage] = r.warnings.size();
  }
};

/// The last proof of a Validator::set_incremental validator, for the next one to reuse.
struct LastProof {
  bool valid = false;  ///< false until a proof completes (one that throws leaves it false)
  ProgramImage image;  ///< the program proved (overwritten by the next one's as it starts)
  Result result;       ///< its result
  RuleCounts counts;   ///< its diagnostics per code (kept or not)
  StageEnds ends;
  uint64_t tasks_stamp = 0;  ///< the stamp it was proved with (Validator::validate)
};

/// A buffer's parties in the page rule's all_before (check_pages.cpp): in Scratch::party_pool,
/// [users_at, reps_at) one user per distinct counter, [reps_at, end) writers with distinct waits;
/// first_write: the topological position of its first writer (UINT32_MAX when it has none).
struct PageParties {
  uint32_t users_at = 0, reps_at = 0, end = 0;
  uint32_t first_write = UINT32_MAX;
  bool done = false;
};

/// Scratch::buffer_bits: what the per-task screens ask of a buffer, without loading it.
inline constexpr uint8_t kBufferRankAboveAbi = 1;  ///< rank > ir::kMaxRank
inline constexpr uint8_t kBufferReadonly = 2;      ///< ir::is_readonly(kind)

/// Reusable memory of a Validator.
struct Scratch {
  std::vector<TileRegion> regions;  // per task, filled by the per-task pass
  // Set for a "tasks" path proof (incremental.cpp), else null: ProgramImage::task_changed, by
  // task. Where 0, the per-task pass runs only the wait rules, the task's own rules (refs, params,
  // shapes: none reported) and its region being the last proof's. Set, the buffers are the last
  // proof's too, as are numel and buffer_bits, and their rules reported nothing (check_buffers'
  // buffers_known).
  const std::vector<uint8_t>* task_changed = nullptr;
  std::vector<int64_t> numel;        // per buffer, filled by check_buffers
  std::vector<uint8_t> buffer_bits;  // per buffer, kBuffer* bits, filled by check_buffers
  ir::Graph graph;
  std::optional<ir::ScheduleGraph>
      queues;                 // check_placement's SM-queue graph (kept for its memory)
  bool queues_built = false;  // ... built for this run
  bool sm_assigned = false;   // Program::sm_assigned, found by check_placement (which reads SMs)
  Reach reach;
  ir::BufferTasks writers, users;  // per buffer: its writers, its readers and writers
  std::vector<uint32_t> csr_fill;  // CSR scratch (check_pages, check_waw)
  std::vector<std::pair<size_t, size_t>> pairs;
  // check_hazards
  // Per buffer (CSR): each distinct counter its writers signal, with its first writer.
  std::vector<uint32_t> writer_slots_off;
  std::vector<std::pair<uint32_t, uint32_t>> writer_slots;
  std::vector<int64_t> raw_q, cuts;
  // Buffers in AMK's first-write order, and per task the offset of those it first writes.
  std::vector<uint32_t> first_write, first_write_at;
  std::vector<uint8_t> ordered, seen, read;
  std::vector<uint32_t> reader, distinct, missing;
  std::vector<TileRegion> tile_scratch;
  // check_pages
  // all_before: the users' counters, one writer per distinct wait set, the queries asked.
  std::vector<uint32_t> ab_queries;
  std::vector<PageParties> parties;  // per buffer
  std::vector<uint32_t> party_pool;
  std::vector<uint64_t> party_seen;  // per counter slot
  std::vector<uint32_t> page_off;
  std::vector<int64_t> page_occ, page_order;
  std::vector<std::pair<uint32_t, int64_t>> written;
  unsigned threads = 0;        // Validator::set_threads
  bool screens = true;         // Validator::set_screens
  bool incremental = false;    // Validator::set_incremental
  bool check_stamps = false;   // Validator::set_check_stamps
  uint64_t broken_stamps = 0;  // Validator::broken_stamps
  ProofPath path;              // Validator::last_path
  LastProof last;              // (incremental only)
  RuleCounts rule_count;       // the run's (a part of a parallel pass counts in its own)
};

/// One run: the program, its graph, the result being filled and helpers for the rules.
struct Context {
  const ir::Program& p;
  const ir::Graph& g;
  Scratch& s;
  Result& r;
  RuleCounts& counts;  ///< per code, for the cap

  /// At most this many diagnostics per code are kept; the rest are counted in one summary.
  static constexpr size_t kPerRuleCap = 1000;

  bool buffer_ok(int64_t id) const {
    return id >= 0 && id < static_cast<int64_t>(p.buffers.size());
  }
  bool counter_ok(int64_t id) const {
    return id >= 0 && id < static_cast<int64_t>(p.counters.size());
  }
  const ir::Buffer& buf(int64_t id) const { return p.buffers[static_cast<size_t>(id)]; }
  /// Buffer::numel of an existing buffer (computed once by check_buffers).
  int64_t numel(int64_t id) const { return s.numel[static_cast<size_t>(id)]; }
  /// Writers of a buffer, in task-list order (a task naming it twice appears twice).
  std::span<const uint32_t> writers(int64_t b) const { return s.writers.of(b); }
  /// Readers and writers of a buffer, in task-list order.
  std::span<const uint32_t> users(int64_t b) const { return s.users.of(b); }
  /// True for a graph read from another runtime's file: its NOP tasks are that runtime's kernels
  /// (their buffers are footprints, not AMK opcodes' operands) and disjoint writes never race.
  bool foreign() const { return p.runtime && p.runtime->kind != ir::RuntimeKind::Amk; }
  /// True when `dst` waits directly on the counter `src` increments.
  bool direct(uint32_t src, uint32_t dst) const { return waits_on(dst, g.out_slot(src)); }
  /// True when `task` waits directly on counter slot `slot`.
  bool waits_on(uint32_t task, uint32_t slot) const {
    for (uint32_t w : g.wait_slots(task))
      if (w == slot) return true;
    return false;
  }

  /// Reports an error of `rule` (declared beside its check; see rules()).
  void error(const Rule& rule, std::string msg, std::string pointer = {},
             std::vector<ir::Note> notes = {});
  /// Reports a warning of `rule`.
  void warn(const Rule& rule, std::string msg, std::string pointer = {},
            std::vector<ir::Note> notes = {});
  /// Appends what a part of a pass reported in its own result and counts (a later range of the
  /// same pass), as if this context had reported it: the per-rule cap and counts hold.
  void absorb(Result& part, const RuleCounts& part_counts);
  /// Adds the "N more" summaries of capped rules, in rules() order (called once at the end).
  void finish();

 private:
  bool admit(std::string_view code);
};

// Each check file declares its rules beside its checks (code, summary, AMK's or amk's) and lists
// them here, family by family; rules() is their concatenation in emission order.
std::span<const Rule> task_rules();       // check_tasks.cpp
std::span<const Rule> shape_rules();      // check_shapes.cpp
std::span<const Rule> wait_rules();       // check_waits.cpp
std::span<const Rule> cycle_rules();      // check_cycles.cpp
std::span<const Rule> read_rules();       // check_reads.cpp
std::span<const Rule> waw_rules();        // check_waw.cpp
std::span<const Rule> coverage_rules();   // check_coverage.cpp
std::span<const Rule> placement_rules();  // check_placement.cpp
std::span<const Rule> page_rules();       // check_pages.cpp
std::span<const Rule> output_rules();     // check_placement.cpp (AMK step 8)
std::span<const Rule> capacity_rules();   // check_capacity.cpp

/// What check_task_refs' screen saw, for the checks of the task after it.
struct TaskScreen {
  bool refs_clean;       ///< nothing to report: every id in range, the arity holds (but for a
                         ///< foreign NOP)
  bool writes_readonly;  ///< an output (in range) is a read-only buffer
};

// The rule passes. Per task, one fused pass runs refs, structure, shapes and waits (so a task's
// diagnostics of those families come together); then the whole-graph passes in this order.
// AMK step 1: refs, ABI caps, arity, params
TaskScreen check_task_refs(Context& c, size_t id, const ir::ParamTable& pt);
// dims, names, sizes (Scratch::numel, buffer_bits), the tasks' estimates; with `buffers_known`
// (the buffers and those scratch vectors are the last proof's, which reported none of their
// rules) the estimates only
void check_buffers(Context& c, bool buffers_known = false);
// readonly writes, finite params, recipes; `writes_readonly` from check_task_refs
void check_task_structure(Context& c, size_t id, const ir::ParamTable& pt, bool writes_readonly);
// shapes, tile bounds; `refs_clean`: check_task_refs said the ids and the arity are sound
void check_task_shapes(Context& c, size_t id, const ir::ParamTable& pt, bool refs_clean);
void check_task_waits(Context& c, size_t id);  // AMK step 2 + counter init
void check_counters(Context& c);               // counter init range
std::string check_cycles(Context& c);  // AMK steps 3-4 (+ every other cycle); "" when acyclic
void check_hazards(Context& c);        // AMK steps 5, 5a + tile coverage (acyclic only)
void check_placement(Context& c);      // AMK steps 5b, 6 + negative SMs
void check_pages(Context& c);          // page table integrity + AMK step 7 (acyclic only)
void check_outputs(Context& c);        // AMK step 8
void check_capacity(Context& c);       // the runtime's capacities (Program::runtime, config)

/// The full proof of `p`; with `ends`, where each stage's diagnostics end.
Result prove(Scratch& s, const ir::Program& p, StageEnds* ends);
/// Runs the rules of one stage.
void run_stage(Context& c, Stage stage);
/// The stats of `p` from its proof's scratch `s` (the counter graph, what check_placement found).
Stats stats_of(const ir::Program& p, const Scratch& s);
/// Validator::validate with set_incremental(true) (incremental.cpp).
Result prove_incrementally(Scratch& s, const ir::Program& p, Reuse reuse, uint64_t tasks_stamp);

/// "task 3 (label)" as AMK's messages print a task.
std::string task_ref(const ir::Task& t, size_t id);
/// Python repr of a Number.
std::string number_repr(const ir::Number& n);

}  // namespace amk::validate
