// A schedule's history in git: every revision of a program (or of a ScheduleConfig lowered for a
// model) proven and scored, so a user sees which commit made a schedule slower or unsafe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/result.h"
#include "lower/model.h"
#include "targets/runtime.h"
#include "targets/target.h"

namespace amk::app {

/// One revision of the file.
struct Revision {
  std::string commit, date, subject;
  bool readable = false;           ///< the revision parsed (a program, or a config that lowered)
  std::string problem;             ///< why not (when !readable)
  bool valid = false;              ///< the validator accepted it
  std::vector<std::string> rules;  ///< the rejection's rule codes
  size_t tasks = 0;
  std::optional<double> predicted_us;  ///< valid revisions with a target
};

/// What to score the revisions with.
struct HistoryOptions {
  int max_count = 20;                           ///< newest revisions to read
  const targets::TargetSpec* target = nullptr;  ///< else each program's own (a built-in name)
  const lower::ModelSpec* model = nullptr;      ///< lowers ScheduleConfig revisions
  const targets::Runtime* runtime = nullptr;    ///< else the target's default
};

/// The revisions of `path` (newest first, following renames) from `git log` in its folder; a
/// `git.failed` error outside a repository or for an untracked file.
ir::Result<std::vector<Revision>> history(const std::string& path, const HistoryOptions& o);

/// Predicted latency over the revisions as an SVG line chart (oldest left; a rejected revision a
/// red point at the axis), one <g class="revision"> per revision.
std::string history_svg(const std::vector<Revision>& revs, const std::string& title);

}  // namespace amk::app
