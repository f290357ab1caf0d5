#include "cli/commands.h"

#include "cli/cli.h"

namespace amk::cli {

std::span<const Command> commands() {
  static const Command kCommands[] = {
      {"fmt", "rewrite programs in AMK's canonical byte format", cmd_fmt},
      {"info", "counts, edges, weight MB and critical path of a program", cmd_info},
      {"validate", "prove programs deadlock- and race-free (AMK's rules and more)", cmd_validate},
      {"import", "read an MPK task_graph.json or PTO deps.json as an amk program", cmd_import},
      {"export", "write a program as an MPK task_graph.json or PTO deps.json", cmd_export},
      {"simulate", "counter simulation and seeded adversarial interleavings", cmd_simulate},
      {"lower", "lower a model + ScheduleConfig into a validated program for a target", cmd_lower},
      {"search", "search ScheduleConfigs with the full proof in the loop", cmd_search},
      {"serve", "a JSONL worker: validate, lower, cost, search_eval, info, diff, search", cmd_serve,
       false},
      {"mcp", "a Model Context Protocol server (stdio) exposing amk's operations as tools", cmd_mcp,
       false},
      {"targets", "list the built-in targets (GPUs, Ascend, TX8) or print one", cmd_targets},
      {"runtimes", "list the built-in runtime profiles (executors' costs) or print one",
       cmd_runtimes},
      {"calibrate", "fit a runtime profile's constants to measured latencies", cmd_calibrate},
      {"models", "list the built-in model specs or print one (also HF config.json)", cmd_models},
      {"run", "execute a program on the reference VM with real numerics", cmd_run},
      {"generate", "greedy decode loop on the reference VM (KV caches kept across steps)",
       cmd_generate},
      {"gen-weights", "seeded random weights for a program's WEIGHT/CONST buffers",
       cmd_gen_weights},
      {"diff", "semantic diff of two programs", cmd_diff},
      {"show", "a line-oriented view for git diff, or the task DAG as Graphviz DOT", cmd_show},
      {"plot", "the cost model's predicted timeline as SVG (one lane per worker)", cmd_plot},
      {"merge", "three-way merge of schedules (git's merge driver; never writes an unsafe one)",
       cmd_merge},
      {"log", "a schedule's git history: verdict and predicted latency per commit", cmd_log},
      {"git-setup", "set git up: textconv, external diff and merge driver for schedules",
       cmd_git_setup},
      {"gen", "generate a synthetic program (llama, mesh, chain, fan)", cmd_gen},
  };
  return kCommands;
}

}  // namespace amk::cli
