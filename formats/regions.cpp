#include "formats/regions.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <tuple>

#include "ir/checked.h"
#include "ir/parallel.h"
#include "ir/pool.h"

namespace amk::formats::detail {
namespace {

constexpr int kMaxDims = 8;

// A box of elements: [lo, hi) per dimension of the tensor's reference layout (one dimension in
// the flat layout).
struct Box {
  int n = 0;
  std::array<int64_t, kMaxDims> lo{}, hi{};
  bool overlaps(const Box& o) const {
    for (int d = 0; d < n; ++d)
      if (!(lo[d] < o.hi[d] && o.lo[d] < hi[d])) return false;
    return true;
  }
  bool empty() const {
    for (int d = 0; d < n; ++d)
      if (lo[d] >= hi[d]) return true;
    return false;
  }
  double volume() const {
    double v = 1;
    for (int d = 0; d < n; ++d) v *= static_cast<double>(std::max<int64_t>(0, hi[d] - lo[d]));
    return v;
  }
  Box intersect(const Box& o) const {
    Box b = *this;
    for (int d = 0; d < n; ++d) {
      b.lo[d] = std::max(lo[d], o.lo[d]);
      b.hi[d] = std::min(hi[d], o.hi[d]);
    }
    return b;
  }
  void grow(const Box& o) {
    for (int d = 0; d < n; ++d) {
      lo[d] = std::min(lo[d], o.lo[d]);
      hi[d] = std::max(hi[d], o.hi[d]);
    }
  }
};

// a minus b, as disjoint boxes appended to `out`.
void subtract(Box a, const Box& b, std::vector<Box>& out) {
  if (!a.overlaps(b)) {
    out.push_back(a);
    return;
  }
  for (int d = 0; d < a.n; ++d) {
    if (a.lo[d] < b.lo[d]) {
      Box piece = a;
      piece.hi[d] = b.lo[d];
      out.push_back(piece);
      a.lo[d] = b.lo[d];
    }
    if (a.hi[d] > b.hi[d]) {
      Box piece = a;
      piece.lo[d] = b.hi[d];
      out.push_back(piece);
      a.hi[d] = b.hi[d];
    }
  }
}

// The reference layout of a tensor: the distinct strides its accesses use (descending, ending in
// 1, each a multiple of the next), or none (empty) when the accesses do not fit one row-major
// layout. `each(f)` calls f(dims, strides) for every access.
struct Layout {
  std::array<int64_t, kMaxDims> stride{};
  size_t n = 0;
  std::span<const int64_t> strides() const { return {stride.data(), n}; }
};
template <class Each>
Layout reference_strides(Each each) {
  Layout r;
  bool fits = true;
  auto add = [&](int64_t s) {
    if (std::find(r.stride.begin(), r.stride.begin() + r.n, s) != r.stride.begin() + r.n) return;
    if (r.n == r.stride.size()) {
      fits = false;
      return;
    }
    r.stride[r.n++] = s;
  };
  add(1);
  each([&](std::span<const int64_t> dims, std::span<const int64_t> strides) {
    for (size_t k = 0; k < dims.size(); ++k)
      if (dims[k] > 1) add(strides[k]);
  });
  if (!fits) return {};
  std::sort(r.stride.begin(), r.stride.begin() + r.n, std::greater<>());
  if (r.stride[r.n - 1] != 1) return {};
  for (size_t j = 0; j + 1 < r.n; ++j)
    if (r.stride[j + 1] <= 0 || r.stride[j] % r.stride[j + 1] != 0) return {};
  return r;
}

// An access as a box of the reference layout `r`, or false when it does not fit it.
bool to_box(std::span<const int64_t> r, int64_t offset, std::span<const int64_t> dims,
            std::span<const int64_t> strides, Box& b) {
  b.n = static_cast<int>(r.size());
  int64_t o = offset;
  if (o < 0) return false;
  for (int j = 0; j < b.n; ++j) {
    b.lo[j] = o / r[j];
    o %= r[j];
    b.hi[j] = b.lo[j] + 1;
  }
  std::array<bool, kMaxDims> used{};
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] == 1) continue;
    const auto it = std::find(r.begin(), r.end(), strides[k]);
    const auto j = static_cast<size_t>(it - r.begin());
    if (it == r.end() || used[j]) return false;
    used[j] = true;
    b.hi[j] = b.lo[j] + dims[k];
  }
  for (int j = 1; j < b.n; ++j)  // inner dimensions stay inside their row
    if (b.hi[j] > r[static_cast<size_t>(j) - 1] / r[static_cast<size_t>(j)]) return false;
  return true;
}

// An access as the interval of elements it may touch (the flat layout).
Box to_interval(int64_t offset, std::span<const int64_t> dims, std::span<const int64_t> strides) {
  Box b;
  b.n = 1;
  int64_t lo = offset, hi = offset;
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t span = 0;
    if (__builtin_mul_overflow(dims[k] - 1, strides[k], &span)) span = 0;
    if (span < 0) {
      lo += span;
    } else {
      hi += span;
    }
  }
  b.lo[0] = std::max<int64_t>(lo, 0);
  b.hi[0] = std::max(hi + 1, b.lo[0] + 1);
  return b;
}

// The boxes of n accesses of one tensor (access(i): its offset, dims and strides), in the
// tensor's reference layout, or as intervals when they do not fit one.
template <class Access>
void boxes_of(size_t n, Access access, std::vector<Box>& boxes) {
  const Layout layout = reference_strides([&](auto f) {
    for (size_t i = 0; i < n; ++i) {
      const auto [offset, dims, strides] = access(i);
      f(dims, strides);
    }
  });
  const std::span<const int64_t> ref = layout.strides();
  boxes.resize(n);
  bool boxed = !ref.empty();
  for (size_t i = 0; boxed && i < n; ++i) {
    const auto [offset, dims, strides] = access(i);
    boxed = to_box(ref, offset, dims, strides, boxes[i]);
  }
  if (!boxed)
    for (size_t i = 0; i < n; ++i) {
      const auto [offset, dims, strides] = access(i);
      boxes[i] = to_interval(offset, dims, strides);
    }
}

// Union-find over write classes.
struct Classes {
  std::vector<int32_t> parent;
  std::vector<uint8_t> sealed;
  int32_t make() {
    parent.push_back(static_cast<int32_t>(parent.size()));
    sealed.push_back(0);
    return parent.back();
  }
  int32_t find(int32_t c) {
    while (parent[static_cast<size_t>(c)] != c) {
      parent[static_cast<size_t>(c)] = parent[static_cast<size_t>(parent[static_cast<size_t>(c)])];
      c = parent[static_cast<size_t>(c)];
    }
    return c;
  }
  void unite(int32_t a, int32_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
  }
};

struct Piece {
  Box box;
  int32_t cls;
};

// The row/column rectangle of `w` inside the 2-D flattening of `bbox` (rows: the outer
// dimensions, columns: the last), or false when it is not one rectangle.
bool flatten(const Box& bbox, const Box& w, std::array<int64_t, 4>& rc) {
  const int last = bbox.n - 1;
  int k = 0;  // first outer dimension where w is more than one index
  while (k < last && w.hi[k] - w.lo[k] == 1) ++k;
  for (int j = k + 1; j < last; ++j)
    if (w.lo[j] != bbox.lo[j] || w.hi[j] != bbox.hi[j]) return false;
  int64_t r0 = 0, inner = 1;
  for (int j = last - 1; j >= 0; --j) {
    const int64_t at = j < k ? w.lo[j] : (j == k ? w.lo[j] : bbox.lo[j]);
    r0 += (at - bbox.lo[j]) * inner;
    inner *= bbox.hi[j] - bbox.lo[j];
  }
  int64_t rows = 1;
  if (k < last) {
    rows = w.hi[k] - w.lo[k];
    for (int j = k + 1; j < last; ++j) rows *= bbox.hi[j] - bbox.lo[j];
  }
  rc = {r0, r0 + rows, w.lo[last] - bbox.lo[last], w.hi[last] - bbox.lo[last]};
  return true;
}

// Which class of writes each access writes or reads (and whether a read sees the tensor's prior
// contents), in program order; its vectors keep their capacity from tensor to tensor.
struct Flow {
  Classes cls;
  std::vector<int32_t> write_cls;  // each access's class, -1 for a read
  std::vector<uint32_t> read_end;  // where each access's classes read end in read_cls
  std::vector<int32_t> read_cls;   // the classes each read reads, access after access
  std::vector<uint8_t> read_prior;
  std::vector<Piece> live, next;  // disjoint pieces, each naming the class that last wrote it
  std::vector<Box> rest;
  std::span<const int32_t> reads(size_t i) const {
    const uint32_t from = i == 0 ? 0 : read_end[i - 1];
    return {read_cls.data() + from, read_end[i] - from};
  }
};

void flow_of(const std::vector<Box>& boxes, const std::vector<uint8_t>& writes, Flow& f) {
  const size_t n = boxes.size();
  f.cls.parent.clear();
  f.cls.sealed.clear();
  f.write_cls.assign(n, -1);
  f.read_end.assign(n, 0);
  f.read_cls.clear();
  f.read_prior.assign(n, 0);
  f.live.clear();
  Classes& cls = f.cls;
  for (size_t i = 0; i < n; ++i) {
    const Box& b = boxes[i];
    if (writes[i]) {
      const int32_t c = cls.make();
      f.write_cls[i] = c;
      // Each piece it overlaps gives way, in its place, to what is left of it.
      const auto hit = std::find_if(f.live.begin(), f.live.end(),
                                    [&](const Piece& pc) { return pc.box.overlaps(b); });
      if (hit != f.live.end()) {
        f.next.assign(f.live.begin(), hit);
        for (auto it = hit; it != f.live.end(); ++it) {
          f.rest.clear();
          subtract(it->box, b, f.rest);
          for (const Box& r : f.rest) f.next.push_back({r, it->cls});
        }
        f.live.swap(f.next);
      }
      f.live.push_back({b, c});
      f.read_end[i] = static_cast<uint32_t>(f.read_cls.size());
      continue;
    }
    double seen = 0;
    int32_t merged = -1;
    const size_t from = f.read_cls.size();
    for (const Piece& pc : f.live) {
      if (!pc.box.overlaps(b)) continue;
      seen += pc.box.intersect(b).volume();
      const int32_t root = cls.find(pc.cls);
      if (!cls.sealed[static_cast<size_t>(root)]) {
        if (merged < 0) {
          merged = root;
        } else {
          cls.unite(merged, root);
          merged = cls.find(merged);
        }
      }
      f.read_cls.push_back(pc.cls);
    }
    f.read_end[i] = static_cast<uint32_t>(f.read_cls.size());
    for (size_t k = from; k < f.read_cls.size(); ++k)
      cls.sealed[static_cast<size_t>(cls.find(f.read_cls[k]))] = 1;
    f.read_prior[i] = seen < b.volume();
  }
}
void add_unique(std::vector<int64_t>& v, int64_t b) {
  if (std::find(v.begin(), v.end(), b) == v.end()) v.push_back(b);
}

// The buffers and pages of consecutive tensors, numbered from 0 within the part, and what each
// of their accesses does to its task.
struct Part {
  std::vector<ir::Buffer> buffers;
  std::vector<int32_t> reads;                 // the buffers each read reads, access after access
  std::vector<std::array<int64_t, 4>> tiles;  // m_off, M_tile, n_off, N_tile of tile writes
  std::vector<ir::Page> pages;
  std::vector<std::pair<int32_t, int32_t>> to_page;  // (buffer, page)
  bool page_table = false;  // a tensor has two classes or more: the program gets a page table
  int64_t buffer_base = 0;  // its buffers' ids in the program start here
};

// What one access does to its task: a write writes buffers[buf] (the rectangle tiles[at] of it
// when n is 1); a read reads buffers reads[at, at + n).
struct Effect {
  int32_t buf = -1;
  uint32_t at = 0, n = 0;
};

int32_t add_buffer(Part& part, std::string name, ir::BufferKind kind, ir::DType dtype,
                   const std::array<int64_t, 4>& rc) {
  ir::Buffer b;
  b.name = std::move(name);
  b.kind = kind;
  b.dtype = dtype;
  b.shape = {rc[1], rc[3]};
  part.buffers.push_back(std::move(b));
  return static_cast<int32_t>(part.buffers.size() - 1);
}

// Pages: classes whose written footprints overlap share one (write-after-read/-write proofs).
void share_pages(Part& part, const std::vector<int32_t>& buf_of, const std::vector<Box>& bbox) {
  std::vector<size_t> roots;
  for (size_t c = 0; c < buf_of.size(); ++c)
    if (buf_of[c] >= 0) roots.push_back(c);
  if (roots.size() < 2) return;
  std::vector<size_t> comp(roots.size());
  std::iota(comp.begin(), comp.end(), 0);
  auto find = [&](size_t x) {
    while (comp[x] != x) x = comp[x] = comp[comp[x]];
    return x;
  };
  for (size_t a = 0; a < roots.size(); ++a)
    for (size_t b = a + 1; b < roots.size(); ++b)
      if (bbox[roots[a]].overlaps(bbox[roots[b]])) comp[find(b)] = find(a);
  part.page_table = true;
  std::vector<int32_t> page_of(roots.size(), -1);
  for (size_t a = 0; a < roots.size(); ++a) {
    const size_t head = find(a);
    bool shared = false;
    for (size_t b = 0; b < roots.size() && !shared; ++b) shared = b != a && find(b) == head;
    if (!shared) continue;
    const int32_t buf = buf_of[roots[a]];
    if (page_of[head] < 0) {
      page_of[head] = static_cast<int32_t>(part.pages.size());
      ir::Page pg;
      pg.space = ir::MemSpace::HBM;
      part.pages.push_back(pg);
    }
    ir::Page& pg = part.pages[static_cast<size_t>(page_of[head])];
    pg.nbytes = std::max(pg.nbytes, part.buffers[static_cast<size_t>(buf)].nbytes());
    part.to_page.emplace_back(buf, page_of[head]);
  }
}

// One thread's working vectors, kept from tensor to tensor.
struct Scratch {
  std::vector<Box> boxes, bbox;
  std::vector<uint8_t> writes, has_box;
  std::vector<int32_t> buf_of;
  std::vector<std::array<int64_t, 4>> whole;  // each class root's rectangle (flatten)
  Flow flow;
  std::vector<uint32_t> mine;  // a task's accesses, by tensor
};

// One tensor's buffers (its prior contents when read, then one per class root) and pages in
// `part`, and the effect of each of its `n` accesses in effect(i) (access(i): its offset, dims
// and strides; write(i): whether it writes).
template <class Access, class Write, class Out>
void plan_tensor(const std::string& name, const ElemType& ty, size_t n, Access access, Write write,
                 Out effect, Part& part, Scratch& s) {
  boxes_of(n, access, s.boxes);
  const std::vector<Box>& boxes = s.boxes;
  s.writes.resize(n);
  for (size_t i = 0; i < n; ++i) s.writes[i] = write(i);
  Flow& f = s.flow;
  flow_of(boxes, s.writes, f);
  Classes& cls = f.cls;
  const size_t nc = cls.parent.size();
  std::vector<Box>& bbox = s.bbox;
  bbox.resize(nc);
  s.has_box.assign(nc, 0);
  for (size_t i = 0; i < n; ++i) {
    if (f.write_cls[i] < 0) continue;
    const auto r = static_cast<size_t>(cls.find(f.write_cls[i]));
    if (s.has_box[r]) {
      bbox[r].grow(boxes[i]);
    } else {
      bbox[r] = boxes[i];
      s.has_box[r] = 1;
    }
  }
  int32_t prior = -1;
  if (std::find(f.read_prior.begin(), f.read_prior.end(), 1) != f.read_prior.end()) {
    Box pb{};
    bool first = true;
    for (size_t i = 0; i < n; ++i) {
      if (!f.read_prior[i]) continue;
      if (first) {
        pb = boxes[i];
        first = false;
      } else {
        pb.grow(boxes[i]);
      }
    }
    std::array<int64_t, 4> rc{};
    (void)flatten(pb, pb, rc);
    prior = add_buffer(part, nc > 0 ? name + "@in" : name, ir::BufferKind::IO_INPUT, ty.dtype, rc);
  }
  s.buf_of.assign(nc, -1);
  s.whole.resize(nc);
  int n_classes = 0;
  for (size_t c = 0; c < nc; ++c) {
    if (cls.find(static_cast<int32_t>(c)) != static_cast<int32_t>(c)) continue;
    std::array<int64_t, 4>& rc = s.whole[c];
    rc = {};
    (void)flatten(bbox[c], bbox[c], rc);
    std::string bn = n_classes == 0 ? name : name + "@" + std::to_string(n_classes);
    ++n_classes;
    s.buf_of[c] = add_buffer(part, std::move(bn), ir::BufferKind::ACTIVATION, ty.dtype, rc);
  }
  for (size_t i = 0; i < n; ++i) {
    Effect& e = effect(i);
    if (f.write_cls[i] < 0) {  // the prior contents and the classes it reads
      e.at = static_cast<uint32_t>(part.reads.size());
      if (f.read_prior[i]) part.reads.push_back(prior);
      for (int32_t c : f.reads(i)) part.reads.push_back(s.buf_of[static_cast<size_t>(cls.find(c))]);
      e.n = static_cast<uint32_t>(part.reads.size()) - e.at;
      continue;
    }
    // Its class's buffer, and the rectangle it writes when that is a tile of the buffer.
    const auto r = static_cast<size_t>(cls.find(f.write_cls[i]));
    e.buf = s.buf_of[r];
    std::array<int64_t, 4> rc{};
    if (flatten(bbox[r], boxes[i], rc) && rc != s.whole[r] && rc[1] <= INT32_MAX &&
        rc[3] <= INT32_MAX) {
      e.at = static_cast<uint32_t>(part.tiles.size());
      e.n = 1;
      part.tiles.push_back({rc[0], rc[1] - rc[0], rc[2], rc[3] - rc[2]});
    }
  }
  share_pages(part, s.buf_of, bbox);
}

constexpr std::string_view kTileKeys[] = {"m_off", "M_tile", "n_off", "N_tile"};

// A write's effect on its task: the buffer among its outputs, and the rectangle it writes as
// m_off/M_tile/n_off/N_tile while every output of the task is that same tile of its buffer
// (TileRegion; a task whose outputs' rectangles differ is modelled writing each whole).
void wire_write(ir::Task& task, int64_t buf, const std::array<int64_t, 4>* tile) {
  const bool first = task.outputs.empty();
  const bool again = std::find(task.outputs.begin(), task.outputs.end(), buf) != task.outputs.end();
  add_unique(task.outputs, buf);
  if (again) tile = nullptr;
  if (first) {
    if (!tile) return;
    task.params.reserve(task.params.size() + 4);
    const bool none = task.params.empty();
    for (size_t k = 0; k < 4; ++k) {
      if (none) {
        task.params.push_back({std::string(kTileKeys[k]), ir::ParamValue::of_int((*tile)[k])});
      } else {
        task.set_param(kTileKeys[k], ir::ParamValue::of_int((*tile)[k]));
      }
    }
    return;
  }
  bool same = tile != nullptr;
  for (size_t k = 0; k < 4 && same; ++k) {
    const std::optional<int64_t> v = task.int_param(kTileKeys[k]);
    same = v && *v == (*tile)[k];
  }
  if (!same)
    std::erase_if(task.params, [](const ir::Param& prm) {
      return std::find(std::begin(kTileKeys), std::end(kTileKeys), prm.key) != std::end(kTileKeys);
    });
}

// A RegionMap's accesses grouped by tensor: tensor t's are order[first[t], first[t + 1]), in
// program order.
struct Grouped {
  std::span<const RegionMap::Tensor> tensors;
  std::span<const RegionMap::Access> accesses;
  std::span<const int64_t> extents;
  std::vector<uint32_t> first, order;
  Grouped(std::span<const RegionMap::Tensor> t, std::span<const RegionMap::Access> a,
          std::span<const int64_t> e)
      : tensors(t), accesses(a), extents(e), first(t.size() + 1, 0), order(a.size()) {
    for (const RegionMap::Access& x : a) ++first[static_cast<size_t>(x.tensor) + 1];
    for (size_t k = 0; k < t.size(); ++k) first[k + 1] += first[k];
    std::vector<uint32_t> at(first.begin(), first.end() - 1);
    for (size_t k = 0; k < a.size(); ++k)
      order[at[static_cast<size_t>(a[k].tensor)]++] = static_cast<uint32_t>(k);
  }
  std::span<const uint32_t> of(size_t t) const {
    return {order.data() + first[t], first[t + 1] - first[t]};
  }
  std::span<const int64_t> dims(const RegionMap::Access& x) const {
    return extents.subspan(x.extents, x.rank);
  }
  std::span<const int64_t> strides(const RegionMap::Access& x) const {
    return extents.subspan(x.extents + x.rank, x.rank);
  }
};

// Plans tensors [from, to) into `part`, and the effects of their accesses (by access).
void plan_part(const Grouped& g, size_t from, size_t to, Part& part, std::vector<Effect>& effects,
               Scratch& s) {
  for (size_t t = from; t < to; ++t) {
    const std::span<const uint32_t> acc = g.of(t);
    if (acc.empty()) continue;
    plan_tensor(
        g.tensors[t].name, g.tensors[t].type, acc.size(),
        [&](size_t i) {
          const RegionMap::Access& a = g.accesses[acc[i]];
          return std::tuple(a.offset, g.dims(a), g.strides(a));
        },
        [&](size_t i) { return g.accesses[acc[i]].write; },
        [&](size_t i) -> Effect& { return effects[acc[i]]; }, part, s);
  }
}

// The parts' buffers and pages, in order, into the program.
void add_parts(ir::Program& p, std::vector<Part>& parts) {
  size_t n = 0;
  for (const Part& part : parts) n += part.buffers.size();
  p.buffers.reserve(p.buffers.size() + n);
  for (Part& part : parts) {
    part.buffer_base = static_cast<int64_t>(p.buffers.size());
    std::move(part.buffers.begin(), part.buffers.end(), std::back_inserter(p.buffers));
    part.buffers = std::vector<ir::Buffer>();
    if (!part.page_table) continue;
    if (!p.pages) p.pages.emplace();
    const auto page_base = static_cast<int64_t>(p.pages->pages.size());
    p.pages->pages.insert(p.pages->pages.end(), part.pages.begin(), part.pages.end());
    for (const auto& [buf, page] : part.to_page)
      p.pages->buffer_to_page.emplace_back(part.buffer_base + buf, page_base + page);
  }
}

// Task `task`'s accesses [from, to) in tensor order (each tensor's in program order): the
// buffers its reads read become its inputs, each once, and its writes its outputs.
void wire_task(ir::Task& task, const Grouped& g, size_t from, size_t to,
               const std::vector<Part>& parts, const std::vector<uint32_t>& part_of,
               const std::vector<Effect>& effects, std::vector<uint32_t>& mine) {
  mine.resize(to - from);
  std::iota(mine.begin(), mine.end(), static_cast<uint32_t>(from));
  auto tensor = [&](uint32_t a) { return g.accesses[a].tensor; };
  if (mine.size() <= 32) {  // insertion sort: stable, no allocation
    for (size_t i = 1; i < mine.size(); ++i)
      for (size_t j = i; j > 0 && tensor(mine[j - 1]) > tensor(mine[j]); --j)
        std::swap(mine[j - 1], mine[j]);
  } else {
    std::stable_sort(mine.begin(), mine.end(),
                     [&](uint32_t a, uint32_t b) { return tensor(a) < tensor(b); });
  }
  size_t reads = 0, writes = 0;
  for (uint32_t a : mine) {
    if (effects[a].buf < 0) {
      reads += effects[a].n;
    } else {
      ++writes;
    }
  }
  if (reads > 0) task.inputs.reserve(task.inputs.size() + reads);
  if (writes > 0) task.outputs.reserve(task.outputs.size() + writes);
  for (uint32_t a : mine) {
    const Effect& e = effects[a];
    const Part& part = parts[part_of[static_cast<size_t>(tensor(a))]];
    if (e.buf < 0) {
      for (uint32_t k = e.at; k < e.at + e.n; ++k)
        add_unique(task.inputs, part.buffer_base + part.reads[k]);
    } else {
      wire_write(task, part.buffer_base + e.buf, e.n ? &part.tiles[e.at] : nullptr);
    }
  }
}

}  // namespace

Region region_of(const ir::Program& p, const ir::Task& t, int64_t b, bool output, size_t max_dims) {
  const ir::Buffer& buf = p.buffers[static_cast<size_t>(b)];
  Region x;
  std::vector<int64_t> shape = buf.shape;
  if (shape.empty()) shape = {1};
  while (shape.size() > std::max<size_t>(max_dims, 1)) {  // fold leading dims
    shape[1] *= shape[0];
    shape.erase(shape.begin());
  }
  x.dims = shape;
  x.strides.assign(shape.size(), 1);
  for (size_t k = shape.size() - 1; k > 0; --k) x.strides[k - 1] = x.strides[k] * shape[k];
  const auto n_off = t.int_param("n_off"), n_tile = t.int_param("N_tile");
  if (output && (t.op == ir::Op::GEMV_TILE || t.op == ir::Op::GEMM_TILE) && n_off && n_tile) {
    x.dims.back() = *n_tile;
    x.offset = *n_off;
    const auto m_off = t.int_param("m_off"), m_tile = t.int_param("M_tile");
    if (t.op == ir::Op::GEMM_TILE && m_off && m_tile && x.dims.size() >= 2) {
      x.dims[x.dims.size() - 2] = *m_tile;
      x.offset += *m_off * x.strides[x.strides.size() - 2];
    }
  }
  return x;
}

int32_t RegionMap::tensor(std::string name, ElemType type) {
  tensors_.push_back({std::move(name), type});
  return static_cast<int32_t>(tensors_.size() - 1);
}

void RegionMap::reserve(size_t accesses, size_t extents) {
  accesses_.reserve(accesses);
  extents_.reserve(extents);
}

void RegionMap::access(uint32_t task, int32_t tensor, bool write, int64_t offset,
                       std::span<const int64_t> dims, std::span<const int64_t> strides) {
  accesses_.push_back({offset, task, tensor, static_cast<uint32_t>(extents_.size()),
                       static_cast<uint32_t>(dims.size()), write});
  extents_.insert(extents_.end(), dims.begin(), dims.end());
  extents_.insert(extents_.end(), strides.begin(), strides.end());
}

// Every tensor is planned on its own: its buffers and pages (numbered within a part of
// consecutive tensors) and the effect of each of its accesses, parts on several threads. Then
// the parts' buffers and pages join the program in tensor order, and each task takes the effects
// of its accesses in tensor order, tasks on several threads: the program of planning and
// applying one tensor after the other, whatever the threads.
void RegionMap::build(ir::Program& p, size_t threads) {
  const Grouped g(tensors_, accesses_, extents_);
  // Parts: runs of tensors of at least kPartAccesses accesses (the last one may have fewer).
  constexpr uint32_t kPartAccesses = 2048;
  std::vector<uint32_t> part_first{0}, part_of(tensors_.size());
  for (size_t t = 0; t < tensors_.size(); ++t) {
    part_of[t] = static_cast<uint32_t>(part_first.size() - 1);
    if (g.first[t + 1] - g.first[part_first.back()] >= kPartAccesses || t + 1 == tensors_.size())
      part_first.push_back(static_cast<uint32_t>(t + 1));
  }
  std::vector<Part> parts(part_first.size() - 1);
  std::vector<Effect> effects(accesses_.size());
  ir::Pool pool(threads == 0 ? ir::max_threads() : threads);
  std::vector<Scratch> scratch(pool.size());
  // The biggest parts first, so that a big one does not start last.
  std::vector<uint32_t> by_size(parts.size());
  std::iota(by_size.begin(), by_size.end(), 0u);
  auto size = [&](uint32_t k) { return g.first[part_first[k + 1]] - g.first[part_first[k]]; };
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](uint32_t a, uint32_t b) { return size(a) > size(b); });
  pool.run(parts.size(), [&](size_t w, size_t item) {
    const uint32_t k = by_size[item];
    plan_part(g, part_first[k], part_first[k + 1], parts[k], effects, scratch[w]);
  });
  extents_ = std::vector<int64_t>();  // planned: only the tasks' effects are left to take
  add_parts(p, parts);
  // Each task's effects, on pieces of the accesses that each start at a task's first access.
  const size_t n = accesses_.size();
  const size_t pieces = std::min<size_t>(pool.size() * 4, n / kPartAccesses + 1);
  std::vector<size_t> cut(pieces + 1, n);
  for (size_t k = 0; k < pieces; ++k) {
    size_t a = n * k / pieces;
    while (a > 0 && a < n && accesses_[a].task == accesses_[a - 1].task) ++a;
    cut[k] = a;
  }
  pool.run(pieces, [&](size_t w, size_t k) {
    for (size_t a = cut[k]; a < cut[k + 1];) {
      size_t b = a + 1;
      while (b < cut[k + 1] && accesses_[b].task == accesses_[a].task) ++b;
      wire_task(p.tasks[accesses_[a].task], g, a, b, parts, part_of, effects, scratch[w].mine);
      a = b;
    }
  });
}
bool region_fits(uint64_t offset, std::span<const int64_t> dims, std::span<const int64_t> strides) {
  if (offset > static_cast<uint64_t>(INT64_MAX) || dims.size() != strides.size()) return false;
  int64_t lo = static_cast<int64_t>(offset), hi = lo;
  for (size_t k = 0; k < dims.size(); ++k) {
    const std::optional<int64_t> span = ir::checked_mul(dims[k] - 1, strides[k]);
    if (!span) return false;
    const std::optional<int64_t> end = ir::checked_add(*span < 0 ? lo : hi, *span);
    if (!end) return false;
    (*span < 0 ? lo : hi) = *end;
  }
  return true;
}

}  // namespace amk::formats::detail
