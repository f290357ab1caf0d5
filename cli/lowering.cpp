#include "cli/lowering.h"

#include <iostream>

#include <fmt/format.h>

#include "ir/fileio.h"
#include "lower/config.h"

namespace amk::cli {

void add_lowering_options(Args& args, bool need_target) {
  args.add()("target,t",
             need_target ? po::value<std::string>()->required()
                         : po::value<std::string>()->default_value("h100"),
             "target name (amk targets) or target .json")(
      "config,c", po::value<std::string>(),
      "ScheduleConfig .json (default: AMK's default_config; 'auto' = AMK's config-less point)")(
      "dtype", po::value<std::string>()->default_value("F32"), "F32, BF16 or F16")(
      "quant", po::value<std::string>()->default_value("none"),
      "weight quantisation: none, int8, int4")("group", po::value<int64_t>()->default_value(128),
                                               "columns per quantisation scale")(
      "batch,B", po::value<int64_t>()->default_value(1), "batch (B > 1 emits GEMM tiles)")(
      "amk-compat", "AMK's lower() byte for byte (only tiling and n_partitions are consumed)");
}

std::optional<targets::TargetSpec> resolve_target(std::string_view cmd, const std::string& name) {
  std::string err;
  auto t = targets::load_target(name, err);
  if (!t) std::cerr << fmt::format("amk {}: {}\n", cmd, err);
  return t;
}

std::optional<LoweringArgs> resolve_lowering(const Args& args, std::string_view cmd,
                                             const std::string& model_arg) {
  LoweringArgs r;
  std::string err;
  auto m = lower::load_model(model_arg, err);
  if (!m) {
    std::cerr << fmt::format("amk {}: {}\n", cmd, err);
    return std::nullopt;
  }
  r.model = std::move(*m);
  auto t = resolve_target(cmd, args.get<std::string>("target"));
  if (!t) return std::nullopt;
  r.target = std::move(*t);
  r.config = lower::default_config();
  if (args.has("config")) {
    const auto path = args.get<std::string>("config");
    if (path == "auto") {
      r.config.reset();
    } else {
      std::string text;
      if (auto e = ir::read_file(path, text)) {
        std::cerr << fmt::format("amk {}: {}\n", cmd, *e);
        return std::nullopt;
      }
      auto c = lower::parse_config(text, path, err);
      if (!c) {
        std::cerr << fmt::format("amk {}: {}\n", cmd, err);
        return std::nullopt;
      }
      r.config = std::move(*c);
    }
  }
  const auto dt = args.get<std::string>("dtype");
  auto d = ir::parse_dtype(dt);
  if (!d || (*d != ir::DType::F32 && *d != ir::DType::BF16 && *d != ir::DType::F16)) {
    std::cerr << fmt::format("amk {}: --dtype {}: use F32, BF16 or F16\n", cmd, dt);
    return std::nullopt;
  }
  r.opt.dtype = *d;
  const auto q = args.get<std::string>("quant");
  if (q == "int8") {
    r.opt.quant = lower::Quant::Int8;
  } else if (q == "int4") {
    r.opt.quant = lower::Quant::Int4;
  } else if (q != "none") {
    std::cerr << fmt::format("amk {}: --quant {}: use none, int8 or int4\n", cmd, q);
    return std::nullopt;
  }
  r.opt.quant_group = args.get<int64_t>("group");
  r.opt.batch = args.get<int64_t>("batch");
  r.opt.amk_compat = args.has("amk-compat");
  return r;
}

}  // namespace amk::cli
