
#include <filesystem>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/decode.h"
#include "app/machine.h"
#include "app/subject.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/lowering.h"
#include "cli/progress.h"
#include "cli/run_options.h"
#include "ir/pyjson.h"
#include "vm/safetensors.h"
#include "vm/vm.h"

namespace amk::cli {
namespace {

// Writes a store's KV caches as one safetensors file, atomically.
ir::Status write_kv(const std::string& path, const vm::TensorStore& kv) {
  std::vector<vm::StOut> outs;
  for (const auto& [name, t] : kv.tensors)
    outs.push_back({name, vm::st_of(t.dtype), t.shape, {t.bytes.data(), t.bytes.size()}});
  return vm::st_write(path, outs);
}

// The options of `amk generate`, with its help.
Args generate_args() {
  Args args(
      "amk generate MODEL [--target T] [--config C] [--dtype D] [--quant Q] --weights W\n"
      "                   --prompt-ids 1,2,3 --max-tokens N [--verify] [--workers N] [--mode M]\n"
      "       amk generate PROGRAM... [--target T] --weights W --prompt-ids ... --max-tokens N\n"
      "       (either form: [-o KV.safetensors] [--json])",
      "Greedy decode loop on the reference VM. With a MODEL (built-in name, spec or HF\n"
      "config.json) every position is lowered for the target under the config, validated and\n"
      "run; with PROGRAMs, the given per-position programs run in order (position 0, 1, ...),\n"
      "on their own target or, as with `amk run --target`, proven for and run on --target.\n"
      "Step s feeds token s of the prompt (then the previous argmax) at position s; KV caches\n"
      "stay in the VM across steps. --verify also evaluates every step directly (one untiled\n"
      "task per graph node, no fusion, placement or pages, serial, with its own KV caches) and\n"
      "compares the logits. Prints the generated ids on stdout; the summary (wall tokens/s)\n"
      "on stderr.\n"
      "Exit 0 ok, 1 a program is rejected or --verify finds a mismatch, 2 bad input,\n"
      "3 deadlock or watchdog.");
  args.add()("program", po::value<std::vector<std::string>>(), "MODEL, or per-position programs")(
      "weights", po::value<std::string>(), "safetensors with the WEIGHT/CONST tensors")(
      "prompt-ids", po::value<std::string>(), "comma-separated prompt token ids")(
      "max-tokens", po::value<int>()->default_value(1), "tokens to generate")(
      "verify", "compare every step's logits with a direct evaluation (MODEL only)")(
      "tolerance", po::value<double>()->default_value(1e-4),
      "--verify: max |logit difference| allowed")("kv-out,o", po::value<std::string>(),
                                                  "write the final KV caches here (safetensors)")(
      "json", "print the ids and the figures (or the errors) as one JSON document on stdout");
  add_lowering_options(args);
  add_run_options(args);
  args.positional("program", -1);
  args.range("max-tokens", 1, 1 << 20);
  args.range("tolerance", 0, 1e30);
  return args;
}

// What decodes: a MODEL lowered per position (`la` holds its lowering), or the given programs
// (`program_target`: --target, where they are proven and run). An exit code when it cannot.
std::optional<int> decode_source(const Args& args, const std::vector<std::string>& files, bool json,
                                 app::DecodeSource& src, std::optional<LoweringArgs>& la,
                                 std::optional<targets::TargetSpec>& program_target) {
  if (files.size() == 1) {  // a MODEL, or a single program
    ir::Result<app::Subject> subject = app::load_subject(files[0]);
    if (!subject) return fail(subject.diagnostics, "amk generate", json);
    print_diagnostics(subject.diagnostics, "amk generate");
    if (subject->model) {
      auto r = resolve_lowering(args, std::move(*subject->model));
      if (!r) return fail(r.diagnostics, "amk generate", json);
      print_diagnostics(r.diagnostics, "amk generate");
      la = std::move(r.value);
      src.model = &la->model;
      src.target = &la->target;
      src.config = la->config;
      src.lower = la->opt;
    }
  }
  if (!src.model) {
    src.programs = files;
    if (target_given(args)) {  // as `amk run --target`: each program proven and run there
      ir::Result<targets::TargetSpec> t = targets::load_target(args.get<std::string>("target"));
      if (!t) return fail(t.diagnostics, "amk generate", json);
      program_target = std::move(t.value);
      src.target = &*program_target;
    }
  }
  return std::nullopt;
}

// The generated ids and the figures: one JSON document, or the ids on stdout and the figures on
// stderr; the KV caches to --kv-out.
int report_generation(const Args& args, bool json, const app::DecodeResult& res,
                      const std::optional<LoweringArgs>& la, bool verify) {
  const app::DecodeResult* r = &res;
  if (json) {  // after the KV file is written: a failure there is the document's error
    if (args.has("kv-out")) {
      if (ir::Status w = write_kv(args.get<std::string>("kv-out"), r->kv); !w)
        return fail(w.diagnostics, "amk generate", true);
    }
    nlohmann::ordered_json j;
    j["ok"] = true;
    j["generated"] = r->generated;
    j["steps"] = r->steps;
    j["wall_s"] = r->wall_s;
    j["tokens_per_s"] = static_cast<double>(r->generated.size()) / std::max(r->wall_s, 1e-9);
    j["vm_s"] = r->run_s;
    if (la) {
      j["target"] = la->target.record.name;
      j["lower_ms"] = r->lower_s * 1e3;
    }
    if (verify) {
      j["max_logit_error"] = r->max_error;
      j["direct_s"] = r->direct_s;
    }
    if (args.has("kv-out")) j["kv_out"] = args.get<std::string>("kv-out");
    std::cout << ir::dump_text(j, 2) << "\n";
    return kOk;
  }
  // The ids alone on stdout (before anything that could still fail); the figures on stderr.
  std::cout << fmt::format("{}\n", fmt::join(r->generated, ",")) << std::flush;
  std::cerr << fmt::format(
      "{} steps, {} new tokens in {:.3f} s: {:.2f} tokens/s ({:.3f} s in the "
      "VM)\n",
      r->steps, r->generated.size(), r->wall_s,
      static_cast<double>(r->generated.size()) / std::max(r->wall_s, 1e-9), r->run_s);
  if (la)
    std::cerr << fmt::format("lowered {} positions for {} in {:.2f} ms\n", r->steps,
                             la->target.record.name, r->lower_s * 1e3);
  if (verify)
    std::cerr << fmt::format(
        "verified {} steps against the direct evaluation: max |logit "
        "difference| {:.3g} (direct evaluation {:.3f} s)\n",
        r->steps, r->max_error, r->direct_s);
  if (args.has("kv-out")) {
    if (ir::Status w = write_kv(args.get<std::string>("kv-out"), r->kv); !w)
      return fail(w.diagnostics, "amk generate");
  }
  return kOk;
}

}  // namespace

int cmd_generate(int argc, char** argv) {
  Args args = generate_args();
  if (auto rc = args.parse(argc, argv)) return *rc;
  if (!args.has("program") || !args.has("prompt-ids")) {
    std::cerr << "amk generate: give a MODEL (or per-position PROGRAMs) and --prompt-ids\n";
    return kUnreadable;
  }
  if (args.has("kv-out")) {  // a folder that is not there fails now, not after the generation
    const std::filesystem::path dir =
        std::filesystem::path(args.get<std::string>("kv-out")).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir)) {
      std::cerr << fmt::format("amk generate: --kv-out {}: no folder {}\n",
                               args.get<std::string>("kv-out"), dir.string());
      return kUnreadable;
    }
  }
  const bool json = args.has("json");
  const auto files = args.get<std::vector<std::string>>("program");
  auto prompt = parse_token_ids(args.get<std::string>("prompt-ids"));
  const int max_tokens = args.get<int>("max-tokens");
  if (!prompt || max_tokens < 1) {
    std::cerr << "amk generate: --prompt-ids must be non-negative integers separated by commas and "
                 "--max-tokens at least 1\n";
    return kUnreadable;
  }
  app::DecodeSource src;
  app::DecodeOptions o;
  o.prompt = std::move(*prompt);
  o.max_tokens = max_tokens;
  o.verify = args.has("verify");
  o.tolerance = args.get<double>("tolerance");
  std::optional<LoweringArgs> la;
  std::optional<targets::TargetSpec> program_target;
  if (auto rc = decode_source(args, files, json, src, la, program_target)) return *rc;
  std::unique_ptr<vm::SafeTensors> weights;
  if (args.has("weights")) {
    auto w = vm::SafeTensors::open(args.get<std::string>("weights"));
    if (!w) return fail(w.diagnostics, "amk generate", json);
    weights = std::move(*w.value);
  }
  o.weights = weights.get();
  ir::Status st = resolve_run_options(args, src.target, o.run);
  print_diagnostics(st.diagnostics, "amk generate");
  if (!st) return exit_code(st.diagnostics);
  o.load = app::load_options(o.run.workers);
  Progress progress("amk generate");
  progress.step("decode steps");
  o.progress = [&](size_t done, size_t total) { progress.count(done, total); };
  ir::Result<app::DecodeResult> r = app::decode(src, o);
  progress.clear();
  if (!r) {
    if (la) name_config(r.diagnostics, *la);
    return fail(r.diagnostics, "amk generate", json);
  }
  return report_generation(args, json, *r, la, o.verify);
}

}  // namespace amk::cli
