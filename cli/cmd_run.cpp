#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/decode.h"
#include "app/machine.h"
#include "app/view.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/lowering.h"
#include "cli/run_options.h"
#include "ir/pyjson.h"
#include "validate/validate.h"
#include "vm/foreign.h"
#include "vm/safetensors.h"
#include "vm/vm.h"

namespace amk::cli {

namespace {

// An MPK or PTO graph: its tasks as timed no-ops under its runtime's placement and capacities.
// Refused when the proof finds anything but a capacity problem (those are what the run shows).
int run_foreign_graph(const ir::Program& p, const std::string& path, bool json, bool unsafe) {
  validate::Result v = validate::validate(p);
  ir::Diagnostics refused;
  for (const ir::Diagnostic& d : v.errors)
    if (!d.code.starts_with("capacity.")) refused.push_back(d);
  if (!refused.empty() && !unsafe) {
    refused.insert(refused.begin(),
                   ir::error("vm.rejected", fmt::format("{} is rejected by the validator for more "
                                                        "than its capacities; see amk validate",
                                                        path)));
    return fail(refused, path, json);
  }
  ir::Result<vm::ForeignRun> r = vm::run_foreign(p);
  if (!r) return fail(r.diagnostics, path, json);
  const std::string_view kind = ir::name(p.runtime->kind);
  if (json) {
    std::cout << fmt::format(
        "{{\n  \"ok\": true,\n  \"runtime\": \"{}\",\n  \"tasks\": {},\n  \"makespan_us\": {},\n  "
        "\"blocked_submits\": {}\n}}\n",
        kind, r->tasks_run, r->makespan_us, r->blocked);
  } else {
    std::cout << fmt::format(
        "ran {} tasks of the {} graph as timed no-ops under its runtime's placement and "
        "capacities: done at {} us (simulated), {} submit(s) waited for a ring\n",
        r->tasks_run, kind, r->makespan_us, r->blocked);
  }
  return kOk;
}

// The options of `amk run`, with its help.
Args run_args() {
  Args args(
      "amk run PROGRAM [--weights W] [--inputs I | --token-id N[,N...] [--pos P]] [--kv KV]\n"
      "               [-o OUT] [--workers N] [--mode M] [--json]\n"
      "               [--sms N] [--target T] [--schedulers N] [--core-threads N]\n"
      "               [--core-type ID=aic|aiv,...] [--trace T] [--plot OUT.svg] [--watchdog-ms "
      "MS]\n"
      "               [--unsafe-skip-validate] [--format F] [--launch K=V] [--scope-stats F]\n"
      "       amk run PROGRAM --inputs-template OUT [--token-id N[,N...]] [--pos P]",
      "Runs a program on the reference VM: loads it (refusing what `amk validate` rejects), binds\n"
      "WEIGHT/CONST buffers to --weights by Buffer.source (memory-mapped), IO_INPUT buffers to\n"
      "--inputs by name (or, for a lowered decode step, --token-id: token_id, pos from the\n"
      "program's meta.pos or --pos, reshape ids 0..n-1) and KV_CACHE buffers to --kv (zeros when\n"
      "absent; a --kv without any of the program's caches is refused), runs every task on the\n"
      "target's SMs, and writes IO_OUTPUT and KV_CACHE buffers to --out (safetensors, "
      "atomically).\n"
      "--mode aicore (the default on a target with clusters, e.g. a2a3) runs the Ascend model "
      "instead:\n"
      "AICPU scheduler threads own disjoint clusters of 1 AIC + 2 AIV cores, dispatch ready tasks\n"
      "through an emulated DMB/COND register handshake (GEMV/GEMM/attention tiles on AIC, the "
      "rest\n"
      "on AIV), and the cores run on a few OS threads.\n"
      "An MPK task_graph.json or PTO deps.json runs as timed no-ops under its runtime's placement\n"
      "and capacities (--launch overrides them): a capacity deadlock is a stuck report (exit 3).\n"
      "Prints one summary line. Exit 0 ok, 1 rejected by the validator, 2 unreadable input or a\n"
      "kernel error, 3 deadlock or watchdog (with a report of every blocked SM or core).");
  args.add()("program", po::value<std::string>(), "program JSON")(
      "weights", po::value<std::string>(), "safetensors with the WEIGHT/CONST tensors")(
      "inputs", po::value<std::string>(), "safetensors with the IO_INPUT tensors")(
      "token-id", po::value<std::string>(), "a decode step's token id(s), one per sequence")(
      "pos", po::value<int64_t>(), "a decode step's position (default: the program's meta.pos)")(
      "kv", po::value<std::string>(), "safetensors with KV caches from a previous step")(
      "out,o", po::value<std::string>(), "write IO_OUTPUT and KV_CACHE tensors here")(
      "inputs-template", po::value<std::string>(),
      "write the program's IO_INPUT tensors (a decode step's token_id (--token-id, else 0), pos "
      "and reshape ids filled in, the rest zeros) to this safetensors file and exit")(
      "sms", po::value<int64_t>()->default_value(0), "SM count (default: the program's target)")(
      "target,t", po::value<std::string>(),
      "run on this target instead of the program's (built-in name or target .json)")(
      "placement", po::value<std::string>()->default_value("lpt"),
      "SMs of tasks without Task.sm: lpt (AMK's loader) or round-robin")(
      "no-pages", "give every activation its own memory even when the program shares pages")(
      "trace", po::value<std::string>(), "write a Chrome/Perfetto trace JSON")(
      "plot", po::value<std::string>(),
      "write the measured run as an SVG timeline (one lane per worker, as `amk plot`)")(
      "unsafe-skip-validate", "run even if the validator rejects the program (watchdog tests)")(
      "json", "print the summary (or the errors) as one JSON document on stdout");
  add_run_options(args);
  add_format_options(args);
  args.range("sms", 0, 1 << 16);
  args.range("pos", 0, 1 << 24);
  args.positional("program", 1);
  return args;
}

// The arguments' consistency, and the --token-id list; an exit code when they are wrong.
std::optional<int> check_run_args(const Args& args,
                                  std::optional<std::vector<int32_t>>& token_ids) {
  if (!args.has("program")) {
    std::cerr << "amk run: give a PROGRAM\n";
    return kUnreadable;
  }
  if (args.has("token-id") && args.has("inputs")) {
    std::cerr << "amk run: give --inputs or --token-id, not both\n";
    return kUnreadable;
  }
  if (args.has("inputs-template") && (args.has("inputs") || args.has("out"))) {
    std::cerr << "amk run: --inputs-template writes a template and runs nothing (no --inputs or "
                 "-o)\n";
    return kUnreadable;
  }
  if (args.has("pos") && !args.has("token-id") && !args.has("inputs-template")) {
    std::cerr << "amk run: --pos goes with --token-id (an --inputs file carries its own pos)\n";
    return kUnreadable;
  }
  if (args.has("token-id")) {
    token_ids = parse_token_ids(args.get<std::string>("token-id"));
    if (!token_ids) {
      std::cerr << fmt::format(
          "amk run: --token-id {}: give token ids (0..2^31-1) separated by "
          "commas\n",
          args.get<std::string>("token-id"));
      return kUnreadable;
    }
  }
  return std::nullopt;
}

// What a run reads besides its program: the files must outlive the run (weights are mapped).
struct RunFiles {
  std::unique_ptr<vm::SafeTensors> weights, inputs, kvfile;
  vm::TensorStore kv;
};

// Opens --weights, --inputs and --kv and binds them (and --token-id) to the loaded program.
ir::Status bind_run_inputs(const Args& args, vm::Vm& vm_,
                           const std::optional<std::vector<int32_t>>& token_ids, RunFiles& f) {
  vm::Vm* m = &vm_;
  auto open = [&](const char* opt, std::unique_ptr<vm::SafeTensors>& into) {
    if (!args.has(opt)) return ir::Status();
    auto r = vm::SafeTensors::open(args.get<std::string>(opt));
    if (!r) return ir::Status(std::move(r.diagnostics));
    into = std::move(*r.value);
    return ir::Status();
  };
  for (auto [opt, file] :
       {std::pair{"weights", &f.weights}, {"inputs", &f.inputs}, {"kv", &f.kvfile}})
    if (ir::Status o = open(opt, *file); !o) return o;
  ir::Status bound;
  if (f.weights) bound = m->bind_weights(*f.weights);
  if (bound && f.inputs) bound = m->set_inputs(*f.inputs);
  if (bound && token_ids) {
    ir::Result<int32_t> pos = app::step_pos(
        m->program(), args.has("pos") ? std::optional(args.get<int64_t>("pos")) : std::nullopt);
    bound = pos ? m->set_decode_inputs(*token_ids, *pos) : ir::Status(pos.diagnostics);
  }
  if (bound && f.inputs) bound = app::check_step_inputs(m->program(), *f.inputs);
  if (bound && f.kvfile) bound = app::check_kv_file(m->program(), *f.kvfile);
  if (bound && f.kvfile) bound = vm::Vm::import(*f.kvfile, f.kv);
  if (bound) bound = m->bind_kv(f.kv);
  return bound;
}

// The summary of a finished run: one line, or one JSON document.
int print_run_summary(const Args& args, const std::string& path, bool json, vm::Vm& vm_,
                      const vm::RunResult& r, const vm::RunOptions& ro) {
  vm::Vm* m = &vm_;
  const double wall = std::max(r.wall_s, 1e-9);
  std::string where =
      fmt::format("{} SMs ({} worker{})", m->num_sms(), r.workers, r.workers == 1 ? "" : "s");
  if (ro.mode == vm::Mode::Aicore) {
    const int sched = ro.aicore.deterministic ? 1 : r.workers - ro.aicore.core_threads;
    const int cthreads = ro.aicore.deterministic ? 0 : ro.aicore.core_threads;
    where = fmt::format("{} AICore cores ({} scheduler thread{}, {} core thread{})",
                        r.lanes.size() - static_cast<size_t>(sched), sched, sched == 1 ? "" : "s",
                        cthreads, cthreads == 1 ? "" : "s");
  }
  if (json) {
    nlohmann::ordered_json j;
    j["ok"] = true;
    j["program"] = path;
    j["tasks"] = r.tasks_done;
    j["mode"] = args.has("mode") ? args.get<std::string>("mode")
                                 : std::string(ro.mode == vm::Mode::Aicore ? "aicore" : "sm");
    j["sms"] = m->num_sms();
    j["lanes"] = r.lanes.size();
    j["workers"] = r.workers;
    j["wall_ms"] = r.wall_s * 1e3;
    j["tasks_per_s"] = static_cast<double>(r.tasks_done) / wall;
    j["bytes"] = r.bytes;
    j["GB_per_s"] = r.bytes / wall / 1e9;
    if (args.has("out")) j["output"] = args.get<std::string>("out");
    if (args.has("trace")) j["trace"] = args.get<std::string>("trace");
    std::cout << ir::dump_text(j, 2) << "\n";
    return kOk;
  }
  std::cout << fmt::format(
      "ran {} tasks on {} in {:.3f} ms: {:.0f} tasks/s, {:.2f} MB moved, {:.2f} GB/s\n",
      r.tasks_done, where, r.wall_s * 1e3, static_cast<double>(r.tasks_done) / wall, r.bytes / 1e6,
      r.bytes / wall / 1e9);
  return kOk;
}

// --inputs-template: writes the program's IO_INPUT tensors (the step's inputs filled in).
int write_inputs_template(const Args& args, const ir::Program& prog,
                          const std::optional<std::vector<int32_t>>& token_ids,
                          const std::string& path, bool json) {
  ir::Result<std::string> t = app::inputs_template(
      prog, token_ids ? *token_ids : std::vector<int32_t>(),
      args.has("pos") ? std::optional(args.get<int64_t>("pos")) : std::nullopt);
  if (!t) return fail(t.diagnostics, path, json);
  const auto out = args.get<std::string>("inputs-template");
  if (!write_output(out, *t)) return kUnreadable;
  std::cerr << fmt::format("wrote {}: the IO_INPUT tensors of {}\n", out, path);
  return kOk;
}

}  // namespace

int cmd_run(int argc, char** argv) {
  Args args = run_args();
  if (auto rc = args.parse(argc, argv)) return *rc;
  std::optional<std::vector<int32_t>> token_ids;
  if (auto rc = check_run_args(args, token_ids)) return *rc;
  const bool json = args.has("json");
  const auto path = args.get<std::string>("program");
  const std::optional<app::FormatOptions> fo = format_options(args);
  if (!fo) return kUnreadable;
  auto prog = load(path, json, false, *fo);
  if (!prog) return kUnreadable;
  if (args.has("inputs-template")) return write_inputs_template(args, *prog, token_ids, path, json);
  std::optional<targets::TargetSpec> spec;
  if (args.has("target")) {
    ir::Result<targets::TargetSpec> t = targets::load_target(args.get<std::string>("target"));
    if (!t) return fail(t.diagnostics, "amk run", json);
    spec = std::move(t.value);
    prog->target = spec->record;  // the validator then proves the program for this target's SMs
  } else {
    spec = app::builtin_target_of(*prog);  // its worker topology
  }
  if (vm::runs_foreign(*prog))
    return run_foreign_graph(*prog, path, json, args.has("unsafe-skip-validate"));
  vm::RunOptions ro;
  ir::Status st = resolve_run_options(args, spec ? &*spec : nullptr, ro);
  print_diagnostics(st.diagnostics, "amk run");
  if (!st) return exit_code(st.diagnostics);
  vm::LoadOptions lo = app::load_options(ro.workers);
  lo.num_sms = args.get<int64_t>("sms");
  lo.skip_validate = args.has("unsafe-skip-validate");
  lo.honor_pages = !args.has("no-pages");
  const auto placement = args.get<std::string>("placement");
  if (placement != "lpt" && placement != "round-robin") {
    std::cerr << "amk run: --placement must be lpt or round-robin\n";
    return kUnreadable;
  }
  lo.placement = placement == "lpt" ? vm::Placement::Lpt : vm::Placement::RoundRobin;
  vm::TraceRecorder recorder;
  if (args.has("trace") || args.has("plot")) ro.observer = &recorder;

  auto loaded = vm::Vm::load(std::move(*prog), lo);
  if (!loaded) return fail(loaded.diagnostics, path, json);
  vm::Vm* m = loaded->get();
  RunFiles files;
  ir::Status bound = bind_run_inputs(args, *m, token_ids, files);
  if (!bound) return fail(bound.diagnostics, "amk run", json);
  vm::RunResult r = m->run(ro);
  if (args.has("trace") &&
      !write_output(args.get<std::string>("trace"), vm::chrome_trace(m->program(), recorder)))
    return kUnreadable;
  if (args.has("plot") &&
      !write_output(
          args.get<std::string>("plot"),
          app::timeline_svg(m->program(), app::measured_timeline(m->program(), recorder))))
    return kUnreadable;
  if (r.status == vm::RunResult::Status::Stuck) {
    if (json) {
      ir::Diagnostic d = r.diagnostics.empty() ? ir::error("vm.deadlock", "") : r.diagnostics[0];
      d.message = vm::stuck_report(m->program(), r);
      d.file = path;
      return fail({d}, path, true);
    }
    std::cerr << path << ": " << vm::stuck_report(m->program(), r);
    return kDeadlock;
  }
  if (r.status == vm::RunResult::Status::KernelError) return fail(r.diagnostics, path, json);
  if (args.has("out")) {
    auto outs = m->outputs();
    if (ir::Status w = vm::st_write(args.get<std::string>("out"), outs); !w)
      return fail(w.diagnostics, "amk run", json);
  }
  return print_run_summary(args, path, json, *m, r, ro);
}

}  // namespace amk::cli
