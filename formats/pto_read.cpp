// PTO deps.json (+ scope_stats.jsonl) -> ir::Program.
#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <span>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "formats/formats.h"
#include "formats/id_index.h"
#include "formats/pto.h"
#include "formats/sink.h"
#include "ir/csr.h"
#include "ir/parallel.h"

namespace amk::formats {
namespace {

using pto::Arg;
using pto::Deps;
using pto::Edge;
using pto::ScopeStats;

constexpr uint64_t kNoTask = UINT64_MAX;

class Builder : public DiagnosticSink {
 public:
  Builder(std::string_view text, Deps& d, const ReadOptions& opt)
      : DiagnosticSink(text),
        d_(d),
        opt_(opt),
        index_(d.tasks.size()),
        tensors_(d.tensors.size()) {}

  // Task, tensor and edge references; fills the indexes the build uses, and lets the edges go.
  // A big dump is checked on two threads: the tensors beside the tasks' ids, then the arguments
  // beside the edges. Any problem, and it is checked again in the file's order, so that its
  // diagnostics come as one pass reports them.
  ir::Diagnostics check() {
    constexpr size_t kParallelFrom = 4096;  // tasks and edges: below, threads cost what they save
    const bool big = d_.tasks.size() + d_.edges.size() >= kParallelFrom;
    if (!big || !check_in_parallel()) {
      if (big) {  // what the two threads filled in, from the start
        tensors_ = detail::IdIndex(d_.tensors.size());
        index_ = detail::IdIndex(d_.tasks.size());
        deps_.clear();
        creator_ = detail::IdIndex();
        made_.clear();
      }
      check_in_order();
    }
    d_.edges = std::vector<Edge>();  // all the build needs of them is taken (= {} would keep it)
    return take();
  }

  ir::Program build(const ScopeStats* stats) {
    ir::Program p;
    p.meta.mut()["source_format"] = "pto";
    ir::Runtime rt;
    rt.kind = ir::RuntimeKind::Pto;
    if (stats) capacities(*stats, rt);
    if (opt_.cores_aic > 0) rt.set(ir::Cap::cores_aic, {opt_.cores_aic});
    if (opt_.cores_aiv > 0) rt.set(ir::Cap::cores_aiv, {opt_.cores_aiv});
    for (const ir::CapInfo& c : ir::cap_table())
      if (!opt_.launch.caps[static_cast<size_t>(c.key)].empty())
        rt.caps[static_cast<size_t>(c.key)] = opt_.launch.caps[static_cast<size_t>(c.key)];
    rt.twaits = opt_.launch.twaits;
    const size_t n = d_.tasks.size();
    // The tasks with their counters and waits, and the tensors' accesses, side by side; then the
    // accesses become buffers, pages and the tasks' inputs, outputs and tile params.
    detail::RegionMap rm;
    std::vector<int64_t> heap(n, 0);
    ir::run_parts(2, 2, [&](size_t part, size_t, size_t) {
      if (part == 0) {
        tasks(p, rt);
        counters(p, n);
      } else {
        accesses(rm, heap);
      }
    });
    d_.tasks = std::vector<pto::Task>();  // their args went in accesses(); tasks() read the rest
    d_.store = pto::ArgStore();
    d_.tensors = std::vector<pto::Tensor>();
    index_ = detail::IdIndex();
    tensors_ = detail::IdIndex();
    creator_ = detail::IdIndex();
    rm.build(p);
    for (size_t i = 0; i < n; ++i) {
      rt.tasks[i].fanin = fanin_[i];
      rt.tasks[i].heap = heap[i];
    }
    scopes(stats, rt);
    joins(p, rt);
    p.runtime = std::move(rt);
    return p;
  }

 private:
  Deps& d_;  // its edges are let go once checked, its tasks once built
  const ReadOptions& opt_;
  detail::IdIndex index_;                            // task_id -> position
  detail::IdIndex tensors_;                          // tensor_id -> position
  std::vector<std::pair<size_t, size_t>> deps_;      // (pred, succ) positions, deduplicated later
  detail::IdIndex creator_;                          // consumer << 32 | arg -> creating task
  std::vector<std::pair<uint32_t, uint32_t>> made_;  // (creator, tensor) of creator edges
  std::vector<int32_t> fanin_;                       // distinct producers per task

  using Rings = std::array<int64_t, ir::kPtoRings>;  // each ring's last task so far

  void check_in_order() {
    Rings last;
    last.fill(-1);
    for (size_t i = 0; i < d_.tensors.size(); ++i) tensor_ref(i, *this);
    for (size_t i = 0; i < d_.tasks.size(); ++i)
      if (task_ref(i, last, *this)) args_ref(i, *this);
    for (size_t i = 0; i < d_.edges.size(); ++i) edge_ref(i, *this);
  }

  // check_in_order() on two threads, each step reporting to its own sink; false when either
  // reported anything (the indexes are then partly filled).
  bool check_in_parallel() {
    DiagnosticSink sink[2]{DiagnosticSink(text_), DiagnosticSink(text_)};
    Rings last;
    last.fill(-1);
    ir::run_parts(2, 2, [&](size_t part, size_t, size_t) {
      if (part == 0) {
        for (size_t i = 0; i < d_.tensors.size(); ++i) tensor_ref(i, sink[0]);
      } else {
        for (size_t i = 0; i < d_.tasks.size(); ++i) (void)task_ref(i, last, sink[1]);
      }
    });
    if (!sink[0].empty() || !sink[1].empty()) return false;
    ir::run_parts(2, 2, [&](size_t part, size_t, size_t) {
      if (part == 0) {
        for (size_t i = 0; i < d_.tasks.size(); ++i) args_ref(i, sink[0]);
      } else {
        for (size_t i = 0; i < d_.edges.size(); ++i) edge_ref(i, sink[1]);
      }
    });
    return sink[0].empty() && sink[1].empty();
  }

  void tensor_ref(size_t i, DiagnosticSink& out) {
    const pto::Tensor& t = d_.tensors[i];
    if (!tensors_.emplace(t.tensor_id, static_cast<uint32_t>(i)).second)
      out.report("pto.tensor-id", fmt::format("tensor_id {} appears twice", t.tensor_id),
                 fmt::format("/tensors/{}", i), t.at);
    if (t.dtype_at < 0)
      out.report("pto.dtype", fmt::format("unknown dtype \"{}\"", t.dtype.value()),
                 fmt::format("/tensors/{}/dtype", i), t.at);
  }

  // Task i's id: on a ring, once, in submission order; false when its arguments are not to be
  // looked at (a ring it cannot be on, or an id seen before).
  bool task_ref(size_t i, Rings& last, DiagnosticSink& out) {
    const pto::Task& t = d_.tasks[i];
    auto ptr = [i] { return fmt::format("/tasks/{}/task_id", i); };
    const uint64_t ring = t.task_id >> 32;
    const auto local = static_cast<int64_t>(t.task_id & 0xffffffffull);
    if (ring >= static_cast<uint64_t>(ir::kPtoRings)) {
      out.report("pto.task-id",
                 fmt::format("task_id {} is on ring {}: PTO has rings 0..{}", t.task_id, ring,
                             ir::kPtoRings - 1),
                 ptr(), t.at);
      return false;
    }
    if (!index_.emplace(t.task_id, static_cast<uint32_t>(i)).second) {
      out.report("pto.task-id", fmt::format("task_id {} appears twice", t.task_id), ptr(), t.at);
      return false;
    }
    if (local <= last[ring])
      out.report("pto.task-order",
                 fmt::format("task ({}, {}) comes after ({}, {}) in the dump: a ring's tasks are "
                             "listed in submission order",
                             ring, local, ring, last[ring]),
                 ptr(), t.at);
    last[ring] = std::max(last[ring], local);
    return true;
  }

  void args_ref(size_t i, DiagnosticSink& out) {
    pto::Task& t = d_.tasks[i];
    for (size_t k = 0; k < t.args.size(); ++k) {
      Arg& a = t.args[k];
      auto aptr = [i, k] { return fmt::format("/tasks/{}/args/{}", i, k); };
      if (a.kind == pto::ArgType::Unknown)
        out.report("pto.arg-type", fmt::format("unknown argument type \"{}\"", a.type.value()),
                   aptr(), a.at);
      if (a.has_tensor) arg_ref(t, a, aptr, out);
    }
  }

  static uint64_t creator_key(size_t consumer, int64_t arg) {
    return static_cast<uint64_t>(consumer) << 32 | static_cast<uint32_t>(arg);
  }

  // Also finds the argument's tensor (Arg::tensor).
  template <class Ptr>
  void arg_ref(const pto::Task& t, Arg& a, Ptr ptr, DiagnosticSink& out) {
    a.tensor = tensors_.find(a.tensor_id);
    if (a.tensor == detail::IdIndex::kNone)
      out.report("pto.tensor-ref",
                 fmt::format("argument names tensor {} which tensors[] lacks", a.tensor_id),
                 ptr() + "/tensor_id", a.at);
    if (a.dtype_at < 0)
      out.report("pto.dtype", fmt::format("unknown dtype \"{}\"", a.dtype.value()),
                 ptr() + "/dtype", a.at);
    if (a.shape.n != a.strides.n)
      out.report("pto.arg-shape",
                 fmt::format("shape has {} entries but strides has {}", a.shape.n, a.strides.n),
                 ptr(), a.at);
    else if (!detail::region_fits(a.start_offset, t.values(a.shape), t.values(a.strides)))
      out.report(
          "pto.arg-shape",
          fmt::format("start_offset {} with this shape and strides reaches past 2^63 elements",
                      a.start_offset),
          ptr(), a.at);
  }

  void edge_ref(size_t i, DiagnosticSink& out) {
    const Edge& e = d_.edges[i];
    auto ptr = [i] { return fmt::format("/edges/{}", i); };
    const uint32_t p = index_.find(e.pred), s = index_.find(e.succ);
    if (p == detail::IdIndex::kNone || s == detail::IdIndex::kNone) {
      out.report("pto.edge-ref",
                 fmt::format("edge {} -> {} names a task the dump does not list", e.pred, e.succ),
                 ptr() + (p == detail::IdIndex::kNone ? "/pred" : "/succ"), e.at);
      return;
    }
    if (p >= s) {
      out.report("pto.edge-order",
                 fmt::format("edge {} -> {} runs against submission order: a task waits only on "
                             "tasks submitted before it",
                             e.pred, e.succ),
                 ptr(), e.at);
      return;
    }
    const uint32_t tensor = e.has_tensor ? tensors_.find(e.tensor_id) : detail::IdIndex::kNone;
    if (e.has_tensor && tensor == detail::IdIndex::kNone)
      out.report("pto.tensor-ref",
                 fmt::format("edge names tensor {} which tensors[] lacks", e.tensor_id),
                 ptr() + "/tensor_id", e.at);
    deps_.emplace_back(p, s);
    if (e.creator) creator_.emplace(creator_key(s, e.arg), p);
    if (e.creator && e.has_tensor) made_.emplace_back(p, tensor);
  }

  // A task and its foreign record per task of the dump (of which accesses() reads only args and
  // extents meanwhile).
  void tasks(ir::Program& p, ir::Runtime& rt) {
    const size_t n = d_.tasks.size();
    p.tasks.reserve(n);
    rt.tasks.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const pto::Task& t = d_.tasks[i];
      ir::ForeignTask ft;
      ft.id = t.task_id;
      ft.kind = static_cast<int32_t>(shape_of(t));
      ft.variant = static_cast<int32_t>(t.block_num);
      for (size_t k = 0; k < 3; ++k) ft.kernels[k] = static_cast<int32_t>(t.kernel_ids[k]);
      ft.early = t.early_dispatch;
      ft.manual = t.scope == "manual";
      rt.tasks.push_back(ft);
      ir::Task task;
      task.label = label(t);
      p.add_task(std::move(task));
    }
  }

  static ir::PtoShape shape_of(const pto::Task& t) {
    const bool aic = t.kernel_ids[0] >= 0, aiv = t.kernel_ids[1] >= 0 || t.kernel_ids[2] >= 0;
    if (aic && aiv) return ir::PtoShape::Mix;
    if (aic) return ir::PtoShape::Aic;
    if (aiv) return ir::PtoShape::Aiv;
    return ir::PtoShape::Alloc;
  }

  // "r1.12": task 12 of ring 1.
  static std::string label_id(uint64_t task_id) {
    return "r" + std::to_string(task_id >> 32) + "." + std::to_string(task_id & 0xffffffffull);
  }
  static std::string label(const pto::Task& t) {
    std::string s = label_id(t.task_id);
    const auto& k = t.kernel_ids;
    if (k[0] >= 0) s += " aic:" + std::to_string(k[0]);
    if (k[1] >= 0 || k[2] >= 0) {
      s += " aiv:";
      s += k[1] >= 0 ? std::to_string(k[1]) : "-";
      if (k[2] >= 0) s += "," + std::to_string(k[2]);
    }
    if (k[0] < 0 && k[1] < 0 && k[2] < 0) s += " alloc";
    if (t.block_num > 1) s += " x" + std::to_string(t.block_num);
    return s;
  }

  void capacities(const ScopeStats& s, ir::Runtime& rt) {
    if (!s.task_window_max.empty()) rt.set(ir::Cap::task_window, s.task_window_max);
    if (!s.heap_max.empty()) rt.set(ir::Cap::heap, s.heap_max);
    if (!s.dep_pool_max.empty()) rt.set(ir::Cap::dep_pool, s.dep_pool_max);
    if (s.tensormap_max > 0) rt.set(ir::Cap::tensormap, {s.tensormap_max});
  }

  // Producers with the same consumers share a counter; a consumer waits for all of a group (of
  // the n tasks, while accesses() reads the dump's).
  void counters(ir::Program& p, size_t n) {
    std::sort(deps_.begin(), deps_.end());
    deps_.erase(std::unique(deps_.begin(), deps_.end()), deps_.end());
    // Each task's consumers (succ[first[i], first[i + 1])) and producers (pred[from[i],
    // from[i + 1])), ascending.
    std::vector<uint32_t> first, succ, from, pred, fill;
    ir::build_csr(
        n,
        [&](auto put) {
          for (const auto& [a, b] : deps_) put(a, static_cast<uint32_t>(b));
        },
        first, succ, fill);
    ir::build_csr(
        n,
        [&](auto put) {
          for (const auto& [a, b] : deps_) put(b, static_cast<uint32_t>(a));
        },
        from, pred, fill);
    deps_ = std::vector<std::pair<size_t, size_t>>();
    auto consumers = [&](size_t i) {
      return std::span<const uint32_t>(succ.data() + first[i], first[i + 1] - first[i]);
    };
    auto hash = [](std::span<const uint32_t> v) {
      uint64_t h = 0xcbf29ce484222325ull;
      for (uint32_t x : v) h = (h ^ x) * 0x100000001b3ull;
      return h ^ (h >> 32);
    };
    // Each group's first task, by the hash of its consumers.
    detail::IdIndex group(n);
    std::vector<int64_t> size;
    p.counters.reserve(p.counters.size() + n);
    for (size_t i = 0; i < n; ++i) {
      const std::span<const uint32_t> c = consumers(i);
      const uint64_t h = hash(c);
      const uint32_t g = group.find(h, [&](uint32_t j) {
        const std::span<const uint32_t> o = consumers(j);
        return std::equal(c.begin(), c.end(), o.begin(), o.end());
      });
      if (g != detail::IdIndex::kNone) {
        p.tasks[i].out_counter = p.tasks[g].out_counter;
      } else {
        group.add(h, static_cast<uint32_t>(i));
        p.tasks[i].out_counter = p.add_counter(
            c.empty() ? "tasks nobody waits on" : "producers of task " + std::to_string(c[0]));
        size.push_back(0);
      }
      ++size[static_cast<size_t>(p.tasks[i].out_counter)];
    }
    fanin_.assign(n, 0);
    for (size_t s = 0; s < n; ++s) {
      fanin_[s] = static_cast<int32_t>(from[s + 1] - from[s]);
      ir::Task& c = p.tasks[s];
      if (fanin_[s] > 0) c.waits.reserve(c.waits.size() + static_cast<size_t>(fanin_[s]));
      for (uint32_t k = from[s]; k < from[s + 1]; ++k) {
        const int64_t ctr = p.tasks[pred[k]].out_counter;
        if (std::any_of(c.waits.begin(), c.waits.end(),
                        [&](const ir::Wait& w) { return w.counter == ctr; }))
          continue;
        ir::Wait w;
        w.counter = ctr;
        w.threshold = size[static_cast<size_t>(ctr)];
        c.waits.push_back(w);
      }
    }
  }

  // Where tensors live: a buffer address, or that and the task that created it. Most are not
  // created (SIZE_MAX): found by the tensor's position, then by its address.
  struct Memories {
    std::vector<int32_t> plain;  // by the tensor's position, -1 until found
    detail::IdIndex by_address;
    std::map<std::pair<uint64_t, size_t>, int32_t> created_by;
  };
  int32_t memory(detail::RegionMap& rm, Memories& m, uint32_t pos, size_t creator) {
    const pto::Tensor& t = d_.tensors[pos];
    auto fresh = [&] {
      std::array<char, 24> hex{};
      const auto end = std::to_chars(hex.data(), hex.data() + hex.size(), t.buffer_addr, 16).ptr;
      std::string name = "t" + std::string(hex.data(), end);
      if (creator != SIZE_MAX) name += "@" + label_id(d_.tasks[creator].task_id);
      return rm.tensor(std::move(name), pto::elem_type(t.dtype_at));
    };
    if (creator != SIZE_MAX) {
      auto [it, is_new] = m.created_by.try_emplace({t.buffer_addr, creator}, 0);
      if (is_new) it->second = fresh();
      return it->second;
    }
    if (m.plain[pos] < 0) {
      uint32_t at = m.by_address.find(t.buffer_addr);
      if (at == detail::IdIndex::kNone) {
        at = static_cast<uint32_t>(fresh());
        m.by_address.emplace(t.buffer_addr, at);
      }
      m.plain[pos] = static_cast<int32_t>(at);
    }
    return m.plain[pos];
  }

  // Each creator's outputs, the tensors its consumers read through creator edges (positions in
  // tensors[], each once, in edge order): task i's are tensor[first[i], first[i + 1]).
  struct Created {
    std::vector<uint32_t> first, tensor;
    std::span<const uint32_t> of(size_t i) const {
      return {tensor.data() + first[i], first[i + 1] - first[i]};
    }
  };
  Created created_outputs() {
    std::vector<std::pair<uint32_t, uint32_t>> made = std::move(made_);  // in edge order
    std::stable_sort(made.begin(), made.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    Created c;
    c.first.assign(d_.tasks.size() + 1, 0);
    size_t from = 0;  // where the current creator's tensors start in c.tensor
    for (size_t k = 0; k < made.size(); ++k) {
      const auto [pred, tensor] = made[k];
      if (k == 0 || made[k - 1].first != pred) from = c.tensor.size();
      const auto mine = c.tensor.begin() + static_cast<std::ptrdiff_t>(from);
      if (std::find(mine, c.tensor.end(), tensor) != c.tensor.end()) continue;
      c.tensor.push_back(tensor);
      ++c.first[pred + 1];
    }
    for (size_t i = 0; i < d_.tasks.size(); ++i) c.first[i + 1] += c.first[i];
    return c;
  }

  // Tensor regions: external tensors by buffer address; a runtime-allocated output by its
  // creator (heap addresses are reused once reclaimed, which the ring orders, not the graph).
  // Each task's heap bytes go to `heap`.
  void accesses(detail::RegionMap& rm, std::vector<int64_t>& heap) {
    Memories mem{
        std::vector<int32_t>(d_.tensors.size(), -1), detail::IdIndex(d_.tensors.size()), {}};
    const Created created = created_outputs();
    // Room for every argument's accesses (an INOUT is two) and the created outputs' (what is not
    // used is never touched).
    const size_t n = created.tensor.size();
    rm.reserve(n + 2 * d_.store.size<Arg>(), 2 * n + 2 * d_.store.size<int64_t>());
    for (size_t i = 0; i < d_.tasks.size(); ++i) {
      pto::Task& t = d_.tasks[i];
      auto creator_of = [&](int64_t arg) {
        const uint32_t c =
            creator_.empty() ? detail::IdIndex::kNone : creator_.find(creator_key(i, arg));
        return c == detail::IdIndex::kNone ? SIZE_MAX : size_t{c};
      };
      auto touch = [&](const Arg& a, bool write) {
        const int32_t m = memory(rm, mem, a.tensor, creator_of(a.idx));
        rm.access(static_cast<uint32_t>(i), m, write, static_cast<int64_t>(a.start_offset),
                  t.values(a.shape), t.values(a.strides));
      };
      for (const Arg& a : t.args)
        if (a.has_tensor && a.reads()) touch(a, false);
      for (const Arg& a : t.args)
        if (a.has_tensor && a.writes()) touch(a, true);
      // Runtime-allocated outputs: written whole; their bytes come from the task's ring heap.
      std::vector<uint64_t> addrs;
      int64_t bytes_on_heap = 0;
      for (uint32_t pos : created.of(i)) {
        const pto::Tensor& x = d_.tensors[pos];
        const int32_t m = memory(rm, mem, pos, i);
        const auto numel = static_cast<int64_t>(x.buffer_numel);
        const int64_t whole[] = {numel, 1};  // its dims, then its strides
        rm.access(static_cast<uint32_t>(i), m, true, 0, {whole, 1}, {whole + 1, 1});
        if (std::find(addrs.begin(), addrs.end(), x.buffer_addr) != addrs.end()) continue;
        addrs.push_back(x.buffer_addr);
        const int64_t bytes = numel * pto::elem_bytes(x.dtype_at);
        bytes_on_heap += (bytes + pto::kOutputAlign - 1) / pto::kOutputAlign * pto::kOutputAlign;
      }
      heap[i] = bytes_on_heap;
    }
  }

  // Scopes from scope_stats' begin/end samples; without them, one derived scope per ring.
  void scopes(const ScopeStats* stats, ir::Runtime& rt) {
    if (stats && !stats->samples.empty()) {
      std::vector<int32_t> open;
      for (const pto::ScopeSample& s : stats->samples) {
        if (s.phase == "begin") {
          ir::RuntimeScope sc;
          sc.parent = open.empty() ? -1 : open.back();
          sc.depth = static_cast<int32_t>(s.depth);
          sc.ring = static_cast<int32_t>(std::min<int64_t>(s.ring, ir::kPtoRings - 1));
          sc.site = s.site;
          sc.begin = sc.end = s.task_window_end;
          open.push_back(static_cast<int32_t>(rt.scopes.size()));
          rt.scopes.push_back(std::move(sc));
        } else if (!open.empty()) {
          rt.scopes[static_cast<size_t>(open.back())].end = s.task_window_end;
          open.pop_back();
        }
      }
    } else {
      std::array<int64_t, ir::kPtoRings> hi{};
      for (const ir::ForeignTask& t : rt.tasks)
        hi[t.id >> 32] =
            std::max<int64_t>(hi[t.id >> 32], static_cast<int64_t>(t.id & 0xffffffffull) + 1);
      int32_t parent = -1;
      for (int r = 0; r < ir::kPtoRings; ++r) {
        if (hi[static_cast<size_t>(r)] == 0 && r > 0) continue;
        ir::RuntimeScope sc;
        sc.parent = parent;
        sc.depth = r;
        sc.ring = r;
        sc.site = "(derived)";
        sc.end = hi[static_cast<size_t>(r)];
        parent = static_cast<int32_t>(rt.scopes.size());
        rt.scopes.push_back(std::move(sc));
      }
    }
    // Each task's scope: the innermost one on its ring whose range holds it. A ring's scopes
    // nest or follow each other, so of those begun at or before the task the latest that still
    // holds it is the innermost.
    std::array<std::vector<int32_t>, ir::kPtoRings> by_ring;
    for (size_t s = 0; s < rt.scopes.size(); ++s)
      by_ring[static_cast<size_t>(rt.scopes[s].ring)].push_back(static_cast<int32_t>(s));
    for (ir::ForeignTask& t : rt.tasks) {
      const auto& list = by_ring[static_cast<size_t>(t.id >> 32)];
      const auto local = static_cast<int64_t>(t.id & 0xffffffffull);
      auto it = std::upper_bound(list.begin(), list.end(), local, [&](int64_t l, int32_t s) {
        return l < rt.scopes[static_cast<size_t>(s)].begin;
      });
      while (it != list.begin()) {
        --it;
        const ir::RuntimeScope& sc = rt.scopes[static_cast<size_t>(*it)];
        if (local < sc.end) {
          t.scope = *it;
          break;
        }
      }
    }
  }

  // amk's ABI holds 8 waits a task: a consumer of more producer groups waits on join tasks.
  void joins(ir::Program& p, ir::Runtime& rt) {
    const size_t n = p.tasks.size();
    for (size_t i = 0; i < n; ++i) {
      while (p.tasks[i].waits.size() > static_cast<size_t>(ir::kMaxWaits)) {
        ir::Task j;
        j.label = fmt::format("join for {}", p.tasks[i].label);
        auto& w = p.tasks[i].waits;
        j.waits.assign(w.end() - ir::kMaxWaits, w.end());
        w.erase(w.end() - ir::kMaxWaits, w.end());
        j.out_counter = p.add_counter(fmt::format("join for task {}", i));
        ir::Wait jw;
        jw.counter = j.out_counter;
        jw.threshold = 1;
        w.push_back(jw);
        p.add_task(std::move(j));
        ir::ForeignTask ft;
        ft.id = kNoTask;
        ft.kind = static_cast<int32_t>(ir::PtoShape::Alloc);
        rt.tasks.push_back(ft);
      }
    }
  }
};

}  // namespace

ir::Result<ir::Program> read_pto(std::string_view deps, const ReadOptions& opt) {
  Deps d;
  ir::Diagnostics diags = pto::parse_deps(deps, d);
  ir::set_file(diags, opt.origin);
  ScopeStats stats;
  bool have_stats = false;
  if (opt.scope_stats) {
    ir::Diagnostics sd = pto::parse_scope_stats(*opt.scope_stats, stats);
    ir::set_file(sd, opt.scope_stats_origin);
    have_stats = !ir::has_errors(sd);
    ir::append(diags, std::move(sd));
  }
  if (ir::has_errors(diags)) return diags;
  Builder b(deps, d, opt);
  ir::Diagnostics sem = b.check();
  ir::set_file(sem, opt.origin);
  ir::append(diags, std::move(sem));
  if (ir::has_errors(diags)) return diags;
  ir::Program p = b.build(have_stats ? &stats : nullptr);
  ir::Result<ir::Program> r(std::move(p));
  r.diagnostics = std::move(diags);
  return r;
}

}  // namespace amk::formats
