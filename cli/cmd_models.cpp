#include <iostream>

#include <fmt/format.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "lower/model.h"

namespace amk::cli {

int cmd_models(int argc, char** argv) {
  Args args("amk models [NAME|FILE]",
            "Lists the built-in model specs (schedules/*.json); with NAME or FILE (a spec or a\n"
            "Hugging Face config.json) prints the spec amk reads from it.");
  args.add()("model", po::value<std::string>(), "a model to print");
  args.positional("model", 1);
  if (auto rc = args.parse(argc, argv)) return *rc;
  if (args.has("model")) {
    auto m = lower::load_model(args.get<std::string>("model"));
    if (!m) return fail(m.diagnostics, "amk models");
    print_diagnostics(m.diagnostics, "amk models");
    std::cout << lower::write_model(*m);
    return kOk;
  }
  std::cout << fmt::format("{:<15} {:>6} {:>6} {:>9} {:>6} {:>7} {:>7}  {}\n", "name", "layers",
                           "hidden", "heads/kv", "hd", "inter", "vocab", "tied");
  for (const std::string& name : lower::builtin_model_names()) {
    auto m = lower::load_model(name);
    if (!m) return fail(m.diagnostics, "amk models");
    std::cout << fmt::format("{:<15} {:>6} {:>6} {:>9} {:>6} {:>7} {:>7}  {}\n", name, m->n_layers,
                             m->hidden, fmt::format("{}/{}", m->n_heads, m->n_kv_heads),
                             m->head_dim, m->intermediate, m->vocab,
                             m->tie_embeddings ? "yes" : "no");
  }
  return kOk;
}

}  // namespace amk::cli
