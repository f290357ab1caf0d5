#include "cli/run_options.h"

#include "app/machine.h"

#include <climits>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace amk::cli {
namespace {

// "3=aiv,17=aic" -> {(3, Aiv), (17, Aic)}.
std::optional<std::vector<std::pair<int64_t, vm::CoreType>>> parse_core_types(
    const std::string& s) {
  std::vector<std::pair<int64_t, vm::CoreType>> out;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t end = std::min(s.find(',', at), s.size());
    const std::string item = s.substr(at, end - at);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) return std::nullopt;
    int64_t id = 0;
    for (size_t i = 0; i < eq; ++i) {
      if (item[i] < '0' || item[i] > '9' || id > (int64_t{1} << 40)) return std::nullopt;
      id = id * 10 + (item[i] - '0');
    }
    const std::string type = item.substr(eq + 1);
    if (type == "aic" || type == "AIC")
      out.emplace_back(id, vm::CoreType::Aic);
    else if (type == "aiv" || type == "AIV")
      out.emplace_back(id, vm::CoreType::Aiv);
    else
      return std::nullopt;
    at = end + 1;
  }
  return out;
}

}  // namespace

std::optional<std::vector<int32_t>> parse_token_ids(const std::string& s) {
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

void add_run_options(Args& args) {
  args.add()("workers", po::value<int>()->default_value(0), "OS threads (0: hardware threads)")(
      "mode", po::value<std::string>(),
      "sm (SMs multiplexed on the workers), sm-threads (one OS thread per SM), deterministic, "
      "aicore (AICPU schedulers + AIC/AIV cores), aicore-deterministic; default: aicore on a "
      "target with clusters, else sm")("seed", po::value<int64_t>()->default_value(0),
                                       "interleaving seed of the deterministic modes")(
      "watchdog-ms", po::value<int64_t>()->default_value(10000),
      "abort after this long without progress")(
      "schedulers", po::value<int>()->default_value(0),
      "aicore: AICPU scheduler threads (0: the target's aicpu_threads, else 3)")(
      "core-threads", po::value<int>()->default_value(0),
      "aicore: OS threads running the cores' kernels (0: each scheduler runs its own cores)")(
      "core-type", po::value<std::string>(),
      "aicore: per-task core types, e.g. 3=aiv,17=aic (default: by opcode)");
  args.range("workers", 0, vm::kMaxThreads);
  args.range("seed", 0, kMaxSeed);
  args.range("watchdog-ms", 1, 86400000);
  args.range("schedulers", 0, vm::kMaxThreads);
  args.range("core-threads", 0, vm::kMaxThreads);
}

ir::Status resolve_run_options(const Args& args, const targets::TargetSpec* target,
                               vm::RunOptions& ro) {
  ro.workers = args.get<int>("workers");
  ro.seed = static_cast<uint64_t>(args.get<int64_t>("seed"));
  ro.watchdog_ms = args.get<int64_t>("watchdog-ms");
  ir::Status st =
      app::set_mode(args.has("mode") ? args.get<std::string>("mode") : std::string(), target, ro);
  if (!st) return st;
  if (args.get<int>("schedulers") > 0) ro.aicore.schedulers = args.get<int>("schedulers");
  ro.aicore.core_threads = args.get<int>("core-threads");
  if (args.has("core-type")) {
    auto ov = parse_core_types(args.get<std::string>("core-type"));
    if (!ov) return ir::error("usage.option", "--core-type takes ID=aic|aiv[,ID=aic|aiv...]");
    ro.aicore.overrides = *ov;
  }
  return st;
}

}  // namespace amk::cli
