#include <algorithm>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/commands.h"
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

}  // namespace

int cmd_info(int argc, char** argv) {
  Args args(
      "amk info FILE [--target T] [--json] [--unsafe]",
      "Summarises a program: counts, producer->consumer edges, weight megabytes, opcode mix,\n"
      "pages, config and the critical path (longest dependency chain). The cost model's\n"
      "prediction is printed next to the weight-streaming floor for the program's target, or\n"
      "for --target T (a built-in name or a target .json). The program is validated first: a\n"
      "rejected one is marked REJECTED (JSON: valid false and the rule codes) and gets no\n"
      "prediction unless --unsafe is given, so a loop ranking by info never picks an unsafe\n"
      "schedule. Exit 0 valid, 1 rejected, 2 unreadable.");
  args.add()("file", po::value<std::string>()->required(), "program JSON file")(
      "target,t", po::value<std::string>(), "predict for this target")(
      "json", "print one JSON document")("unsafe", "predict even for a rejected program");
  args.positional("file", 1);
  if (auto rc = args.parse(argc, argv)) return *rc;
  const auto file = args.get<std::string>("file");
  const bool json = args.has("json");
  Progress progress("amk info");
  progress.step("loading " + sized(file));
  auto prog = load(file, json);
  if (!prog) return kUnreadable;
  progress.step(fmt::format("validating {} tasks", prog->tasks.size()));
  const ir::Program& p = *prog;
  ir::Graph g = ir::Graph::build(p);
  const ir::CriticalPath cp = ir::critical_path(p, g);
  std::optional<ir::Target> tgt = p.target;
  if (args.has("target")) {
    auto t = targets::load_target(args.get<std::string>("target"));
    if (!t) return fail(t.diagnostics, "amk info");
    tgt = t->record;
  }
  const validate::Result verdict = validate::validate(p);
  progress.clear();
  std::vector<std::string> rules;  // the rejection's rule codes, each once, in order
  for (const ir::Diagnostic& d : verdict.errors)
    if (std::find(rules.begin(), rules.end(), d.code) == rules.end()) rules.push_back(d.code);
  std::optional<targets::CostEstimate> cost;
  if (tgt && (verdict.ok || args.has("unsafe"))) cost = targets::estimate(p, *tgt);

  std::map<std::string, int64_t> ops, kinds;
  int64_t est_bytes = 0, est_flops = 0, n_weights = 0;
  for (const auto& t : p.tasks) {
    ++ops[std::string(ir::name(t.op))];
    est_bytes += t.est_bytes;
    est_flops += t.est_flops;
  }
  for (const auto& b : p.buffers) {
    ++kinds[std::string(ir::name(b.kind))];
    n_weights += b.kind == ir::BufferKind::WEIGHT;
  }
  int64_t waits = 0;
  for (const auto& t : p.tasks) waits += static_cast<int64_t>(t.waits.size());
  const auto& meta = p.meta.json();
  auto meta_str = [&](const char* k) {
    return meta.is_object() && meta.contains(k) ? ir::py_repr(meta[k]) : std::string("-");
  };

  if (json) {
    ojson j;
    j["file"] = file;
    j["valid"] = verdict.ok;
    j["rules"] = rules;
    j["errors"] = verdict.errors.size();
    j["ir_version"] = p.ir_version;
    j["abi_version"] = p.abi_version;
    j["meta"] = meta;
    j["target"] = p.target ? ojson(p.target->name) : ojson();
    j["tasks"] = p.tasks.size();
    j["buffers"] = p.buffers.size();
    j["counters"] = p.counters.size();
    j["waits"] = waits;
    j["edges"] = g.edge_count();
    j["acyclic"] = g.acyclic();
    j["weight_bytes"] = p.total_weight_bytes();
    j["weight_MB"] = std::stod(mb(p.total_weight_bytes()));
    j["sm_assigned"] = p.sm_assigned();
    j["ops"] = ops;
    j["buffer_kinds"] = kinds;
    j["est_bytes"] = est_bytes;
    j["est_flops"] = est_flops;
    j["pages"] = p.pages ? ojson({{"pages", p.pages->pages.size()},
                                  {"buffers", p.pages->buffer_to_page.size()},
                                  {"scratch_bytes", p.pages->total_scratch_bytes()}})
                         : ojson();
    j["config"] = p.config ? ojson(true) : ojson(false);
    ojson crit = ojson::object();
    crit["tasks"] = cp.tasks;
    crit["est_bytes"] = cp.est_bytes;
    ojson path = ojson::array();
    for (uint32_t t : cp.path) path.push_back(t);
    crit["path"] = std::move(path);
    j["critical_path"] = g.acyclic() ? crit : ojson();
    if (cost)
      j["cost"] = {{"target", tgt->name},
                   {"predicted_us", cost->makespan_us},
                   {"amk_predicted_us", cost->amk_makespan_us},
                   {"queue_us", cost->queue_us},
                   {"bandwidth_us", cost->bandwidth_us},
                   {"critical_path_us", cost->critical_path_us},
                   {"floor_us", cost->floor_us}};
    std::string out;
    ir::append_json_value(out, j, 0);
    std::cout << out << "\n";
    return verdict.ok ? kOk : kRejected;
  }
  if (!verdict.ok)
    std::cout << fmt::format("REJECTED by the validator: {} error(s) ({}); see amk validate {}\n",
                             verdict.errors.size(), fmt::join(rules, ", "), file);

  std::cout << fmt::format("{}: IR {}, ABI {}, model {}, gpu {}, target {}\n", file, p.ir_version,
                           p.abi_version, meta_str("model"), meta_str("gpu"),
                           p.target ? p.target->name : std::string("none"));
  std::cout << fmt::format(
      "  tasks {}, buffers {} ({} weights, {} MB), counters {}, waits {}, edges {}, {}\n",
      p.tasks.size(), p.buffers.size(), n_weights, mb(p.total_weight_bytes()), p.counters.size(),
      waits, g.edge_count(), g.acyclic() ? "acyclic" : "CYCLIC");
  std::string opmix;
  std::vector<std::pair<int64_t, std::string>> sorted;
  for (const auto& [k, v] : ops) sorted.emplace_back(-v, k);
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [v, k] : sorted) opmix += fmt::format(" {} {},", k, -v);
  if (!opmix.empty()) opmix.pop_back();
  std::cout << "  ops:" << opmix << "\n";
  std::cout << fmt::format("  est: {} MB moved, {} MFLOP; sm assigned: {}\n", mb(est_bytes),
                           ir::py_round2(static_cast<double>(est_flops) / 1e6),
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
  if (cost)
    std::cout << fmt::format(
        "  cost on {}: predicted {:.1f} us (SM queues {:.1f}, shared HBM {:.1f}); AMK's formula "
        "{:.1f} us; weight-streaming floor {:.1f} us\n",
        tgt->name, cost->makespan_us, cost->queue_us, cost->bandwidth_us, cost->amk_makespan_us,
        cost->floor_us);
  else if (tgt && !verdict.ok)
    std::cout << "  cost: no prediction for a rejected program (--unsafe to force one)\n";
  return verdict.ok ? kOk : kRejected;
}

}  // namespace amk::cli
