#include "app/history.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>

#include "app/command.h"
#include "app/machine.h"
#include "app/view.h"
#include "ir/json_io.h"
#include "lower/compile.h"
#include "lower/config.h"
#include "targets/cost.h"
#include "validate/validate.h"

namespace amk::app {
namespace {

// Scores one revision's text.
void score(Revision& rev, const std::string& text, const HistoryOptions& o) {
  std::optional<ir::Program> prog;
  if (ir::looks_like_program(text)) {
    ir::Result<ir::Program> p = ir::parse_program(text);
    if (!p) {
      rev.problem = p.diagnostics.empty() ? "unreadable" : p.diagnostics[0].message;
      return;
    }
    prog = std::move(*p);
  } else {
    ir::Result<ir::ScheduleConfig> c = lower::parse_config(text, "revision");
    if (!c) {
      rev.problem = c.diagnostics.empty() ? "unreadable" : c.diagnostics[0].message;
      return;
    }
    if (!o.model || !o.target) {
      rev.problem = "a ScheduleConfig: give --model (and --target) to lower it";
      return;
    }
    lower::LowerOptions opt;
    opt.runtime = o.runtime;
    ir::Result<lower::Compiled> lowered = lower::compile(*o.model, *o.target, *c, opt);
    if (!lowered) {
      rev.readable = true;
      for (const ir::Diagnostic& d : lowered.diagnostics)
        if (d.severity == ir::Severity::Error) rev.rules.push_back(d.code);
      rev.problem = lowered.diagnostics.empty() ? "does not lower" : lowered.diagnostics[0].message;
      return;
    }
    prog = std::move(lowered->program);
  }
  rev.readable = true;
  rev.tasks = prog->tasks.size();
  const validate::Result v = validate::validate(*prog);
  rev.valid = v.ok;
  for (const ir::Diagnostic& d : v.errors)
    if (std::find(rev.rules.begin(), rev.rules.end(), d.code) == rev.rules.end())
      rev.rules.push_back(d.code);
  std::optional<targets::TargetSpec> own;
  const targets::TargetSpec* t = o.target;
  if (!t) {
    own = builtin_target_of(*prog);
    if (own) t = &*own;
  }
  if (v.ok && t)
    rev.predicted_us =
        targets::estimate(*prog, t->record, o.runtime ? *o.runtime : targets::default_runtime(*t))
            .makespan_us;
}

}  // namespace

ir::Result<std::vector<Revision>> history(const std::string& path, const HistoryOptions& o) {
  const std::filesystem::path p(path);
  const std::string dir = p.parent_path().empty() ? "." : p.parent_path().string();
  const std::string name = p.filename().string();
  // One call: each commit's header, then the file's path at that commit (renames followed).
  ir::Result<std::string> log =
      run_git(dir, fmt::format("log --follow -n {} --date=short --name-only "
                               "--format=%x00%H%x09%ad%x09%s -- {}",
                               o.max_count, shell_quote(name)));
  if (!log) return log.diagnostics;
  ir::Result<std::string> top = run_git(dir, "rev-parse --show-toplevel");
  if (!top) return top.diagnostics;
  while (!top->empty() && top->back() == '\n') top->pop_back();
  std::vector<Revision> revs;
  std::istringstream chunks(*log);
  for (std::string chunk; std::getline(chunks, chunk, '\0');) {
    std::istringstream lines(chunk);
    std::string head, at;
    if (!std::getline(lines, head) || head.empty()) continue;
    for (std::string l; std::getline(lines, l);)
      if (!l.empty()) at = l;
    Revision r;
    const size_t a = head.find('\t'), b = head.find('\t', a + 1);
    r.commit = head.substr(0, a);
    r.date = head.substr(a + 1, b - a - 1);
    r.subject = b == std::string::npos ? "" : head.substr(b + 1);
    ir::Result<std::string> text =
        run_git(*top, fmt::format("show {}:{}", r.commit, shell_quote(at)));
    if (!text || at.empty()) {
      r.problem = "not in this commit (deleted)";
    } else {
      score(r, *text, o);
    }
    revs.push_back(std::move(r));
  }
  if (revs.empty())
    return ir::error("git.failed", fmt::format("{}: no commit touches it (is it tracked?)", path));
  return revs;
}

std::string history_svg(const std::vector<Revision>& revs, const std::string& raw_title) {
  const std::string title = xml_escape(raw_title);
  constexpr double kW = 900, kH = 360, kL = 70, kR = 20, kT = 40, kB = 90;
  double hi = 0;
  for (const Revision& r : revs)
    if (r.predicted_us) hi = std::max(hi, *r.predicted_us);
  hi = hi > 0 ? hi * 1.1 : 1;
  const size_t n = revs.size();
  auto x_of = [&](size_t i) {  // oldest on the left
    return n < 2
               ? (kL + kW - kR) / 2
               : kL + (kW - kL - kR) * static_cast<double>(n - 1 - i) / static_cast<double>(n - 1);
  };
  auto y_of = [&](double us) { return kT + (kH - kT - kB) * (1 - us / hi); };
  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"10\">\n<rect "
      "width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{}\" y=\"20\" "
      "font-size=\"13\">{}</text>\n",
      kW, kH, kL, title);
  const double base = kH - kB;
  out += fmt::format(
      "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/><line x1=\"{0}\" "
      "y1=\"{3}\" x2=\"{0}\" y2=\"{1}\" stroke=\"black\"/>\n<text x=\"{4}\" y=\"{5:.1f}\" "
      "text-anchor=\"end\">{6:.1f} us</text><text x=\"{4}\" y=\"{1}\" "
      "text-anchor=\"end\">0</text>\n",
      kL, base, kW - kR, kT, kL - 4, y_of(hi / 1.1) + 3, hi / 1.1);
  std::string points;
  for (size_t i = n; i-- > 0;)
    if (revs[i].predicted_us)
      points += fmt::format("{:.1f},{:.1f} ", x_of(i), y_of(*revs[i].predicted_us));
  if (!points.empty())
    out += fmt::format(
        "<polyline points=\"{}\" fill=\"none\" stroke=\"#4e79a7\" "
        "stroke-width=\"2\"/>\n",
        points);
  for (size_t i = 0; i < n; ++i) {
    const Revision& r = revs[i];
    const double x = x_of(i);
    const bool bad = r.readable && !r.valid;
    const double y = r.predicted_us ? y_of(*r.predicted_us) : base - 6;
    out += fmt::format(
        "<g class=\"revision\"><circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"><title>{} "
        "{}: {}</title></circle><text transform=\"translate({:.1f},{:.1f}) rotate(45)\">{}</text>"
        "</g>\n",
        x, y,
        bad              ? "#d00000"
        : r.predicted_us ? "#4e79a7"
                         : "#999999",
        r.commit.substr(0, 8), r.date,
        bad              ? "REJECTED"
        : r.predicted_us ? fmt::format("{:.1f} us", *r.predicted_us)
                         : r.problem,
        x, base + 12, r.commit.substr(0, 8));
  }
  return out + "</svg>\n";
}

}  // namespace amk::app
