// The persistent-kernel reference VM: loads a validated program into one arena, binds tensors from
// safetensors files, and runs it on counter-driven workers that model the GPU's SMs (or Ascend's
// AICore clusters). Options: options.h; outcomes: run_result.h; the observer seam: observer.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/program.h"
#include "ir/result.h"
#include "vm/observer.h"
#include "vm/options.h"
#include "vm/run_result.h"
#include "vm/safetensors.h"

namespace amk::vm {

/// Named tensors that outlive a launch (KV caches across decode steps).
struct TensorStore {
  struct Entry {
    ir::DType dtype = ir::DType::F32;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };
  std::map<std::string, Entry, std::less<>> tensors;
};

class Image;

/// The values a lowered decode step binds to IO_INPUT `b`: token_id `tokens` (one id per
/// sequence), pos `pos` in every element, reshape_id* 0..n-1; a `vm.binding` error for another
/// input or a token count that does not fit.
ir::Result<std::vector<int32_t>> decode_input(const ir::Buffer& b, std::span<const int32_t> tokens,
                                              int32_t pos);

/// A loaded program: the arena image plus the bindings of its buffers.
class Vm {
 public:
  /// Validates (unless skipped), places and lays out `p`. A program the validator rejects is a
  /// `vm.rejected` error ("... [REJECTED] {stats}") followed by the validator's errors; an
  /// unloadable one `vm.load`.
  static ir::Result<std::unique_ptr<Vm>> load(ir::Program p, const LoadOptions& opts);
  ~Vm();
  Vm(const Vm&) = delete;
  Vm& operator=(const Vm&) = delete;

  /// Binds WEIGHT/CONST buffers to `Buffer.source` (or name) in `w`; same dtype → a view into the
  /// mapping (no copy), otherwise converted. `w` must outlive the Vm.
  ir::Status bind_weights(const SafeTensors& w);
  /// Copies IO_INPUT tensors (by name) into the arena for the next launches.
  ir::Status set_inputs(const SafeTensors& in);
  /// Copies one IO_INPUT tensor (by its name; converted to the buffer's dtype). `origin` names
  /// where it came from in errors.
  ir::Status set_input(const StTensor& t, const std::string& origin);
  /// Sets the inputs of a lowered decode step: `token_id` (one id per sequence), `pos` (every
  /// element) and the reshape bridges' `reshape_id*` (0..n-1); any other IO_INPUT is an error.
  ir::Status set_decode_inputs(std::span<const int32_t> tokens, int32_t pos);
  /// Binds KV_CACHE buffers to `store` (by name), creating zero tensors for missing names and
  /// converting/refusing mis-shaped ones. Writes of KV_APPEND land in the store.
  ir::Status bind_kv(TensorStore& store);
  /// Imports tensors of a file into a store (name, dtype and shape kept; for `--kv`).
  static ir::Status import(const SafeTensors& f, TensorStore& store);

  /// One launch: reset counters and activations, run every task, return the outcome (which the
  /// observer, if any, sees last).
  RunResult run(const RunOptions& opts);

  /// IO_OUTPUT buffers then KV_CACHE buffers, as tensors to write (views; valid until next run).
  std::vector<StOut> outputs() const;
  /// A buffer's current contents (nullptr when unbound).
  const void* data(int64_t buffer) const;
  /// The program as loaded (with the SM placement filled in).
  const ir::Program& program() const;
  /// Number of SMs.
  int64_t num_sms() const;
  /// The SM queues (task ids in execution order).
  std::vector<std::vector<int64_t>> queues() const;
  /// Bytes of the arena image (tables + activation scratch).
  int64_t image_bytes() const;

 private:
  Vm();
  RunResult launch(const RunOptions& opts);
  std::unique_ptr<Image> im_;
};

}  // namespace amk::vm
