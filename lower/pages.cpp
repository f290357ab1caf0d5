#include "lower/pages.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace amk::lower {

ir::Status allocate_pages(Plan& p) {
  if (p.opt.amk_compat || p.opt.reference || p.knobs.pages == Knobs::Pages::None) return {};
  const size_t n = p.tasks.size();
  // Dense group index in order of first appearance; ancestor bitsets over groups.
  std::vector<int64_t> dense(p.group_notes.size(), -1);
  size_t ng = 0;
  std::vector<size_t> gof(n);
  for (size_t i = 0; i < n; ++i) {  // i: emission position
    auto& d = dense[static_cast<size_t>(p.tasks[p.task_at(i)].group)];
    if (d < 0) d = static_cast<int64_t>(ng++);
    gof[i] = static_cast<size_t>(d);
  }
  const size_t words = (ng + 63) / 64;
  std::vector<uint64_t> anc(ng * words, 0);
  for (size_t i = 0; i < n; ++i) {
    uint64_t* a = &anc[gof[i] * words];
    size_t last = gof[i];  // the group just merged (a tile's deps list a group's tasks together)
    for (uint32_t dep : p.deps(p.task_at(i))) {
      const size_t g = gof[p.position(dep)];
      if (g == gof[i] || g == last) continue;
      last = g;
      const uint64_t* b = &anc[g * words];
      for (size_t w = 0; w < words; ++w) a[w] |= b[w];
      a[g / 64] |= uint64_t{1} << (g % 64);
    }
  }
  auto before = [&](size_t a, size_t b) { return (anc[b * words + a / 64] >> (a % 64)) & 1; };
  // Accessors of each activation buffer.
  struct Use {
    int64_t first = -1, last = -1;
    std::vector<size_t> groups, writers;
  };
  std::vector<Use> use(p.program.buffers.size());
  std::vector<int64_t> order;
  std::vector<Access> reads, writes;
  for (size_t i = 0; i < n; ++i) {
    auto touch = [&](int64_t b, bool write) {
      const ir::Buffer& buf = p.program.buffers[static_cast<size_t>(b)];
      if (buf.kind != ir::BufferKind::ACTIVATION) return;
      Use& u = use[static_cast<size_t>(b)];
      if (u.first < 0) {
        u.first = static_cast<int64_t>(i);
        order.push_back(b);
      }
      u.last = static_cast<int64_t>(i);
      if (std::find(u.groups.begin(), u.groups.end(), gof[i]) == u.groups.end())
        u.groups.push_back(gof[i]);
      if (write && std::find(u.writers.begin(), u.writers.end(), gof[i]) == u.writers.end())
        u.writers.push_back(gof[i]);
    };
    p.tasks[p.task_at(i)].accesses(reads, writes);
    for (const Access& a : reads) touch(a.buffer, false);
    for (const Access& a : writes) touch(a.buffer, true);
  }
  ir::PageAllocation pa;
  std::vector<std::vector<int64_t>> occupants;
  std::vector<std::pair<int64_t, int64_t>> map;
  const bool color = p.knobs.pages == Knobs::Pages::GraphColor;
  for (int64_t b : order) {
    const Use& u = use[static_cast<size_t>(b)];
    const int64_t need = p.program.buffers[static_cast<size_t>(b)].nbytes();
    int64_t pick = -1;
    if (color && !u.writers.empty()) {
      int64_t best_fit = -1, largest = -1;
      for (size_t pg = 0; pg < occupants.size(); ++pg) {
        // Occupants are chained (each one's accesses happen-before the next one's writers), so
        // the last occupant's accesses happening-before our writers covers them all.
        bool free = true;
        for (size_t g : use[static_cast<size_t>(occupants[pg].back())].groups)
          for (size_t w : u.writers) free = free && before(g, w);
        if (!free) continue;
        const int64_t sz = pa.pages[pg].nbytes;
        if (sz >= need && (best_fit < 0 || sz < pa.pages[static_cast<size_t>(best_fit)].nbytes))
          best_fit = static_cast<int64_t>(pg);
        if (largest < 0 || sz > pa.pages[static_cast<size_t>(largest)].nbytes)
          largest = static_cast<int64_t>(pg);
      }
      pick = best_fit >= 0 ? best_fit : largest;
    }
    if (pick < 0) {
      pick = static_cast<int64_t>(pa.pages.size());
      ir::Page pg;
      pg.space = ir::MemSpace::GLOBAL_SCRATCH;
      pg.live_start = u.first;
      pa.pages.push_back(pg);
      occupants.emplace_back();
    }
    ir::Page& pg = pa.pages[static_cast<size_t>(pick)];
    pg.nbytes = std::max(pg.nbytes, need);
    pg.live_start = std::min(pg.live_start, u.first);
    pg.live_end = std::max(pg.live_end, u.last);
    occupants[static_cast<size_t>(pick)].push_back(b);
    map.emplace_back(b, pick);
  }
  std::sort(map.begin(), map.end());
  pa.buffer_to_page = std::move(map);
  const int64_t total = pa.total_scratch_bytes();
  const int64_t cap = p.target->scratch_bytes;
  if (cap > 0 && total > cap)
    return ir::error("config.invalid",
                     fmt::format("{} pages need {} bytes of scratch but target {} has {} "
                                 "(amk.scratch_bytes)",
                                 pa.pages.size(), total, p.target->record.name, cap),
                     "/config/page_allocation");
  p.log.push_back(fmt::format("  pages: {} activation buffers on {} pages, {} bytes", order.size(),
                              pa.pages.size(), total));
  p.program.pages = std::move(pa);
  return {};
}

}  // namespace amk::lower
