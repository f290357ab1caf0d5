// The loaded image's tables, the launch wiring of buffer pointers, and the Vm's accessors.
#include "vm/vm.h"

#include <fmt/format.h>

#include "vm/image.h"

namespace amk::vm {

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

ir::Status Image::wire() {
  abi::amk_buffer_t* bt = buffers();
  for (size_t b = 0; b < prog.buffers.size(); ++b) {
    const ir::Buffer& buf = prog.buffers[b];
    void* ptr = scratch_off[b] >= 0 ? static_cast<void*>(scratch() + scratch_off[b]) : external[b];
    if (!ptr && buf.numel() > 0) {
      if (buf.kind == ir::BufferKind::KV_CACHE)
        return ir::error("vm.binding", fmt::format("KV cache '{}' is not bound", buf.name),
                         fmt::format("/buffers/{}", b));
      return ir::error("vm.binding",
                       fmt::format("{} buffer '{}' (key '{}') is not bound: no weights were given "
                                   "for it",
                                   ir::name(buf.kind), buf.name, buf.source.value_or(buf.name)),
                       fmt::format("/buffers/{}", b));
    }
    if (buf.kind == ir::BufferKind::IO_INPUT && !input_set[b])
      return ir::error(
          "vm.binding",
          fmt::format("input '{}' was not given (an IO_INPUT buffer needs a tensor of that name)",
                      buf.name),
          fmt::format("/buffers/{}", b));
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
  return {};
}

Vm::Vm() = default;
Vm::~Vm() = default;

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
