// Fitting a runtime profile's constants to measured latencies: the constants calibrate may move
// (RuntimeField::fit) are searched in log space (Nelder-Mead) to minimise the mean squared log
// error of the predictions, with a weak pull back to where they started so that a constant the
// measurements cannot see stays put.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ir/program.h"
#include "ir/result.h"
#include "targets/runtime.h"

namespace amk::targets {

/// One measured run: a program, the chip it ran on and its latency.
struct Measurement {
  std::string label;  ///< where it comes from (file:line, model and config)
  ir::Program program;
  ir::Target target;
  double measured_us = 0;
};

/// What calibrate fits.
struct CalibrateOptions {
  std::vector<std::string> fields;  ///< empty: every fit field with a nonzero value
  double prior = 1e-5;              ///< weight of Σ log(value / start)² in the objective
  int max_evaluations = 3000;       ///< objective evaluations (each predicts every point)
  std::string origin;               ///< names the measurements in the report ("runs.jsonl")
};

/// One point before and after the fit.
struct PointFit {
  std::string label;
  double measured_us = 0, before_us = 0, after_us = 0;
};

/// A constant the fit changed.
struct Moved {
  std::string key;
  double before = 0, after = 0;
};

/// The fitted runtime and the fit's report.
struct Calibration {
  Runtime runtime;  ///< the start with the fitted constants, its sources and "fit"
  std::vector<PointFit> points;
  std::vector<Moved> moved;  ///< fitted constants that moved by more than 1%
  double rms_before = 0;     ///< root mean square of log(predicted / measured), start
  double rms_after = 0;      ///< likewise, fitted
  int evaluations = 0;
};

/// The prediction of one measured program under `rt` (the cost model's makespan).
double predict_us(const Measurement& m, const Runtime& rt);
/// Spearman's rank correlation of two equally long series (ties share their mean rank); 0 when
/// either is constant or shorter than 2.
double rank_correlation(std::span<const double> a, std::span<const double> b);
/// Fits `start`'s constants to `points`; `runtime.fit` errors name a field that is not one
/// calibrate moves, an empty or non-positive measurement.
ir::Result<Calibration> calibrate(std::span<const Measurement> points, const Runtime& start,
                                  const CalibrateOptions& o);

}  // namespace amk::targets
