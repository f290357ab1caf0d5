// The loader: a program becomes one position-independent arena image in a fixed list of steps
// (the SM count, the proof, structure, placement, scratch layout, tables, instructions, queues),
// the way PTO's host builds its runtime arena before a launch.
#include <algorithm>
#include <cstring>
#include <new>
#include <queue>
#include <tuple>

#include <fmt/format.h>

#include "ir/checked.h"
#include "ir/graph.h"
#include "validate/validate.h"
#include "vm/image.h"
#include "vm/vm.h"

namespace amk::vm {
namespace {

constexpr int64_t kAlign = 256;  // AMK's loader aligns activations to 256 bytes

int64_t align_up(int64_t v, int64_t a) {
  return (v + a - 1) / a * a;
}

bool external_kind(ir::BufferKind k) {
  return k == ir::BufferKind::WEIGHT || k == ir::BufferKind::CONST || k == ir::BufferKind::KV_CACHE;
}

// Step 1: the SM count (options, else the program's target, else the default).
ir::Result<int64_t> resolve_sms(const ir::Program& p, const LoadOptions& opts) {
  int64_t num_sms = opts.num_sms;
  if (num_sms <= 0 && p.target && p.target->num_sms.is_int && p.target->num_sms.i > 0)
    num_sms = p.target->num_sms.i;
  if (num_sms <= 0) num_sms = std::max<int64_t>(1, opts.default_sms);
  if (num_sms > kMaxSms)
    return ir::error("vm.load", fmt::format("the target has {} SMs, more than the VM models ({})",
                                            num_sms, kMaxSms));
  return num_sms;
}

// Step 2: the proof (the AMK contract: the VM refuses what the validator rejects), or, when it is
// skipped, the validator's structural rules the executor relies on (dangling ids, ABI capacities,
// loadable shapes, SMs in range).
ir::Status check_program(const ir::Program& p, int64_t num_sms, bool skip_validate) {
  ir::Diagnostics d;
  if (!skip_validate) {
    validate::Result r = validate::validate(p);
    if (!r.ok) {
      d.push_back(ir::error(
          "vm.rejected",
          fmt::format("refusing to load an invalid schedule: [REJECTED] {}", r.stats.repr())));
      ir::append(d, std::move(r.errors));
      return d;
    }
    d = validate::sm_range_errors(p, num_sms);  // the proof covered everything else
  } else {
    d = validate::structural_errors(p, num_sms);
  }
  if (d.empty()) return {};
  d.insert(d.begin(), ir::error("vm.load", "the program cannot be loaded: " + d.front().message,
                                d.front().pointer));
  return d;
}

// Step 3: the SM of every task: kept when set, else by the policy over the topological order.
void place(ir::Program& p, const std::vector<uint32_t>& order, int64_t num_sms, Placement pol) {
  if (pol == Placement::RoundRobin) {
    for (size_t i = 0; i < order.size(); ++i)
      if (!p.tasks[order[i]].sm) p.tasks[order[i]].sm = static_cast<int64_t>(i) % num_sms;
    return;
  }
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t>;  // (Σ bytes, Σ flops, count, sm)
  std::vector<Key> load(static_cast<size_t>(num_sms));
  for (int64_t s = 0; s < num_sms; ++s) load[static_cast<size_t>(s)] = {0, 0, 0, s};
  for (const ir::Task& t : p.tasks)
    if (t.sm) {
      auto& [b, f, c, s] = load[static_cast<size_t>(*t.sm)];
      b = ir::saturating_add(b, t.est_bytes), f = ir::saturating_add(f, t.est_flops), ++c;
    }
  std::priority_queue<Key, std::vector<Key>, std::greater<>> heap(load.begin(), load.end());
  for (uint32_t id : order) {
    ir::Task& t = p.tasks[id];
    if (t.sm) continue;
    auto [b, f, c, s] = heap.top();
    heap.pop();
    t.sm = s;
    heap.push({ir::saturating_add(b, t.est_bytes), ir::saturating_add(f, t.est_flops), c + 1, s});
  }
}

// The topological order the queues follow; after a cycle (only with skip_validate) the rest.
std::vector<uint32_t> queue_order(const ir::Program& p) {
  ir::Graph g = ir::Graph::build(p);
  std::vector<uint32_t> order = g.topo_order();
  if (order.size() < p.tasks.size()) {
    std::vector<uint8_t> in(p.tasks.size());
    for (uint32_t t : order) in[t] = 1;
    for (uint32_t t = 0; t < p.tasks.size(); ++t)
      if (!in[t]) order.push_back(t);
  }
  return order;
}

// Step 4: scratch offsets: the per-launch region (activations, outputs, pages; buffers sharing a
// page share memory, as on the device) then the input region. Returns the scratch size.
int64_t layout_scratch(const ir::Program& p, bool honor_pages, Image& im) {
  const size_t nb = p.buffers.size();
  im.scratch_off.assign(nb, -1);
  int64_t off = 0;
  if (honor_pages && p.pages) {
    std::vector<int64_t> page_size(p.pages->pages.size(), 0), page_off(page_size.size());
    auto paged = [&](int64_t b, int64_t pg) {
      return b >= 0 && static_cast<size_t>(b) < nb && pg >= 0 &&
             static_cast<size_t>(pg) < page_size.size() && !external_kind(p.buffers[b].kind) &&
             p.buffers[b].kind != ir::BufferKind::IO_INPUT;
    };
    for (size_t k = 0; k < p.pages->pages.size(); ++k)
      page_size[k] = std::max<int64_t>(0, p.pages->pages[k].nbytes);
    for (auto [b, pg] : p.pages->buffer_to_page)
      if (paged(b, pg)) page_size[pg] = std::max(page_size[pg], p.buffers[b].nbytes());
    for (size_t k = 0; k < page_size.size(); ++k) {
      page_off[k] = off;
      off += align_up(page_size[k], kAlign);
    }
    for (auto [b, pg] : p.pages->buffer_to_page)
      if (paged(b, pg)) im.scratch_off[b] = page_off[pg];
  }
  for (size_t b = 0; b < nb; ++b) {
    const ir::Buffer& buf = p.buffers[b];
    if (im.scratch_off[b] >= 0 || external_kind(buf.kind) || buf.kind == ir::BufferKind::IO_INPUT)
      continue;
    im.scratch_off[b] = off;
    off += align_up(buf.nbytes(), kAlign);
  }
  im.launch_scratch_bytes = off;
  for (size_t b = 0; b < nb; ++b)
    if (p.buffers[b].kind == ir::BufferKind::IO_INPUT) {
      im.scratch_off[b] = off;
      off += align_up(p.buffers[b].nbytes(), kAlign);
    }
  return off;
}

// Step 5: the arena (header, buffer table, counter inits, instructions, queues, then scratch),
// every table at an offset from the base.
void build_arena(const ir::Program& p, int64_t num_sms, int64_t scratch_bytes, Image& im) {
  const size_t nt = p.tasks.size(), nb = p.buffers.size(), nc = p.counters.size();
  int64_t at = align_up(sizeof(abi::amk_program_header_t), 64);
  const int64_t buffers_off = at;
  at = align_up(at + static_cast<int64_t>(nb * sizeof(abi::amk_buffer_t)), 64);
  const int64_t counters_off = at;
  at = align_up(at + static_cast<int64_t>(nc * sizeof(uint32_t)), 64);
  const int64_t instr_off = at;
  at = align_up(at + static_cast<int64_t>(nt * sizeof(abi::amk_instruction_t)), 64);
  const int64_t queue_off = at;
  at = align_up(at + static_cast<int64_t>(nt * sizeof(int32_t)), 64);
  const int64_t qlen_off = at;
  at = align_up(at + static_cast<int64_t>((num_sms + 1) * sizeof(int32_t)), kAlign);
  const int64_t scratch_off = at;
  const int64_t total = at + scratch_bytes;
  auto* raw = static_cast<std::byte*>(
      ::operator new[](static_cast<size_t>(total), std::align_val_t{kAlign}));
  im.arena = {raw, [](std::byte* q) { ::operator delete[](q, std::align_val_t{kAlign}); }};
  std::memset(raw, 0, static_cast<size_t>(scratch_off));
  im.header = reinterpret_cast<abi::amk_program_header_t*>(raw);
  *im.header = {0x314B4D41u /* "AMK1" */,
                abi::kVersionMajor,
                abi::kVersionMinor,
                0,
                static_cast<uint64_t>(buffers_off),
                static_cast<uint64_t>(counters_off),
                static_cast<uint64_t>(instr_off),
                static_cast<uint64_t>(queue_off),
                static_cast<uint64_t>(qlen_off),
                static_cast<uint64_t>(scratch_off),
                static_cast<int32_t>(nb),
                static_cast<int32_t>(nc),
                static_cast<int32_t>(nt),
                static_cast<int32_t>(num_sms),
                scratch_bytes,
                total};
  abi::amk_buffer_t* bt = im.buffers();
  for (size_t b = 0; b < nb; ++b) {
    const ir::Buffer& buf = p.buffers[b];
    abi::amk_buffer_t& r = bt[b];
    r.numel = buf.numel();
    r.rank = static_cast<int32_t>(buf.shape.size());
    r.dtype = static_cast<int32_t>(buf.dtype);
    r.space = static_cast<int32_t>(buf.space);
    int64_t stride = 1;
    for (int k = r.rank - 1; k >= 0; --k) {
      r.shape[k] = buf.shape[static_cast<size_t>(k)];
      r.stride[k] = stride;
      stride *= r.shape[k];
    }
  }
  uint32_t* cinit = im.counter_init();
  for (size_t c = 0; c < nc; ++c)
    cinit[c] = static_cast<uint32_t>(std::clamp<int64_t>(p.counters[c].init, 0, UINT32_MAX));
}

// Step 6: the ABI instructions and the host-side per-task tables (params, FUSED recipes, core
// the bytes each task moves, tensor view slots).
void build_instructions(const ir::Program& p, Image& im) {
  const size_t nt = p.tasks.size();
  abi::amk_instruction_t* ins = im.instructions();
  im.params.resize(nt);
  im.recipes.resize(nt);
  im.io_off.resize(nt + 1);
  im.hot.resize(nt);
  im.task_bytes.resize(nt);
  uint32_t io = 0;
  for (size_t t = 0; t < nt; ++t) {
    const ir::Task& k = p.tasks[t];
    abi::amk_instruction_t& r = ins[t];
    r.op = static_cast<int32_t>(k.op);
    r.n_inputs = static_cast<int32_t>(k.inputs.size());
    r.n_outputs = static_cast<int32_t>(k.outputs.size());
    r.n_waits = static_cast<int32_t>(k.waits.size());
    for (size_t i = 0; i < k.inputs.size(); ++i) r.inputs[i] = static_cast<int32_t>(k.inputs[i]);
    for (size_t i = 0; i < k.outputs.size(); ++i) r.outputs[i] = static_cast<int32_t>(k.outputs[i]);
    for (size_t i = 0; i < k.waits.size(); ++i) {
      r.wait_counter[i] = static_cast<int32_t>(k.waits[i].counter);
      r.wait_threshold[i] =
          static_cast<int32_t>(std::clamp<int64_t>(k.waits[i].threshold, INT32_MIN, INT32_MAX));
    }
    r.out_counter = static_cast<int32_t>(k.out_counter);
    r.sm = static_cast<int32_t>(*k.sm);
    im.params[t] = ir::ParamTable::of(k);
    // amk_params_t: 19 int32 fields, then eps, scale, theta as float (AMK's marshalling).
    int32_t ints[19];
    for (int f = 0; f < 19; ++f)
      ints[f] = static_cast<int32_t>(im.params[t].get(static_cast<ir::ParamField>(f), 0));
    std::memcpy(&r.params, ints, sizeof ints);
    r.params.eps = static_cast<float>(im.params[t].real(ir::ParamField::eps, 0));
    r.params.scale = static_cast<float>(im.params[t].real(ir::ParamField::scale, 0));
    r.params.theta = static_cast<float>(im.params[t].real(ir::ParamField::theta, 0));
    if (k.op == ir::Op::FUSED)
      if (const ir::ParamValue* rv = k.param("recipe")) {
        std::vector<std::string> errs;
        im.recipes[t] = ir::parse_recipe(rv->other, static_cast<int64_t>(k.inputs.size()), errs);
      }
    im.hot[t].out_counter = static_cast<uint32_t>(k.out_counter);
    im.hot[t].runs_kernel = k.op != ir::Op::NOP;
    im.task_bytes[t] = k.op == ir::Op::NOP ? 0 : ir::task_load(p, k).bytes;
    im.total_bytes += im.task_bytes[t];
    im.io_off[t] = io;
    io += static_cast<uint32_t>(k.inputs.size() + k.outputs.size());
  }
  im.io_off[nt] = io;
  im.has_io = io > 0;
  im.tensors.resize(io);
}

// Step 7: per-SM queues in topological order, the counters' waiters (sorted by threshold) and
// each task's gate (unsatisfied waits, plus one for an SM predecessor).
void build_queues(const ir::Program& p, const std::vector<uint32_t>& order, Image& im) {
  const size_t nt = p.tasks.size(), nc = p.counters.size();
  const int64_t num_sms = im.num_sms;
  const uint32_t* cinit = im.counter_init();
  int32_t* qlen = im.queue_len();
  for (uint32_t t : order) ++qlen[*p.tasks[t].sm + 1];
  for (int64_t s = 0; s < num_sms; ++s) qlen[s + 1] += qlen[s];
  std::vector<int32_t> fill(qlen, qlen + num_sms);
  int32_t* q = im.queue();
  for (uint32_t t : order) q[fill[*p.tasks[t].sm]++] = static_cast<int32_t>(t);
  im.gate_init_waits.assign(nt, 0);
  for (size_t t = 0; t < nt; ++t) im.hot[t].sm_next = -1;
  im.waiter_off.assign(nc + 1, 0);
  for (size_t t = 0; t < nt; ++t)
    for (const ir::Wait& w : p.tasks[t].waits)
      if (w.threshold > static_cast<int64_t>(cinit[w.counter])) {
        ++im.waiter_off[w.counter + 1];
        ++im.gate_init_waits[t];
      }
  im.gate_init = im.gate_init_waits;
  for (int64_t s = 0; s < num_sms; ++s)
    for (int32_t i = qlen[s]; i + 1 < qlen[s + 1]; ++i) {
      im.hot[q[i]].sm_next = q[i + 1];
      ++im.gate_init[q[i + 1]];
    }
  for (size_t c = 0; c < nc; ++c) im.waiter_off[c + 1] += im.waiter_off[c];
  im.waiters.resize(im.waiter_off[nc]);
  std::vector<uint32_t> wfill(im.waiter_off.begin(), im.waiter_off.end() - 1);
  for (size_t t = 0; t < nt; ++t)
    for (const ir::Wait& w : p.tasks[t].waits)
      if (w.threshold > static_cast<int64_t>(cinit[w.counter]))
        im.waiters[wfill[w.counter]++] = {
            static_cast<uint32_t>(std::min<int64_t>(w.threshold, UINT32_MAX)),
            static_cast<uint32_t>(t)};
  for (size_t c = 0; c < nc; ++c)
    std::stable_sort(
        im.waiters.begin() + im.waiter_off[c], im.waiters.begin() + im.waiter_off[c + 1],
        [](const CounterWaiter& a, const CounterWaiter& b) { return a.threshold < b.threshold; });
  for (size_t t = 0; t < nt; ++t) {
    im.hot[t].wbegin = im.waiter_off[im.hot[t].out_counter];
    im.hot[t].wend = im.waiter_off[im.hot[t].out_counter + 1];
  }
}

}  // namespace

ir::Result<std::unique_ptr<Vm>> Vm::load(ir::Program p, const LoadOptions& opts) {
  ir::Result<int64_t> sms = resolve_sms(p, opts);
  if (!sms) return std::move(sms.diagnostics);
  const int64_t num_sms = *sms;
  if (ir::Status st = check_program(p, num_sms, opts.skip_validate); !st)
    return std::move(st.diagnostics);
  const std::vector<uint32_t> order = queue_order(p);
  place(p, order, num_sms, opts.placement);

  std::unique_ptr<Vm> vm(new Vm);
  vm->im_ = std::make_unique<Image>();
  Image& im = *vm->im_;
  im.num_sms = num_sms;
  const int64_t scratch_bytes = layout_scratch(p, opts.honor_pages, im);
  build_arena(p, num_sms, scratch_bytes, im);
  build_instructions(p, im);
  build_queues(p, order, im);
  const size_t nb = p.buffers.size();
  im.external.assign(nb, nullptr);
  im.owned.resize(nb);
  im.input_set.assign(nb, 0);
  im.prog = std::move(p);
  return vm;
}

}  // namespace amk::vm
