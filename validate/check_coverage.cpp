// amk's tile coverage rule: when every writer of a read buffer (or a model output) is a
// well-formed GEMV/GEMM tile, the tiles must cover the whole buffer, else its readers see data
// nobody wrote this pass. AMK checks no coverage at all.
#include <algorithm>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "validate/hazards.h"

namespace amk::validate {

// The rules this file checks (rules() lists every family's).
constexpr Rule kTileCoverage{
    "tile.coverage", "the tiles writing a buffer leave part of it unwritten before it is read",
    false};

std::span<const Rule> coverage_rules() {
  static constexpr Rule kList[] = {kTileCoverage};
  return kList;
}

namespace {

// The first columns [gap0, gap1) of rows [lo, hi) no region (sorted by c0) writes; {-1, -1}: none.
std::pair<int64_t, int64_t> band_gap(const std::vector<TileRegion>& regions, int64_t lo, int64_t hi,
                                     int64_t n_cols) {
  int64_t covered = 0;
  for (const TileRegion& r : regions) {
    if (r.r0 > lo || r.r1 < hi) continue;  // does not span this band
    if (r.c0 > covered) return {covered, r.c0};
    covered = std::max(covered, r.c1);
  }
  if (covered < n_cols) return {covered, n_cols};
  return {-1, -1};
}

}  // namespace

void check_tile_coverage(Hazards& h) {
  using Region = TileRegion;
  Context& c = h.c;
  const ir::Program& p = c.p;
  auto& regions = c.s.tile_scratch;
  // A buffer is read iff it has more users (reads + writes) than writes.
  auto is_read = [&](int64_t b) { return c.users(b).size() > c.writers(b).size(); };
  auto first_reader = [&](int64_t b) {
    for (uint32_t u : c.users(b))
      for (int64_t x : p.tasks[u].inputs)
        if (x == b) return u;
    return uint32_t{0};
  };
  for (int64_t b : c.s.first_write) {
    const ir::Buffer& buf = c.buf(b);
    bool needed = is_read(b) || buf.kind == ir::BufferKind::IO_OUTPUT;
    if (!needed || buf.kind == ir::BufferKind::KV_CACHE || buf.shape.empty()) continue;
    auto ws = c.writers(b);
    const int64_t n_cols = buf.shape.back();
    const int64_t n_rows = n_cols > 0 ? c.numel(b) / n_cols : 0;
    // A tile without a row range spans all rows, as AMK models GEMV and GEMM.
    auto rows_of = [n_rows](const Region& r) {
      return r.r1 < 0 ? std::pair<int64_t, int64_t>{0, n_rows} : std::pair{r.r0, r.r1};
    };
    // One pass over the writers' regions: any not a tile (nothing to check), and the common case,
    // full-height tiles in column order, contiguous from column 0 to n_cols (covered).
    bool whole = false, simple = true;
    int64_t covered = 0;
    for (uint32_t w : ws) {
      const Region& r = c.s.regions[w];
      whole |= r.whole;
      simple = simple && rows_of(r) == std::pair<int64_t, int64_t>{0, n_rows} && r.c0 <= covered;
      covered = std::max(covered, r.c1);
    }
    if (whole || ws.empty() || n_cols <= 0 || (simple && covered >= n_cols)) continue;
    regions.clear();
    for (uint32_t w : ws) {
      Region r = c.s.regions[w];
      std::tie(r.r0, r.r1) = rows_of(r);
      regions.push_back(r);
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
      const int64_t lo = cuts[k], hi = cuts[k + 1];
      const auto [gap0, gap1] = band_gap(regions, lo, hi, n_cols);
      if (gap0 >= 0) {
        std::string who =
            is_read(b) ? fmt::format("task {} reads it", first_reader(b)) : "it is a model output";
        c.error(
            kTileCoverage,
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
