#include <unistd.h>

#include <chrono>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/commands.h"
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

}  // namespace

int cmd_generate(int argc, char** argv) {
  Args args(
      "amk generate PROGRAM... --weights W --prompt-ids 1,2,3 --max-tokens N [--workers N] "
      "[--kv-out F]",
      "Greedy decode loop on the reference VM. Until `amk lower` exists, give the lowered\n"
      "per-position programs in order (position 0, 1, ...): step s feeds token s of the prompt "
      "(then\n"
      "the previous argmax) at position s. KV caches stay in the VM across steps; every program "
      "is\n"
      "validated before it runs. Prints the generated ids and a summary line (tokens/s).\n"
      "Exit 0 ok, 1 a program is rejected, 2 bad input, 3 deadlock or watchdog.");
  args.add()("program", po::value<std::vector<std::string>>(), "per-position programs")(
      "weights", po::value<std::string>(), "safetensors with the WEIGHT/CONST tensors")(
      "prompt-ids", po::value<std::string>(), "comma-separated prompt token ids")(
      "max-tokens", po::value<int>()->default_value(1), "tokens to generate")(
      "workers", po::value<int>()->default_value(0), "OS threads (0: hardware threads)")(
      "watchdog-ms", po::value<int64_t>()->default_value(10000),
      "abort after this long without progress")("kv-out", po::value<std::string>(),
                                                "write the final KV caches here (safetensors)");
  args.positional("program", -1);
  if (auto rc = args.parse(argc, argv)) return *rc;
  if (!args.has("program") || !args.has("prompt-ids")) {
    std::cerr << "amk generate: give the per-position PROGRAMs and --prompt-ids\n";
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
  if (steps > files.size()) {
    std::cerr << fmt::format(
        "amk generate: {} prompt ids and {} new tokens need {} per-position programs; "
        "{} given\n",
        prompt->size(), max_tokens, steps, files.size());
    return kUnreadable;
  }
  std::string err;
  std::unique_ptr<vm::SafeTensors> weights;
  if (args.has("weights") &&
      !(weights = vm::SafeTensors::open(args.get<std::string>("weights"), err))) {
    std::cerr << "amk generate: " << err << "\n";
    return kUnreadable;
  }
  vm::RunOptions ro;
  ro.workers = args.get<int>("workers");
  ro.watchdog_ms = args.get<int64_t>("watchdog-ms");
  const bool bar = isatty(2) && steps > 1;
  vm::TensorStore kv;
  std::vector<int32_t> generated;
  int32_t token = (*prompt)[0];
  double run_s = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t s = 0; s < steps; ++s) {
    const std::string& f = files[s];
    auto prog = load(f, false);
    if (!prog) return kUnreadable;
    const auto& meta = prog->meta.json();
    if (meta.is_object() && meta.contains("pos") && meta["pos"].is_number_integer() &&
        meta["pos"].get<int64_t>() != static_cast<int64_t>(s)) {
      std::cerr << fmt::format("{}: lowered for position {}, but step {} runs position {}\n", f,
                               meta["pos"].get<int64_t>(), s, s);
      return kUnreadable;
    }
    vm::LoadOptions lo;
    lo.default_sms = ro.workers > 0 ? ro.workers : 1;
    auto m = vm::Vm::load(std::move(*prog), lo, err);
    if (!m) {
      std::cerr << f << ": " << err << "\n";
      return err.starts_with("refusing") ? kRejected : kUnreadable;
    }
    std::optional<std::string> e;
    if (weights) e = m->bind_weights(*weights);
    if (!e)
      if (auto fe = m->set_decode_inputs({&token, 1}, static_cast<int32_t>(s)))
        e = fmt::format("{}: {}", f, *fe);
    if (!e) e = m->bind_kv(kv);
    if (e) {
      std::cerr << "amk generate: " << *e << "\n";
      return kUnreadable;
    }
    vm::RunResult r = m->run(ro);
    run_s += r.wall_s;
    if (r.status == vm::RunResult::Status::Stuck) {
      std::cerr << f << ": " << vm::stuck_report(m->program(), r);
      return kDeadlock;
    }
    if (!r.ok()) {
      std::cerr << f << ": " << r.error << "\n";
      return kUnreadable;
    }
    const ir::Buffer* logits = nullptr;
    int64_t id = 0;
    for (const auto& b : m->program().buffers) {
      if (b.name == "logits" && b.kind == ir::BufferKind::IO_OUTPUT && b.dtype == ir::DType::F32) {
        logits = &b;
        break;
      }
      ++id;
    }
    if (!logits || logits->shape.empty()) {
      std::cerr << f << ": has no F32 IO_OUTPUT buffer 'logits'\n";
      return kUnreadable;
    }
    const int64_t vocab = logits->shape.back();
    const float* row = static_cast<const float*>(m->data(id)) + (logits->numel() - vocab);
    int64_t best = 0;
    for (int64_t i = 1; i < vocab; ++i)
      if (row[i] > row[best]) best = i;  // first index on ties, like AMK's SAMPLE_ARGMAX
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
  return kOk;
}

}  // namespace amk::cli
