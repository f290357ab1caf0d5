// Internal: the state the phases of the race proofs (AMK steps 5 and 5a, amk's tile coverage)
// hand each other. check_hazards() runs them: query reads (check_reads.cpp) and write orders
// (check_waw.cpp) in one Reach batch, report reads, report WAW races, then tile coverage
// (check_coverage.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "validate/context.h"

namespace amk::validate {

/// What the phases share about one validation run.
struct Hazards {
  Context& c;
  /// A read that needs a second look after the batch is solved.
  struct Read {
    uint32_t task, input;
    uint32_t first_q;  ///< its answers in Scratch::raw_q, one per writer counter of the buffer
  };
  std::vector<Read> reads;
  /// A buffer with several writers that are not disjoint tiles under one counter.
  struct Waw {
    int64_t buffer;
    bool one_counter;
    size_t first_query;  ///< queries for consecutive topological writer pairs (direct: none)
    size_t n_queries;    ///< consecutive pairs (direct or queried)
    bool dup_writer;     ///< a task names the buffer twice (never ordered with itself)
  };
  std::vector<Waw> waws;

  /// A buffer's distinct writer counters (slots), each with its first writer in list order.
  std::span<const std::pair<uint32_t, uint32_t>> groups(int64_t b) const {
    const auto i = static_cast<size_t>(b);
    return {c.s.writer_slots.data() + c.s.writer_slots_off[i],
            c.s.writer_slots_off[i + 1] - c.s.writer_slots_off[i]};
  }
  /// True for reads the RAW rule skips: missing ids, read-only kinds, unwritten KV caches (the
  /// prior step's state).
  bool skip_read(int64_t b) const {
    if (!c.buffer_ok(b)) return true;
    if (c.s.buffer_bits[static_cast<size_t>(b)] & kBufferReadonly) return true;
    return c.writers(b).empty() && c.buf(b).kind == ir::BufferKind::KV_CACHE;  // prior-step state
  }
};

/// The answer of a RAW query slot: the reader waits directly on the writer's counter.
constexpr int64_t kDirect = -1;

/// Phase 1 (check_reads.cpp): a Reach query per (read, writer counter) that is not a direct wait.
void query_reads(Hazards& h);
/// Phase 1b (check_waw.cpp): buffers in AMK's first-write order; total-order queries for
/// multi-writer buffers whose writers are not disjoint tiles under one counter.
void query_write_orders(Hazards& h);
/// Phase 2 (check_reads.cpp): read.never-produced, race.raw, race.kv, read.own-output.
void report_reads(Hazards& h);
/// Phase 3 (check_waw.cpp): race.waw with AMK's culprit pair.
void report_waw(Hazards& h);
/// tile.coverage (check_coverage.cpp), in first-write order.
void check_tile_coverage(Hazards& h);

}  // namespace amk::validate
