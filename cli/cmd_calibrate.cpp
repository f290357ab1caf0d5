#include <cmath>
#include <iostream>
#include <span>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "app/calibrate.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/lowering.h"
#include "ir/pyjson.h"
#include "targets/calibrate.h"

namespace amk::cli {

namespace {

// --predict: each measurement next to its prediction under `rt`, and the error.
int print_predictions(std::span<const targets::Measurement> points, const targets::Runtime& rt,
                      bool json) {
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  double sq = 0;
  std::vector<double> measured, predicted;
  if (!json)
    std::cout << fmt::format("{:<40} {:>12} {:>12} {:>8}\n", "measurement", "measured us",
                             "predicted us", "error");
  for (const targets::Measurement& m : points) {
    const double us = targets::predict_us(m, rt);
    const double error = 100.0 * (us / m.measured_us - 1.0);
    sq += std::pow(std::log(us / m.measured_us), 2);
    measured.push_back(m.measured_us);
    predicted.push_back(us);
    all.push_back({{"label", m.label},
                   {"measured_us", m.measured_us},
                   {"predicted_us", us},
                   {"error_percent", error}});
    if (!json)
      std::cout << fmt::format("{:<40} {:>12.1f} {:>12.1f} {:>7.1f}%\n", m.label, m.measured_us, us,
                               error);
  }
  const double rms = std::sqrt(sq / static_cast<double>(points.size()));
  const double rho = targets::rank_correlation(measured, predicted);
  if (json)
    std::cout << ir::dump_text(nlohmann::ordered_json{{"runtime", rt.name},
                                                      {"rms_log_error", rms},
                                                      {"rank_correlation", rho},
                                                      {"points", std::move(all)}},
                               2)
              << "\n";
  else
    std::cout << fmt::format(
        "{}: rms log error {:.3f}, rank correlation {:.3f} over {} measurements\n", rt.name, rms,
        rho, points.size());
  return kOk;
}

// The fit's report on stderr: each point before and after, the constants that moved.
void print_fit(const targets::Calibration& c, const std::string& name) {
  std::cerr << fmt::format("{:<40} {:>12} {:>12} {:>12} {:>8}\n", "measurement", "measured us",
                           "before us", "fitted us", "error");
  for (const targets::PointFit& p : c.points)
    std::cerr << fmt::format(
        "{:<40} {:>12.1f} {:>12.1f} {:>12.1f} {:>7.1f}%\n",
        p.label.size() > 40 ? "..." + p.label.substr(p.label.size() - 37) : p.label, p.measured_us,
        p.before_us, p.after_us, 100.0 * (p.after_us / p.measured_us - 1.0));
  for (const targets::Moved& m : c.moved)
    std::cerr << fmt::format("moved {}: {:.4g} -> {:.4g}\n", m.key, m.before, m.after);
  std::cerr << fmt::format(
      "calibrated {} from {} measurements: rms log error {:.3f} -> {:.3f} ({} evaluations)\n", name,
      c.points.size(), c.rms_before, c.rms_after, c.evaluations);
}

}  // namespace

int cmd_calibrate(int argc, char** argv) {
  Args args(
      "amk calibrate MEASUREMENTS... [--target T] [--runtime R] [--fit K,K...] [--pos P]\n"
      "              [--dtype D] [--quant Q] [--group G] [--batch B] [--json] -o R2.json\n"
      "amk calibrate MEASUREMENTS... [--target T] [--runtime R] --predict [--json]",
      "Fits a runtime profile's constants to measured latencies and writes the fitted profile\n"
      "with its fit report (\"fit\": each point's measured, predicted before and after, which\n"
      "constants moved). MEASUREMENTS are search logs with --measure results, or JSONL files\n"
      "of {\"program\": P | \"model\": M, \"config\": C, \"measured_us\": X | \"trace\": T}\n"
      "(T: a Chrome trace of `amk run --trace`; paths relative to the file; optional \"target\",\n"
      "\"label\", \"pos\", \"dtype\"). The fit starts from --runtime R (default: the target's\n"
      "runtime) and moves the constants --fit names (default: every fit constant that is not\n"
      "0; `amk runtimes --fields` lists them), minimising the mean squared log error with a\n"
      "weak pull back to where each started. --predict fits nothing and prints each measurement\n"
      "next to the runtime's prediction. Exit 0 fitted, 2 bad input.");
  args.add()("measurements", po::value<std::vector<std::string>>(), "measurement files")(
      "fit", po::value<std::string>(), "the constants to fit, comma-separated")(
      "pos", po::value<int64_t>()->default_value(0), "decode position of lowered models")(
      "output,o", po::value<std::string>(), "the fitted runtime profile to write")(
      "json", "print the fit report as one JSON document")(
      "predict", "print the runtime's predictions next to the measurements; fit nothing");
  args.add()("target,t", po::value<std::string>(),
             "the chip the measurements ran on (default: each program's or log's)");
  add_runtime_option(args);
  add_lower_options(args);
  args.positional("measurements", -1);
  args.range("pos", 0, 1 << 24);
  if (auto rc = args.parse(argc, argv)) return *rc;
  const bool json = args.has("json");
  const bool predict_only = args.has("predict");
  if (!args.has("measurements") || args.has("output") == predict_only) {
    std::cerr << "amk calibrate: give MEASUREMENTS and one of -o OUT.json, --predict\n";
    return kUnreadable;
  }
  std::optional<targets::TargetSpec> target;
  if (args.has("target")) {
    auto t = targets::load_target(args.get<std::string>("target"));
    if (!t) return fail(t.diagnostics, "amk calibrate", json);
    target = std::move(*t.value);
  }
  auto runtime = resolve_runtime_option(args);
  if (!runtime) return fail(runtime.diagnostics, "amk calibrate", json);
  ir::Result<lower::LowerOptions> lo = resolve_lower_options(args);
  if (!lo) return fail(lo.diagnostics, "amk calibrate", json);
  app::MeasureDefaults d;
  d.target = target ? &*target : nullptr;
  d.lower = *lo;
  d.lower.pos = args.get<int64_t>("pos");
  d.lower.runtime = runtime->get();  // placements weighed by the runtime measured
  const auto files = args.get<std::vector<std::string>>("measurements");
  auto points = app::read_measurements(files, d);
  if (!points) return fail(points.diagnostics, "amk calibrate", json);
  const targets::Runtime& start = *runtime ? **runtime
                                  : target ? targets::default_runtime(*target)
                                           : targets::default_runtime(points->front().target);
  if (predict_only) return print_predictions(*points, start, json);
  targets::CalibrateOptions o;
  o.origin = fmt::format("{}", fmt::join(files, ", "));
  if (args.has("fit")) {
    std::string list = args.get<std::string>("fit");
    for (size_t at = 0; at <= list.size();) {
      const size_t comma = std::min(list.find(',', at), list.size());
      if (comma > at) o.fields.push_back(list.substr(at, comma - at));
      at = comma + 1;
    }
  }
  auto c = targets::calibrate(*points, start, o);
  if (!c) return fail(c.diagnostics, "amk calibrate", json);
  if (!write_output(args.get<std::string>("output"), targets::write_runtime(c->runtime)))
    return kUnreadable;
  if (json) {
    std::cout << ir::dump_text(c->runtime.fit.json(), 2) << "\n";
    return kOk;
  }
  print_fit(*c, start.name);
  return kOk;
}

}  // namespace amk::cli
