// Internal: state shared by the rule passes of one validation run.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "ir/program.h"
#include "validate/reach.h"
#include "validate/validate.h"

namespace amk::validate {

/// Reusable memory of a Validator.
struct Scratch {
  ir::Graph graph;
  Reach reach;
  std::vector<uint32_t> wr_off, wr;    // writers per buffer (task ids, list order, dups kept)
  std::vector<uint32_t> use_off, use;  // users (readers and writers) per buffer
  std::vector<uint32_t> tmp32;
  std::vector<uint8_t> flags;
  std::unordered_map<std::string, size_t> rule_count;
};

/// One run: the program, its graph, the result being filled and helpers for the rules.
struct Context {
  const ir::Program& p;
  const ir::Graph& g;
  Scratch& s;
  Result& r;

  /// At most this many diagnostics per code are kept; the rest are counted in one summary.
  static constexpr size_t kPerRuleCap = 1000;

  bool buffer_ok(int64_t id) const {
    return id >= 0 && id < static_cast<int64_t>(p.buffers.size());
  }
  bool counter_ok(int64_t id) const {
    return id >= 0 && id < static_cast<int64_t>(p.counters.size());
  }
  const ir::Buffer& buf(int64_t id) const { return p.buffers[static_cast<size_t>(id)]; }
  /// Writers of a buffer, in task-list order (a task naming it twice appears twice).
  std::span<const uint32_t> writers(int64_t b) const;
  /// Readers and writers of a buffer, in task-list order.
  std::span<const uint32_t> users(int64_t b) const;
  /// True when `dst` waits directly on the counter `src` increments.
  bool direct(uint32_t src, uint32_t dst) const;

  void error(std::string code, std::string msg, std::string pointer = {},
             std::vector<ir::Note> notes = {});
  void warn(std::string code, std::string msg, std::string pointer = {},
            std::vector<ir::Note> notes = {});
  /// Adds the "N more" summaries of capped rules (called once at the end).
  void finish();

 private:
  bool admit(const std::string& code);
};

// The rule passes, in emission order (each documented in rules()).
void check_tasks(Context& c);          // AMK step 1: references, ABI caps, arity, params
void check_structure(Context& c);      // buffers, readonly writes, finite params, recipes
void check_shapes(Context& c);         // per-opcode shape/param consistency and tile bounds
void check_waits(Context& c);          // AMK step 2 + counter init/range
std::string check_cycles(Context& c);  // AMK steps 3-4 (+ every other cycle); "" when acyclic
void check_hazards(Context& c);        // AMK steps 5, 5a + tile coverage (acyclic only)
void check_placement(Context& c);      // AMK steps 5b, 6 + negative SMs
void check_pages(Context& c);          // page table integrity + AMK step 7 (acyclic only)
void check_outputs(Context& c);        // AMK step 8

/// "task 3 (label)" as AMK's messages print a task.
std::string task_ref(const ir::Task& t, size_t id);
/// Python repr of a Number.
std::string number_repr(const ir::Number& n);

}  // namespace amk::validate
