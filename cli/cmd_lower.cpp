#include <iostream>

#include <fmt/format.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/lowering.h"
#include "ir/json_io.h"
#include "lower/compile.h"

namespace amk::cli {

int cmd_lower(int argc, char** argv) {
  Args args(
      "amk lower MODEL --target T [--config C.json|auto] [--pos P] [--batch B] [--dtype D]\n"
      "                [--quant int8|int4] [--group G] [--amk-compat] [--log] -o OUT.json",
      "Lowers one decode step of MODEL (a built-in name from `amk models`, a model spec or a\n"
      "Hugging Face config.json) for target T under a ScheduleConfig: tile -> fuse ->\n"
      "dependencies (TensorMap) -> assign workers -> allocate pages -> emit. The program is\n"
      "validated before it is written; a rejected lowering is reported and not written (exit 1).\n"
      "Without --config AMK's default_config is used (N_tile 64, load_balance, graph_color).");
  args.add()("model", po::value<std::string>(), "model name or file")(
      "pos", po::value<int64_t>()->default_value(0), "decode position (kv_len = pos + 1)")(
      "log", "print each pass with its time and the cost model's prediction")(
      "output,o", po::value<std::string>(), "program file to write ('-' = stdout)");
  add_lowering_options(args, true);
  args.positional("model", 1);
  args.range("pos", 0, 1 << 24);
  if (auto rc = args.parse(argc, argv)) return *rc;
  if (!args.has("model") || !args.has("output")) {
    std::cerr << "amk lower: give a MODEL and -o OUT\n";
    return kUnreadable;
  }
  const auto model_arg = args.get<std::string>("model");
  ir::Result<lower::ModelSpec> model = lower::load_model(model_arg);
  if (!model) return fail(model.diagnostics, "amk lower");
  auto la = resolve_lowering(args, std::move(*model.value));
  print_diagnostics(model.diagnostics, "amk lower");
  if (!la) return fail(la.diagnostics, "amk lower");
  print_diagnostics(la.diagnostics, "amk lower");
  la->opt.pos = args.get<int64_t>("pos");
  la->opt.log = args.has("log");
  std::vector<std::string> log;
  ir::Result<lower::Compiled> c =
      lower::compile(la->model, la->target, la->config, la->opt, nullptr, &log);
  for (const std::string& line : log) std::cerr << line << "\n";
  if (!c) {
    name_config(c.diagnostics, *la);
    return fail(c.diagnostics, "amk lower");
  }
  const auto out = args.get<std::string>("output");
  if (!write_output(out, ir::write_program(c->program))) return kUnreadable;
  std::cerr << fmt::format(
      "lowered {} for {} at pos {}: {} tasks, {} buffers, {} counters, {:.1f} MB weights, "
      "lowering {:.2f} ms; predicted {:.1f} us (floor {:.1f} us)\n",
      la->model.name, la->target.record.name, la->opt.pos, c->program.tasks.size(),
      c->program.buffers.size(), c->program.counters.size(),
      static_cast<double>(c->program.total_weight_bytes()) / 1e6, c->lower_s * 1e3,
      c->cost.makespan_us, c->cost.floor_us);
  return kOk;
}

}  // namespace amk::cli
