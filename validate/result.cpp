#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/diagnostic_json.h"
#include "ir/pyjson.h"
#include "validate/validate.h"

namespace amk::validate {

std::string Stats::repr() const {
  return fmt::format(
      "{{'tasks': {}, 'buffers': {}, 'counters': {}, 'edges': {}, 'acyclic': {}, 'weight_MB': {}, "
      "'sm_assigned': {}}}",
      tasks, buffers, counters, edges, acyclic ? "True" : "False", ir::py_float(weight_mb),
      sm_assigned ? "True" : "False");
}

namespace {

void details(std::string& out, const ir::Diagnostic& d) {
  out += fmt::format("\n      [{}]{}{}", d.code, d.pointer.empty() ? "" : " at ", d.pointer);
  for (const auto& n : d.notes)
    out +=
        fmt::format("\n      note: {}{}{}", n.message, n.pointer.empty() ? "" : " at ", n.pointer);
}

}  // namespace

std::string Result::report(bool with_details) const {
  std::string out = fmt::format("[{}] {}", ok ? "VALID" : "REJECTED", stats.repr());
  for (const auto& e : errors) {
    out += "\n  ERROR: " + e.message;
    if (with_details) details(out, e);
  }
  for (const auto& w : warnings) {
    out += "\n  warn:  " + w.message;
    if (with_details) details(out, w);
  }
  return out;
}

std::string Result::to_json(std::string_view file) const {
  nlohmann::ordered_json j;
  j["ok"] = ok;
  if (!file.empty()) j["file"] = std::string(file);
  j["errors"] = ir::to_json(errors);
  j["warnings"] = ir::to_json(warnings);
  j["stats"] = {{"tasks", stats.tasks},
                {"buffers", stats.buffers},
                {"counters", stats.counters},
                {"edges", stats.edges},
                {"acyclic", stats.acyclic},
                {"weight_MB", stats.weight_mb},
                {"sm_assigned", stats.sm_assigned}};
  std::string out;
  ir::append_json_value(out, j, 0);
  return out;
}

std::span<const Rule> rules() {
  static const Rule kRules[] = {
      {"ref.missing-buffer", "a task reads or writes a buffer id that does not exist", true},
      {"ref.missing-counter", "a task increments or waits on a counter id that does not exist",
       true},
      {"abi.max-inputs", "more than ABI_MAX_INPUTS=8 inputs", true},
      {"abi.max-outputs", "more than ABI_MAX_OUTPUTS=4 outputs", true},
      {"abi.max-waits", "more than ABI_MAX_WAITS=8 waits", true},
      {"abi.max-rank", "a task touches a buffer of rank > ABI_MAX_RANK=4", true},
      {"wait.threshold", "a wait threshold is not a positive static int", true},
      {"wait.self", "a task waits on its own out_counter (self-deadlock)", true},
      {"op.arity", "input count outside the opcode's [min, max]", true},
      {"op.outputs", "output count differs from the opcode's", true},
      {"op.required-param", "a param the opcode requires is missing", true},
      {"param.unknown", "warning: a param key that amk_params_t does not have", true},
      {"param.int32", "an int param field is not an int32", true},
      {"param.real", "a float param field is not a real number", true},
      {"buffer.dims", "a buffer has a dimension <= 0", false},
      {"buffer.duplicate-name", "warning: two buffers share a name (tensors bind by name)", false},
      {"param.finite", "a float param is NaN or infinite", false},
      {"param.range",
       "a size/offset param is negative, zero where it must be positive, or odd "
       "where it must be even",
       false},
      {"write.readonly", "a task writes a WEIGHT, CONST or IO_INPUT buffer", false},
      {"fused.recipe", "a FUSED recipe is malformed (AMK's validate_recipe rules)", false},
      {"shape.copy", "COPY: input and output sizes differ", false},
      {"shape.embed", "EMBED: table rank, id dtype or output size inconsistent", false},
      {"shape.norm", "RMSNORM/LAYERNORM: hidden, weight, bias and output inconsistent", false},
      {"shape.gemv", "GEMV/GEMM_TILE: K, weight, scales, bias or output inconsistent", false},
      {"shape.attention", "ATTENTION_TILE: heads, head_dim, KV window or output inconsistent",
       false},
      {"shape.rope", "ROPE: head_dim odd or inconsistent, positions or output wrong", false},
      {"shape.elementwise", "SILU_MUL/GELU/ADD/MUL/SOFTMAX/ALLREDUCE: operand sizes differ", false},
      {"shape.dequant", "DEQUANT: qdtype, group, scales or output inconsistent", false},
      {"shape.kv-append", "KV_APPEND: not in place, or the new rows do not fit the cache", false},
      {"shape.argmax", "SAMPLE_ARGMAX: output size is not the number of rows", false},
      {"shape.combine", "ATTENTION_COMBINE: partials and output inconsistent", false},
      {"tile.bounds", "a GEMV/GEMM tile writes outside its output buffer", false},
      {"wait.no-producer", "a wait on a counter no task increments (deadlock)", true},
      {"wait.unsatisfiable", "a threshold above the counter's producer count (deadlock)", true},
      {"wait.partial-join", "a partial wait on a shared counter (which-producer race)", true},
      {"counter.init",
       "a counter with init != 0 is waited below init + #producers (pre-satisfied "
       "or partial: no happens-before)",
       false},
      {"counter.range", "a counter init outside uint32", false},
      {"graph.cycle", "the producer->consumer graph has a cycle (structural deadlock)", true},
      {"read.never-produced", "a transient buffer is read but never written", true},
      {"race.raw", "a read not ordered after every writer of the buffer", true},
      {"race.kv", "a KV cache read not ordered after this pass's append", true},
      {"read.own-output", "warning: a task reads its own output in place with no producer", true},
      {"race.waw", "two writers of one buffer unordered with overlapping footprints", true},
      {"tile.coverage", "the tiles writing a buffer leave part of it unwritten before it is read",
       false},
      {"onchip.cross-sm", "an SMEM/REGISTER buffer is used on more than one SM", true},
      {"onchip.unassigned", "warning: an on-chip buffer's users have no SM yet", true},
      {"sm.queue-order", "same-SM producer after its consumer in the SM's serial queue", true},
      {"sm.queue-deadlock",
       "counter waits plus per-SM queue order form a cycle (AMK checks only "
       "same-SM edges)",
       false},
      {"sm.range", "an SM outside [0, target.num_sms)", true},
      {"sm.negative", "a negative SM (checked even without a target)", false},
      {"page.missing-page", "a buffer is mapped to a page id that does not exist", false},
      {"page.missing-buffer", "the page map names a buffer id that does not exist", false},
      {"page.kind", "a non-ACTIVATION buffer is bound to a scratch page", false},
      {"page.space", "a buffer's memory space does not match its page's", false},
      {"page.size", "a buffer is larger than its page", false},
      {"page.clobber", "two buffers share a page with unordered live ranges", true},
      {"io.never-produced", "an IO_OUTPUT buffer is never written", true},
      {"meta.gpu-mismatch", "warning: meta.gpu differs from target.name", true},
  };
  return kRules;
}

}  // namespace amk::validate
