// Page table integrity (amk), then AMK step 7: buffers sharing a page need separated live ranges.
//
// AMK checks every pair of a page's occupants: all_before(a, b) or all_before(b, a), where
// all_before(x, y) = every task touching x is a strict ancestor of every writer of y. Occupants
// without writers pass with everyone. For the others, all_before is transitive and at most one
// direction holds, so a page is clean iff its written occupants, sorted by the topological position
// of their first writer, satisfy all_before for each consecutive pair: O(occupants) checks instead
// of O(occupants^2). When a page fails, the exact AMK pairs are enumerated (small pages) so the
// messages match AMK's. Two facts answer many of those pairs without a query: all_before(x, y)
// needs x's first writer (a task touching x) strictly before y's first writer, so it fails when x
// is written no earlier than y; and a run of holding links of the chain orders its ends
// (transitivity through written buffers).
#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "ir/csr.h"

#include "validate/context.h"

namespace amk::validate {

// The rules this file checks, in emission order (rules() lists every family's).
constexpr Rule kPageMissingPage{"page.missing-page",
                                "a buffer is mapped to a page id that does not exist", false};
constexpr Rule kPageMissingBuffer{"page.missing-buffer",
                                  "the page map names a buffer id that does not exist", false};
constexpr Rule kPageKind{"page.kind", "a non-ACTIVATION buffer is bound to a scratch page", false};
constexpr Rule kPageSpace{"page.space", "a buffer's memory space does not match its page's", false};
constexpr Rule kPageSize{"page.size", "a buffer is larger than its page", false};
constexpr Rule kPageClobber{"page.clobber", "two buffers share a page with unordered live ranges",
                            true};

std::span<const Rule> page_rules() {
  static constexpr Rule kList[] = {kPageMissingPage, kPageMissingBuffer, kPageKind,
                                   kPageSpace,       kPageSize,          kPageClobber};
  return kList;
}

namespace {

constexpr size_t kExactPairsMax = 128;  // occupants up to which failing pages list AMK's pairs

bool offchip(ir::MemSpace s) {
  return !ir::is_onchip(s);
}

// Queries for all_before(x, y): one per (user counter, writer of y with a distinct wait set).
// Users sharing a counter have the same descendants; writers with the same waits the same
// ancestors. Returns false when a direct answer is already "no" (a task both uses x and writes y).
struct AllBefore {
  uint32_t first = 0, count = 0;  // query indices live in Scratch::ab_queries
  bool impossible = false;
};

// The parties of all_before for buffer `b`, worked out on its first use in a page check: a user
// per distinct counter its users increment, its writers with distinct wait sets, and the
// topological position of its first writer.
[[gnu::noinline]] const PageParties& work_out_parties(Context& c, int64_t b) {
  PageParties& pp = c.s.parties[static_cast<size_t>(b)];
  const auto& pos = c.g.topo_pos();
  for (uint32_t w : c.writers(b)) pp.first_write = std::min(pp.first_write, pos[w]);
  auto& pool = c.s.party_pool;
  pp.users_at = static_cast<uint32_t>(pool.size());
  auto& seen = c.s.party_seen;  // per counter slot: the last buffer (+ 1) that listed it
  for (uint32_t u : c.users(b)) {
    const uint32_t slot = c.g.out_slot(u);
    if (seen[slot] == static_cast<uint64_t>(b) + 1) continue;
    seen[slot] = static_cast<uint64_t>(b) + 1;
    pool.push_back(c.g.producers(slot)[0]);
  }
  pp.reps_at = static_cast<uint32_t>(pool.size());
  for (uint32_t w : c.writers(b)) {
    bool same = false;
    for (size_t k = pp.reps_at; k < pool.size() && !same; ++k) {
      auto x = c.g.wait_slots(pool[k]), y = c.g.wait_slots(w);
      same = std::equal(x.begin(), x.end(), y.begin(), y.end());
    }
    if (!same) pool.push_back(w);
  }
  pp.end = static_cast<uint32_t>(pool.size());
  pp.done = true;
  return pp;
}
// The parties of `b`, worked out once (most calls find them known).
inline const PageParties& parties(Context& c, int64_t b) {
  const PageParties& pp = c.s.parties[static_cast<size_t>(b)];
  return pp.done ? pp : work_out_parties(c, b);
}

AllBefore all_before(Context& c, int64_t x, int64_t y) {
  AllBefore ab;
  auto ys = c.writers(y);
  auto xs = c.users(x);
  if (ys.empty() || xs.empty()) return ab;
  const PageParties& px = parties(c, x);
  const PageParties& py = parties(c, y);
  // x's first writer must be a strict ancestor of y's first writer, so come before it.
  if (px.first_write != UINT32_MAX && px.first_write >= py.first_write) {
    ab.impossible = true;
    return ab;
  }
  // A task both using x and writing y? Both lists ascend (task-list order): one merge.
  for (size_t i = 0, j = 0; i < xs.size() && j < ys.size();) {
    if (xs[i] == ys[j]) {
      ab.impossible = true;
      return ab;
    }
    xs[i] < ys[j] ? ++i : ++j;
  }
  const auto& pool = c.s.party_pool;
  ab.first = static_cast<uint32_t>(c.s.ab_queries.size());
  for (uint32_t i = px.users_at; i < px.reps_at; ++i)
    for (uint32_t k = py.reps_at; k < py.end; ++k) {
      if (c.direct(pool[i], pool[k])) continue;
      c.s.ab_queries.push_back(static_cast<uint32_t>(c.s.reach.add(pool[i], pool[k])));
    }
  ab.count = static_cast<uint32_t>(c.s.ab_queries.size()) - ab.first;
  return ab;
}

bool holds(Context& c, const AllBefore& ab) {
  if (ab.impossible) return false;
  for (uint32_t k = 0; k < ab.count; ++k)
    if (!c.s.reach.answer(c.s.ab_queries[ab.first + k])) return false;
  return true;
}

}  // namespace

namespace {

// The page map itself: every entry binds an existing activation buffer to an existing page of
// its memory space that is large enough.
void check_page_map(Context& c) {
  const ir::PageAllocation& pa = *c.p.pages;
  const auto n_pages = static_cast<int64_t>(pa.pages.size());
  for (size_t k = 0; k < pa.buffer_to_page.size(); ++k) {
    auto [b, pg] = pa.buffer_to_page[k];
    auto ptr = [b = b] { return fmt::format("/pages/buffer_to_page/{}", b); };
    if (!c.buffer_ok(b)) {
      c.error(kPageMissingBuffer,
              fmt::format("the page map binds buffer {}, which does not exist", b), ptr());
      continue;
    }
    const ir::Buffer& buf = c.buf(b);
    if (pg < 0 || pg >= n_pages) {
      c.error(kPageMissingPage,
              fmt::format("buffer #{} ('{}') is bound to page {}, which does not exist ({} pages)",
                          b, buf.name, pg, n_pages),
              ptr());
      continue;
    }
    const ir::Page& page = pa.pages[static_cast<size_t>(pg)];
    if (buf.kind != ir::BufferKind::ACTIVATION)
      c.error(
          kPageKind,
          fmt::format("buffer #{} ('{}') is a {} buffer bound to page {}: only activations live "
                      "in scratch pages (weights, KV caches and model IO are fixed HBM tensors)",
                      b, buf.name, ir::name(buf.kind), pg),
          ptr());
    bool space_ok = ir::is_onchip(buf.space) ? page.space == buf.space : offchip(page.space);
    if (!space_ok)
      c.error(kPageSpace,
              fmt::format("buffer #{} ('{}') in {} is bound to page {} in {}", b, buf.name,
                          ir::name(buf.space), pg, ir::name(page.space)),
              ptr(), {{"the page", fmt::format("/pages/pages/{}", pg)}});
    // Buffer::nbytes() from the element count check_buffers took (no walk of the shape again).
    const int64_t bytes = ir::dtype_nbytes(buf.dtype, c.numel(b));
    if (bytes > page.nbytes)
      c.error(kPageSize,
              fmt::format("buffer #{} ('{}') needs {} bytes but page {} has {}", b, buf.name, bytes,
                          pg, page.nbytes),
              ptr(), {{"the page", fmt::format("/pages/pages/{}/nbytes", pg)}});
  }
}

// The occupants of every page as CSR by page id (c.s.page_off, c.s.page_occ: buffer ids), and
// the pages in AMK's order of first appearance in the map (c.s.page_order).
void index_page_occupants(Context& c) {
  const ir::PageAllocation& pa = *c.p.pages;
  const auto n_pages = static_cast<int64_t>(pa.pages.size());
  // Occupants per page (CSR by page id), pages in AMK's order of first appearance in the map.
  auto& off = c.s.page_off;
  auto& occ = c.s.page_occ;
  auto& page_order = c.s.page_order;
  page_order.clear();
  c.s.csr_fill.assign(static_cast<size_t>(n_pages), 0);  // occupants seen so far, per page
  for (auto [b, pg] : pa.buffer_to_page)
    if (pg >= 0 && pg < n_pages && c.s.csr_fill[static_cast<size_t>(pg)]++ == 0)
      page_order.push_back(pg);
  std::vector<uint32_t> bufs;  // occ holds buffer ids: CSR of map entries, then their buffers
  ir::build_csr(
      static_cast<size_t>(n_pages),
      [&](auto emit) {
        for (size_t k = 0; k < pa.buffer_to_page.size(); ++k)
          if (const int64_t pg = pa.buffer_to_page[k].second; pg >= 0 && pg < n_pages)
            emit(static_cast<size_t>(pg), static_cast<uint32_t>(k));
      },
      off, bufs, c.s.csr_fill);
  occ.resize(bufs.size());
  for (size_t k = 0; k < bufs.size(); ++k) occ[k] = pa.buffer_to_page[bufs[k]].first;
}

// A page shared by buffers a and b whose live ranges are not ordered.
void report_clobber(Context& c, int64_t pg, int64_t a, int64_t b, const char* extra) {
  c.error(kPageClobber,
          fmt::format("page {} reused by buffers #{} ('{}') and #{} ('{}') whose live ranges are "
                      "NOT ordered, clobber RACE (page reuse needs separated ranges){}",
                      pg, a, c.buf(a).name, b, c.buf(b).name, extra),
          fmt::format("/pages/buffer_to_page/{}", b),
          {{"the other occupant", fmt::format("/pages/buffer_to_page/{}", a)},
           {"every task touching one buffer must happen-before every writer of the other", ""}});
}

// Page reuse: the occupants of a page, in the order they are first written, must each be done
// (every task touching one) before the next one's first writer. Checked along that chain first;
// the pages where it fails get AMK's pairwise check and report.
void check_page_reuse(Context& c) {
  index_page_occupants(c);
  const auto& off = c.s.page_off;
  const auto& occ = c.s.page_occ;
  const auto& page_order = c.s.page_order;
  auto occupants = [&](int64_t pg) {
    auto i = static_cast<size_t>(pg);
    return std::span<const int64_t>(occ.data() + off[i], off[i + 1] - off[i]);
  };
  Reach& reach = c.s.reach;
  reach.bind(c.g);
  c.s.ab_queries.clear();
  c.s.parties.assign(c.p.buffers.size(), {});
  c.s.party_pool.clear();
  c.s.party_seen.assign(c.g.num_slots(), 0);
  struct Pair {
    int64_t page, x, y;
    AllBefore ab;
  };
  std::vector<Pair> chain;
  auto& written = c.s.written;  // (first writer position, buffer)
  // A page's written occupants in chain order (its links join consecutive ones).
  auto list_written = [&](std::span<const int64_t> o) {
    written.clear();
    for (int64_t b : o)
      if (c.buffer_ok(b) && !c.writers(b).empty())
        written.emplace_back(parties(c, b).first_write, b);
    std::sort(written.begin(), written.end());
  };
  std::vector<std::pair<int64_t, size_t>> page_links;  // (page, its first link in chain)
  for (int64_t pg : page_order) {
    auto o = occupants(pg);
    if (o.size() < 2) continue;
    list_written(o);
    page_links.emplace_back(pg, chain.size());
    for (size_t k = 0; k + 1 < written.size(); ++k)
      chain.push_back({pg, written[k].second, written[k + 1].second,
                       all_before(c, written[k].second, written[k + 1].second)});
  }
  reach.solve();
  std::vector<int64_t> bad_pages;
  std::vector<uint8_t> chain_ok(chain.size());
  for (size_t k = 0; k < chain.size(); ++k) {
    chain_ok[k] = holds(c, chain[k].ab);
    if (!chain_ok[k] && (bad_pages.empty() || bad_pages.back() != chain[k].page))
      bad_pages.push_back(chain[k].page);
  }
  if (bad_pages.empty()) return;

  // Failing pages: AMK's pairs, in its order (page insertion order, then i < j).
  reach.clear();
  c.s.ab_queries.clear();
  struct Check {
    int64_t page, a, b;
    AllBefore ab, ba;
  };
  std::vector<Check> checks;
  std::vector<std::pair<int64_t, std::pair<int64_t, int64_t>>> fallback;
  std::vector<int32_t> rank;     // per occupant: its place in the page's chain, -1 when unwritten
  std::vector<uint32_t> broken;  // per place in the chain: failing links before it
  for (int64_t pg : page_order) {
    if (std::find(bad_pages.begin(), bad_pages.end(), pg) == bad_pages.end()) continue;
    auto o = occupants(pg);
    if (o.size() <= kExactPairsMax) {
      list_written(o);
      size_t first_link = 0;  // the page's first link in the chain
      for (const auto& [page, at] : page_links)
        if (page == pg) first_link = at;
      broken.assign(written.size(), 0);
      for (size_t k = 0; k + 1 < written.size(); ++k)
        broken[k + 1] = broken[k] + !chain_ok[first_link + k];
      rank.assign(o.size(), -1);
      for (size_t i = 0; i < o.size(); ++i)
        if (c.buffer_ok(o[i]) && !c.writers(o[i]).empty())
          rank[i] = static_cast<int32_t>(
              std::lower_bound(written.begin(), written.end(),
                               std::make_pair(parties(c, o[i]).first_write, o[i])) -
              written.begin());
      // all_before(o[i], o[j]); holding when a run of holding links leads from o[i] to o[j].
      auto ordered = [&](size_t i, size_t j) {
        if (rank[i] >= 0 && rank[i] < rank[j] && broken[rank[i]] == broken[rank[j]])
          return AllBefore{};
        return all_before(c, o[i], o[j]);
      };
      for (size_t i = 0; i < o.size(); ++i)
        for (size_t j = i + 1; j < o.size(); ++j) {
          if (!c.buffer_ok(o[i]) || !c.buffer_ok(o[j])) continue;
          checks.push_back({pg, o[i], o[j], ordered(i, j), ordered(j, i)});
        }
    } else {
      for (size_t k = 0; k < chain.size(); ++k)
        if (chain[k].page == pg && !chain_ok[k]) fallback.push_back({pg, {chain[k].x, chain[k].y}});
    }
  }
  reach.solve();
  for (const Check& ck : checks) {
    if (!holds(c, ck.ab) && !holds(c, ck.ba)) report_clobber(c, ck.page, ck.a, ck.b, "");
  }
  for (const auto& [pg, ab] : fallback)
    report_clobber(c, pg, ab.first, ab.second,
                   " (a large page: reported for consecutive occupants)");
}

}  // namespace

void check_pages(Context& c) {
  if (!c.p.pages) return;
  check_page_map(c);
  if (c.g.acyclic()) check_page_reuse(c);
}

}  // namespace amk::validate
