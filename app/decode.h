// The greedy decode loop on the reference VM: every position lowered (or given as a program),
// proven and run with KV caches kept across steps, optionally checked step by step against a
// direct evaluation. `amk generate` and the Python module are its front ends.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/program.h"
#include "ir/result.h"
#include "lower/lower.h"
#include "lower/model.h"
#include "targets/target.h"
#include "vm/safetensors.h"
#include "vm/vm.h"

namespace amk::app {

/// Where each step's program comes from: `model` lowered for `target` under `config` at every
/// position, or the per-position `programs` (files, position 0, 1, ...; proven for and run on
/// `target` when it is set, else on their own).
struct DecodeSource {
  const lower::ModelSpec* model = nullptr;
  const targets::TargetSpec* target = nullptr;
  std::optional<ir::ScheduleConfig> config;
  lower::LowerOptions lower;
  std::vector<std::string> programs;
};

/// How to decode.
struct DecodeOptions {
  std::vector<int32_t> prompt;  ///< step s feeds prompt[s], then the previous step's argmax
  int max_tokens = 1;
  bool verify = false;  ///< compare every step with a direct evaluation (a model source only)
  double tolerance = 1e-4;
  vm::RunOptions run;
  vm::LoadOptions load;
  const vm::SafeTensors* weights = nullptr;
  std::function<void(size_t done, size_t steps)> progress;  ///< after every step
};

/// What a decode produced.
struct DecodeResult {
  std::vector<int32_t> generated;
  size_t steps = 0;
  double wall_s = 0, run_s = 0, lower_s = 0, direct_s = 0;
  double max_error = 0;  ///< with verify: the largest |logit difference|
  vm::TensorStore kv;    ///< the KV caches after the last step
};

/// The position a lowered decode step was lowered at (its meta.pos), if it says.
std::optional<int64_t> lowered_pos(const ir::Program& p);
/// The position to run one decode step at: `pos` when given (it must agree with lowered_pos,
/// else `vm.binding` at /meta/pos), else lowered_pos (neither: `usage.option`).
ir::Result<int32_t> step_pos(const ir::Program& p, std::optional<int64_t> pos);
/// Refuses step inputs that contradict the program: a `pos` tensor other than lowered_pos.
ir::Status check_step_inputs(const ir::Program& p, const vm::SafeTensors& in);
/// A template for `--inputs`: every IO_INPUT of `p` as a safetensors image, a decode step's
/// filled in (token_id `tokens`, or zeros when empty; pos from step_pos, or 0 when nothing says;
/// reshape ids 0..n-1), any other input zeros in its dtype.
ir::Result<std::string> inputs_template(const ir::Program& p, std::span<const int32_t> tokens,
                                        std::optional<int64_t> pos);
/// Refuses a KV file that holds none of the program's KV caches (a weights file, say: it would
/// bind nothing and the step would read zeros).
ir::Status check_kv_file(const ir::Program& p, const vm::SafeTensors& kv);

/// Steps the prompt and max_tokens need: prompt + max_tokens - 1.
size_t decode_steps(const DecodeOptions& o);
/// Runs the loop. Failures: the lowering's or a program's diagnostics, `vm.rejected`, binding
/// errors, `vm.deadlock` / `vm.timeout` (message: the stuck report), `vm.kernel`, and
/// `verify.mismatch` when a step's logits differ from the direct evaluation beyond tolerance.
ir::Result<DecodeResult> decode(const DecodeSource& src, const DecodeOptions& o);

}  // namespace amk::app
