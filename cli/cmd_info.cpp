#include <algorithm>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/service.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/lowering.h"
#include "cli/progress.h"
#include "ir/digraph.h"
#include "ir/graph.h"
#include "ir/pyjson.h"
#include "targets/cost.h"
#include "targets/target.h"
#include "validate/validate.h"

namespace amk::cli {
namespace {

using ojson = nlohmann::ordered_json;

std::string mb(int64_t bytes) {
  return ir::py_round2(static_cast<double>(bytes) / 1e6);
}

// A foreign runtime's smallest safe capacities per ring or worker, with what it provides.
void print_capacities(const ir::Program& p, const std::vector<validate::CapacityNeed>& caps) {
  std::cout << fmt::format("  runtime {}: smallest safe capacities (needed / provided):\n",
                           ir::name(p.runtime->kind));
  for (const validate::CapacityNeed& c : caps)
    std::cout << fmt::format("    {:<16} {} {:>12} / {:<12} {}{}\n", ir::cap_info(c.key).name,
                             c.ring >= 0 ? fmt::format("ring {}", c.ring) : std::string(6, ' '),
                             c.needed, c.capacity ? std::to_string(*c.capacity) : std::string("?"),
                             c.capacity && c.needed > *c.capacity ? "TOO SMALL: " : "", c.what);
}

// The human summary of `amk info`.
void print_info(const ir::Program& p, const app::ProgramInfo& in, const std::string& file) {
  const validate::Result& verdict = in.verdict;
  const ir::Graph& g = in.graph;
  const ir::CriticalPath& cp = in.critical;
  const std::optional<ir::Target>& tgt = in.target;
  const std::optional<targets::CostEstimate>& cost = in.cost;
  const std::vector<std::string>& rules = in.rules;
  const auto& meta = p.meta.json();
  auto meta_str = [&](const char* k) {
    return meta.is_object() && meta.contains(k) ? ir::py_repr(meta[k]) : std::string("-");
  };
  if (!verdict.ok)
    std::cout << fmt::format("REJECTED by the validator: {} error(s) ({}); see amk validate {}\n",
                             verdict.errors.size(), fmt::join(rules, ", "), file);

  std::cout << fmt::format("{}: IR {}, ABI {}, model {}, gpu {}, target {}\n", file, p.ir_version,
                           p.abi_version, meta_str("model"), meta_str("gpu"),
                           p.target ? p.target->name : std::string("none"));
  std::cout << fmt::format(
      "  tasks {}, buffers {} ({} weights, {} MB), counters {}, waits {}, edges {}, {}\n",
      p.tasks.size(), p.buffers.size(), in.weights, mb(p.total_weight_bytes()), p.counters.size(),
      in.waits, g.edge_count(), g.acyclic() ? "acyclic" : "CYCLIC");
  std::string opmix;
  std::vector<std::pair<int64_t, std::string>> sorted;
  for (const auto& [k, v] : in.ops) sorted.emplace_back(-v, k);
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [v, k] : sorted) opmix += fmt::format(" {} {},", k, -v);
  if (!opmix.empty()) opmix.pop_back();
  std::cout << "  ops:" << opmix << "\n";
  std::cout << fmt::format("  est: {} MB moved, {} MFLOP; sm assigned: {}\n", mb(in.est_bytes),
                           ir::py_round2(static_cast<double>(in.est_flops) / 1e6),
                           p.sm_assigned() ? "yes" : "no");
  if (p.pages)
    std::cout << fmt::format("  pages: {} pages for {} buffers, {} scratch bytes\n",
                             p.pages->pages.size(), p.pages->buffer_to_page.size(),
                             p.pages->total_scratch_bytes());
  if (g.acyclic() && !cp.path.empty()) {
    std::cout << fmt::format("  critical path: {} tasks, {} MB est, {} -> {}\n", cp.tasks,
                             mb(cp.est_bytes), p.tasks[cp.path.front()].display(),
                             p.tasks[cp.path.back()].display());
  } else if (!g.acyclic()) {
    std::cout << "  critical path: none (the graph has a cycle; see amk validate)\n";
  }
  if (p.runtime) print_capacities(p, in.capacities);
  if (cost)
    std::cout << fmt::format(
        "  cost on {} run by {}: predicted {:.1f} us (schedule {:.1f}, shared HBM {:.1f}); AMK's "
        "formula {:.1f} us; weight-streaming floor {:.1f} us\n"
        "  along the critical path: launch {:.1f}, dispatch {:.1f}, dependencies {:.1f}, sync "
        "{:.1f}, weights {:.1f}, compute {:.1f} us; {:.0f} bytes in flight per worker\n",
        tgt->name, cost->runtime, cost->makespan_us, cost->queue_us, cost->bandwidth_us,
        cost->amk_makespan_us, cost->floor_us, cost->breakdown.launch_us,
        cost->breakdown.dispatch_us, cost->breakdown.dependency_us, cost->breakdown.sync_us,
        cost->breakdown.memory_us, cost->breakdown.compute_us, cost->bytes_in_flight);
  if (cost)
    for (const ir::Diagnostic& d : in.runtime_warnings)
      std::cout << fmt::format("  warning: {} [{}] at /config{}\n", d.message, d.code, d.pointer);
  if (!cost && tgt && !verdict.ok)
    std::cout << "  cost: no prediction for a rejected program (--unsafe to force one)\n";
}

}  // namespace

int cmd_info(int argc, char** argv) {
  Args args(
      "amk info FILE [--target T] [--runtime R] [--json] [--unsafe] [--format F] [--launch K=V]",
      "Summarises a program: counts, producer->consumer edges, weight megabytes, opcode mix,\n"
      "pages, config and the critical path (longest dependency chain). The cost model's\n"
      "prediction is printed next to the weight-streaming floor for the program's target, or\n"
      "for --target T (a built-in name or a target .json), run by the target's runtime or by\n"
      "--runtime R (amk runtimes). The program is validated first: a\n"
      "rejected one is marked REJECTED (JSON: valid false and the rule codes) and gets no\n"
      "prediction unless --unsafe is given, so a loop ranking by info never picks an unsafe\n"
      "schedule. Exit 0 valid, 1 rejected, 2 unreadable.");
  args.add()("file", po::value<std::string>()->required(), "program JSON file")(
      "target,t", po::value<std::string>(), "predict for this target")(
      "json", "print one JSON document")("unsafe", "predict even for a rejected program");
  add_runtime_option(args);
  add_format_options(args);
  args.positional("file", 1);
  if (auto rc = args.parse(argc, argv)) return *rc;
  const auto file = args.get<std::string>("file");
  const bool json = args.has("json");
  const std::optional<app::FormatOptions> fo = format_options(args);
  if (!fo) return kUnreadable;
  Progress progress("amk info");
  progress.step("loading " + sized(file));
  auto prog = load(file, json, false, *fo);
  if (!prog) return kUnreadable;
  struct Keep {  // on every way out: the program is not freed block by block (keep_until_exit)
    std::optional<ir::Program>& p;
    ~Keep() { keep_until_exit(std::move(*p)); }
  } keep{prog};
  progress.step(fmt::format("validating {} tasks", prog->tasks.size()));
  const ir::Program& p = *prog;
  std::optional<ir::Target> override_target;
  auto runtime = resolve_runtime_option(args);
  if (!runtime) return fail(runtime.diagnostics, "amk info");
  const targets::Runtime* rt = runtime->get();
  if (args.has("target")) {
    auto t = targets::load_target(args.get<std::string>("target"));
    if (!t) return fail(t.diagnostics, "amk info");
    override_target = t->record;
    if (!rt) rt = &targets::default_runtime(*t);
  }
  const app::ProgramInfo in = app::program_info(p, override_target, args.has("unsafe"), rt);
  progress.clear();
  const validate::Result& verdict = in.verdict;

  if (json) {
    std::string out;
    ir::append_json_value(out, in.json(p, file), 0);
    std::cout << out << "\n";
    return verdict.ok ? kOk : kRejected;
  }
  print_info(p, in, file);
  return verdict.ok ? kOk : kRejected;
}

}  // namespace amk::cli
