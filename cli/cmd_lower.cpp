#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/lowering.h"
#include "ir/diagnostic_json.h"
#include "ir/json_io.h"
#include "ir/pyjson.h"
#include "lower/compile.h"

namespace amk::cli {

int cmd_lower(int argc, char** argv) {
  Args args(
      "amk lower MODEL [--target T] [--config C.json|auto] [--pos P] [--batch B] [--dtype D]\n"
      "                [--quant int8|int4] [--group G] [--amk-compat] [--runtime R] [--log] "
      "[--json]\n"
      "                -o OUT.json",
      "Lowers one decode step of MODEL (a built-in name from `amk models`, a model spec or a\n"
      "Hugging Face config.json) for target T under a ScheduleConfig: tile -> fuse ->\n"
      "dependencies (TensorMap) -> assign workers -> allocate pages -> emit. The program is\n"
      "validated before it is written; a rejected lowering is reported and not written (exit 1).\n"
      "Without --config AMK's default_config is used (N_tile 64, load_balance, graph_color);\n"
      "without --target, h100. --json prints the summary as one JSON document on stdout.");
  args.add()("model", po::value<std::string>(), "model name or file")(
      "pos", po::value<int64_t>()->default_value(0), "decode position (kv_len = pos + 1)")(
      "log", "print each pass with its time and the cost model's prediction")(
      "output,o", po::value<std::string>(), "program file to write ('-' = stdout)")(
      "json", "print the summary (or the errors) as one JSON document on stdout");
  add_lowering_options(args);
  add_runtime_option(args);
  args.positional("model", 1);
  args.range("pos", 0, 1 << 24);
  if (auto rc = args.parse(argc, argv)) return *rc;
  if (!args.has("model") || !args.has("output")) {
    std::cerr << "amk lower: give a MODEL and -o OUT\n";
    return kUnreadable;
  }
  const bool json = args.has("json");
  if (json && args.get<std::string>("output") == "-") {
    std::cerr << "amk lower: --json prints on stdout; write the program to a file (-o OUT)\n";
    return kUnreadable;
  }
  const auto model_arg = args.get<std::string>("model");
  ir::Result<lower::ModelSpec> model = lower::load_model(model_arg);
  if (!model) return fail(model.diagnostics, "amk lower", json);
  auto la = resolve_lowering(args, std::move(*model.value));
  print_diagnostics(model.diagnostics, "amk lower");
  if (!la) return fail(la.diagnostics, "amk lower", json);
  print_diagnostics(la.diagnostics, "amk lower");
  la->opt.pos = args.get<int64_t>("pos");
  la->opt.log = args.has("log");
  std::vector<std::string> log;
  ir::Result<lower::Compiled> c =
      lower::compile(la->model, la->target, la->config, la->opt, nullptr, &log);
  for (const std::string& line : log) std::cerr << line << "\n";
  if (!c) {
    name_config(c.diagnostics, *la);
    return fail(c.diagnostics, "amk lower", json);
  }
  name_config(c.diagnostics, *la);
  if (!json) print_diagnostics(c.diagnostics, "amk lower");
  const auto out = args.get<std::string>("output");
  if (!write_output(out, ir::write_program(c->program))) return kUnreadable;
  const ir::Program& p = c->program;
  const double weight_mb = static_cast<double>(p.total_weight_bytes()) / 1e6;
  if (json) {
    nlohmann::ordered_json j;
    j["ok"] = true;
    j["model"] = la->model.name;
    j["target"] = la->target.record.name;
    j["pos"] = la->opt.pos;
    j["output"] = out;
    j["tasks"] = p.tasks.size();
    j["buffers"] = p.buffers.size();
    j["counters"] = p.counters.size();
    j["weight_MB"] = weight_mb;
    j["lower_ms"] = c->lower_s * 1e3;
    j["runtime"] = c->cost.runtime;
    j["predicted_us"] = c->cost.makespan_us;
    j["floor_us"] = c->cost.floor_us;
    j["warnings"] = ir::to_json(c.diagnostics);
    std::cout << ir::dump_text(j, 2) << "\n";
    return kOk;
  }
  std::cerr << fmt::format(
      "lowered {} for {} at pos {}: {} tasks, {} buffers, {} counters, {:.1f} MB weights, "
      "lowering {:.2f} ms; predicted {:.1f} us on {} (floor {:.1f} us)\n",
      la->model.name, la->target.record.name, la->opt.pos, p.tasks.size(), p.buffers.size(),
      p.counters.size(), weight_mb, c->lower_s * 1e3, c->cost.makespan_us, c->cost.runtime,
      c->cost.floor_us);
  return kOk;
}

}  // namespace amk::cli
