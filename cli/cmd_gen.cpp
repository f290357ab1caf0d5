#include <iostream>

#include <fmt/format.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "fixtures/gen.h"
#include "ir/json_io.h"

namespace amk::cli {

int cmd_gen(int argc, char** argv) {
  Args args(
      "amk gen [--shape llama|mesh|chain|fan] [--tasks N] [--seed S] [--nop] [--pages]\n"
      "               [--sms N] [--defect D] -o OUT",
      "Generates a seeded synthetic program, valid by construction unless a defect is\n"
      "planted: llama (layered decoder at toy width, KV caches, tiled projections), mesh\n"
      "(random DAG with joins and transitive-only orderings), chain, fan (fan-out/fan-in).\n"
      "A planted defect is one `amk validate` rejects; a defect the program has no place\n"
      "for (share-page outside llama, a data race in a --nop program) exits 1, writing\n"
      "nothing.");
  args.add()("shape", po::value<std::string>()->default_value("llama"), "llama, mesh, chain, fan")(
      "tasks", po::value<int64_t>()->default_value(1000), "approximate number of tasks")(
      "seed", po::value<int64_t>()->default_value(1), "random seed")(
      "nop", "make every task a NOP without buffers (same DAG)")(
      "pages", "add a valid page allocation with reuse")(
      "sms", po::value<int64_t>()->default_value(0), "assign SMs round-robin over N SMs")(
      "defect", po::value<std::string>()->default_value("none"),
      fmt::format("plant a defect: {}", fixtures::gen_defect_names()).c_str())(
      "output,o", po::value<std::string>()->required(), "output file ('-' = stdout)");
  args.range("tasks", 1, 1 << 26);
  args.range("seed", 0, kMaxSeed);
  args.range("sms", 0, 1 << 16);
  if (auto rc = args.parse(argc, argv)) return *rc;
  fixtures::GenOptions opt;
  auto shape = fixtures::parse_gen_shape(args.get<std::string>("shape"));
  auto defect = fixtures::parse_gen_defect(args.get<std::string>("defect"));
  if (!shape) {
    std::cerr << "amk gen: unknown shape '" << args.get<std::string>("shape")
              << "' (llama, mesh, chain, fan)\n";
    return kUnreadable;
  }
  if (!defect) {
    std::cerr << "amk gen: unknown defect '" << args.get<std::string>("defect") << "' ("
              << fixtures::gen_defect_names() << ")\n";
    return kUnreadable;
  }
  opt.shape = *shape;
  opt.defect = *defect;
  opt.tasks = static_cast<uint64_t>(args.get<int64_t>("tasks"));
  opt.seed = static_cast<uint64_t>(args.get<int64_t>("seed"));
  opt.nop = args.has("nop");
  opt.pages = args.has("pages");
  opt.num_sms = args.get<int64_t>("sms");
  fixtures::GenResult r = fixtures::generate(opt);
  if (!r.not_planted.empty()) {
    std::cerr << fmt::format("amk gen: cannot plant the defect '{}': {}; nothing written\n",
                             args.get<std::string>("defect"), r.not_planted);
    return kRejected;
  }
  const auto out = args.get<std::string>("output");
  if (!write_output(out, ir::write_program(r.program))) return kUnreadable;
  if (out != "-") {
    std::cerr << fmt::format("wrote {}: {} tasks, {} buffers, {} counters{}\n", out,
                             r.program.tasks.size(), r.program.buffers.size(),
                             r.program.counters.size(),
                             r.defect_note.empty() ? "" : "; defect: " + r.defect_note);
  }
  return kOk;
}

}  // namespace amk::cli
