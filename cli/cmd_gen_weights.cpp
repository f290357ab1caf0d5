#include <algorithm>
#include <iostream>
#include <string_view>

#include <fmt/format.h>

#include "app/subject.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/lowering.h"
#include "cli/progress.h"
#include "vm/weights.h"

namespace amk::cli {

int cmd_gen_weights(int argc, char** argv) {
  Args args(
      "amk gen-weights PROGRAM|MODEL [--dtype D] [--quant Q] [--seed S] -o W.safetensors",
      "Writes seeded random weights for every WEIGHT/CONST buffer of a program, or of MODEL's\n"
      "lowering (a built-in name, spec or HF config.json; Hugging Face keys), keyed by\n"
      "Buffer.source (else its name), in each buffer's dtype: norm vectors 1 +- 0.1, matrices\n"
      "uniform in +-1/sqrt(K), integer codes random; a quantised weight's scales are drawn so\n"
      "that it dequantises within +-1/sqrt(K) too. The file is written atomically.");
  args.add()("program", po::value<std::string>(), "program JSON, or a model")(
      "seed", po::value<int64_t>()->default_value(0), "random seed")(
      "output,o", po::value<std::string>(), "safetensors file to write");
  add_lowering_options(args);
  args.positional("program", 1);
  args.range("seed", 0, kMaxSeed);
  if (auto rc = args.parse(argc, argv)) return *rc;
  if (!args.has("program") || !args.has("output")) {
    std::cerr << "amk gen-weights: give a PROGRAM and -o OUT\n";
    return kUnreadable;
  }
  const auto what = args.get<std::string>("program");
  ir::Result<app::Subject> subject = app::load_subject(what);
  if (!subject) return fail(subject.diagnostics, "amk gen-weights");
  print_diagnostics(subject.diagnostics, "amk gen-weights");
  std::optional<ir::Program> prog = std::move(subject->program);
  if (subject->model) {
    auto la = resolve_lowering(args, std::move(*subject->model));
    if (!la) return fail(la.diagnostics, "amk gen-weights");
    la->opt.reference = true;  // same weights for every schedule
    lower::LowerResult lr = lower::lower(la->model, la->target, la->config, la->opt);
    if (!lr) {
      name_config(lr.diagnostics, *la);
      return fail(lr.diagnostics, "amk gen-weights");
    }
    prog = std::move(lr.value);
  }
  Progress progress("amk gen-weights");
  progress.step("random weights");
  ir::Result<std::vector<uint8_t>> made = vm::random_weights_image(
      *prog, static_cast<uint64_t>(args.get<int64_t>("seed")), [&](size_t done, size_t total) {
        progress.fraction(static_cast<double>(done) /
                          static_cast<double>(std::max<size_t>(total, 1)));
      });
  if (!made) {
    progress.clear();
    if (!subject->model)
      for (ir::Diagnostic& d : made.diagnostics) d.file = what;  // a pointer into that program
    return fail(made.diagnostics, "amk gen-weights");
  }
  const std::vector<uint8_t>& image = *made;
  progress.step("writing " + args.get<std::string>("output"));
  const auto out = args.get<std::string>("output");
  if (!write_output(out,
                    std::string_view(reinterpret_cast<const char*>(image.data()), image.size())))
    return kUnreadable;
  progress.clear();
  std::cerr << fmt::format("wrote {}: {:.2f} MB of weights\n", out,
                           static_cast<double>(image.size()) / 1e6);
  return kOk;
}

}  // namespace amk::cli
