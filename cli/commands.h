// Entry points of the subcommands (argv[0] is the command name).
#pragma once

namespace amk::cli {

/// amk fmt: canonical AMK-byte-identical rewrite.
int cmd_fmt(int argc, char** argv);
/// amk info: counts, edges, weights, critical path.
int cmd_info(int argc, char** argv);
/// amk diff: semantic diff of two programs.
int cmd_diff(int argc, char** argv);
/// amk gen: seeded synthetic programs.
int cmd_gen(int argc, char** argv);
/// amk validate: the static proof.
int cmd_validate(int argc, char** argv);
/// amk simulate: counter and adversarial simulation.
int cmd_simulate(int argc, char** argv);
/// amk run: execute a program on the reference VM.
int cmd_run(int argc, char** argv);
/// amk generate: greedy decode loop over per-position programs.
int cmd_generate(int argc, char** argv);
/// amk show: a line-oriented view for git diff, or the DAG as DOT.
int cmd_show(int argc, char** argv);
/// amk merge: git's three-way merge driver for schedules.
int cmd_merge(int argc, char** argv);
/// amk git-setup: attributes and config for the diff and merge drivers.
int cmd_git_setup(int argc, char** argv);
/// amk log: a schedule's git history, proven and scored per commit.
int cmd_log(int argc, char** argv);
/// amk plot: the predicted timeline as SVG.
int cmd_plot(int argc, char** argv);
/// amk import: another runtime's task graph (MPK, PTO) as an amk program.
int cmd_import(int argc, char** argv);
/// amk export: a program as an MPK or PTO task graph file.
int cmd_export(int argc, char** argv);
/// amk gen-weights: seeded random weights for a program.
int cmd_gen_weights(int argc, char** argv);

/// amk lower: model + target + ScheduleConfig -> validated program.
int cmd_lower(int argc, char** argv);
/// amk search: schedule search with the full proof in the loop.
int cmd_search(int argc, char** argv);
/// amk serve: the JSONL worker.
int cmd_serve(int argc, char** argv);
/// amk mcp: the Model Context Protocol server.
int cmd_mcp(int argc, char** argv);
/// amk targets: the built-in targets, or one target's record.
int cmd_targets(int argc, char** argv);
/// amk runtimes: the built-in runtime profiles, or one profile.
int cmd_runtimes(int argc, char** argv);
/// amk calibrate: fit a runtime profile to measured latencies.
int cmd_calibrate(int argc, char** argv);
/// amk models: the built-in model specs, or one spec.
int cmd_models(int argc, char** argv);

}  // namespace amk::cli
