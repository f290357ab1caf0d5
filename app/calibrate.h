// The measurements `amk calibrate` fits a runtime to, read from what users have: a search log
// with --measure results, a JSONL of {program or model + config, measured_us or trace}, each
// program lowered or loaded and paired with the chip it ran on.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ir/result.h"
#include "lower/plan.h"
#include "targets/calibrate.h"
#include "targets/target.h"

namespace amk::app {

/// What a measurement that does not say otherwise was taken on and lowered with.
struct MeasureDefaults {
  const targets::TargetSpec* target = nullptr;  ///< nullptr: the program's or the log's target
  lower::LowerOptions lower;                    ///< position, batch, dtype, quantisation
};

/// The measurements of `files`. A file is a search log (its first line {"search": ...}: the trials
/// with measured_us) or JSONL, one object a line: "program" (a path, relative to the file) or
/// "model" (+ "config", default AMK's default_config), "measured_us" or "trace" (a Chrome trace of
/// `amk run --trace`: the span of its tasks; a list of traces: the fastest), and optionally
/// "target", "label", "pos", "dtype", "amk_compat" (lower as AMK's lower()). Errors name the file,
/// the line and a JSON pointer.
ir::Result<std::vector<targets::Measurement>> read_measurements(std::span<const std::string> files,
                                                                const MeasureDefaults& d);
/// The span of the task events of a Chrome trace (`amk run --trace`), in microseconds.
ir::Result<double> trace_span_us(const std::string& path);

}  // namespace amk::app
