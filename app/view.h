// Views of a schedule for people and tools: a line-oriented text (git's textconv), a Graphviz DOT
// graph of the task DAG, and an SVG timeline (predicted by the cost model or measured by the VM).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/program.h"
#include "targets/runtime.h"
#include "targets/target.h"
#include "vm/observer.h"

namespace amk::app {

/// A stable view made for `git diff`: a header of counts (and, with `predict_on`, the predicted
/// latency), then one line per task keyed by label (op, SM, params, inputs -> outputs, waits by
/// producer labels), buffers, counters, pages, meta and config knobs. Ids never appear, so a
/// renumbering changes no line.
std::string show_program(const ir::Program& p, const targets::TargetSpec* predict_on,
                         const targets::Runtime* runtime = nullptr);
/// A ScheduleConfig as one line per knob ("tiling.gemv.N_tile = 64"; list entries one per line).
std::string show_config(const ir::ScheduleConfig& c);

/// How much of the DAG a DOT graph folds.
enum class Fold : uint8_t {
  None,   ///< one node per task
  Tiles,  ///< one node per op: the tiles of "L3.q_proj[t0]", "[t1]", ... together
  Layers  ///< one node per layer ("L3", "embed", "lm_head")
};
/// The task DAG as Graphviz DOT (Boost.Graph's write_graphviz): nodes labelled by task label and
/// op, one cluster per layer, edges producer -> waiter labelled by counter and threshold (folded:
/// by how many dependencies they carry).
std::string program_dot(const ir::Program& p, Fold fold);

/// One task on a lane of a timeline.
struct Bar {
  uint32_t task = 0;
  int32_t lane = 0;
  double start_us = 0, end_us = 0;
};
/// What a timeline SVG draws.
struct Timeline {
  std::string title;
  std::vector<std::string> lanes;  ///< one per worker (SM, AIC/AIV core, tile)
  std::vector<Bar> bars;
  std::vector<uint32_t> critical;                     ///< tasks drawn as the critical path
  std::vector<std::pair<std::string, double>> marks;  ///< vertical lines: {name, µs}
};
/// The cost model's prediction of `p` on `t` run by `runtime` (nullptr: the target's): one lane
/// per worker of the target, each task on the worker the runtime runs it on, the critical path,
/// the weight-streaming floor and the makespan. nullopt for a cyclic program.
std::optional<Timeline> predicted_timeline(const ir::Program& p, const targets::TargetSpec& t,
                                           const targets::Runtime* runtime = nullptr);
/// A measured run: the recorder's lanes and slices.
Timeline measured_timeline(const ir::Program& p, const vm::TraceRecorder& r);
/// Text escaped for XML attributes and content (& < > ").
std::string xml_escape(std::string_view s);
/// The timeline as a standalone SVG: one <g class="lane"> per lane, bars coloured by op with a
/// <title> each, the critical path outlined, marks as dashed lines, a time axis and a legend.
std::string timeline_svg(const ir::Program& p, const Timeline& t);

}  // namespace amk::app
