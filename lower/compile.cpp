#include "lower/compile.h"

#include <fmt/format.h>

namespace amk::lower {

ir::Result<Compiled> compile(const ModelSpec& m, const targets::TargetSpec& t,
                             const std::optional<ir::ScheduleConfig>& cfg, const LowerOptions& opt,
                             validate::Validator* v, std::vector<std::string>* log_out) {
  LowerResult lr = lower(m, t, cfg, opt);
  if (log_out) *log_out = lr.log;
  if (!lr) return std::move(lr.diagnostics);
  validate::Result verdict = v ? v->validate(*lr) : validate::validate(*lr);
  if (!verdict.ok) {
    ir::Diagnostics d{ir::error(
        "lower.rejected",
        fmt::format("the lowering of {} for {} does not validate ({} error(s)); nothing is written",
                    m.name, t.record.name, verdict.errors.size()))};
    ir::append(d, std::move(verdict.errors));
    return d;
  }
  Compiled c;
  const targets::Runtime& runtime = opt.runtime ? *opt.runtime : targets::default_runtime(t);
  c.cost = targets::estimate(*lr, t.record, runtime);
  ir::Diagnostics warnings =
      lr->config ? targets::runtime_limits(runtime, *lr->config, &*lr.value) : ir::Diagnostics{};
  c.program = std::move(*lr.value);
  c.verdict = std::move(verdict);
  c.log = std::move(lr.log);
  c.lower_s = lr.seconds;
  ir::Result<Compiled> out(std::move(c));
  out.diagnostics = std::move(warnings);
  return out;
}

}  // namespace amk::lower
