// FUSED recipes: parsed and structurally validated once, for the validator and the kernels.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/program.h"

namespace amk::ir {

/// An argument of a recipe step: the task's input k, or scratch slot j written earlier.
struct RecipeArg {
  bool is_input = true;
  int64_t index = 0;
};

/// One primitive step of a FUSED recipe.
struct RecipeStep {
  Op op = Op::NOP;
  std::vector<RecipeArg> args;
  bool final = false;              ///< writes the task's output (out == "final" or -1)
  int64_t out = 0;                 ///< scratch slot when not final
  std::vector<int64_t> out_shape;  ///< empty: like args[0]
  std::optional<DType> out_dtype;  ///< empty: like args[0]
  std::vector<Param> params;
};

/// A parsed recipe.
struct Recipe {
  std::vector<RecipeStep> steps;
};

/// Parses params.recipe with AMK's rules (validate_recipe): non-empty steps, args {"in": k} with
/// 0 <= k < n_inputs or {"s": j} written by an earlier step, out int or "final"/-1, no nested
/// FUSED, out_dtype in the allowlist, and some step writes the final output. Errors are appended
/// as one-line messages; nullopt when there is any.
std::optional<Recipe> parse_recipe(const JsonValue& recipe, int64_t n_inputs,
                                   std::vector<std::string>& errors);

}  // namespace amk::ir
