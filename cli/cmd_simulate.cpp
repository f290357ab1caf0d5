#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/commands.h"
#include "ir/graph.h"
#include "ir/pyjson.h"
#include "validate/simulate.h"

namespace amk::cli {
namespace {

using ojson = nlohmann::ordered_json;

std::string stuck_line(const ir::Program& p, const validate::Stuck& s) {
  std::string who = fmt::format("task {} ({})", s.task, p.tasks[s.task].display());
  if (s.counter < 0)
    return fmt::format("{} is queued behind task {} on SM {}", who, s.sm_head,
                       p.tasks[s.task].sm ? *p.tasks[s.task].sm : -1);
  return fmt::format("{} waits on counter {} for {}, which stays at {}", who, s.counter,
                     s.threshold, s.value);
}

ojson stuck_json(const ir::Program& p, const std::vector<validate::Stuck>& v) {
  ojson a = ojson::array();
  for (const auto& s : v) {
    ojson j = {{"task", s.task}, {"label", p.tasks[s.task].label}};
    if (s.counter >= 0) {
      j["counter"] = s.counter;
      j["threshold"] = s.threshold;
      j["value"] = s.value;
    } else {
      j["sm_head"] = s.sm_head;
    }
    a.push_back(std::move(j));
  }
  return a;
}

}  // namespace

int cmd_simulate(int argc, char** argv) {
  Args args(
      "amk simulate FILE [--seeds N] [--first-seed S] [--no-sm-queues] [--json] [--format F]",
      "Dynamic backstops to amk validate. The counter simulation fires tasks as AMK's\n"
      "simulate_counters does (list-order sweeps) and lists stuck tasks with the wait that\n"
      "never holds. The adversarial simulation fires ready tasks in seeded orders and reports\n"
      "reads before every writer ran, writes while a reader or an overlapping writer is\n"
      "ready, and page clobbers. Exit 0 clean, 1 stuck or racy, 2 unreadable.");
  args.add()("file", po::value<std::string>()->required(), "program JSON file")(
      "seeds", po::value<int64_t>()->default_value(16), "interleavings to try")(
      "first-seed", po::value<int64_t>()->default_value(0),
      "first seed (replay one with --seeds 1)")(
      "no-sm-queues", "ignore SM assignments (fire any ready task, as AMK's simulator)")(
      "json", "print one JSON document");
  add_format_options(args);
  args.positional("file", 1);
  args.range("seeds", 1, 1e6);
  args.range("first-seed", 0, kMaxSeed);
  if (auto rc = args.parse(argc, argv)) return *rc;
  const auto file = args.get<std::string>("file");
  const bool json = args.has("json");
  const std::optional<app::FormatOptions> fo = format_options(args);
  if (!fo) return kUnreadable;
  auto prog = load(file, json, false, *fo);
  if (!prog) return kUnreadable;
  const ir::Program& p = *prog;
  ir::Graph g = ir::Graph::build(p);
  const bool sm = !args.has("no-sm-queues");
  validate::CounterSim cs = validate::simulate_counters(p, g, sm);
  validate::AdversarialOptions opt;
  opt.seeds = static_cast<uint32_t>(args.get<int64_t>("seeds"));
  opt.first_seed = static_cast<uint64_t>(args.get<int64_t>("first-seed"));
  opt.sm_queues = sm;
  validate::Adversarial adv = validate::simulate_adversarial(p, g, opt);
  const bool clean = cs.stuck.empty() && adv.races.empty() && adv.stuck.empty();
  if (json) {
    ojson j;
    j["ok"] = clean;
    j["file"] = file;
    j["counter"] = {{"fired", cs.order.size()},
                    {"tasks", p.tasks.size()},
                    {"sweeps", cs.sweeps},
                    {"stuck", stuck_json(p, cs.stuck)}};
    ojson races = ojson::array();
    static const char* kKinds[] = {"read-before-write", "write-while-reader-ready",
                                   "write-while-writer-ready", "page-clobber"};
    for (const auto& r : adv.races)
      races.push_back({{"kind", kKinds[static_cast<int>(r.kind)]},
                       {"seed", r.seed},
                       {"task", r.task},
                       {"buffer", r.buffer},
                       {"other", r.other},
                       {"message", r.message}});
    j["adversarial"] = {
        {"seeds", adv.seeds_run}, {"races", std::move(races)}, {"stuck", stuck_json(p, adv.stuck)}};
    std::string out;
    ir::append_json_value(out, j, 0);
    std::cout << out << "\n";
    return clean ? kOk : kRejected;
  }
  std::cout << fmt::format("counter simulation: {}/{} tasks fired in {} sweep(s){}\n",
                           cs.order.size(), p.tasks.size(), cs.sweeps,
                           cs.stuck.empty() ? "" : fmt::format(", {} stuck", cs.stuck.size()));
  for (size_t k = 0; k < cs.stuck.size() && k < 20; ++k)
    std::cout << "  stuck: " << stuck_line(p, cs.stuck[k]) << "\n";
  if (cs.stuck.size() > 20) std::cout << fmt::format("  ... {} more\n", cs.stuck.size() - 20);
  std::cout << fmt::format("adversarial: {} interleaving(s), {} race(s)\n", adv.seeds_run,
                           adv.races.size());
  for (const auto& r : adv.races) std::cout << "  " << r.message << "\n";
  return clean ? kOk : kRejected;
}

}  // namespace amk::cli
