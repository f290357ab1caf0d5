#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/commands.h"
#include "ir/json_io.h"
#include "ir/pyjson.h"
#include "lower/model.h"

namespace amk::cli {

int cmd_models(int argc, char** argv) {
  Args args("amk models [NAME|FILE] [--json]",
            "Lists the built-in model specs (schedules/*.json); with NAME or FILE (a spec or a\n"
            "Hugging Face config.json) prints the spec amk reads from it (JSON). --json lists\n"
            "every built-in spec as one JSON array.");
  args.add()("model", po::value<std::string>(), "a model to print")(
      "json", "print JSON (the list: an array of specs)");
  args.positional("model", 1);
  if (auto rc = args.parse(argc, argv)) return *rc;
  if (args.has("model")) {
    auto m = lower::load_model(args.get<std::string>("model"));
    if (!m) return fail(m.diagnostics, "amk models", args.has("json"));
    print_diagnostics(m.diagnostics, "amk models");
    std::cout << lower::write_model(*m);
    return kOk;
  }
  const bool json = args.has("json");
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  if (!json)
    std::cout << fmt::format("{:<15} {:>6} {:>6} {:>9} {:>6} {:>7} {:>7}  {}\n", "name", "layers",
                             "hidden", "heads/kv", "hd", "inter", "vocab", "tied");
  for (const std::string& name : lower::builtin_model_names()) {
    auto m = lower::load_model(name);
    if (!m) return fail(m.diagnostics, "amk models", json);
    if (json) {
      all.push_back(ir::reread_object(lower::write_model(*m)));
      continue;
    }
    std::cout << fmt::format("{:<15} {:>6} {:>6} {:>9} {:>6} {:>7} {:>7}  {}\n", name, m->n_layers,
                             m->hidden, fmt::format("{}/{}", m->n_heads, m->n_kv_heads),
                             m->head_dim, m->intermediate, m->vocab,
                             m->tie_embeddings ? "yes" : "no");
  }
  if (json) std::cout << ir::dump_text(all, 2) << "\n";
  return kOk;
}

}  // namespace amk::cli
