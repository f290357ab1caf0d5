// libFuzzer target for safetensors files (weights, inputs, KV caches): any bytes give tensors or a
// diagnostic, never a crash; every accepted tensor lies inside the file and holds its shape's
// bytes, so a VM binding it never reads past the mapping.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "vm/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = amk::vm::SafeTensors::parse(std::span<const uint8_t>(data, size), "fuzz.safetensors");
  if (!r) {
    if (r.diagnostics.empty()) std::abort();
    return 0;
  }
  for (const amk::vm::StTensor& t : (*r)->tensors()) {
    if (t.data < data || t.data + t.nbytes > data + size) std::abort();
    const auto want = static_cast<size_t>(t.numel()) * static_cast<size_t>(st_size(t.dtype));
    if (t.nbytes != want) std::abort();
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < t.nbytes; i += 4096) sink = sink ^ t.data[i];
    if ((*r)->find(t.name) == nullptr) std::abort();
  }
  return 0;
}
