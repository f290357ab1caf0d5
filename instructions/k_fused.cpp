// FUSED: a validated recipe of primitive steps run over zero-initialised scratch tensors; only the
// step marked "final" writes the task's output (AMK's ref_fused).
#include <memory>

#include "instructions/kernels.h"

namespace amk::inst {

Status k_fused(const KernelArgs& a) {
  std::optional<ir::Recipe> parsed;
  const ir::Recipe* recipe = a.recipe;
  if (!recipe) {
    const ir::ParamValue* rv = a.task ? a.task->param("recipe") : nullptr;
    if (!rv) return kernel_error("FUSED: missing param 'recipe'");
    std::vector<std::string> errs;
    parsed = ir::parse_recipe(rv->kind == ir::ParamValue::Kind::Other ? rv->other : ir::JsonValue(),
                              static_cast<int64_t>(a.in.size()), errs);
    if (!parsed) return kernel_error("malformed FUSED recipe: " + errs.front());
    recipe = &*parsed;
  }
  struct Slot {
    std::vector<uint8_t> bytes;
    Tensor t;
  };
  std::vector<std::pair<int64_t, std::unique_ptr<Slot>>> scratch;
  auto find = [&](int64_t j) -> Slot* {
    for (auto& [k, s] : scratch)
      if (k == j) return s.get();
    return nullptr;
  };
  std::vector<Tensor> args;
  for (size_t i = 0; i < recipe->steps.size(); ++i) {
    const ir::RecipeStep& st = recipe->steps[i];
    args.clear();
    for (const ir::RecipeArg& r : st.args) {
      if (r.is_input) {
        if (r.index < 0 || static_cast<size_t>(r.index) >= a.in.size())
          return kernel_error(fmt::format("FUSED step {}: input {} out of range", i, r.index));
        args.push_back(a.in[static_cast<size_t>(r.index)]);
      } else {
        Slot* s = find(r.index);
        if (!s)
          return kernel_error(
              fmt::format("FUSED step {}: scratch {} was never written", i, r.index));
        args.push_back(s->t);
      }
    }
    Tensor out;
    if (st.final) {
      out = a.out[0];
    } else {
      if (args.empty() && st.out_shape.empty())
        return kernel_error(
            fmt::format("FUSED step {}: a scratch output needs out_shape or an argument", i));
      const ir::DType dt = st.out_dtype ? *st.out_dtype : args[0].dtype;
      std::vector<int64_t> shape = st.out_shape;
      if (shape.empty()) shape.assign(args[0].shape, args[0].shape + args[0].rank);
      auto slot = std::make_unique<Slot>();
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      slot->bytes.assign(static_cast<size_t>(ir::dtype_nbytes(dt, n)), 0);  // zero-initialised
      slot->t = Tensor::of(slot->bytes.data(), dt, shape);
      out = slot->t;
      if (Slot* old = find(st.out)) {
        *old = std::move(*slot);
        out = old->t;
      } else {
        scratch.emplace_back(st.out, std::move(slot));
      }
    }
    ir::Task step;
    step.op = st.op;
    step.params = st.params;
    const ir::ParamTable pt = ir::ParamTable::of(step);
    KernelArgs sub{st.op, args, std::span<const Tensor>(&out, 1), pt, &step, nullptr, a.ws};
    Status s = kernel_for(st.op)(sub);
    if (!s.ok())
      return kernel_error(fmt::format("FUSED step {} ({}): {}", i, ir::name(st.op),
                                      ir::error_messages(s.diagnostics)));
  }
  return {};
}

}  // namespace amk::inst
