#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/commands.h"
#include "ir/pyjson.h"
#include "targets/runtime.h"

namespace amk::cli {

int cmd_runtimes(int argc, char** argv) {
  Args args("amk runtimes [NAME|FILE] [--json] [--fields]",
            "Lists the built-in runtime profiles (runtimes/*.json: what the executor of a\n"
            "megakernel costs per task: AMK's CUDA VM, Hazy's and Mirage's megakernels, PTO on\n"
            "Ascend, ...); with NAME or FILE prints that profile; --fields describes every field\n"
            "of the file format.");
  args.add()("runtime", po::value<std::string>(), "a runtime to print")("json", "JSON output")(
      "fields", "the fields of a runtime file: key, unit and meaning");
  args.positional("runtime", 1);
  if (auto rc = args.parse(argc, argv)) return *rc;
  using ojson = nlohmann::ordered_json;
  if (args.has("fields")) {
    ojson all = ojson::array();
    for (const targets::RuntimeField& f : targets::runtime_fields()) {
      if (args.has("json")) {
        ojson j = {{"key", f.key}, {"unit", f.unit}, {"doc", f.doc}, {"fit", f.fit}};
        if (!f.choices.empty())
          j["choices"] = std::vector<std::string>(f.choices.begin(), f.choices.end());
        all.push_back(j);
      } else {
        std::cout << fmt::format("{:<23} {:<5} {}\n", f.key, f.unit, f.doc);
      }
    }
    if (args.has("json")) std::cout << ir::dump_text(all, 2) << "\n";
    return kOk;
  }
  if (args.has("runtime")) {
    auto r = targets::load_runtime(args.get<std::string>("runtime"));
    if (!r) return fail(r.diagnostics, "amk runtimes");
    std::cout << targets::write_runtime(*r);
    return kOk;
  }
  ojson all = ojson::array();
  if (!args.has("json"))
    std::cout << fmt::format("{:<9} {:<7} {:<8} {:<10} {:<7} {:>9} {:>9} {:>9} {:>8}\n", "name",
                             "family", "placing", "staging", "ahead", "dispatch", "signal",
                             "remote", "latency");
  for (const std::string& name : targets::builtin_runtime_names()) {
    const targets::Runtime& r = *targets::builtin_runtime(name);
    if (args.has("json")) {
      all.push_back(ojson::parse(targets::write_runtime(r)));
      continue;
    }
    std::cout << fmt::format(
        "{:<9} {:<7} {:<8} {:<10} {:<7} {:>7.0f}ns {:>7.0f}ns {:>7.0f}ns "
        "{:>6.0f}ns\n",
        name, r.family, r.placement, r.staging, r.prefetch, r.dispatch_ns, r.signal_ns, r.remote_ns,
        r.latency_ns);
  }
  if (args.has("json")) std::cout << ir::dump_text(all, 2) << "\n";
  return kOk;
}

}  // namespace amk::cli
