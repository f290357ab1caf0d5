#include "ir/fused.h"

#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/pyjson.h"

namespace amk::ir {
namespace {

using ojson = nlohmann::ordered_json;

bool is_int(const ojson& v) {
  return v.is_number_integer();
}

// AMK's allowlist, mapped to amk storage types (float64 has none; see parse_recipe).
std::optional<DType> recipe_dtype(const std::string& s, bool& known) {
  known = true;
  if (s == "float32") return DType::F32;
  if (s == "float16") return DType::F16;
  if (s == "bfloat16") return DType::BF16;
  if (s == "int8") return DType::I8;
  if (s == "int32") return DType::I32;
  known = s == "float64";
  return std::nullopt;
}

ParamValue to_param(const ojson& v) {
  if (v.is_boolean()) return ParamValue::of_bool(v.get<bool>());
  if (v.is_number_integer() && !v.is_number_unsigned()) return ParamValue::of_int(v.get<int64_t>());
  if (v.is_number_float()) return ParamValue::of_float(v.get<double>());
  return ParamValue::of_json(JsonValue(v));
}

// A step's args: {"in": k} (an input of the fused task) or {"s": j} (a scratch an earlier step
// wrote).
void read_step_args(const ojson& st, size_t i, int64_t n_inputs, const std::set<int64_t>& produced,
                    RecipeStep& step, std::vector<std::string>& errors) {
  if (st.contains("args") && !st["args"].is_null()) {
    const ojson& args = st["args"];
    if (!args.is_array()) {
      errors.push_back(fmt::format("step {}: args must be a list, got {}", i, py_repr(args)));
    } else {
      for (const ojson& a : args) {
        if (!a.is_object() || a.size() != 1) {
          errors.push_back(fmt::format("step {}: bad arg {}", i, py_repr(a)));
        } else if (a.contains("in")) {
          const ojson& k = a["in"];
          if (!is_int(k) || k.get<int64_t>() < 0 || k.get<int64_t>() >= n_inputs)
            errors.push_back(fmt::format("step {}: input index {} out of range [0,{})", i,
                                         py_repr(k), n_inputs));
          else
            step.args.push_back({true, k.get<int64_t>()});
        } else if (a.contains("s")) {
          const ojson& j = a["s"];
          if (!is_int(j) || !produced.count(j.get<int64_t>()))
            errors.push_back(fmt::format("step {}: reads scratch {} not written by an earlier step",
                                         i, py_repr(j)));
          else
            step.args.push_back({false, j.get<int64_t>()});
        } else {
          errors.push_back(
              fmt::format("step {}: arg must be {{'in':k}} or {{'s':j}}, got {}", i, py_repr(a)));
        }
      }
    }
  }
}

// A step's out_dtype (the allowlist's, but F64) and out_shape (1..4 positive dims).
void read_step_layout(const ojson& st, size_t i, RecipeStep& step,
                      std::vector<std::string>& errors) {
  if (st.contains("out_dtype") && !st["out_dtype"].is_null()) {
    const ojson& od = st["out_dtype"];
    bool known = false;
    std::optional<DType> dt =
        od.is_string() ? recipe_dtype(od.get<std::string>(), known) : std::nullopt;
    if (!known) {
      errors.push_back(fmt::format(
          "step {}: out_dtype {} not in the allowlist ['bfloat16', 'float16', 'float32', "
          "'float64', 'int32', 'int8']",
          i, py_repr(od)));
    } else if (!dt) {
      errors.push_back(fmt::format(
          "step {}: out_dtype 'float64' is not supported by amk (no F64 storage type)", i));
    } else {
      step.out_dtype = dt;
    }
  }
  if (st.contains("out_shape") && !st["out_shape"].is_null()) {
    const ojson& sh = st["out_shape"];
    bool ok = sh.is_array();
    if (ok)
      for (const ojson& d : sh) ok = ok && is_int(d) && d.get<int64_t>() > 0;
    if (!ok || sh.size() > 4)
      errors.push_back(fmt::format(
          "step {}: out_shape must be a list of 1..4 positive ints, got {}", i, py_repr(sh)));
    else
      for (const ojson& d : sh) step.out_shape.push_back(d.get<int64_t>());
  }
}

}  // namespace

std::optional<Recipe> parse_recipe(const JsonValue& recipe_value, int64_t n_inputs,
                                   std::vector<std::string>& errors) {
  const ojson& recipe = recipe_value.json();
  size_t first_error = errors.size();
  if (!recipe.is_object()) {
    errors.push_back("recipe must be a dict");
    return std::nullopt;
  }
  auto steps_it = recipe.find("steps");
  if (steps_it == recipe.end() || !steps_it->is_array() || steps_it->empty()) {
    errors.push_back("recipe.steps must be a non-empty list");
    return std::nullopt;
  }
  Recipe out;
  std::set<int64_t> produced;
  bool wrote_final = false;
  size_t i = 0;
  for (const ojson& st : *steps_it) {
    RecipeStep step;
    if (!st.is_object()) {
      errors.push_back(fmt::format("step {} must be a dict", i++));
      continue;
    }
    const ojson op = st.contains("op") ? st["op"] : ojson();
    if (!is_int(op) || op.get<int64_t>() < 0 || op.get<int64_t>() >= kOpCount) {
      errors.push_back(fmt::format("step {}: bad op {}", i, py_repr(op)));
    } else {
      step.op = static_cast<Op>(op.get<int64_t>());
      if (step.op == Op::FUSED)
        errors.push_back(fmt::format("step {}: nested FUSED is not allowed", i));
    }
    read_step_args(st, i, n_inputs, produced, step, errors);
    const ojson o = st.contains("out") ? st["out"] : ojson();
    if ((o.is_string() && o.get<std::string>() == "final") ||
        (is_int(o) && o.get<int64_t>() == -1)) {
      step.final = true;
      wrote_final = true;
    } else if (is_int(o)) {
      step.out = o.get<int64_t>();
      produced.insert(step.out);
    } else {
      errors.push_back(fmt::format("step {}: out must be 'final' or an int scratch index, got {}",
                                   i, py_repr(o)));
    }
    read_step_layout(st, i, step, errors);
    if (st.contains("params") && !st["params"].is_null()) {
      if (!st["params"].is_object())
        errors.push_back(fmt::format("step {}: params must be a dict", i));
      else
        for (auto it = st["params"].begin(); it != st["params"].end(); ++it)
          step.params.push_back({it.key(), to_param(it.value())});
    }
    out.steps.push_back(std::move(step));
    ++i;
  }
  if (!wrote_final)
    errors.push_back("recipe never writes its final output (no step with out=='final')");
  if (errors.size() != first_error) return std::nullopt;
  return out;
}

}  // namespace amk::ir
