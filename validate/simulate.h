// Dynamic backstops to the proof: counter simulation and seeded adversarial interleavings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/program.h"

namespace amk::validate {

/// A task that never ran, and why: the first wait that never held, or its SM queue's head.
struct Stuck {
  uint32_t task = 0;
  int64_t counter = -1;  ///< -1 when blocked behind its SM queue's head
  int64_t threshold = 0;
  int64_t value = 0;              ///< the counter's final value
  uint32_t sm_head = UINT32_MAX;  ///< the task at the head of its SM queue when blocked by it
};

/// Result of the counter simulation.
struct CounterSim {
  std::vector<uint32_t> order;  ///< fire order (AMK's list-order sweeps)
  uint64_t sweeps = 0;          ///< sweeps AMK's simulate_counters would need
  std::vector<Stuck> stuck;
};

/// AMK's simulate_counters (repeated list-order sweeps, counters start at init) in O((V+E) log V).
/// With `sm_queues`, a task with an SM also waits for the previous task of its SM's queue.
CounterSim simulate_counters(const ir::Program& p, const ir::Graph& g, bool sm_queues = false);

/// A race observed in one interleaving.
struct Race {
  enum class Kind : uint8_t {
    ReadBeforeWrite,
    WriteWhileReaderReady,
    WriteWhileWriterReady,
    PageClobber
  };
  Kind kind;
  uint64_t seed;
  uint32_t task;
  int64_t buffer;
  int64_t other;  ///< the other task (or the other buffer for PageClobber), -1 if none
  std::string message;
};

/// What to explore.
struct AdversarialOptions {
  uint32_t seeds = 16;
  uint64_t first_seed = 0;
  bool sm_queues = true;  ///< honour per-SM serial queues like the VM
  size_t max_races = 64;  ///< stop collecting after this many distinct races
};

/// Races found over all interleavings (deduplicated), and deadlocks (a seed that got stuck).
struct Adversarial {
  std::vector<Race> races;
  std::vector<Stuck> stuck;
  uint32_t seeds_run = 0;
};

/// Fires ready tasks in seeded orders (lowest id, highest id, then random) and checks, at every
/// step: reads only after every other writer of the buffer fired (a task's own in-place write, as
/// KV_APPEND's, excepted); no write while a reader or an overlapping writer of the buffer is also
/// ready; no write to a page while another occupant is live. O(V + E) per seed.
Adversarial simulate_adversarial(const ir::Program& p, const ir::Graph& g,
                                 const AdversarialOptions& opt = {});

}  // namespace amk::validate
