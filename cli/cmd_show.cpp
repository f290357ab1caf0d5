#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "app/machine.h"
#include "app/view.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/lowering.h"
#include "ir/fileio.h"
#include "ir/json_io.h"
#include "ir/pyjson.h"
#include "lower/config.h"
#include "targets/target.h"

namespace amk::cli {

int cmd_show(int argc, char** argv) {
  Args args(
      "amk show FILE [--target T] [--format F] [-o OUT]\n"
      "       amk show PROGRAM --dot [--collapse tiles|layers | --layers] [-o OUT.dot]",
      "A stable, line-oriented view of a program or a ScheduleConfig, made for `git diff` (set\n"
      "it up with `amk git-setup`): a header of counts (with --target, the predicted latency),\n"
      "then one line per task keyed by its label (op, SM, params, inputs -> outputs, waits by\n"
      "the producers' labels), then buffers, counters, pages, meta and config knobs. Ids never\n"
      "appear, so renumbered tasks change no line. A ScheduleConfig file shows one knob per line.\n"
      "--dot writes the task DAG as Graphviz DOT (`dot -Tsvg`): one cluster per layer, edges\n"
      "labelled by counter and threshold; --collapse tiles folds each op's tiles into one node,\n"
      "--layers (--collapse layers) each layer, so a Llama-1B program stays legible.");
  args.add()("file", po::value<std::string>(), "program or ScheduleConfig JSON ('-': stdin)")(
      "target,t", po::value<std::string>(), "add the predicted latency on this target")(
      "dot", "write the task DAG as Graphviz DOT")(
      "collapse", po::value<std::string>()->implicit_value("tiles"),
      "--dot: fold tiles (tiles) or whole layers (layers)")("layers", "--dot: --collapse layers")(
      "output,o", po::value<std::string>()->default_value("-"), "write here (default stdout)");
  add_format_options(args);
  args.positional("file", 1);
  if (auto rc = args.parse(argc, argv)) return *rc;
  if (!args.has("file")) {
    std::cerr << "amk show: give a FILE\n";
    return kUnreadable;
  }
  const bool dot = args.has("dot");
  if (!dot && (args.has("collapse") || args.has("layers"))) {
    std::cerr << "amk show: --collapse and --layers go with --dot\n";
    return kUnreadable;
  }
  app::Fold fold = args.has("layers") ? app::Fold::Layers : app::Fold::None;
  if (args.has("collapse")) {
    const auto c = args.get<std::string>("collapse");
    if (c != "tiles" && c != "layers") {
      std::cerr << fmt::format("amk show: --collapse {}: use tiles or layers\n", c);
      return kUnreadable;
    }
    if (args.has("layers") && c != "layers") {
      std::cerr << "amk show: --layers is --collapse layers\n";
      return kUnreadable;
    }
    fold = c == "tiles" ? app::Fold::Tiles : app::Fold::Layers;
  }
  const auto file = args.get<std::string>("file");
  ir::Result<std::string> text = ir::read_file(file);
  if (!text) return fail(text.diagnostics, file);
  std::optional<targets::TargetSpec> target;
  if (args.has("target")) {
    auto t = targets::load_target(args.get<std::string>("target"));
    if (!t) return fail(t.diagnostics, "amk show");
    target = std::move(t.value);
  }
  std::string out;
  const std::optional<app::FormatOptions> fo = format_options(args);
  if (!fo) return kUnreadable;
  if (fo->format || app::detect_format(*text)) {
    ir::Result<ir::Program> p = app::parse_program(*text, file, *fo);
    if (!p) return fail(p.diagnostics, file);
    print_diagnostics(p.diagnostics, file);
    out = dot ? app::program_dot(*p, fold) : app::show_program(*p, target ? &*target : nullptr);
  } else {
    if (dot || target) {
      std::cerr << fmt::format(
          "amk show: {} is a ScheduleConfig; --dot and --target need a "
          "program\n",
          file);
      return kUnreadable;
    }
    ir::Result<ir::ScheduleConfig> c = lower::parse_config(*text, file);
    if (!c) return fail(c.diagnostics, file);
    out = app::show_config(*c);
  }
  // A view for people (and git): valid UTF-8, as everything amk prints (cli/main.cpp).
  return write_output(args.get<std::string>("output"), ir::valid_utf8(out)) ? kOk : kUnreadable;
}

int cmd_plot(int argc, char** argv) {
  Args args(
      "amk plot PROGRAM [--target T] [--runtime R] [--format F] -o OUT.svg",
      "Draws the cost model's predicted timeline of a program as an SVG: one lane per worker\n"
      "of the target (SM, AIC/AIV core, tile), each task a bar on its worker coloured by op\n"
      "(hover for label and times), the critical path outlined in red, the weight-streaming\n"
      "floor and the predicted makespan as dashed lines. The target is --target or the\n"
      "program's own (a built-in name). `amk run --trace T --plot OUT.svg` draws a measured\n"
      "run the same way.");
  args.add()("file", po::value<std::string>(), "program JSON")(
      "target,t", po::value<std::string>(), "predict on this target (default: the program's)")(
      "output,o", po::value<std::string>(), "SVG file to write ('-': stdout)");
  add_runtime_option(args);
  add_format_options(args);
  args.positional("file", 1);
  if (auto rc = args.parse(argc, argv)) return *rc;
  auto runtime = resolve_runtime_option(args);
  if (!runtime) return fail(runtime.diagnostics, "amk plot");
  if (!args.has("file") || !args.has("output")) {
    std::cerr << "amk plot: give a PROGRAM and -o OUT.svg\n";
    return kUnreadable;
  }
  const auto file = args.get<std::string>("file");
  const std::optional<app::FormatOptions> fo = format_options(args);
  if (!fo) return kUnreadable;
  auto p = load(file, false, false, *fo);
  if (!p) return kUnreadable;
  std::optional<targets::TargetSpec> target;
  if (args.has("target")) {
    auto t = targets::load_target(args.get<std::string>("target"));
    if (!t) return fail(t.diagnostics, "amk plot");
    target = std::move(t.value);
  } else {
    target = app::builtin_target_of(*p);
  }
  if (!target) {
    std::cerr << fmt::format("amk plot: {} names no built-in target; give --target\n", file);
    return kUnreadable;
  }
  const std::optional<app::Timeline> tl = app::predicted_timeline(*p, *target, runtime->get());
  if (!tl) {
    std::cerr << fmt::format(
        "amk plot: {}: the dependencies form a cycle; nothing to draw "
        "(amk validate names it)\n",
        file);
    return kRejected;
  }
  if (!write_output(args.get<std::string>("output"), app::timeline_svg(*p, *tl)))
    return kUnreadable;
  std::cerr << fmt::format("plotted {} tasks on {} lanes of {}\n", p->tasks.size(),
                           tl->lanes.size(), target->record.name);
  return kOk;
}

}  // namespace amk::cli
