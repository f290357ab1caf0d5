#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/commands.h"
#include "ir/json_io.h"
#include "ir/pyjson.h"
#include "targets/target.h"

namespace amk::cli {

int cmd_targets(int argc, char** argv) {
  Args args("amk targets [NAME|FILE] [--json]",
            "Lists the built-in targets (targets/*.json: AMK's GPUs, Ascend a2a3/a5, a TX8-style\n"
            "tiled chip) with their workers; with NAME or FILE prints that target's record.");
  args.add()("target", po::value<std::string>(), "a target to print")("json", "JSON output");
  args.positional("target", 1);
  if (auto rc = args.parse(argc, argv)) return *rc;
  if (args.has("target")) {
    auto t = targets::load_target(args.get<std::string>("target"));
    if (!t) return fail(t.diagnostics, "amk targets");
    std::cout << targets::write_target_spec(*t);
    return kOk;
  }
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  if (!args.has("json"))
    std::cout << fmt::format("{:<9} {:<7} {:>7} {:>9} {:>9} {:>10}  {}\n", "name", "family",
                             "workers", "GB/s", "TFLOPs", "scratch", "worker kinds");
  for (const std::string& name : targets::builtin_target_names()) {
    auto t = targets::load_target(name);
    if (!t) return fail(t.diagnostics, "amk targets");
    std::string kinds;
    for (const auto& w : t->workers)
      kinds += fmt::format("{}{}x{}", kinds.empty() ? "" : " + ", w.count, w.kind);
    if (t->aicpu_threads) kinds += fmt::format(", {} AICPU threads", t->aicpu_threads);
    if (!t->mesh.empty())
      kinds += fmt::format(", {}x{} mesh", t->mesh[0], t->mesh.size() > 1 ? t->mesh[1] : 1);
    if (args.has("json")) {
      all.push_back(ir::reread_object(targets::write_target_spec(*t)));
    } else {
      std::cout << fmt::format("{:<9} {:<7} {:>7} {:>9.0f} {:>9.0f} {:>9.1f}M  {}\n", name,
                               t->family, t->num_workers(), t->record.hbm_bandwidth_gbs.as_double(),
                               t->record.fp16_tflops.as_double(),
                               static_cast<double>(t->scratch_bytes) / (1 << 20), kinds);
    }
  }
  if (args.has("json")) std::cout << ir::dump_text(all, 2) << "\n";
  return kOk;
}

}  // namespace amk::cli
