#include "lower/pages.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace amk::lower {

namespace {

// The happens-before order of the plan's groups: each task's group (dense, in order of first
// appearance) and, per group, a bitset of the groups that precede it.
struct GroupOrder {
  std::vector<size_t> gof;  // by emission position
  std::vector<uint64_t> anc;
  size_t words = 0;
  bool before(size_t a, size_t b) const { return (anc[b * words + a / 64] >> (a % 64)) & 1; }
};

GroupOrder group_order(const Plan& p) {
  const size_t n = p.tasks.size();
  GroupOrder o;
  std::vector<int64_t> dense(p.group_notes.size(), -1);
  size_t ng = 0;
  o.gof.resize(n);
  for (size_t i = 0; i < n; ++i) {  // i: emission position
    auto& d = dense[static_cast<size_t>(p.tasks[p.task_at(i)].group)];
    if (d < 0) d = static_cast<int64_t>(ng++);
    o.gof[i] = static_cast<size_t>(d);
  }
  o.words = (ng + 63) / 64;
  o.anc.assign(ng * o.words, 0);
  for (size_t i = 0; i < n; ++i) {
    uint64_t* a = &o.anc[o.gof[i] * o.words];
    size_t last = o.gof[i];  // the group just merged (a tile's deps list a group's tasks together)
    for (uint32_t dep : p.deps(p.task_at(i))) {
      const size_t g = o.gof[p.position(dep)];
      if (g == o.gof[i] || g == last) continue;
      last = g;
      const uint64_t* b = &o.anc[g * o.words];
      for (size_t w = 0; w < o.words; ++w) a[w] |= b[w];
      a[g / 64] |= uint64_t{1} << (g % 64);
    }
  }
  return o;
}

// Who uses an activation buffer: its first and last positions, the groups that access it and
// the groups that write it.
struct Use {
  int64_t first = -1, last = -1;
  std::vector<size_t> groups, writers;
};

// The uses of every activation buffer; `order` gets them in order of first use.
std::vector<Use> activation_uses(const Plan& p, const GroupOrder& go, std::vector<int64_t>& order) {
  std::vector<Use> use(p.program.buffers.size());
  std::vector<Access> reads, writes;
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    const size_t g = go.gof[i];
    auto touch = [&](int64_t b, bool write) {
      const ir::Buffer& buf = p.program.buffers[static_cast<size_t>(b)];
      if (buf.kind != ir::BufferKind::ACTIVATION) return;
      Use& u = use[static_cast<size_t>(b)];
      if (u.first < 0) {
        u.first = static_cast<int64_t>(i);
        order.push_back(b);
      }
      u.last = static_cast<int64_t>(i);
      if (std::find(u.groups.begin(), u.groups.end(), g) == u.groups.end()) u.groups.push_back(g);
      if (write && std::find(u.writers.begin(), u.writers.end(), g) == u.writers.end())
        u.writers.push_back(g);
    };
    p.tasks[p.task_at(i)].accesses(reads, writes);
    for (const Access& a : reads) touch(a.buffer, false);
    for (const Access& a : writes) touch(a.buffer, true);
  }
  return use;
}

// graph_color: the page a buffer of `need` bytes can share (every access of its last occupant
// happens before the buffer's writers): the smallest that fits, else the largest; -1: none.
int64_t shareable_page(const ir::PageAllocation& pa,
                       const std::vector<std::vector<int64_t>>& occupants,
                       const std::vector<Use>& use, const Use& u, int64_t need,
                       const GroupOrder& go) {
  int64_t best_fit = -1, largest = -1;
  for (size_t pg = 0; pg < occupants.size(); ++pg) {
    // Occupants are chained (each one's accesses happen-before the next one's writers), so the
    // last occupant's accesses happening-before our writers covers them all.
    bool free = true;
    for (size_t g : use[static_cast<size_t>(occupants[pg].back())].groups)
      for (size_t w : u.writers) free = free && go.before(g, w);
    if (!free) continue;
    const int64_t sz = pa.pages[pg].nbytes;
    if (sz >= need && (best_fit < 0 || sz < pa.pages[static_cast<size_t>(best_fit)].nbytes))
      best_fit = static_cast<int64_t>(pg);
    if (largest < 0 || sz > pa.pages[static_cast<size_t>(largest)].nbytes)
      largest = static_cast<int64_t>(pg);
  }
  return best_fit >= 0 ? best_fit : largest;
}

}  // namespace

ir::Status allocate_pages(Plan& p) {
  if (p.opt.amk_compat || p.opt.reference || p.knobs.pages == Knobs::Pages::None) return {};
  const GroupOrder go = group_order(p);
  std::vector<int64_t> order;
  const std::vector<Use> use = activation_uses(p, go, order);
  ir::PageAllocation pa;
  std::vector<std::vector<int64_t>> occupants;
  std::vector<std::pair<int64_t, int64_t>> map;
  const bool color = p.knobs.pages == Knobs::Pages::GraphColor;
  for (int64_t b : order) {
    const Use& u = use[static_cast<size_t>(b)];
    const int64_t need = p.program.buffers[static_cast<size_t>(b)].nbytes();
    int64_t pick =
        color && !u.writers.empty() ? shareable_page(pa, occupants, use, u, need, go) : -1;
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
