// Embedding amk: load a program (or lower a built-in model for h100), prove it, print the verdict.
//   embed [PROGRAM.json | MODEL]      (default: toy-2L)
#include <cstdio>
#include <string>

#include "ir/json_io.h"
#include "lower/compile.h"
#include "lower/config.h"
#include "lower/model.h"
#include "targets/target.h"
#include "validate/validate.h"

using namespace amk;

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "toy-2L";
  ir::Result<ir::Program> program = ir::error("embed.none", "nothing loaded");
  if (what.ends_with(".json")) {
    program = ir::load_program(what);
  } else {  // a model: lower one decode step under AMK's default config
    ir::Result<lower::ModelSpec> model = lower::load_model(what);
    ir::Result<targets::TargetSpec> h100 = targets::load_target("h100");
    if (!model || !h100) return std::fprintf(stderr, "unknown model %s\n", what.c_str()), 2;
    auto compiled = lower::compile(*model, *h100, lower::default_config(), {});
    if (compiled)
      program = std::move(compiled->program);
    else
      program = std::move(compiled.diagnostics);
  }
  if (!program)
    return std::fprintf(stderr, "%s\n", ir::error_messages(program.diagnostics).c_str()), 2;
  const validate::Result verdict = validate::validate(*program);
  std::printf("%s: %s, %zu tasks\n", what.c_str(), verdict.ok ? "VALID" : "REJECTED",
              program->tasks.size());
  return verdict.ok ? 0 : 1;
}
