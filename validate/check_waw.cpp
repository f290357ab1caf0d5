// AMK step 5a without AMK's 8000-task cap: several writers of one buffer must be disjoint tiles
// under one counter, or totally ordered (else a write-after-write race, with AMK's culprit pair).
#include <algorithm>

#include <fmt/format.h>

#include "ir/csr.h"
#include "validate/hazards.h"

namespace amk::validate {

// The rules this file checks (rules() lists every family's).
constexpr Rule kRaceWaw{"race.waw",
                        "two writers of one buffer unordered with overlapping footprints", true};

std::span<const Rule> waw_rules() {
  static constexpr Rule kList[] = {kRaceWaw};
  return kList;
}

namespace {

constexpr size_t kExactCulpritMax = 256;  // writers up to which AMK's first-pair culprit is exact

using Region = TileRegion;

bool disjoint(const Region& a, const Region& b) {
  return !ir::overlaps(a, b);
}

// True when the regions of writers `ws` (`regions` is per task) are pairwise disjoint. Tiles in
// column order over every row (GEMV tiles as lowerings emit them) take one pass; others are copied
// into `rs` and swept by column start, each compared with the live ones.
bool pairwise_disjoint(std::span<const uint32_t> ws, const std::vector<Region>& regions,
                       std::vector<Region>& rs) {
  bool whole = false, rows_all = true, sorted = true, apart = true;
  for (size_t k = 0; k < ws.size(); ++k) {
    const Region& r = regions[ws[k]];
    whole |= r.whole;
    rows_all &= r.r1 < 0;
    if (k > 0) {
      const Region& before = regions[ws[k - 1]];
      sorted &= before.c0 <= r.c0;
      apart &= r.c0 >= before.c1;
    }
  }
  if (whole) return false;
  // GEMV tiles: disjoint iff the column ranges, sorted, do not overlap.
  if (sorted && rows_all) return apart;
  rs.clear();
  for (uint32_t w : ws) rs.push_back(regions[w]);
  auto by_col = [](const Region& a, const Region& b) { return a.c0 < b.c0; };
  if (!sorted) std::sort(rs.begin(), rs.end(), by_col);
  if (rows_all) {
    for (size_t k = 1; k < rs.size(); ++k)
      if (rs[k].c0 < rs[k - 1].c1) return false;
    return true;
  }
  std::vector<const Region*> live;
  for (const Region& r : rs) {
    live.erase(
        std::remove_if(live.begin(), live.end(), [&](const Region* x) { return x->c1 <= r.c0; }),
        live.end());
    for (const Region* x : live)
      if (ir::overlaps(*x, r)) return false;  // columns overlap: live ones reach past r.c0
    live.push_back(&r);
  }
  return true;
}

}  // namespace

void query_write_orders(Hazards& h) {
  Context& c = h.c;
  const ir::Program& p = c.p;
  const ir::Graph& g = c.g;
  // Buffers in AMK's first-write order: a buffer comes up when its first writer (in list order)
  // is visited, at the place of its first mention among that task's outputs. The buffers are
  // grouped by first writer (CSR from the writers' lists: a pass over the buffers, not over every
  // task's outputs); the rare task that first writes several has them put in its outputs' order.
  auto& first_write = c.s.first_write;
  auto& at = c.s.first_write_at;  // per task: its run in first_write
  const size_t nb = p.buffers.size();
  ir::build_csr(
      p.tasks.size(),
      [&](auto emit) {
        for (size_t b = 0; b < nb; ++b)
          if (const auto ws = c.writers(static_cast<int64_t>(b)); !ws.empty())
            emit(ws[0], static_cast<uint32_t>(b));
      },
      at, first_write, c.s.csr_fill);
  for (size_t i = 0; i < first_write.size();) {  // each task's run, from its first buffer
    const uint32_t t = c.writers(first_write[i])[0];
    const size_t end = at[t + 1];
    if (end - i > 1) {
      const auto& outs = p.tasks[t].outputs;
      auto place = [&](int64_t b) { return std::find(outs.begin(), outs.end(), b) - outs.begin(); };
      std::sort(first_write.begin() + static_cast<std::ptrdiff_t>(i),
                first_write.begin() + static_cast<std::ptrdiff_t>(end),
                [&](uint32_t x, uint32_t y) { return place(x) < place(y); });
    }
    i = end;
  }
  auto& regions = c.s.tile_scratch;
  auto& distinct = c.s.distinct;
  for (int64_t b : first_write) {
    auto ws = c.writers(b);
    if (ws.size() < 2 || ir::is_readonly(c.buf(b).kind)) continue;
    const bool one_counter = h.groups(b).size() == 1;
    // AMK exempts disjoint tiles under one counter; a foreign graph's disjoint writes under any
    // counters touch no common element either.
    if (one_counter || c.foreign()) {
      if (pairwise_disjoint(ws, c.s.regions, regions)) continue;
    }
    Hazards::Waw wc{b, one_counter, c.s.reach.size(), 0, false};
    distinct.assign(ws.begin(), ws.end());
    std::sort(distinct.begin(), distinct.end());
    wc.dup_writer = std::adjacent_find(distinct.begin(), distinct.end()) != distinct.end();
    if (!one_counter && !wc.dup_writer && h.groups(b).size() == ws.size()) {
      const auto& pos = g.topo_pos();
      std::sort(distinct.begin(), distinct.end(),
                [&](uint32_t x, uint32_t y) { return pos[x] < pos[y]; });
      for (size_t k = 0; k + 1 < distinct.size(); ++k) {
        if (!c.direct(distinct[k], distinct[k + 1])) c.s.reach.add(distinct[k], distinct[k + 1]);
        ++wc.n_queries;
      }
    }
    h.waws.push_back(wc);
  }
}

void report_waw(Hazards& h) {
  Context& c = h.c;
  const ir::Program& p = c.p;
  const ir::Graph& g = c.g;
  std::vector<std::pair<size_t, size_t>> pair_q;  // per failing case: [first, count) in reach
  std::vector<size_t> failing;
  {
    // Which cases fail the total-order proof?
    std::vector<uint8_t> fails(h.waws.size(), 0);
    for (size_t i = 0; i < h.waws.size(); ++i) {
      const Hazards::Waw& wc = h.waws[i];
      auto ws = c.writers(wc.buffer);
      bool total = !wc.one_counter && !wc.dup_writer && h.groups(wc.buffer).size() == ws.size();
      if (total) {
        // Re-derive the pairs to read their answers (direct pairs were not queried).
        c.s.distinct.assign(ws.begin(), ws.end());
        const auto& pos = g.topo_pos();
        std::sort(c.s.distinct.begin(), c.s.distinct.end(),
                  [&](uint32_t x, uint32_t y) { return pos[x] < pos[y]; });
        size_t q = wc.first_query;
        for (size_t k = 0; k + 1 < c.s.distinct.size() && total; ++k) {
          if (c.direct(c.s.distinct[k], c.s.distinct[k + 1])) continue;
          total = c.s.reach.answer(q++);
        }
      }
      fails[i] = !total;
    }
    c.s.reach.clear();
    for (size_t i = 0; i < h.waws.size(); ++i) {
      if (!fails[i]) continue;
      failing.push_back(i);
      auto ws = c.writers(h.waws[i].buffer);
      size_t first = c.s.reach.size();
      if (ws.size() <= kExactCulpritMax)
        for (size_t a = 0; a < ws.size(); ++a)
          for (size_t b2 = a + 1; b2 < ws.size(); ++b2) {
            c.s.reach.add(ws[a], ws[b2]);
            c.s.reach.add(ws[b2], ws[a]);
          }
      pair_q.emplace_back(first, c.s.reach.size() - first);
    }
    c.s.reach.solve();
  }
  for (size_t f = 0; f < failing.size(); ++f) {
    const Hazards::Waw& wc = h.waws[failing[f]];
    auto ws = c.writers(wc.buffer);
    std::pair<uint32_t, uint32_t> culprit{ws[0], ws[1]};
    std::string extra;
    if (ws.size() <= kExactCulpritMax) {
      size_t q = pair_q[f].first;
      bool found = false;
      for (size_t a = 0; a < ws.size() && !found; ++a)
        for (size_t b2 = a + 1; b2 < ws.size() && !found; ++b2, q += 2) {
          bool ordered = ws[a] != ws[b2] && (c.s.reach.answer(q) || c.s.reach.answer(q + 1));
          if (!disjoint(c.s.regions[ws[a]], c.s.regions[ws[b2]]) && !ordered) {
            culprit = {ws[a], ws[b2]};
            found = true;
          }
        }
    } else {
      extra = fmt::format(
          " (buffer has {} writers; the pair shown is the first in list order, "
          "not necessarily the first unordered one)",
          ws.size());
    }
    const ir::Task &ti = p.tasks[culprit.first], &tj = p.tasks[culprit.second];
    const ir::Buffer& buf = c.buf(wc.buffer);
    c.error(kRaceWaw,
            fmt::format(
                "multi-writer WAW race on buffer #{} ('{}'): writers {} ('{}') and {} ('{}') "
                "{}neither is ordered happens-before the other, write-after-write RACE{}",
                wc.buffer, buf.name, culprit.first, ti.label, culprit.second, tj.label,
                wc.one_counter ? "share a counter but their tiles OVERLAP; " : "share no counter; ",
                extra),
            ir::task_pointer(culprit.second),
            {{fmt::format("the other writer, {}", task_ref(ti, culprit.first)),
              ir::task_pointer(culprit.first)}});
  }
}

}  // namespace amk::validate
