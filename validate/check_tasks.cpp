// AMK step 1 (references, ABI caps, self-waits, arity, params) with AMK's exact messages, then
// amk's structural additions (dimensions, read-only writes, finite params, FUSED recipes).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/fused.h"
#include "ir/opcodes.h"
#include "ir/pyjson.h"
#include "validate/context.h"

namespace amk::validate {
namespace {

std::string param_repr(const ir::ParamValue& v) {
  switch (v.kind) {
    case ir::ParamValue::Kind::Int:
      return std::to_string(v.i);
    case ir::ParamValue::Kind::Float:
      return std::isnan(v.f)   ? "nan"
             : std::isinf(v.f) ? (v.f < 0 ? "-inf" : "inf")
                               : ir::py_float(v.f);
    case ir::ParamValue::Kind::Bool:
      return v.i ? "True" : "False";
    case ir::ParamValue::Kind::Other:
      return ir::py_repr(v.other.json());
  }
  return {};
}

}  // namespace

void check_task_refs(Context& c, size_t id, const ir::ParamTable& pt) {
  const ir::Program& p = c.p;
  {
    const ir::Task& t = p.tasks[id];
    auto ref = [&] { return task_ref(t, id); };  // formatted only when something is reported
    const std::string_view op = ir::name(t.op);
    for (size_t k = 0; k < t.inputs.size(); ++k)
      if (!c.buffer_ok(t.inputs[k]))
        c.error("ref.missing-buffer", fmt::format("{} reads missing buffer {}", ref(), t.inputs[k]),
                ir::task_pointer(id, fmt::format("inputs/{}", k)));
    for (size_t k = 0; k < t.outputs.size(); ++k)
      if (!c.buffer_ok(t.outputs[k]))
        c.error("ref.missing-buffer",
                fmt::format("{} writes missing buffer {}", ref(), t.outputs[k]),
                ir::task_pointer(id, fmt::format("outputs/{}", k)));
    if (!c.counter_ok(t.out_counter))
      c.error("ref.missing-counter",
              fmt::format("{} increments missing counter {}", ref(), t.out_counter),
              ir::task_pointer(id, "out_counter"));
    if (t.inputs.size() > ir::kMaxInputs)
      c.error("abi.max-inputs",
              fmt::format("task {} has {} inputs > ABI_MAX_INPUTS={}", id, t.inputs.size(),
                          ir::kMaxInputs),
              ir::task_pointer(id, "inputs"));
    if (t.outputs.size() > ir::kMaxOutputs)
      c.error("abi.max-outputs",
              fmt::format("task {} has {} outputs > ABI_MAX_OUTPUTS={}", id, t.outputs.size(),
                          ir::kMaxOutputs),
              ir::task_pointer(id, "outputs"));
    if (t.waits.size() > ir::kMaxWaits)
      c.error(
          "abi.max-waits",
          fmt::format("task {} has {} waits > ABI_MAX_WAITS={}", id, t.waits.size(), ir::kMaxWaits),
          ir::task_pointer(id, "waits"));
    auto rank_check = [&](const std::vector<int64_t>& list, const char* field) {
      for (size_t k = 0; k < list.size(); ++k) {
        int64_t b = list[k];
        if (c.buffer_ok(b) && c.buf(b).shape.size() > ir::kMaxRank)
          c.error("abi.max-rank",
                  fmt::format("task {} buffer {} rank {} > ABI_MAX_RANK={}", id, b,
                              c.buf(b).shape.size(), ir::kMaxRank),
                  ir::task_pointer(id, fmt::format("{}/{}", field, k)));
      }
    };
    rank_check(t.inputs, "inputs");
    rank_check(t.outputs, "outputs");
    for (size_t k = 0; k < t.waits.size(); ++k) {
      const ir::Wait& w = t.waits[k];
      if (!c.counter_ok(w.counter))
        c.error("ref.missing-counter",
                fmt::format("{} waits on missing counter {}", ref(), w.counter),
                ir::task_pointer(id, fmt::format("waits/{}/counter", k)));
      if (w.threshold < 1)
        c.error("wait.threshold",
                fmt::format("{} threshold {} on counter {} is not a positive static int", ref(),
                            w.threshold, w.counter),
                ir::task_pointer(id, fmt::format("waits/{}/threshold", k)));
    }
    for (size_t k = 0; k < t.waits.size(); ++k)
      if (t.waits[k].counter == t.out_counter)
        c.error(
            "wait.self",
            fmt::format("{} waits on its OWN out_counter {}, self-deadlock", ref(), t.out_counter),
            ir::task_pointer(id, fmt::format("waits/{}", k)),
            {{"a task's counter only moves when the task finishes, so it can never start",
              ir::task_pointer(id, "out_counter")}});
    const ir::OpSpec& spec = ir::op_spec(t.op);
    auto n_in = static_cast<int>(t.inputs.size());
    if (n_in < spec.min_inputs || (spec.max_inputs != -1 && n_in > spec.max_inputs))
      c.error("op.arity",
              fmt::format("task {} ({}) arity: {} inputs, expected [{},{}]", id, op, n_in,
                          spec.min_inputs, spec.max_inputs),
              ir::task_pointer(id, "inputs"));
    if (spec.n_outputs != -1 && static_cast<int>(t.outputs.size()) != spec.n_outputs)
      c.error("op.outputs",
              fmt::format("task {} ({}) expected {} outputs, got {}", id, op, spec.n_outputs,
                          t.outputs.size()),
              ir::task_pointer(id, "outputs"));
    for (std::string_view k : spec.required)
      if (auto f = ir::param_field(k); f ? !(pt.present >> static_cast<int>(*f) & 1u) : !t.param(k))
        c.error("op.required-param",
                fmt::format("task {} ({}) missing required param '{}'", id, op, k),
                ir::task_pointer(id, "params"));
    for (const ir::Param& prm : t.params) {
      auto type = ir::param_type(prm.key);
      auto ptr = [&] { return ir::task_pointer(id, "params/" + ir::pointer_token(prm.key)); };
      if (!type) {
        c.warn("param.unknown",
               fmt::format("task {} ({}) param '{}' is not a known amk_params_t field (will not "
                           "marshal to the device)",
                           id, op, prm.key),
               ptr());
      } else if (*type == ir::ParamType::Int) {
        if (!prm.value.is_int() || prm.value.i < std::numeric_limits<int32_t>::min() ||
            prm.value.i > std::numeric_limits<int32_t>::max())
          c.error("param.int32",
                  fmt::format("task {} param '{}'={} must be an int32", id, prm.key,
                              param_repr(prm.value)),
                  ptr());
      } else if (prm.value.kind == ir::ParamValue::Kind::Other) {  // Python: bools pass
        c.error("param.real",
                fmt::format("task {} param '{}'={} must be a real number", id, prm.key,
                            param_repr(prm.value)),
                ptr());
      }
    }
  }
}

void check_buffers(Context& c) {
  const ir::Program& p = c.p;
  // Duplicate names through a flat open-addressing table of (hash, first buffer with it).
  size_t cap = 16;
  while (cap < 2 * p.buffers.size()) cap <<= 1;
  auto& table = c.s.pairs;
  table.assign(cap, {0, SIZE_MAX});
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    const ir::Buffer& buf = p.buffers[b];
    for (size_t k = 0; k < buf.shape.size(); ++k) {
      if (buf.shape[k] <= 0) {
        c.error("buffer.dims",
                fmt::format("buffer #{} ('{}') has shape {}: every dimension must be positive", b,
                            buf.name, ir::py_repr(nlohmann::ordered_json(buf.shape))),
                fmt::format("/buffers/{}/shape/{}", b, k));
        break;
      }
    }
    const size_t h = std::hash<std::string_view>{}(buf.name);
    for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
      auto& [eh, first] = table[i];
      if (first == SIZE_MAX) {
        table[i] = {h, b};
        break;
      }
      if (eh == h && p.buffers[first].name == buf.name) {
        c.warn("buffer.duplicate-name",
               fmt::format("buffers #{} and #{} are both named '{}'; weights, inputs and outputs "
                           "are bound by name",
                           first, b, buf.name),
               fmt::format("/buffers/{}/name", b),
               {{"the first one", fmt::format("/buffers/{}", first)}});
        break;
      }
    }
  }
}

void check_task_structure(Context& c, size_t id) {
  {
    const ir::Task& t = c.p.tasks[id];
    for (const ir::Param& prm : t.params)
      if (prm.value.kind == ir::ParamValue::Kind::Float && !std::isfinite(prm.value.f))
        c.error("param.finite",
                fmt::format("{} param '{}'={} is not finite", task_ref(t, id), prm.key,
                            param_repr(prm.value)),
                ir::task_pointer(id, "params/" + ir::pointer_token(prm.key)));
    for (size_t k = 0; k < t.outputs.size(); ++k) {
      int64_t b = t.outputs[k];
      if (c.buffer_ok(b) && ir::is_readonly(c.buf(b).kind))
        c.error("write.readonly",
                fmt::format("{} writes {} buffer #{} ('{}'), which is read-only: weights, "
                            "constants and inputs are never written by a schedule",
                            task_ref(t, id), ir::name(c.buf(b).kind), b, c.buf(b).name),
                ir::task_pointer(id, fmt::format("outputs/{}", k)));
    }
    if (t.op == ir::Op::FUSED) {
      if (const ir::ParamValue* rv = t.param("recipe")) {
        std::vector<std::string> errs;
        ir::JsonValue recipe =
            rv->kind == ir::ParamValue::Kind::Other ? rv->other : ir::JsonValue();
        auto parsed = ir::parse_recipe(recipe, static_cast<int64_t>(t.inputs.size()), errs);
        if (parsed) {
          for (size_t k = 0; k < parsed->steps.size(); ++k) {
            const auto& st = parsed->steps[k];
            const ir::OpSpec& sp = ir::op_spec(st.op);
            auto n = static_cast<int>(st.args.size());
            if (n < sp.min_inputs || (sp.max_inputs != -1 && n > sp.max_inputs))
              errs.push_back(fmt::format("step {}: {} takes [{},{}] args, got {}", k,
                                         ir::name(st.op), sp.min_inputs, sp.max_inputs, n));
            for (std::string_view req : sp.required) {
              bool have = false;
              for (const auto& sp2 : st.params) have = have || sp2.key == req;
              if (!have)
                errs.push_back(
                    fmt::format("step {}: {} needs param '{}'", k, ir::name(st.op), req));
            }
          }
        }
        for (const auto& e : errs)
          c.error("fused.recipe", fmt::format("{} FUSED recipe: {}", task_ref(t, id), e),
                  ir::task_pointer(id, "params/recipe"));
      }
    }
  }
}

}  // namespace amk::validate
