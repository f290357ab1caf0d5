#include "formats/regions.h"

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <tuple>

#include "ir/checked.h"

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
      f.next.clear();
      for (const Piece& pc : f.live) {
        f.rest.clear();
        subtract(pc.box, b, f.rest);
        for (const Box& r : f.rest) f.next.push_back({r, pc.cls});
      }
      f.next.push_back({b, c});
      f.live.swap(f.next);
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

// Each access's task reads the buffers of the classes it reads (and the prior contents), writes
// its class's buffer, and names the rectangle it writes as m_off/M_tile/n_off/N_tile when that is
// a tile of the buffer.
void add_unique(std::vector<int64_t>& v, int64_t b) {
  if (std::find(v.begin(), v.end(), b) == v.end()) v.push_back(b);
}

// Reads are appended to `reads` as (task, buffer), for assign_inputs.
void wire_tasks(ir::Program& p, const std::vector<uint32_t>& task_of, Flow& f, int64_t prior,
                const std::vector<int64_t>& buf_of, const std::vector<Box>& boxes,
                const std::vector<Box>& bbox, const std::vector<std::array<int64_t, 4>>& whole,
                std::vector<std::pair<uint32_t, int64_t>>& reads) {
  Classes& cls = f.cls;
  const std::vector<int32_t>& write_cls = f.write_cls;
  const std::vector<uint8_t>& read_prior = f.read_prior;
  for (size_t i = 0; i < task_of.size(); ++i) {
    if (write_cls[i] < 0) {
      if (read_prior[i]) reads.emplace_back(task_of[i], prior);
      for (int32_t c : f.reads(i))
        reads.emplace_back(task_of[i], buf_of[static_cast<size_t>(cls.find(c))]);
      continue;
    }
    ir::Task& task = p.tasks[task_of[i]];
    const auto r = static_cast<size_t>(cls.find(write_cls[i]));
    const bool first = task.outputs.empty();
    const bool again =
        std::find(task.outputs.begin(), task.outputs.end(), buf_of[r]) != task.outputs.end();
    add_unique(task.outputs, buf_of[r]);
    std::array<int64_t, 4> rc{};
    const bool tile = !again && flatten(bbox[r], boxes[i], rc) && rc != whole[r] &&
                      rc[1] <= INT32_MAX && rc[3] <= INT32_MAX;
    const std::array<int64_t, 4> params{rc[0], rc[1] - rc[0], rc[2], rc[3] - rc[2]};
    static constexpr std::string_view kKeys[] = {"m_off", "M_tile", "n_off", "N_tile"};
    if (first) {
      if (!tile) continue;
      task.params.reserve(task.params.size() + 4);
      const bool none = task.params.empty();
      for (size_t k = 0; k < 4; ++k) {
        if (none) {
          task.params.push_back({std::string(kKeys[k]), ir::ParamValue::of_int(params[k])});
        } else {
          task.set_param(kKeys[k], ir::ParamValue::of_int(params[k]));
        }
      }
      continue;
    }
    // Every output of a task shares its tile (TileRegion): a task whose outputs' rectangles
    // differ is modelled writing each whole.
    bool same = tile;
    for (size_t k = 0; k < 4 && same; ++k) {
      const std::optional<int64_t> v = task.int_param(kKeys[k]);
      same = v && *v == params[k];
    }
    if (!same)
      std::erase_if(task.params, [](const ir::Param& prm) {
        return std::find(std::begin(kKeys), std::end(kKeys), prm.key) != std::end(kKeys);
      });
  }
}

// Each task's inputs: the buffers `reads` names for it, in order, each once (one allocation).
void assign_inputs(ir::Program& p, const std::vector<std::pair<uint32_t, int64_t>>& reads) {
  std::vector<uint32_t> end(p.tasks.size() + 1, 0);
  for (const auto& [task, b] : reads) ++end[task + 1];
  for (size_t t = 0; t < p.tasks.size(); ++t) end[t + 1] += end[t];
  std::vector<int64_t> bufs(reads.size());
  std::vector<uint32_t> at(end.begin(), end.end() - 1);
  for (const auto& [task, b] : reads) bufs[at[task]++] = b;
  for (size_t t = 0; t < p.tasks.size(); ++t) {
    if (end[t] == end[t + 1]) continue;
    std::vector<int64_t>& in = p.tasks[t].inputs;
    in.reserve(in.size() + end[t + 1] - end[t]);
    for (uint32_t k = end[t]; k < end[t + 1]; ++k) add_unique(in, bufs[k]);
  }
}

// Pages: classes whose written footprints overlap share one (write-after-read/-write proofs).
void share_pages(ir::Program& p, const std::vector<int64_t>& buf_of, const std::vector<Box>& bbox) {
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
  if (!p.pages) p.pages.emplace();
  std::vector<int64_t> page_of(roots.size(), -1);
  for (size_t a = 0; a < roots.size(); ++a) {
    const size_t head = find(a);
    bool shared = false;
    for (size_t b = 0; b < roots.size() && !shared; ++b) shared = b != a && find(b) == head;
    if (!shared) continue;
    const ir::Buffer& buf = p.buffers[static_cast<size_t>(buf_of[roots[a]])];
    if (page_of[head] < 0) {
      page_of[head] = static_cast<int64_t>(p.pages->pages.size());
      ir::Page pg;
      pg.space = ir::MemSpace::HBM;
      p.pages->pages.push_back(pg);
    }
    ir::Page& pg = p.pages->pages[static_cast<size_t>(page_of[head])];
    pg.nbytes = std::max(pg.nbytes, buf.nbytes());
    p.pages->buffer_to_page.emplace_back(buf_of[roots[a]], page_of[head]);
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
  accesses_.push_back({task, tensor, static_cast<uint32_t>(extents_.size()),
                       static_cast<uint32_t>(dims.size()), write, offset});
  extents_.insert(extents_.end(), dims.begin(), dims.end());
  extents_.insert(extents_.end(), strides.begin(), strides.end());
}

// One tensor's working vectors, kept from tensor to tensor, and the reads of every tensor.
struct RegionMap::Scratch {
  std::vector<Box> boxes, bbox;
  std::vector<uint8_t> writes, has_box;
  std::vector<int64_t> buf_of;
  std::vector<uint32_t> task_of;
  std::vector<std::array<int64_t, 4>> whole;  // each class root's rectangle (flatten)
  Flow flow;
  std::vector<std::pair<uint32_t, int64_t>> reads;  // (task, buffer)
};

void RegionMap::build(ir::Program& p) {
  // Each tensor's accesses, in program order: order[first[t], first[t + 1]).
  std::vector<uint32_t> first(tensors_.size() + 1, 0), order(accesses_.size());
  for (const Access& a : accesses_) ++first[static_cast<size_t>(a.tensor) + 1];
  for (size_t t = 0; t < tensors_.size(); ++t) first[t + 1] += first[t];
  std::vector<uint32_t> at(first.begin(), first.end() - 1);
  for (size_t a = 0; a < accesses_.size(); ++a)
    order[at[static_cast<size_t>(accesses_[a].tensor)]++] = static_cast<uint32_t>(a);
  // At most a buffer of prior contents per tensor and one per write.
  size_t writes = 0;
  for (const Access& a : accesses_) writes += a.write;
  p.buffers.reserve(p.buffers.size() + tensors_.size() + writes);
  Scratch s;
  for (size_t t = 0; t < tensors_.size(); ++t)
    build_tensor(p, tensors_[t], {order.data() + first[t], first[t + 1] - first[t]}, s);
  assign_inputs(p, s.reads);
}

void RegionMap::build_tensor(ir::Program& p, const Tensor& t, std::span<const uint32_t> accesses,
                             Scratch& s) {
  if (accesses.empty()) return;
  std::vector<Box>& boxes = s.boxes;
  boxes_of(
      accesses.size(),
      [&](size_t i) {
        const Access& a = accesses_[accesses[i]];
        return std::tuple(a.offset, dims(a), strides(a));
      },
      boxes);
  std::vector<uint8_t>& writes = s.writes;
  writes.resize(accesses.size());
  for (size_t i = 0; i < accesses.size(); ++i) writes[i] = accesses_[accesses[i]].write;
  Flow& f = s.flow;
  flow_of(boxes, writes, f);
  Classes& cls = f.cls;
  const std::vector<int32_t>& write_cls = f.write_cls;
  const std::vector<uint8_t>& read_prior = f.read_prior;
  // Buffers: the tensor's prior contents (when read), then one per class root.
  const ElemType& ty = t.type;
  std::vector<int64_t>& buf_of = s.buf_of;
  std::vector<Box>& bbox = s.bbox;
  std::vector<uint8_t>& has_box = s.has_box;
  buf_of.assign(cls.parent.size(), -1);
  bbox.resize(cls.parent.size());
  has_box.assign(cls.parent.size(), 0);
  for (size_t i = 0; i < accesses.size(); ++i) {
    if (write_cls[i] < 0) continue;
    const auto r = static_cast<size_t>(cls.find(write_cls[i]));
    if (has_box[r]) {
      bbox[r].grow(boxes[i]);
    } else {
      bbox[r] = boxes[i];
      has_box[r] = 1;
    }
  }
  const bool written = !cls.parent.empty();
  int64_t prior = -1;
  if (std::find(read_prior.begin(), read_prior.end(), 1) != read_prior.end()) {
    Box pb{};
    bool first = true;
    for (size_t i = 0; i < accesses.size(); ++i) {
      if (!read_prior[i]) continue;
      if (first) {
        pb = boxes[i];
        first = false;
      } else {
        pb.grow(boxes[i]);
      }
    }
    std::array<int64_t, 4> rc{};
    (void)flatten(pb, pb, rc);
    prior = p.add_buffer(written ? t.name + "@in" : t.name, ir::BufferKind::IO_INPUT, ty.dtype,
                         {rc[1], rc[3]});
  }
  int n_classes = 0;
  s.whole.resize(cls.parent.size());
  for (size_t c = 0; c < cls.parent.size(); ++c) {
    if (cls.find(static_cast<int32_t>(c)) != static_cast<int32_t>(c)) continue;
    std::array<int64_t, 4>& rc = s.whole[c];
    rc = {};
    (void)flatten(bbox[c], bbox[c], rc);
    std::string name = n_classes == 0 ? t.name : t.name + "@" + std::to_string(n_classes);
    ++n_classes;
    buf_of[c] = p.add_buffer(std::move(name), ir::BufferKind::ACTIVATION, ty.dtype, {rc[1], rc[3]});
  }
  std::vector<uint32_t>& task_of = s.task_of;
  task_of.resize(accesses.size());
  for (size_t i = 0; i < accesses.size(); ++i) task_of[i] = accesses_[accesses[i]].task;
  wire_tasks(p, task_of, f, prior, buf_of, boxes, bbox, s.whole, s.reads);
  share_pages(p, buf_of, bbox);
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
