#include "vm/vm.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <queue>
#include <tuple>

#include <fmt/format.h>

#include "instructions/dtype.h"
#include "ir/graph.h"
#include "validate/validate.h"
#include "vm/aicore.h"
#include "vm/image.h"

namespace amk::vm {
namespace {

constexpr int64_t kAlign = 256;  // AMK's loader aligns activations to 256 bytes

int64_t align_up(int64_t v, int64_t a) {
  return (v + a - 1) / a * a;
}

bool external_kind(ir::BufferKind k) {
  return k == ir::BufferKind::WEIGHT || k == ir::BufferKind::CONST || k == ir::BufferKind::KV_CACHE;
}

// Structural checks the executor relies on even when validation is skipped.
std::optional<std::string> check_structure(const ir::Program& p, int64_t num_sms) {
  const auto nb = static_cast<int64_t>(p.buffers.size());
  const auto nc = static_cast<int64_t>(p.counters.size());
  if (p.tasks.size() >= (size_t{1} << 31)) return "too many tasks for the ABI (int32 ids)";
  for (size_t t = 0; t < p.tasks.size(); ++t) {
    const ir::Task& k = p.tasks[t];
    auto where = [&] { return fmt::format("task {} ({})", t, k.display()); };
    for (int64_t b : k.inputs)
      if (b < 0 || b >= nb) return fmt::format("{}: input buffer {} does not exist", where(), b);
    for (int64_t b : k.outputs)
      if (b < 0 || b >= nb) return fmt::format("{}: output buffer {} does not exist", where(), b);
    if (k.inputs.size() > ir::kMaxInputs || k.outputs.size() > ir::kMaxOutputs ||
        k.waits.size() > ir::kMaxWaits)
      return fmt::format("{}: exceeds the ABI capacity of 8 inputs, 4 outputs, 8 waits", where());
    if (k.out_counter < 0 || k.out_counter >= nc)
      return fmt::format("{}: out_counter {} does not exist", where(), k.out_counter);
    for (const ir::Wait& w : k.waits)
      if (w.counter < 0 || w.counter >= nc)
        return fmt::format("{}: waits on counter {} which does not exist", where(), w.counter);
    if (k.sm && (*k.sm < 0 || *k.sm >= num_sms))
      return fmt::format("{}: placed on SM {} but the target has {} SMs (0..{})", where(), *k.sm,
                         num_sms, num_sms - 1);
  }
  for (const auto& b : p.buffers)
    if (b.shape.size() > ir::kMaxRank || b.numel() < 0)
      return fmt::format("buffer '{}': shape is not loadable", b.name);
  return std::nullopt;
}

// SM of every task: kept when set, else by the policy over the topological order.
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
      b += t.est_bytes, f += t.est_flops, ++c;
    }
  std::priority_queue<Key, std::vector<Key>, std::greater<>> heap(load.begin(), load.end());
  for (uint32_t id : order) {
    ir::Task& t = p.tasks[id];
    if (t.sm) continue;
    auto [b, f, c, s] = heap.top();
    heap.pop();
    t.sm = s;
    heap.push({b + t.est_bytes, f + t.est_flops, c + 1, s});
  }
}

// Converts a file tensor into `dst` (numel elements of `dt`).
void convert(const StTensor& src, void* dst, ir::DType dt, int64_t numel) {
  if (st_of(dt) == src.dtype && dt != ir::DType::BOOL) {
    std::memcpy(dst, src.data, src.nbytes);
    return;
  }
  const bool int_dst =
      dt == ir::DType::I32 || dt == ir::DType::I8 || dt == ir::DType::U8 || dt == ir::DType::BOOL;
  for (int64_t i = 0; i < numel; ++i) {
    const uint8_t* e = src.data + i * st_size(src.dtype);
    double v = 0;
    int64_t iv = 0;
    bool is_int = true;
    switch (src.dtype) {
      case StDType::F64: {
        double d;
        std::memcpy(&d, e, 8);
        v = d;
        is_int = false;
        break;
      }
      case StDType::F32: {
        float f;
        std::memcpy(&f, e, 4);
        v = f;
        is_int = false;
        break;
      }
      case StDType::F16: {
        uint16_t h;
        std::memcpy(&h, e, 2);
        v = inst::f16_to_f32(h);
        is_int = false;
        break;
      }
      case StDType::BF16: {
        uint16_t h;
        std::memcpy(&h, e, 2);
        v = inst::bf16_to_f32(h);
        is_int = false;
        break;
      }
      case StDType::F8_E4M3:
        v = inst::f8e4m3_to_f32(*e);
        is_int = false;
        break;
      case StDType::F8_E5M2:
        v = inst::f8e5m2_to_f32(*e);
        is_int = false;
        break;
      case StDType::I64:
        std::memcpy(&iv, e, 8);
        break;
      case StDType::I32: {
        int32_t x;
        std::memcpy(&x, e, 4);
        iv = x;
        break;
      }
      case StDType::I16: {
        int16_t x;
        std::memcpy(&x, e, 2);
        iv = x;
        break;
      }
      case StDType::I8:
        iv = static_cast<int8_t>(*e);
        break;
      case StDType::U8:
        iv = *e;
        break;
      case StDType::BOOL:
        iv = *e != 0;
        break;
    }
    if (is_int && int_dst) {
      auto clamp = [&](int64_t lo, int64_t hi) { return std::clamp(iv, lo, hi); };
      switch (dt) {
        case ir::DType::I32: {
          auto x = static_cast<int32_t>(clamp(INT32_MIN, INT32_MAX));
          std::memcpy(static_cast<uint8_t*>(dst) + 4 * i, &x, 4);
          break;
        }
        case ir::DType::I8:
          static_cast<int8_t*>(dst)[i] = static_cast<int8_t>(clamp(-128, 127));
          break;
        case ir::DType::U8:
          static_cast<uint8_t*>(dst)[i] = static_cast<uint8_t>(clamp(0, 255));
          break;
        default:
          static_cast<uint8_t*>(dst)[i] = iv != 0;
          break;
      }
    } else {
      inst::store(dst, dt, i, static_cast<float>(is_int ? static_cast<double>(iv) : v));
    }
  }
}

// Checks that a file tensor can fill buffer `b`; returns an error naming the key.
std::optional<std::string> check_fit(const StTensor& t, const ir::Buffer& b, std::string_view key,
                                     const std::string& file) {
  if (b.dtype == ir::DType::I4) {
    auto packed = b.shape;
    if (!packed.empty()) packed.back() = (packed.back() + 1) / 2;
    if ((t.dtype == StDType::U8 || t.dtype == StDType::I8) &&
        (t.shape == b.shape || t.shape == packed) && static_cast<int64_t>(t.nbytes) == b.nbytes())
      return std::nullopt;
    return fmt::format("{}: tensor '{}' for packed-I4 buffer '{}' must be U8 bytes of shape {}",
                       file, key, b.name, fmt::join(packed, "x"));
  }
  if (t.shape != b.shape)
    return fmt::format("{}: tensor '{}' has shape [{}] but buffer '{}' needs [{}]", file, key,
                       fmt::join(t.shape, ", "), b.name, fmt::join(b.shape, ", "));
  return std::nullopt;
}

}  // namespace

abi::amk_buffer_t* Image::buffers() const {
  return reinterpret_cast<abi::amk_buffer_t*>(arena.get() + header->buffers_off);
}
abi::amk_instruction_t* Image::instructions() const {
  return reinterpret_cast<abi::amk_instruction_t*>(arena.get() + header->instructions_off);
}
uint32_t* Image::counter_init() const {
  return reinterpret_cast<uint32_t*>(arena.get() + header->counters_off);
}
int32_t* Image::queue() const {
  return reinterpret_cast<int32_t*>(arena.get() + header->queue_off);
}
int32_t* Image::queue_len() const {
  return reinterpret_cast<int32_t*>(arena.get() + header->queue_len_off);
}
std::byte* Image::scratch() const {
  return arena.get() + header->scratch_off;
}

std::optional<std::string> Image::wire() {
  abi::amk_buffer_t* bt = buffers();
  for (size_t b = 0; b < prog.buffers.size(); ++b) {
    const ir::Buffer& buf = prog.buffers[b];
    void* ptr = scratch_off[b] >= 0 ? static_cast<void*>(scratch() + scratch_off[b]) : external[b];
    if (!ptr && buf.numel() > 0) {
      if (buf.kind == ir::BufferKind::KV_CACHE)
        return fmt::format("KV cache '{}' is not bound", buf.name);
      return fmt::format("{} buffer '{}' (key '{}') is not bound: no weights were given for it",
                         ir::name(buf.kind), buf.name, buf.source.value_or(buf.name));
    }
    if (buf.kind == ir::BufferKind::IO_INPUT && !input_set[b])
      return fmt::format(
          "input '{}' was not given (an IO_INPUT buffer needs a tensor of that name)", buf.name);
    bt[b].ptr = ptr;
  }
  for (size_t t = 0; has_io && t < prog.tasks.size(); ++t) {
    const ir::Task& k = prog.tasks[t];
    inst::Tensor* v = tensors.data() + io_off[t];
    for (int64_t b : k.inputs)
      *v++ = inst::Tensor::of(bt[b].ptr, prog.buffers[b].dtype, prog.buffers[b].shape);
    for (int64_t b : k.outputs)
      *v++ = inst::Tensor::of(bt[b].ptr, prog.buffers[b].dtype, prog.buffers[b].shape);
  }
  return std::nullopt;
}

Vm::Vm() = default;
Vm::~Vm() = default;

std::unique_ptr<Vm> Vm::load(ir::Program p, const LoadOptions& opts, std::string& error) {
  int64_t num_sms = opts.num_sms;
  if (num_sms <= 0 && p.target && p.target->num_sms.is_int && p.target->num_sms.i > 0)
    num_sms = p.target->num_sms.i;
  if (num_sms <= 0) num_sms = std::max<int64_t>(1, opts.default_sms);
  if (num_sms > (int64_t{1} << 20)) {
    error = fmt::format("the target has {} SMs, more than the VM models", num_sms);
    return nullptr;
  }
  if (!opts.skip_validate) {
    validate::Result r = validate::validate(p);
    if (!r.ok) {
      error = "refusing to load an invalid schedule:\n" + r.report(false);
      return nullptr;
    }
  }
  if (auto e = check_structure(p, num_sms)) {
    error = *e;
    return nullptr;
  }
  ir::Graph g = ir::Graph::build(p);
  std::vector<uint32_t> order = g.topo_order();
  if (order.size() < p.tasks.size()) {  // a cycle (only with skip_validate): append the rest
    std::vector<uint8_t> in(p.tasks.size());
    for (uint32_t t : order) in[t] = 1;
    for (uint32_t t = 0; t < p.tasks.size(); ++t)
      if (!in[t]) order.push_back(t);
  }
  place(p, order, num_sms, opts.placement);

  std::unique_ptr<Vm> vm(new Vm);
  vm->im_ = std::make_unique<Image>();
  Image& im = *vm->im_;
  const size_t nt = p.tasks.size(), nb = p.buffers.size(), nc = p.counters.size();
  im.num_sms = num_sms;

  // Scratch: the per-launch region (activations, outputs, pages) then the input region.
  im.scratch_off.assign(nb, -1);
  int64_t off = 0;
  std::vector<int64_t> page_off, page_size;
  if (opts.honor_pages && p.pages) {
    page_size.assign(p.pages->pages.size(), 0);
    for (size_t k = 0; k < p.pages->pages.size(); ++k)
      page_size[k] = std::max<int64_t>(0, p.pages->pages[k].nbytes);
    for (auto [b, pg] : p.pages->buffer_to_page)
      if (b >= 0 && static_cast<size_t>(b) < nb && pg >= 0 &&
          static_cast<size_t>(pg) < page_size.size() && !external_kind(p.buffers[b].kind) &&
          p.buffers[b].kind != ir::BufferKind::IO_INPUT)
        page_size[pg] = std::max(page_size[pg], p.buffers[b].nbytes());
    page_off.resize(page_size.size());
    for (size_t k = 0; k < page_size.size(); ++k) {
      page_off[k] = off;
      off += align_up(page_size[k], kAlign);
    }
    for (auto [b, pg] : p.pages->buffer_to_page)
      if (b >= 0 && static_cast<size_t>(b) < nb && pg >= 0 &&
          static_cast<size_t>(pg) < page_size.size() && !external_kind(p.buffers[b].kind) &&
          p.buffers[b].kind != ir::BufferKind::IO_INPUT)
        im.scratch_off[b] = page_off[pg];
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
  const int64_t scratch_bytes = off;

  // Arena layout.
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

  abi::amk_instruction_t* ins = im.instructions();
  im.params.resize(nt);
  im.recipes.resize(nt);
  im.core_type.assign(nt, 0);
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
    im.core_type[t] =
        static_cast<uint8_t>(core_type_of(k.op, im.recipes[t] ? &*im.recipes[t] : nullptr));
    im.hot[t].out_counter = static_cast<uint32_t>(k.out_counter);
    im.hot[t].runs_kernel = k.op != ir::Op::NOP;
    double bytes = static_cast<double>(k.est_bytes);
    if (bytes <= 0)
      for (auto* list : {&k.inputs, &k.outputs})
        for (int64_t b : *list) bytes += static_cast<double>(p.buffers[b].nbytes());
    im.task_bytes[t] = k.op == ir::Op::NOP ? 0 : bytes;
    im.total_bytes += im.task_bytes[t];
    im.io_off[t] = io;
    io += static_cast<uint32_t>(k.inputs.size() + k.outputs.size());
  }
  im.io_off[nt] = io;
  im.has_io = io > 0;
  im.tensors.resize(io);

  // Per-SM queues in topological order, and the gates.
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
  im.external.assign(nb, nullptr);
  im.owned.resize(nb);
  im.input_set.assign(nb, 0);
  im.prog = std::move(p);
  return vm;
}

std::optional<std::string> Vm::bind_weights(const SafeTensors& w) {
  Image& im = *im_;
  for (size_t b = 0; b < im.prog.buffers.size(); ++b) {
    const ir::Buffer& buf = im.prog.buffers[b];
    if (buf.kind != ir::BufferKind::WEIGHT && buf.kind != ir::BufferKind::CONST) continue;
    const std::string& key = buf.source ? *buf.source : buf.name;
    const StTensor* t = w.find(key);
    if (!t)
      return fmt::format("{}: no tensor '{}' for {} buffer '{}'", w.path(), key, ir::name(buf.kind),
                         buf.name);
    if (auto e = check_fit(*t, buf, key, w.path())) return e;
    const bool same = st_of(buf.dtype) == t->dtype && buf.dtype != ir::DType::BOOL;
    const auto align = static_cast<uintptr_t>(std::max(1, st_size(t->dtype)));
    if (same && reinterpret_cast<uintptr_t>(t->data) % align == 0) {
      im.external[b] =
          const_cast<uint8_t*>(t->data);  // read-only mapping; kernels never write inputs
      continue;
    }
    im.owned[b].assign(static_cast<size_t>(buf.nbytes()), 0);
    convert(*t, im.owned[b].data(), buf.dtype, buf.numel());
    im.external[b] = im.owned[b].data();
  }
  return std::nullopt;
}

std::optional<std::string> Vm::set_inputs(const SafeTensors& in) {
  for (const ir::Buffer& buf : im_->prog.buffers)
    if (buf.kind == ir::BufferKind::IO_INPUT)
      if (const StTensor* t = in.find(buf.name))
        if (auto e = set_input(*t, in.path())) return e;
  return std::nullopt;
}

std::optional<std::string> Vm::set_input(const StTensor& t, const std::string& origin) {
  Image& im = *im_;
  for (size_t b = 0; b < im.prog.buffers.size(); ++b) {
    const ir::Buffer& buf = im.prog.buffers[b];
    if (buf.kind != ir::BufferKind::IO_INPUT || buf.name != t.name) continue;
    if (auto e = check_fit(t, buf, buf.name, origin)) return e;
    convert(t, im.scratch() + im.scratch_off[b], buf.dtype, buf.numel());
    im.input_set[b] = 1;
    return std::nullopt;
  }
  return fmt::format("{}: the program has no IO_INPUT buffer '{}'", origin, t.name);
}

std::optional<std::string> Vm::set_decode_inputs(std::span<const int32_t> tokens, int32_t pos) {
  for (const ir::Buffer& b : im_->prog.buffers) {
    if (b.kind != ir::BufferKind::IO_INPUT) continue;
    std::vector<int32_t> v(static_cast<size_t>(b.numel()));
    if (b.name == "token_id") {
      if (v.size() != tokens.size())
        return fmt::format("input 'token_id' holds {} ids but {} were given", v.size(),
                           tokens.size());
      std::copy(tokens.begin(), tokens.end(), v.begin());
    } else if (b.name == "pos") {
      std::fill(v.begin(), v.end(), pos);
    } else if (b.name.starts_with("reshape_id")) {
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i);
    } else {
      return fmt::format(
          "input '{}' is not one a decode step provides (token_id, pos, reshape_id*)", b.name);
    }
    StTensor t{b.name, StDType::I32, b.shape, reinterpret_cast<const uint8_t*>(v.data()),
               v.size() * 4};
    if (auto e = set_input(t, "decode inputs")) return e;
  }
  return std::nullopt;
}

std::optional<std::string> Vm::import(const SafeTensors& f, TensorStore& store) {
  for (const StTensor& t : f.tensors()) {
    TensorStore::Entry e;
    const auto dt = ir_of(t.dtype);
    if (!dt)
      return fmt::format("{}: tensor '{}' has dtype {}, which no KV cache uses", f.path(), t.name,
                         st_name(t.dtype));
    e.dtype = *dt;
    e.shape = t.shape;
    e.bytes.assign(t.data, t.data + t.nbytes);
    store.tensors[t.name] = std::move(e);
  }
  return std::nullopt;
}

std::optional<std::string> Vm::bind_kv(TensorStore& store) {
  Image& im = *im_;
  for (size_t b = 0; b < im.prog.buffers.size(); ++b) {
    const ir::Buffer& buf = im.prog.buffers[b];
    if (buf.kind != ir::BufferKind::KV_CACHE) continue;
    auto it = store.tensors.find(buf.name);
    if (it == store.tensors.end()) {
      TensorStore::Entry e{buf.dtype, buf.shape,
                           std::vector<uint8_t>(static_cast<size_t>(buf.nbytes()), 0)};
      it = store.tensors.emplace(buf.name, std::move(e)).first;
    }
    TensorStore::Entry& e = it->second;
    if (e.shape != buf.shape)
      return fmt::format("KV cache '{}' has shape [{}] but the program needs [{}]", buf.name,
                         fmt::join(e.shape, ", "), fmt::join(buf.shape, ", "));
    if (e.dtype != buf.dtype) {  // convert once; the store then holds the program's dtype
      std::vector<uint8_t> conv(static_cast<size_t>(buf.nbytes()), 0);
      std::vector<float> tmp(static_cast<size_t>(buf.numel()));
      inst::to_f32(e.bytes.data(), e.dtype, 0, buf.numel(), tmp.data());
      inst::from_f32(tmp.data(), buf.numel(), conv.data(), buf.dtype, 0);
      e.bytes = std::move(conv);
      e.dtype = buf.dtype;
    }
    im.external[b] = e.bytes.data();
  }
  return std::nullopt;
}

std::vector<StOut> Vm::outputs() const {
  const Image& im = *im_;
  std::vector<StOut> out;
  for (auto kind : {ir::BufferKind::IO_OUTPUT, ir::BufferKind::KV_CACHE})
    for (size_t b = 0; b < im.prog.buffers.size(); ++b) {
      const ir::Buffer& buf = im.prog.buffers[b];
      if (buf.kind != kind) continue;
      const void* d = data(static_cast<int64_t>(b));
      if (!d) continue;
      auto shape = buf.shape;
      if (buf.dtype == ir::DType::I4 && !shape.empty()) shape.back() = (shape.back() + 1) / 2;
      out.push_back({buf.name,
                     st_of(buf.dtype),
                     shape,
                     {static_cast<const uint8_t*>(d), static_cast<size_t>(buf.nbytes())}});
    }
  return out;
}

const void* Vm::data(int64_t b) const {
  const Image& im = *im_;
  if (b < 0 || static_cast<size_t>(b) >= im.prog.buffers.size()) return nullptr;
  if (im.scratch_off[b] >= 0) return im.scratch() + im.scratch_off[b];
  return im.external[b];
}

const ir::Program& Vm::program() const {
  return im_->prog;
}
int64_t Vm::num_sms() const {
  return im_->num_sms;
}
int64_t Vm::image_bytes() const {
  return im_->header->image_bytes;
}
std::vector<std::vector<int64_t>> Vm::queues() const {
  std::vector<std::vector<int64_t>> q(static_cast<size_t>(im_->num_sms));
  for (int64_t s = 0; s < im_->num_sms; ++s)
    for (int32_t i = im_->queue_len()[s]; i < im_->queue_len()[s + 1]; ++i)
      q[s].push_back(im_->queue()[i]);
  return q;
}

}  // namespace amk::vm
