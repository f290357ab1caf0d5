// PTO's deps.json as dep_gen_replay's write_deps_json() writes it (one line, 64-bit values as
// strings) and scope_stats.jsonl as the scope_stats collector writes it; and both files for an
// amk program.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "formats/formats.h"
#include "formats/pto.h"
#include "ir/graph.h"

namespace amk::formats {
namespace pto {
namespace {

std::string uint_array(std::span<const int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{}", i ? "," : "", v[i]);
  return s + "]";
}

std::string ring_list(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", v[i]);
  return s;
}

}  // namespace

std::string write_deps(const Deps& d) {
  std::string out = "{\"tasks\":[";
  for (size_t i = 0; i < d.tasks.size(); ++i) {
    const Task& t = d.tasks[i];
    out += fmt::format(
        "{}{{\"task_id\":\"{}\",\"scope\":\"{}\",\"early_dispatch\":{},\"kernel_ids\":[{},{},{}],"
        "\"block_num\":{},\"args\":[",
        i ? "," : "", t.task_id, t.scope.raw, t.early_dispatch ? "true" : "false", t.kernel_ids[0],
        t.kernel_ids[1], t.kernel_ids[2], t.block_num);
    for (size_t a = 0; a < t.args.size(); ++a) {
      const Arg& x = t.args[a];
      out += fmt::format("{}{{\"idx\":{},\"type\":\"{}\"", a ? "," : "", x.idx, x.type.raw);
      if (x.has_tensor)
        out += fmt::format(
            ",\"tensor_id\":\"{}\",\"dtype\":\"{}\",\"shape\":{},\"start_offset\":\"{}\","
            "\"strides\":{}",
            x.tensor_id, x.dtype.raw, uint_array(t.values(x.shape)), x.start_offset,
            uint_array(t.values(x.strides)));
      out += '}';
    }
    out += "]}";
  }
  out += "],\"tensors\":[";
  for (size_t i = 0; i < d.tensors.size(); ++i) {
    const Tensor& t = d.tensors[i];
    out += fmt::format(
        "{}{{\"tensor_id\":\"{}\",\"buffer_addr\":\"{}\",\"version\":{},\"dtype\":\"{}\","
        "\"buffer_numel\":\"{}\"}}",
        i ? "," : "", t.tensor_id, t.buffer_addr, t.version, t.dtype.raw, t.buffer_numel);
  }
  out += "],\"edges\":[";
  for (size_t i = 0; i < d.edges.size(); ++i) {
    const Edge& e = d.edges[i];
    const EdgeDetail& x = d.details[i];
    std::string flags = "[";
    for (size_t k = 0; k < x.flags.size(); ++k)
      flags += fmt::format("{}\"{}\"", k ? "," : "", x.flags[k]);
    flags += "]";
    out += fmt::format(
        "{}{{\"pred\":\"{}\",\"succ\":\"{}\",\"arg\":{},\"source\":\"{}\","
        "\"flags\":{}",
        i ? "," : "", e.pred, e.succ, e.arg, e.source.raw, flags);
    if (e.source == "tensormap") out += fmt::format(",\"overlap\":\"{}\"", x.overlap);
    if (e.source != "explicit")
      out += fmt::format(
          ",\"tensor_id\":\"{}\",\"consumer_dtype\":\"{}\",\"consumer_shape\":{},"
          "\"consumer_start_offset\":\"{}\",\"consumer_strides\":{}",
          e.tensor_id, x.consumer_dtype, uint_array(x.consumer_shape), x.consumer_start_offset,
          uint_array(x.consumer_strides));
    if (e.source == "tensormap")
      out += fmt::format(
          ",\"producer_shape\":{},\"producer_start_offset\":\"{}\","
          "\"producer_strides\":{}",
          uint_array(x.producer_shape), x.producer_start_offset, uint_array(x.producer_strides));
    out += '}';
  }
  out += "]}\n";
  return out;
}

std::string write_scope_stats(const ScopeStats& s) {
  std::string out = fmt::format(
      "{{\"version\": {}, \"fatal\": {}, \"dropped\": {}, \"total\": {}, \"task_window_max\": "
      "[{}], \"heap_max\": [{}], \"dep_pool_max\": [{}], \"tensormap_max\": {}}}\n",
      s.version, s.fatal ? "true" : "false", s.dropped, s.total, ring_list(s.task_window_max),
      ring_list(s.heap_max), ring_list(s.dep_pool_max), s.tensormap_max);
  for (const ScopeSample& x : s.samples)
    out += fmt::format(
        "{{\"site\": \"{}\", \"phase\": \"{}\", \"depth\": {}, \"ring\": {}, "
        "\"task_window_start\": {}, \"task_window_end\": {}, \"heap_start\": {}, \"heap_end\": {}, "
        "\"dep_pool_start\": {}, \"dep_pool_end\": {}, \"tensormap\": {}}}\n",
        x.site, x.phase, x.depth, x.ring, x.task_window_start, x.task_window_end, x.heap_start,
        x.heap_end, x.dep_pool_start, x.dep_pool_end, x.tensormap);
  return out;
}

uint64_t tensor_id(uint64_t buffer_addr, int32_t version) {
  // dep_gen_replay make_tensor_id: FNV-1a over the address's and the version's bytes.
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < 8; ++i) {
    h ^= (buffer_addr >> (8 * i)) & 0xff;
    h *= 0x100000001b3ull;
  }
  const auto v = static_cast<uint32_t>(version);
  for (int i = 0; i < 4; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace pto

namespace {

constexpr size_t kMaxTensorDims = 5;  // simpler data_type.h MAX_TENSOR_DIMS

// The runtime's capacity for ring r: the export's override, else the default.
std::vector<int64_t> per_ring(const ir::Runtime& launch, ir::Cap k) {
  std::vector<int64_t> v;
  for (int r = 0; r < ir::kPtoRings; ++r) {
    ir::Runtime def = launch;
    def.kind = ir::RuntimeKind::Pto;
    v.push_back(def.value(k, r).value_or(0));
  }
  return v;
}

// scope_stats' header: the rings' capacities the export runs with.
pto::ScopeStats stats_header(const ir::Runtime& launch) {
  pto::ScopeStats ss;
  ss.task_window_max = per_ring(launch, ir::Cap::task_window);
  ss.heap_max = per_ring(launch, ir::Cap::heap);
  ss.dep_pool_max = per_ring(launch, ir::Cap::dep_pool);
  ir::Runtime def = launch;
  def.kind = ir::RuntimeKind::Pto;
  ss.tensormap_max = def.value(ir::Cap::tensormap).value_or(65536);
  return ss;
}

// Every buffer as a tensor at its own address (PTO's tensor_id hashes address and version); the
// tensor ids by buffer.
std::vector<uint64_t> write_tensors(const ir::Program& p, pto::Deps& d) {
  std::vector<uint64_t> id(p.buffers.size());
  uint64_t next = 0x40000000ull;
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    const ir::Buffer& buf = p.buffers[b];
    id[b] = pto::tensor_id(next, 0);
    pto::Tensor t;
    t.tensor_id = id[b];
    t.buffer_addr = next;
    t.dtype.raw = pto::dtype_name(buf.dtype);
    t.buffer_numel = static_cast<uint64_t>(std::max<int64_t>(buf.numel(), 1));
    d.tensors.push_back(std::move(t));
    next += (static_cast<uint64_t>(std::max<int64_t>(buf.nbytes(), 1)) + 4095) / 4096 * 4096;
  }
  return id;
}

// What the export knows of the program's buffers.
struct Buffers {
  std::vector<uint64_t> id;          // tensor_id
  std::vector<int64_t> producer_of;  // the first writer in submit order (-1: none)
  std::vector<uint8_t> created;      // a runtime-allocated OUTPUT of its one writer
};

// A task's arguments: inputs, then outputs (existing tensors, or runtime-allocated OUTPUTs).
void add_args(const ir::Program& p, const ir::Task& task, const Buffers& bs, pto::Task& x,
              pto::ArgStore& store) {
  std::vector<pto::Arg> args;
  std::vector<int64_t> extents;
  auto add = [&](const std::vector<int64_t>& v) {
    const pto::Extent e{static_cast<uint32_t>(extents.size()), static_cast<uint32_t>(v.size())};
    extents.insert(extents.end(), v.begin(), v.end());
    return e;
  };
  int64_t idx = 0;
  auto arg = [&](int64_t b, const char* type, bool output) {
    const ir::Buffer& buf = p.buffers[static_cast<size_t>(b)];
    const detail::Region reg = detail::region_of(p, task, b, output, kMaxTensorDims);
    pto::Arg a;
    a.idx = idx++;
    a.type.raw = type;
    a.has_tensor = true;
    a.tensor_id = bs.id[static_cast<size_t>(b)];
    a.dtype.raw = pto::dtype_name(buf.dtype);
    a.shape = add(reg.dims);
    a.strides = add(reg.strides);
    a.start_offset = static_cast<uint64_t>(reg.offset);
    args.push_back(std::move(a));
  };
  for (int64_t b : task.inputs) arg(b, "INPUT", false);
  for (int64_t b : task.outputs) {
    if (!bs.created[static_cast<size_t>(b)]) {
      arg(b, "OUTPUT_EXISTING", true);
      continue;
    }
    pto::Arg a;  // a runtime-allocated output: no tensor until its consumers name it
    a.idx = idx++;
    a.type.raw = "OUTPUT";
    args.push_back(std::move(a));
  }
  x.args = store.add(std::span<const pto::Arg>(args));
  x.extents = store.add(std::span<const int64_t>(extents));
}

// The edge from producer q to `task`, on the tensor it reads of q's (explicit when none), and its
// details.
pto::Edge edge_of(const ir::Program& p, const ir::Task& task, uint32_t q, const Buffers& bs,
                  pto::EdgeDetail& x) {
  pto::Edge e;
  x.flags = {"wait"};
  int64_t via = -1;
  for (size_t i = 0; i < task.inputs.size() && via < 0; ++i)
    if (bs.producer_of[static_cast<size_t>(task.inputs[i])] == q) via = static_cast<int64_t>(i);
  if (via < 0) {
    e.source.raw = "explicit";
    x.flags = {"wait", "retain"};
    return e;
  }
  const int64_t b = task.inputs[static_cast<size_t>(via)];
  const bool created = bs.created[static_cast<size_t>(b)];
  e.source.raw = created ? "creator" : "tensormap";
  if (created) x.flags = {"wait", "retain"};
  e.arg = via;
  x.overlap = "covered";
  e.has_tensor = true;
  e.tensor_id = bs.id[static_cast<size_t>(b)];
  x.consumer_dtype = std::string(pto::dtype_name(p.buffers[static_cast<size_t>(b)].dtype));
  const detail::Region cr = detail::region_of(p, task, b, false, kMaxTensorDims);
  const detail::Region pr = detail::region_of(p, p.tasks[q], b, true, kMaxTensorDims);
  x.consumer_shape = cr.dims;
  x.consumer_strides = cr.strides;
  x.consumer_start_offset = static_cast<uint64_t>(cr.offset);
  x.producer_shape = pr.dims;
  x.producer_strides = pr.strides;
  x.producer_start_offset = static_cast<uint64_t>(pr.offset);
  if (pr.dims != cr.dims || pr.offset != cr.offset) x.overlap = "other";
  return e;
}

Buffers buffers_of(const ir::Program& p, const std::vector<uint32_t>& order, bool runtime_outputs,
                   pto::Deps& d) {
  Buffers bs;
  bs.id = write_tensors(p, d);
  bs.producer_of.assign(p.buffers.size(), -1);
  std::vector<int32_t> writers(p.buffers.size(), 0);
  for (uint32_t t : order)
    for (int64_t b : p.tasks[t].outputs) {
      ++writers[static_cast<size_t>(b)];
      if (bs.producer_of[static_cast<size_t>(b)] < 0) bs.producer_of[static_cast<size_t>(b)] = t;
    }
  // With runtime_outputs, an activation one task writes comes from that task's ring heap.
  bs.created.assign(p.buffers.size(), 0);
  for (size_t b = 0; b < p.buffers.size(); ++b)
    bs.created[b] =
        runtime_outputs && writers[b] == 1 && p.buffers[b].kind == ir::BufferKind::ACTIVATION;
  return bs;
}

}  // namespace

ir::Result<PtoFiles> export_pto(const ir::Program& p, const PtoExport& o) {
  const ir::Graph g = ir::Graph::build(p);
  if (!g.acyclic())
    return ir::error("export.cycle", "the program's dependency graph has a cycle: no PTO graph");
  const std::vector<uint32_t>& order = g.topo_order();  // PTO submits in dependency order
  const int depth = std::max(1, o.depth);
  const int ring = std::min(depth, ir::kPtoRings - 1);
  const int64_t per_scope = o.scope_tasks > 0 ? o.scope_tasks : static_cast<int64_t>(order.size());
  pto::Deps d;
  pto::ScopeStats ss = stats_header(o.launch);
  const Buffers bs = buffers_of(p, order, o.runtime_outputs, d);
  const ir::Runtime* record =
      p.runtime && p.runtime->kind == ir::RuntimeKind::Pto ? &*p.runtime : nullptr;
  // Scopes: the root (depth 0, ring 0), then scopes of `per_scope` tasks at `depth`, nested in one
  // scope per level above it.
  std::array<int64_t, ir::kPtoRings> head{}, heap{}, deps{};
  auto sample = [&](std::string site, const char* phase, int dep) {
    pto::ScopeSample s;
    s.site = std::move(site);
    s.phase = phase;
    s.depth = dep;
    s.ring = std::min(dep, ir::kPtoRings - 1);
    const auto r = static_cast<size_t>(s.ring);
    s.task_window_end = head[r];
    s.heap_end = s.heap_start = heap[r];
    s.dep_pool_start = 1;
    s.dep_pool_end = 1 + deps[r];
    ss.samples.push_back(std::move(s));
  };
  sample("(unknown):0", "begin", 0);
  for (int k = 1; k < depth; ++k) sample(fmt::format("export.cpp:{}", k), "begin", k);
  std::vector<uint64_t> pto_id(p.tasks.size());
  const auto outer = static_cast<size_t>(depth > 1 ? std::max<int64_t>(o.outer_tasks, 0) : 0);
  const int outer_ring = std::min(depth - 1, ir::kPtoRings - 1);
  for (size_t k = 0; k < order.size(); ++k) {
    const bool inner = k >= outer;
    if (inner && (k - outer) % static_cast<size_t>(per_scope) == 0) {
      if (k > outer) sample(fmt::format("export.cpp:{}", depth), "end", depth);
      sample(fmt::format("export.cpp:{}", depth), "begin", depth);
    }
    const uint32_t t = order[k];
    const ir::Task& task = p.tasks[t];
    const auto r = static_cast<size_t>(inner ? ring : outer_ring);
    pto::Task x;
    x.task_id = static_cast<uint64_t>(r) << 32 | static_cast<uint64_t>(head[r]++);
    pto_id[t] = x.task_id;
    // A task of a PTO graph keeps what its record says; amk's own get kernels by op.
    const ir::ForeignTask* own =
        record && t < record->tasks.size() && record->tasks[t].id != UINT64_MAX ? &record->tasks[t]
                                                                                : nullptr;
    if (own) {
      for (size_t i = 0; i < 3; ++i) x.kernel_ids[i] = own->kernels[i];
      x.early_dispatch = own->early;
    } else {
      const bool cube = task.op == ir::Op::GEMV_TILE || task.op == ir::Op::GEMM_TILE ||
                        task.op == ir::Op::ATTENTION_TILE;
      x.kernel_ids[cube ? 0 : 1] = static_cast<int64_t>(task.op);
    }
    x.block_num = o.block_num.value_or(own ? std::max<int64_t>(1, own->variant) : 1);
    add_args(p, task, bs, x, d.store);
    for (int64_t b : task.outputs)
      if (bs.created[static_cast<size_t>(b)])
        heap[r] += (p.buffers[static_cast<size_t>(b)].nbytes() + pto::kOutputAlign - 1) /
                   pto::kOutputAlign * pto::kOutputAlign;
    d.tasks.push_back(std::move(x));
    for (uint32_t slot : g.wait_slots(t))
      for (uint32_t q : g.producers(slot)) {
        pto::Edge e = edge_of(p, task, q, bs, d.details.emplace_back());
        e.pred = pto_id[q];
        e.succ = d.tasks.back().task_id;
        d.edges.push_back(std::move(e));
        ++deps[r];
      }
  }
  if (order.size() > outer) sample(fmt::format("export.cpp:{}", depth), "end", depth);
  for (int k = depth - 1; k >= 1; --k) sample(fmt::format("export.cpp:{}", k), "end", k);
  sample("(unknown):0", "end", 0);
  ss.total = static_cast<int64_t>(ss.samples.size());
  PtoFiles f;
  f.deps = pto::write_deps(d);
  f.scope_stats = pto::write_scope_stats(ss);
  return f;
}

}  // namespace amk::formats
