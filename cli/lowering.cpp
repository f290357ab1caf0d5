#include "cli/lowering.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/fileio.h"
#include "ir/pyjson.h"
#include "ir/schema.h"
#include "lower/config.h"

namespace amk::cli {

void add_target_option(Args& args) {
  args.add()("target,t", po::value<std::string>()->default_value("h100"),
             "target name (amk targets) or target .json to lower for, prove and run on");
}

void add_runtime_option(Args& args) {
  args.add()("runtime", po::value<std::string>(),
             "runtime name (amk runtimes) or runtime .json: the executor predictions are for "
             "(default: the target's)");
}

ir::Result<std::shared_ptr<const targets::Runtime>> resolve_runtime_option(const Args& args) {
  if (!args.has("runtime")) return std::shared_ptr<const targets::Runtime>();
  ir::Result<targets::Runtime> r = targets::load_runtime(args.get<std::string>("runtime"));
  if (!r) return std::move(r.diagnostics);
  return std::make_shared<const targets::Runtime>(std::move(*r.value));
}

bool target_given(const Args& args) {
  return args.has("target") && !args.vm()["target"].defaulted();
}

void add_lowering_options(Args& args) {
  add_target_option(args);
  args.add()("config,c", po::value<std::string>(),
             "ScheduleConfig: a .json file, inline JSON ('{\"tiling\": ...}'), or 'auto' (AMK's "
             "config-less point); default: AMK's default_config")(
      "amk-compat", "AMK's lower() byte for byte (only tiling and n_partitions are consumed)");
  add_lower_options(args);
}

void add_lower_options(Args& args) {
  args.add()("dtype", po::value<std::string>()->default_value("F32"), "F32, BF16 or F16")(
      "quant", po::value<std::string>()->default_value("none"),
      "weight quantisation: none, int8, int4")("group", po::value<int64_t>()->default_value(128),
                                               "columns per quantisation scale")(
      "batch,B", po::value<int64_t>()->default_value(1), "batch (B > 1 emits GEMM tiles)");
  args.range("group", 1, 1 << 20);
  args.range("batch", 1, lower::kMaxBatch);
}

ir::Result<lower::LowerOptions> resolve_lower_options(const Args& args) {
  lower::LowerOptions o;
  ir::Result<ir::DType> d = lower::lower_dtype_named("--dtype", args.get<std::string>("dtype"));
  if (!d) return std::move(d.diagnostics);
  o.dtype = *d;
  ir::Result<lower::Quant> quant = lower::quant_named("--quant", args.get<std::string>("quant"));
  if (!quant) return std::move(quant.diagnostics);
  o.quant = *quant;
  o.quant_group = args.get<int64_t>("group");
  o.batch = args.get<int64_t>("batch");
  return o;
}

ir::Result<LoweringArgs> resolve_lowering(const Args& args, lower::ModelSpec model) {
  LoweringArgs r;
  ir::Diagnostics warnings;
  r.model = std::move(model);
  ir::Result<targets::TargetSpec> t = targets::load_target(args.get<std::string>("target"));
  if (!t) return std::move(t.diagnostics);
  r.target = std::move(*t.value);
  r.config = lower::default_config();
  if (args.has("config")) {
    const auto arg = args.get<std::string>("config");
    auto c = lower::resolve_config(arg, "--config");
    if (!c) return std::move(c.diagnostics);
    r.config = std::move(*c.value);
    r.config_origin = lower::config_origin(arg, "--config");
    warnings = std::move(c.diagnostics);
  }
  ir::Result<lower::LowerOptions> lo = resolve_lower_options(args);
  if (!lo) return std::move(lo.diagnostics);
  r.opt = std::move(*lo.value);
  r.opt.amk_compat = args.has("amk-compat");
  ir::Result<std::shared_ptr<const targets::Runtime>> rt = resolve_runtime_option(args);
  if (!rt) return std::move(rt.diagnostics);
  r.runtime = std::move(*rt.value);
  r.opt.runtime = r.runtime.get();
  if (r.config && args.has("config")) {  // options that would silently do less than it says
    auto note = [&](std::string msg) {
      ir::Diagnostic n = ir::warning("config.note", std::move(msg));
      n.file = r.config_origin;
      warnings.push_back(std::move(n));
    };
    const ir::ScheduleConfig dflt = ir::ScheduleConfig::defaults();
    const ir::ScheduleConfig& c = *r.config;
    auto differs = [](const ir::JsonValue& a, const ir::JsonValue& b) {
      return ir::dump_text(a.json()) != ir::dump_text(b.json());
    };
    if (r.opt.amk_compat) {
      std::vector<std::string> ignored;
      for (const ir::Field<ir::ScheduleConfig>& f : ir::config_fields()) {
        const auto m = std::get<ir::JsonValue ir::ScheduleConfig::*>(f.member);
        if (m != &ir::ScheduleConfig::tiling && differs(c.*m, dflt.*m))
          ignored.emplace_back(f.name);
      }
      if (!ignored.empty())
        note(fmt::format("--amk-compat consumes only the tiling (as AMK's lower()); ignored: {}",
                         fmt::join(ignored, ", ")));
    } else if (const auto& tl = c.tiling.json(); !tl.is_object() || tl.empty()) {
      note(
          "the config sets no tiling: every op is tiled at AMK's auto point (by base width), "
          "not default_config's N_tile 64 and kv_block 128; a field a config leaves out takes "
          "ScheduleConfig's default");
    }
  }
  ir::Result<LoweringArgs> out(std::move(r));
  out.diagnostics = std::move(warnings);
  return out;
}

void name_config(ir::Diagnostics& d, const LoweringArgs& la) {
  if (la.config_origin.empty()) return;
  for (ir::Diagnostic& x : d)
    if ((x.code.starts_with("config.") || x.code == "runtime.limit") && x.file.empty())
      x.file = la.config_origin;  // their pointers are the config's
}

}  // namespace amk::cli
