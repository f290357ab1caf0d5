#include <unistd.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/lowering.h"
#include "cli/run_options.h"
#include "vm/safetensors.h"
#include "vm/vm.h"

namespace amk::cli {
namespace {

std::optional<std::vector<int32_t>> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      long v = std::stol(item, &used);
      if (used != item.size() || v < 0 || v > INT32_MAX) return std::nullopt;
      ids.push_back(static_cast<int32_t>(v));
    } catch (...) {
      return std::nullopt;
    }
  }
  if (ids.empty()) return std::nullopt;
  return ids;
}

// One decode step of a program on the VM: binds weights, inputs and KV, runs, returns the last
// row of "logits". Returns an exit code on failure (after printing why), nullopt when it ran.
std::optional<int> decode_step(ir::Program prog, const std::string& origin,
                               const vm::SafeTensors* weights, vm::TensorStore& kv, int32_t token,
                               int32_t pos, const vm::RunOptions& ro, std::vector<float>& logits,
                               double& run_s) {
  std::string err;
  vm::LoadOptions lo;
  lo.default_sms = ro.workers > 0 ? ro.workers : 1;
  auto m = vm::Vm::load(std::move(prog), lo, err);
  if (!m) {
    std::cerr << origin << ": " << err << "\n";
    return err.starts_with("refusing") ? kRejected : kUnreadable;
  }
  std::optional<std::string> e;
  if (weights) e = m->bind_weights(*weights);
  if (!e)
    if (auto fe = m->set_decode_inputs({&token, 1}, pos)) e = fmt::format("{}: {}", origin, *fe);
  if (!e) e = m->bind_kv(kv);
  if (e) {
    std::cerr << "amk generate: " << *e << "\n";
    return kUnreadable;
  }
  vm::RunResult r = m->run(ro);
  run_s += r.wall_s;
  if (r.status == vm::RunResult::Status::Stuck) {
    std::cerr << origin << ": " << vm::stuck_report(m->program(), r);
    return kDeadlock;
  }
  if (!r.ok()) {
    std::cerr << origin << ": " << r.error << "\n";
    return kUnreadable;
  }
  int64_t id = 0;
  for (const auto& b : m->program().buffers) {
    if (b.name == "logits" && b.kind == ir::BufferKind::IO_OUTPUT && b.dtype == ir::DType::F32 &&
        !b.shape.empty()) {
      const int64_t vocab = b.shape.back();
      const float* row = static_cast<const float*>(m->data(id)) + (b.numel() - vocab);
      logits.assign(row, row + vocab);
      return std::nullopt;
    }
    ++id;
  }
  std::cerr << origin << ": has no F32 IO_OUTPUT buffer 'logits'\n";
  return kUnreadable;
}

}  // namespace

int cmd_generate(int argc, char** argv) {
  Args args(
      "amk generate MODEL [--target T] [--config C] [--dtype D] [--quant Q] --weights W\n"
      "                   --prompt-ids 1,2,3 --max-tokens N [--verify] [--workers N] [--mode M]\n"
      "       amk generate PROGRAM... --weights W --prompt-ids ... --max-tokens N",
      "Greedy decode loop on the reference VM. With a MODEL (built-in name, spec or HF\n"
      "config.json) every position is lowered for the target under the config, validated and\n"
      "run; with PROGRAMs, the given per-position programs run in order (position 0, 1, ...).\n"
      "Step s feeds token s of the prompt (then the previous argmax) at position s; KV caches\n"
      "stay in the VM across steps. --verify also evaluates every step directly (one untiled\n"
      "task per graph node, no fusion, placement or pages, serial, with its own KV caches) and\n"
      "compares the logits. Prints the generated ids and a summary line (tokens/s).\n"
      "Exit 0 ok, 1 a program is rejected or --verify finds a mismatch, 2 bad input,\n"
      "3 deadlock or watchdog.");
  args.add()("program", po::value<std::vector<std::string>>(), "MODEL, or per-position programs")(
      "weights", po::value<std::string>(), "safetensors with the WEIGHT/CONST tensors")(
      "prompt-ids", po::value<std::string>(), "comma-separated prompt token ids")(
      "max-tokens", po::value<int>()->default_value(1), "tokens to generate")(
      "verify", "compare every step's logits with a direct evaluation (MODEL only)")(
      "tolerance", po::value<double>()->default_value(1e-4),
      "--verify: max |logit difference| allowed")("kv-out", po::value<std::string>(),
                                                  "write the final KV caches here (safetensors)");
  add_lowering_options(args, false);
  add_run_options(args);
  args.positional("program", -1);
  if (auto rc = args.parse(argc, argv)) return *rc;
  if (!args.has("program") || !args.has("prompt-ids")) {
    std::cerr << "amk generate: give a MODEL (or per-position PROGRAMs) and --prompt-ids\n";
    return kUnreadable;
  }
  const auto files = args.get<std::vector<std::string>>("program");
  auto prompt = parse_ids(args.get<std::string>("prompt-ids"));
  const int max_tokens = args.get<int>("max-tokens");
  if (!prompt || max_tokens < 1) {
    std::cerr << "amk generate: --prompt-ids must be non-negative integers separated by commas and "
                 "--max-tokens at least 1\n";
    return kUnreadable;
  }
  const size_t steps = prompt->size() + static_cast<size_t>(max_tokens) - 1;
  std::string err;
  std::optional<LoweringArgs> la;
  if (files.size() == 1) {
    std::string ignored;
    if (lower::load_model(files[0], ignored)) {
      la = resolve_lowering(args, "generate", files[0]);
      if (!la) return kUnreadable;
    }
  }
  if (!la && args.has("verify")) {
    std::cerr << "amk generate: --verify needs a MODEL (the direct evaluation lowers it)\n";
    return kUnreadable;
  }
  if (!la && steps > files.size()) {
    std::cerr << fmt::format(
        "amk generate: {} prompt ids and {} new tokens need {} per-position programs; "
        "{} given\n",
        prompt->size(), max_tokens, steps, files.size());
    return kUnreadable;
  }
  if (la && static_cast<int64_t>(steps) > la->model.max_seq) {
    std::cerr << fmt::format("amk generate: {} steps exceed model {}'s max_seq {}\n", steps,
                             la->model.name, la->model.max_seq);
    return kUnreadable;
  }
  std::unique_ptr<vm::SafeTensors> weights;
  if (args.has("weights") &&
      !(weights = vm::SafeTensors::open(args.get<std::string>("weights"), err))) {
    std::cerr << "amk generate: " << err << "\n";
    return kUnreadable;
  }
  vm::RunOptions ro;
  if (!resolve_run_options(args, "generate", la ? &la->target : nullptr, ro)) return kUnreadable;
  vm::RunOptions ref_ro = ro;
  ref_ro.mode = vm::Mode::Deterministic;
  const bool verify = args.has("verify");
  const double tol = args.get<double>("tolerance");
  const bool bar = isatty(2) && steps > 1;
  vm::TensorStore kv, ref_kv;
  std::vector<int32_t> generated;
  std::vector<float> logits, ref_logits;
  double max_err = 0;
  int32_t token = (*prompt)[0];
  double run_s = 0, ref_s = 0, lower_s = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t s = 0; s < steps; ++s) {
    std::string origin;
    ir::Program prog;
    if (la) {
      lower::LowerOptions opt = la->opt;
      opt.pos = static_cast<int64_t>(s);
      lower::LowerResult lr = lower::lower(la->model, la->target, la->config, opt);
      lower_s += lr.seconds;
      if (!lr.program) {
        std::cerr << "amk generate: " << lr.error << "\n";
        return kUnreadable;
      }
      prog = std::move(*lr.program);
      origin = fmt::format("{} at pos {}", la->model.name, s);
    } else {
      origin = files[s];
      auto p = load(origin, false);
      if (!p) return kUnreadable;
      const auto& meta = p->meta.json();
      if (meta.is_object() && meta.contains("pos") && meta["pos"].is_number_integer() &&
          meta["pos"].get<int64_t>() != static_cast<int64_t>(s)) {
        std::cerr << fmt::format("{}: lowered for position {}, but step {} runs position {}\n",
                                 origin, meta["pos"].get<int64_t>(), s, s);
        return kUnreadable;
      }
      prog = std::move(*p);
    }
    if (auto rc = decode_step(std::move(prog), origin, weights.get(), kv, token,
                              static_cast<int32_t>(s), ro, logits, run_s))
      return *rc;
    if (verify) {
      lower::LowerOptions opt = la->opt;
      opt.pos = static_cast<int64_t>(s);
      opt.reference = true;
      lower::LowerResult lr = lower::lower(la->model, la->target, la->config, opt);
      if (!lr.program) {
        std::cerr << "amk generate: direct evaluation: " << lr.error << "\n";
        return kUnreadable;
      }
      if (auto rc = decode_step(std::move(*lr.program), origin + " (direct)", weights.get(), ref_kv,
                                token, static_cast<int32_t>(s), ref_ro, ref_logits, ref_s))
        return *rc;
      double step_err = logits.size() == ref_logits.size() ? 0.0 : INFINITY;
      for (size_t i = 0; i < logits.size() && i < ref_logits.size(); ++i)
        step_err = std::max(step_err, static_cast<double>(std::fabs(logits[i] - ref_logits[i])));
      max_err = std::max(max_err, step_err);
      if (!(step_err <= tol)) {
        std::cerr << fmt::format(
            "amk generate: --verify: step {} logits differ from the direct "
            "evaluation by {:.3g} (tolerance {:.3g})\n",
            s, step_err, tol);
        return kRejected;
      }
    }
    int64_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i)
      if (logits[i] > logits[static_cast<size_t>(best)]) best = static_cast<int64_t>(i);
    if (s + 1 < prompt->size()) {
      token = (*prompt)[s + 1];
    } else {
      token = static_cast<int32_t>(best);
      generated.push_back(token);
    }
    if (bar)
      std::cerr << fmt::format("\r[{:<30}] {}/{} steps", std::string(30 * (s + 1) / steps, '#'),
                               s + 1, steps);
  }
  if (bar) std::cerr << "\n";
  if (args.has("kv-out")) {
    std::vector<vm::StOut> outs;
    for (const auto& [name, t] : kv.tensors)
      outs.push_back({name, vm::st_of(t.dtype), t.shape, {t.bytes.data(), t.bytes.size()}});
    if (auto we = vm::st_write(args.get<std::string>("kv-out"), outs)) {
      std::cerr << "amk generate: " << *we << "\n";
      return kUnreadable;
    }
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << fmt::format("{}\n", fmt::join(generated, ","));
  std::cout << fmt::format(
      "{} steps, {} new tokens in {:.3f} s ({:.3f} s running): {:.2f} tokens/s\n", steps,
      generated.size(), total, run_s, static_cast<double>(steps) / std::max(run_s, 1e-9));
  if (la)
    std::cout << fmt::format("lowered {} positions for {} in {:.2f} ms\n", steps,
                             la->target.record.name, lower_s * 1e3);
  if (verify)
    std::cout << fmt::format(
        "verified {} steps against the direct evaluation: max |logit "
        "difference| {:.3g} (direct evaluation {:.3f} s)\n",
        steps, max_err, ref_s);
  return kOk;
}

}  // namespace amk::cli
