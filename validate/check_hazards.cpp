// AMK steps 5 and 5a without AMK's 8000-task cap: every ACTIVATION/IO/KV read must have every other
// writer of its buffer as a strict ancestor (RAW, KV), and multiple writers must be disjoint tiles
// under one counter or totally ordered (WAW). Then amk's tile coverage rule.
//
// Happens-before is answered by Reach in batches. Two facts keep the batches small:
//  - a direct wait on the writer's counter is an edge (no query);
//  - tasks incrementing the same counter have the same descendants and, in an acyclic graph, are
//    pairwise unordered, so one query per distinct writer counter answers for all its writers.
#include <algorithm>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "ir/opcodes.h"
#include "validate/context.h"

namespace amk::validate {
namespace {

constexpr int64_t kDirect = -1;
constexpr size_t kExactCulpritMax = 256;  // writers up to which AMK's first-pair culprit is exact

using Region = TileRegion;

bool overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1) {
  if (a1 < 0 || b1 < 0) return true;  // an "all rows" range overlaps everything
  return a0 < b1 && b0 < a1;
}

bool disjoint(const Region& a, const Region& b) {
  if (a.whole || b.whole) return false;
  return !overlap(a.r0, a.r1, b.r0, b.r1) || !overlap(a.c0, a.c1, b.c0, b.c1);
}

// True when every pair of regions is disjoint (sweep by column start, compare with live ones).
bool pairwise_disjoint(std::vector<Region>& rs) {
  for (const Region& r : rs)
    if (r.whole) return false;
  auto by_col = [](const Region& a, const Region& b) { return a.c0 < b.c0; };
  if (!std::is_sorted(rs.begin(), rs.end(), by_col)) std::sort(rs.begin(), rs.end(), by_col);
  bool rows_all = true;
  for (const Region& r : rs) rows_all = rows_all && r.r1 < 0;
  if (rows_all) {  // GEMV tiles: disjoint iff the sorted column ranges do not overlap
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
      if (overlap(x->r0, x->r1, r.r0, r.r1)) return false;
    live.push_back(&r);
  }
  return true;
}

std::string py_list(const std::vector<uint32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

struct WawCase {
  int64_t buffer;
  bool one_counter;
  size_t first_query;  // queries for consecutive topological writer pairs (direct pairs: none)
  size_t n_queries;    // consecutive pairs (direct or queried)
  bool dup_writer;     // a task names the buffer twice (never ordered with itself)
};

}  // namespace

void check_hazards(Context& c) {
  const ir::Program& p = c.p;
  const ir::Graph& g = c.g;
  Reach& reach = c.s.reach;
  reach.clear();
  const size_t nb = p.buffers.size();

  // Distinct writer counters per buffer, with the first writer of each (in list order).
  auto& gs_off = c.s.gs_off;
  gs_off.assign(nb + 1, 0);
  auto& gs = c.s.gs;  // (slot, first writer)
  gs.clear();
  for (size_t b = 0; b < nb; ++b) {
    gs_off[b] = static_cast<uint32_t>(gs.size());
    for (uint32_t w : c.writers(static_cast<int64_t>(b))) {
      uint32_t s = g.out_slot(w);
      bool seen = false;
      for (size_t k = gs_off[b]; k < gs.size() && !seen; ++k) seen = gs[k].first == s;
      if (!seen) gs.emplace_back(s, w);
    }
  }
  gs_off[nb] = static_cast<uint32_t>(gs.size());
  auto groups = [&](int64_t b) {
    auto i = static_cast<size_t>(b);
    return std::span<const std::pair<uint32_t, uint32_t>>(gs.data() + gs_off[i],
                                                          gs_off[i + 1] - gs_off[i]);
  };
  auto skip_read = [&](int64_t b) {
    if (!c.buffer_ok(b)) return true;
    const ir::Buffer& buf = c.buf(b);
    if (ir::is_readonly(buf.kind)) return true;
    return buf.kind == ir::BufferKind::KV_CACHE && c.writers(b).empty();  // prior-step state
  };

  // Phase 1: RAW queries, one per (read, writer counter) that is not a direct wait. Only reads
  // that need a second look (a query, a sibling writer, no writer, or only themselves as writer)
  // are remembered, so a program whose reads all wait directly costs one pass.
  struct Event {
    uint32_t task, input;
    uint32_t first_q;  // into raw_q
  };
  std::vector<Event> events;
  auto& raw_q = c.s.raw_q;
  raw_q.clear();
  for (uint32_t tid : g.topo_order()) {
    const ir::Task& t = p.tasks[tid];
    const uint32_t own = g.out_slot(tid);
    for (uint32_t k = 0; k < t.inputs.size(); ++k) {
      int64_t b = t.inputs[k];
      if (skip_read(b)) continue;
      auto ws = c.writers(b);
      auto first_q = static_cast<uint32_t>(raw_q.size());
      bool attention = ws.empty() || (ws.size() == 1 && ws[0] == tid);
      for (auto [slot, w] : groups(b)) {
        int64_t q = slot == own ? kDirect - 1  // the reader's own counter: siblings never ordered
                    : c.direct(w, tid) ? kDirect
                                       : static_cast<int64_t>(reach.add(w, tid));
        attention = attention || q != kDirect;
        raw_q.push_back(q);
      }
      if (attention) {
        events.push_back({tid, k, first_q});
      } else {
        raw_q.resize(first_q);
      }
    }
  }

  // Phase 1b: WAW total-order proofs, in AMK's first-write order of buffers.
  // Buffers in AMK's first-write order: a buffer comes up when its first writer (in list order)
  // is visited, at the position of its first mention among that task's outputs.
  auto& first_write = c.s.first_write;
  first_write.clear();
  for (uint32_t id = 0; id < p.tasks.size(); ++id) {
    const auto& outs = p.tasks[id].outputs;
    for (size_t k = 0; k < outs.size(); ++k) {
      int64_t b = outs[k];
      if (!c.buffer_ok(b) || c.writers(b)[0] != id) continue;
      if (std::find(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(k), b) !=
          outs.begin() + static_cast<std::ptrdiff_t>(k))
        continue;
      first_write.push_back(b);
    }
  }
  std::vector<WawCase> waw;
  std::vector<Region> regions;
  std::vector<uint32_t> distinct;
  for (int64_t b : first_write) {
    auto ws = c.writers(b);
    if (ws.size() < 2 || ir::is_readonly(c.buf(b).kind)) continue;
    const bool one_counter = groups(b).size() == 1;
    if (one_counter) {
      regions.clear();
      for (uint32_t w : ws) regions.push_back(c.s.regions[w]);
      if (pairwise_disjoint(regions)) continue;
    }
    WawCase wc{b, one_counter, reach.size(), 0, false};
    distinct.assign(ws.begin(), ws.end());
    std::sort(distinct.begin(), distinct.end());
    wc.dup_writer = std::adjacent_find(distinct.begin(), distinct.end()) != distinct.end();
    if (!one_counter && !wc.dup_writer && groups(b).size() == ws.size()) {
      const auto& pos = g.topo_pos();
      std::sort(distinct.begin(), distinct.end(),
                [&](uint32_t x, uint32_t y) { return pos[x] < pos[y]; });
      for (size_t k = 0; k + 1 < distinct.size(); ++k) {
        if (!c.direct(distinct[k], distinct[k + 1])) reach.add(distinct[k], distinct[k + 1]);
        ++wc.n_queries;
      }
    }
    waw.push_back(wc);
  }
  reach.solve();

  // Phase 2: RAW diagnostics in AMK's order (topological, then input order).
  {
    auto& missing = c.s.missing;
    auto& ordered = c.s.ordered;
    for (const Event& ev : events) {
      const uint32_t tid = ev.task;
      const ir::Task& t = p.tasks[tid];
      int64_t b = t.inputs[ev.input];
      const ir::Buffer& buf = c.buf(b);
      auto ws = c.writers(b);
      auto ptr = [&] { return ir::task_pointer(tid, fmt::format("inputs/{}", ev.input)); };
      if (ws.empty()) {
        c.error("read.never-produced",
                fmt::format("{} reads buffer #{} ('{}') that is never produced", task_ref(t, tid),
                            b, buf.name),
                ptr());
        continue;
      }
      auto gr = groups(b);
      ordered.resize(gr.size());
      for (size_t j = 0; j < gr.size(); ++j) {
        int64_t q = raw_q[ev.first_q + j];
        ordered[j] = q == kDirect || (q >= 0 && reach.answer(static_cast<size_t>(q)));
      }
      missing.clear();
      bool others = false;
      for (uint32_t w : ws) {
        if (w == tid) continue;
        others = true;
        size_t j = 0;
        while (gr[j].first != g.out_slot(w)) ++j;
        if (!ordered[j]) missing.push_back(w);
      }
      if (!missing.empty()) {
        const bool kv = buf.kind == ir::BufferKind::KV_CACHE;
        std::vector<ir::Note> notes;
        for (uint32_t w : missing) {
          if (notes.size() == 4) break;
          notes.push_back({fmt::format("writer {} has no happens-before path to task {}: add a "
                                       "wait on counter {} (threshold = its producer count)",
                                       task_ref(p.tasks[w], w), tid, p.tasks[w].out_counter),
                           ir::task_pointer(w)});
        }
        c.error(kv ? "race.kv" : "race.raw",
                fmt::format("{} reads {} #{} ('{}') but writer task(s) {} are NOT ordered before "
                            "it, data RACE",
                            task_ref(t, tid), kv ? "KV cache" : "buffer", b, buf.name,
                            py_list(missing)),
                ptr(), std::move(notes));
      } else if (!others && buf.kind != ir::BufferKind::KV_CACHE) {
        c.warn("read.own-output",
               fmt::format("{} reads buffer #{} ('{}') in place with no external producer "
                           "(reads its own uninitialized output?)",
                           task_ref(t, tid), b, buf.name),
               ptr());
      }
    }
  }

  // Phase 3: WAW verdicts; AMK's culprit (first unordered, overlapping pair in list order) is
  // found with pair queries for buffers with up to kExactCulpritMax writers.
  std::vector<std::pair<size_t, size_t>> pair_q;  // per failing case: [first, count) in reach
  std::vector<size_t> failing;
  std::vector<std::vector<uint32_t>> pairs_of(waw.size());
  {
    // Which cases fail the total-order proof?
    std::vector<uint8_t> fails(waw.size(), 0);
    for (size_t i = 0; i < waw.size(); ++i) {
      const WawCase& wc = waw[i];
      auto ws = c.writers(wc.buffer);
      bool total = !wc.one_counter && !wc.dup_writer && groups(wc.buffer).size() == ws.size();
      if (total) {
        // Re-derive the pairs to read their answers (direct pairs were not queried).
        distinct.assign(ws.begin(), ws.end());
        const auto& pos = g.topo_pos();
        std::sort(distinct.begin(), distinct.end(),
                  [&](uint32_t x, uint32_t y) { return pos[x] < pos[y]; });
        size_t q = wc.first_query;
        for (size_t k = 0; k + 1 < distinct.size() && total; ++k) {
          if (c.direct(distinct[k], distinct[k + 1])) continue;
          total = reach.answer(q++);
        }
      }
      fails[i] = !total;
    }
    reach.clear();
    for (size_t i = 0; i < waw.size(); ++i) {
      if (!fails[i]) continue;
      failing.push_back(i);
      auto ws = c.writers(waw[i].buffer);
      size_t first = reach.size();
      if (ws.size() <= kExactCulpritMax)
        for (size_t a = 0; a < ws.size(); ++a)
          for (size_t b2 = a + 1; b2 < ws.size(); ++b2) {
            reach.add(ws[a], ws[b2]);
            reach.add(ws[b2], ws[a]);
          }
      pair_q.emplace_back(first, reach.size() - first);
    }
    reach.solve();
  }
  for (size_t f = 0; f < failing.size(); ++f) {
    const WawCase& wc = waw[failing[f]];
    auto ws = c.writers(wc.buffer);
    std::pair<uint32_t, uint32_t> culprit{ws[0], ws[1]};
    std::string extra;
    if (ws.size() <= kExactCulpritMax) {
      size_t q = pair_q[f].first;
      bool found = false;
      for (size_t a = 0; a < ws.size() && !found; ++a)
        for (size_t b2 = a + 1; b2 < ws.size() && !found; ++b2, q += 2) {
          bool ordered = ws[a] != ws[b2] && (reach.answer(q) || reach.answer(q + 1));
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
    c.error("race.waw",
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

  // tile.coverage: when every writer of a read buffer is a well-formed tile, the tiles must cover
  // the whole buffer (else its readers see data nobody wrote this pass).
  // A buffer is read iff it has more users (reads + writes) than writes.
  auto is_read = [&](int64_t b) { return c.users(b).size() > c.writers(b).size(); };
  auto first_reader = [&](int64_t b) {
    for (uint32_t u : c.users(b))
      for (int64_t x : p.tasks[u].inputs)
        if (x == b) return u;
    return uint32_t{0};
  };
  for (int64_t b : first_write) {
    const ir::Buffer& buf = c.buf(b);
    bool needed = is_read(b) || buf.kind == ir::BufferKind::IO_OUTPUT;
    if (!needed || buf.kind == ir::BufferKind::KV_CACHE || buf.shape.empty()) continue;
    auto ws = c.writers(b);
    const int64_t n_cols = buf.shape.back();
    const int64_t n_rows = n_cols > 0 ? buf.numel() / n_cols : 0;
    regions.clear();
    bool tiles = true;
    for (uint32_t w : ws) {
      Region r = c.s.regions[w];
      if (r.whole) {
        tiles = false;
        break;
      }
      if (r.r1 < 0) {  // all rows: as AMK models GEMV and GEMM without a row range
        r.r0 = 0;
        r.r1 = n_rows;
      }
      regions.push_back(r);
    }
    if (!tiles || regions.empty() || n_cols <= 0) continue;
    {  // fast path: full-height tiles already sorted and contiguous from 0 to n_cols
      bool simple = true;
      int64_t covered = 0;
      for (const Region& r : regions) {
        if (r.r0 != 0 || r.r1 != n_rows || r.c0 > covered) {
          simple = false;
          break;
        }
        covered = std::max(covered, r.c1);
      }
      if (simple && covered >= n_cols) continue;
    }
    // Row bands between all row boundaries; each band's column union must be [0, n_cols).
    auto& cuts = c.s.cuts;
    cuts.assign({0, n_rows});
    for (const Region& r : regions) {
      cuts.push_back(std::clamp<int64_t>(r.r0, 0, n_rows));
      cuts.push_back(std::clamp<int64_t>(r.r1, 0, n_rows));
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::sort(regions.begin(), regions.end(),
              [](const Region& x, const Region& y) { return x.c0 < y.c0; });
    for (size_t k = 0; k + 1 < cuts.size(); ++k) {
      int64_t lo = cuts[k], hi = cuts[k + 1];
      int64_t covered = 0, gap0 = -1, gap1 = -1;
      for (const Region& r : regions) {
        if (r.r0 > lo || r.r1 < hi) continue;  // does not span this band
        if (r.c0 > covered) {
          gap0 = covered;
          gap1 = r.c0;
          break;
        }
        covered = std::max(covered, r.c1);
      }
      if (gap0 < 0 && covered < n_cols) {
        gap0 = covered;
        gap1 = n_cols;
      }
      if (gap0 >= 0) {
        std::string who =
            is_read(b) ? fmt::format("task {} reads it", first_reader(b)) : "it is a model output";
        c.error(
            "tile.coverage",
            fmt::format("buffer #{} ('{}') is written by {} tile(s) that leave columns [{}, {}) "
                        "of rows [{}, {}) unwritten, but {}",
                        b, buf.name, ws.size(), gap0, gap1, lo, hi, who),
            ir::task_pointer(ws[0]), {{"the buffer", fmt::format("/buffers/{}", b)}});
        break;
      }
    }
  }
}

}  // namespace amk::validate
