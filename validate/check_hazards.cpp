// AMK steps 5 and 5a without AMK's 8000-task cap: every ACTIVATION/IO/KV read must have every other
// writer of its buffer as a strict ancestor (RAW, KV), and multiple writers must be disjoint tiles
// under one counter or totally ordered (WAW). Then amk's tile coverage rule. The phases live in
// check_reads.cpp, check_waw.cpp and check_coverage.cpp (hazards.h); this file runs them.
//
// Happens-before is answered by Reach in batches. Two facts keep the batches small:
//  - a direct wait on the writer's counter is an edge (no query);
//  - tasks incrementing the same counter have the same descendants and, in an acyclic graph, are
//    pairwise unordered, so one query per distinct writer counter answers for all its writers.
#include "validate/hazards.h"

namespace amk::validate {

void check_hazards(Context& c) {
  const ir::Program& p = c.p;
  const ir::Graph& g = c.g;
  c.s.reach.clear();
  const size_t nb = p.buffers.size();
  // Distinct writer counters per buffer, with the first writer of each (in list order).
  auto& writer_slots_off = c.s.writer_slots_off;
  writer_slots_off.assign(nb + 1, 0);
  auto& writer_slots = c.s.writer_slots;  // (slot, first writer)
  writer_slots.clear();
  for (size_t b = 0; b < nb; ++b) {
    writer_slots_off[b] = static_cast<uint32_t>(writer_slots.size());
    for (uint32_t w : c.writers(static_cast<int64_t>(b))) {
      const uint32_t s = g.out_slot(w);
      bool seen = false;
      for (size_t k = writer_slots_off[b]; k < writer_slots.size() && !seen; ++k)
        seen = writer_slots[k].first == s;
      if (!seen) writer_slots.emplace_back(s, w);
    }
  }
  writer_slots_off[nb] = static_cast<uint32_t>(writer_slots.size());
  Hazards h{c, {}, {}};
  query_reads(h);
  query_write_orders(h);
  c.s.reach.solve();  // one batch answers both
  report_reads(h);
  report_waw(h);
  check_tile_coverage(h);
}

}  // namespace amk::validate
