#include "app/machine.h"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

namespace amk::app {

std::optional<targets::TargetSpec> builtin_target_of(const ir::Program& p) {
  if (!p.target) return std::nullopt;
  const auto names = targets::builtin_target_names();
  if (std::find(names.begin(), names.end(), p.target->name) == names.end()) return std::nullopt;
  ir::Result<targets::TargetSpec> t = targets::load_target(p.target->name);
  if (!t) return std::nullopt;
  return std::move(t.value);
}

ir::Status set_mode(std::string_view mode, const targets::TargetSpec* t, vm::RunOptions& ro) {
  const bool clustered = t && t->clusters > 0;
  if (mode.empty()) mode = clustered ? "aicore" : "sm";
  if (mode == "sm") {
    ro.mode = vm::Mode::Multiplexed;
  } else if (mode == "sm-threads") {
    ro.mode = vm::Mode::ThreadPerSm;
  } else if (mode == "deterministic") {
    ro.mode = vm::Mode::Deterministic;
  } else if (mode == "aicore" || mode == "aicore-deterministic") {
    ro.mode = vm::Mode::Aicore;
    ro.aicore.deterministic = mode == "aicore-deterministic";
    if (clustered) {
      ro.aicore.clusters = t->clusters;
      ro.aicore.aic_per_cluster = t->cluster_aic;
      ro.aicore.aiv_per_cluster = t->cluster_aiv;
      ro.aicore.schedulers = static_cast<int>(t->aicpu_threads);
      if (!t->aic_ops.empty()) ro.aicore.aic_ops = t->aic_ops;  // the core type of each opcode
    } else {
      return ir::warning("usage.note",
                         fmt::format("--mode {}: {} has no AICore clusters; running a2a3's "
                                     "topology (24 clusters of 1 AIC + 2 AIV)",
                                     mode, t ? t->record.name : std::string("the program")));
    }
  } else {
    return ir::error("usage.option", fmt::format("--mode {}: use {}", mode, kModes));
  }
  return {};
}

int worker_threads(int workers) {
  return workers > 0 ? workers
                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

vm::LoadOptions load_options(int workers) {
  vm::LoadOptions lo;
  lo.default_sms = worker_threads(workers);
  return lo;
}

}  // namespace amk::app
