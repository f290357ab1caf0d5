// Internal: the loaded program image (one arena, PTO-style host-built tables) and its bindings.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "instructions/kernel.h"
#include "ir/abi.h"
#include "ir/fused.h"
#include "ir/opcodes.h"
#include "ir/program.h"
#include "ir/result.h"
#include "vm/options.h"

namespace amk::vm {

/// A waiter of a counter: the task whose gate opens when the counter reaches `threshold`.
struct CounterWaiter {
  uint32_t threshold;
  uint32_t task;
};

/// The arena: a header, then the ABI tables (buffers, counter inits, instructions, per-SM queues),
/// then activation scratch. Every table is addressed by an offset from the base, so the image is
/// position-independent; `wire` resolves buffer pointers for a launch.
class Image {
 public:
  ir::Program prog;
  std::unique_ptr<std::byte[], void (*)(std::byte*)> arena{nullptr, [](std::byte*) {}};
  abi::amk_program_header_t* header = nullptr;
  int64_t num_sms = 0;

  // Host-side execution tables (dense, by task id).
  std::vector<uint32_t>
      gate_init;  ///< unsatisfied waits at reset + 1 when an SM predecessor exists
  std::vector<uint32_t> gate_init_waits;  ///< unsatisfied waits at reset (AICore mode)
  /// What the executor touches per completed task, packed in one record.
  struct Hot {
    uint32_t out_counter;
    int32_t sm_next;        ///< next task in the same SM queue, or -1
    uint32_t wbegin, wend;  ///< the waiters of out_counter in `waiters`
    uint32_t runs_kernel;   ///< 0 for NOP
  };
  std::vector<Hot> hot;
  std::vector<uint32_t> waiter_off;  ///< CSR over counters: waiters sorted by threshold
  std::vector<CounterWaiter> waiters;
  std::vector<double> task_bytes;
  double total_bytes = 0;  ///< Σ task_bytes
  std::vector<ir::ParamTable> params;
  std::vector<std::optional<ir::Recipe>> recipes;
  std::vector<uint32_t> io_off;      ///< task t's tensors: in at io_off[t].., then outputs
  std::vector<int64_t> scratch_off;  ///< buffer -> offset in scratch, or -1 (bound externally)
  int64_t launch_scratch_bytes = 0;  ///< zeroed before every launch

  // Bindings (external memory: weights, KV).
  std::vector<void*> external;              ///< buffer -> bound pointer (weights, KV), or nullptr
  std::vector<std::vector<uint8_t>> owned;  ///< converted weight copies
  std::vector<uint8_t> input_set;           ///< IO_INPUT buffer has been given

  std::vector<inst::Tensor> tensors;  ///< resolved views, rebuilt by wire()
  bool has_io = false;                ///< some task reads or writes a buffer

  // Per-launch state of the single-thread modes, reused across launches.
  std::vector<uint32_t> serial_counters, serial_gates, serial_ready;
  std::vector<uint8_t> serial_state;

  abi::amk_buffer_t* buffers() const;
  abi::amk_instruction_t* instructions() const;
  uint32_t* counter_init() const;
  int32_t* queue() const;
  int32_t* queue_len() const;  ///< num_sms + 1 offsets into queue()
  std::byte* scratch() const;
  /// Resolves every buffer pointer and tensor view for a launch; an error names a missing binding.
  ir::Status wire();
};

}  // namespace amk::vm
