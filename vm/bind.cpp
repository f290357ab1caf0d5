// Binding a loaded program's buffers: weights (views into the mapping, or converted copies),
// inputs, decode-step inputs and KV caches that outlive a launch.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "instructions/dtype.h"
#include "vm/image.h"
#include "vm/vm.h"

namespace amk::vm {
namespace {

// Checks that a file tensor can fill buffer `b`; an error names the file and the key.
ir::Status check_fit(const StTensor& t, const ir::Buffer& b, std::string_view key,
                     const std::string& file) {
  auto bad = [&](std::string msg) {
    ir::Diagnostic d = ir::error("vm.binding", std::move(msg), "/" + ir::pointer_token(key));
    d.file = file;
    return ir::Status(std::move(d));
  };
  if (b.dtype == ir::DType::I4) {
    auto packed = b.shape;
    if (!packed.empty()) packed.back() = (packed.back() + 1) / 2;
    if ((t.dtype == StDType::U8 || t.dtype == StDType::I8) &&
        (t.shape == b.shape || t.shape == packed) && static_cast<int64_t>(t.nbytes) == b.nbytes())
      return {};
    return bad(fmt::format("tensor '{}' for packed-I4 buffer '{}' must be U8 bytes of shape {}",
                           key, b.name, fmt::join(packed, "x")));
  }
  if (t.shape != b.shape)
    return bad(fmt::format("tensor '{}' has shape [{}] but buffer '{}' needs [{}]", key,
                           fmt::join(t.shape, ", "), b.name, fmt::join(b.shape, ", ")));
  return {};
}

}  // namespace

ir::Status Vm::bind_weights(const SafeTensors& w) {
  Image& im = *im_;
  for (size_t b = 0; b < im.prog.buffers.size(); ++b) {
    const ir::Buffer& buf = im.prog.buffers[b];
    if (buf.kind != ir::BufferKind::WEIGHT && buf.kind != ir::BufferKind::CONST) continue;
    const std::string& key = buf.source ? *buf.source : buf.name;
    const StTensor* t = w.find(key);
    if (!t) {
      ir::Diagnostic d = ir::error(
          "vm.binding",
          fmt::format("no tensor '{}' for {} buffer '{}'", key, ir::name(buf.kind), buf.name),
          "/" + ir::pointer_token(key));
      d.file = w.path();
      return d;
    }
    if (ir::Status st = check_fit(*t, buf, key, w.path()); !st) return st;
    const bool same = st_of(buf.dtype) == t->dtype && buf.dtype != ir::DType::BOOL;
    const auto align = static_cast<uintptr_t>(std::max(1, st_size(t->dtype)));
    if (same && reinterpret_cast<uintptr_t>(t->data) % align == 0) {
      im.external[b] =
          const_cast<uint8_t*>(t->data);  // read-only mapping; kernels never write inputs
      continue;
    }
    im.owned[b].assign(static_cast<size_t>(buf.nbytes()), 0);
    st_convert(*t, im.owned[b].data(), buf.dtype, buf.numel());
    im.external[b] = im.owned[b].data();
  }
  return {};
}

ir::Status Vm::set_inputs(const SafeTensors& in) {
  for (const ir::Buffer& buf : im_->prog.buffers)
    if (buf.kind == ir::BufferKind::IO_INPUT)
      if (const StTensor* t = in.find(buf.name))
        if (ir::Status st = set_input(*t, in.path()); !st) return st;
  return {};
}

ir::Status Vm::set_input(const StTensor& t, const std::string& origin) {
  Image& im = *im_;
  for (size_t b = 0; b < im.prog.buffers.size(); ++b) {
    const ir::Buffer& buf = im.prog.buffers[b];
    if (buf.kind != ir::BufferKind::IO_INPUT || buf.name != t.name) continue;
    if (ir::Status st = check_fit(t, buf, buf.name, origin); !st) return st;
    st_convert(t, im.scratch() + im.scratch_off[b], buf.dtype, buf.numel());
    im.input_set[b] = 1;
    return {};
  }
  ir::Diagnostic d =
      ir::error("vm.binding", fmt::format("the program has no IO_INPUT buffer '{}'", t.name),
                "/" + ir::pointer_token(t.name));
  d.file = origin;
  return d;
}

ir::Result<std::vector<int32_t>> decode_input(const ir::Buffer& b, std::span<const int32_t> tokens,
                                              int32_t pos) {
  std::vector<int32_t> v(static_cast<size_t>(b.numel()));
  if (b.name == "token_id") {
    if (v.size() != tokens.size())
      return ir::error("vm.binding", fmt::format("input 'token_id' holds {} ids but {} were given",
                                                 v.size(), tokens.size()));
    std::copy(tokens.begin(), tokens.end(), v.begin());
  } else if (b.name == "pos") {
    std::fill(v.begin(), v.end(), pos);
  } else if (b.name.starts_with("reshape_id")) {
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i);
  } else {
    return ir::error(
        "vm.binding",
        fmt::format("input '{}' is not one a decode step provides (token_id, pos, reshape_id*)",
                    b.name));
  }
  return v;
}

ir::Status Vm::set_decode_inputs(std::span<const int32_t> tokens, int32_t pos) {
  for (const ir::Buffer& b : im_->prog.buffers) {
    if (b.kind != ir::BufferKind::IO_INPUT) continue;
    ir::Result<std::vector<int32_t>> v = decode_input(b, tokens, pos);
    if (!v) return std::move(v.diagnostics);
    StTensor t{b.name, StDType::I32, b.shape, reinterpret_cast<const uint8_t*>(v->data()),
               v->size() * 4};
    if (ir::Status st = set_input(t, "decode inputs"); !st) return st;
  }
  return {};
}

ir::Status Vm::import(const SafeTensors& f, TensorStore& store) {
  for (const StTensor& t : f.tensors()) {
    TensorStore::Entry e;
    const auto dt = ir_of(t.dtype);
    if (!dt) {
      ir::Diagnostic d = ir::error(
          "vm.binding",
          fmt::format("tensor '{}' has dtype {}, which no KV cache uses", t.name, st_name(t.dtype)),
          "/" + ir::pointer_token(t.name) + "/dtype");
      d.file = f.path();
      return d;
    }
    e.dtype = *dt;
    e.shape = t.shape;
    e.bytes.assign(t.data, t.data + t.nbytes);
    store.tensors[t.name] = std::move(e);
  }
  return {};
}

ir::Status Vm::bind_kv(TensorStore& store) {
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
      return ir::error("vm.binding",
                       fmt::format("KV cache '{}' has shape [{}] but the program needs [{}]",
                                   buf.name, fmt::join(e.shape, ", "), fmt::join(buf.shape, ", ")));
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
  return {};
}

}  // namespace amk::vm
