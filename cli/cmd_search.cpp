#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/command.h"
#include "app/search_session.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/lowering.h"
#include "ir/fileio.h"
#include "ir/json_io.h"
#include "ir/pyjson.h"
#include "lower/config.h"

namespace amk::cli {
namespace {

using ojson = nlohmann::ordered_json;

// A file the log is appended to, one flushed line per trial.
struct LogFile {
  std::FILE* f = nullptr;
  ~LogFile() {
    if (f) std::fclose(f);
  }
  bool write(const std::string& line) {
    if (!f) return true;
    return std::fputs(line.c_str(), f) >= 0 && std::fputc('\n', f) != EOF && std::fflush(f) == 0;
  }
};

// The options of `amk search`, with its help.
Args search_args() {
  Args args(
      "amk search MODEL [--target T] [--runtime R] [--budget N | --time SECONDS] [--seed S]\n"
      "           [--jobs J]\n"
      "           [--algo descent|amk] [--min-batch N] [--space F] [--start C]\n"
      "           [--objective predicted|amk-formula] [--log trials.jsonl]\n"
      "           [--resume trials.jsonl] [--tsv results.tsv] [-o best-config.json]\n"
      "           [--program best-program.json] [--measure CMD --top-k K [--measure-timeout S]]\n"
      "           [--json]",
      "Searches ScheduleConfigs of MODEL for target T with the full proof in the loop: every\n"
      "candidate is lowered, proven by the validator (every rule, at any size) and scored by the\n"
      "cost model; a config that fails to lower or a program the validator rejects is a logged\n"
      "rejection with its reason. The space is data (schedules/space.json, or --space F).\n"
      "--algo descent (the default) descends over every one-knob neighbour of the current point\n"
      "(trying the knobs that improved it alone together), then mixes the best points and\n"
      "perturbs the incumbent; --algo amk is AMK's search(): a 0.35\n"
      "share of random configs, then one-knob mutations kept iff strictly better. Duplicates cost\n"
      "nothing. The same seed gives the same trials and the same best for any --jobs.\n"
      "--min-batch N (descent) proposes at least N new configs at a time, adding the neighbours\n"
      "of the next best points to the current one's: fewer, wider rounds keep more workers busy\n"
      "(many --jobs, a cluster); the trials depend on N, not on the workers.\n"
      "--measure CMD runs `CMD PROGRAM.json` (or CMD with {} replaced by the path) for the "
      "--top-k\n"
      "best predicted configs and reads a latency in µs (the last number it prints); the ranking\n"
      "then uses measurements; a failing or hanging command falls back to the prediction.\n"
      "The best config is never predicted worse than the start, and is lowered and validated\n"
      "again before it is written. Exit 0 with a best config, 1 if no candidate was valid, 2 bad\n"
      "input.");
  args.add()("model", po::value<std::string>(), "model name or file")(
      "budget,n", po::value<int64_t>()->default_value(200), "candidates to evaluate")(
      "time", po::value<double>(), "stop proposing after this many seconds")(
      "seed", po::value<int64_t>()->default_value(0), "random seed")(
      "jobs,j", po::value<int>()->default_value(1), "evaluator threads")(
      "algo", po::value<std::string>()->default_value("descent"), "descent or amk")(
      "min-batch", po::value<int64_t>()->default_value(0),
      "descent: at least this many new configs per round (0: one neighbourhood)")(
      "space", po::value<std::string>(), "search-space file (default: schedules/space.json)")(
      "start", po::value<std::string>(),
      "start ScheduleConfig (file or inline JSON; default: AMK's default_config)")(
      "objective", po::value<std::string>()->default_value("predicted"),
      "predicted (amk's cost model) or amk-formula")(
      "log", po::value<std::string>(), "append one JSON line per trial here (flushed)")(
      "resume", po::value<std::string>(), "replay this log and continue where it stopped")(
      "tsv", po::value<std::string>(), "write AMK's results.tsv here")(
      "output,o", po::value<std::string>(), "write the best ScheduleConfig here")(
      "program", po::value<std::string>(), "write the best program here")(
      "measure", po::value<std::string>(), "command measuring a program's latency in µs")(
      "top-k", po::value<int>()->default_value(3), "--measure: candidates to measure")(
      "measure-timeout", po::value<double>()->default_value(60), "--measure: seconds per run")(
      "pos", po::value<int64_t>()->default_value(0), "decode position (kv_len = pos + 1)")(
      "json", "print one JSON document");
  add_target_option(args);
  add_runtime_option(args);
  add_lower_options(args);
  args.positional("model", 1);
  args.range("budget", 1, search::kMaxBudget);
  args.range("time", 1e-3, 1e7);
  args.range("seed", 0, kMaxSeed);
  args.range("jobs", 1, search::kMaxJobs);
  args.range("min-batch", 0, search::kMaxBudget);
  args.range("top-k", 1, 1e4);
  args.range("measure-timeout", 1e-3, 1e6);
  args.range("pos", 0, 1 << 24);
  return args;
}

// The search `args` ask for (model, target, space, start, options, --measure); an exit code
// when they are wrong. --measure writes its programs under `measure_dir`.
std::optional<int> search_request(const Args& args, app::SearchRequest& req,
                                  std::filesystem::path& measure_dir) {
  req.model = args.get<std::string>("model");
  req.target = args.get<std::string>("target");
  if (args.has("space")) req.space = args.get<std::string>("space");
  if (args.has("resume")) req.resume = args.get<std::string>("resume");
  if (args.has("runtime")) req.runtime = args.get<std::string>("runtime");
  if (args.has("start")) {
    auto c = lower::resolve_config(args.get<std::string>("start"), "--start");
    if (!c) return fail(c.diagnostics, "amk search");
    if (!*c.value) {
      std::cerr << "amk search: --start needs a ScheduleConfig, not 'auto'\n";
      return kUnreadable;
    }
    req.start = std::move(**c.value);
    req.start_origin = lower::config_origin(args.get<std::string>("start"), "--start");
  }
  search::SearchOptions& o = req.options;
  o.budget = args.get<int64_t>("budget");
  o.seed = static_cast<uint64_t>(args.get<int64_t>("seed"));
  o.jobs = args.get<int>("jobs");
  if (args.has("time")) o.deadline_s = args.get<double>("time");
  ir::Result<search::Algorithm> algorithm =
      search::algorithm_named("--algo", args.get<std::string>("algo"));
  if (!algorithm) return fail(algorithm.diagnostics, "amk search");
  o.algorithm = *algorithm;
  o.min_batch = args.get<int64_t>("min-batch");
  ir::Result<search::Objective> obj =
      search::objective_named("--objective", args.get<std::string>("objective"));
  if (!obj) return fail(obj.diagnostics, "amk search");
  o.objective = *obj;
  ir::Result<lower::LowerOptions> lo = resolve_lower_options(args);
  if (!lo) return fail(lo.diagnostics, "amk search");
  o.lower = std::move(*lo.value);
  o.lower.pos = args.get<int64_t>("pos");
  if (args.has("measure")) {
    const auto cmd = args.get<std::string>("measure");
    const double timeout = args.get<double>("measure-timeout");
    o.measure_top_k = args.get<int>("top-k");
    measure_dir = std::filesystem::temp_directory_path() /
                  fmt::format("amk-measure-{}", static_cast<long>(::getpid()));
    std::filesystem::create_directories(measure_dir);
    o.measure = [cmd, timeout, measure_dir](const ir::Program& p,
                                            const search::Trial& t) -> ir::Result<double> {
      const std::string path = (measure_dir / fmt::format("trial{}.amk.json", t.index)).string();
      if (ir::Status st = ir::write_file_atomic(path, ir::write_program(p)); !st)
        return std::move(st.diagnostics);
      return app::measure_with_command(cmd, path, timeout);
    };
  }
  return std::nullopt;
}

// Opens --log for appending: the header first, or, when it is the --resume log, in place past
// a line a crash may have cut off. An exit code when it cannot.
std::optional<int> open_log(const Args& args, app::SearchSession& s, LogFile& log, bool& same_log) {
  std::error_code ec;
  same_log = args.has("log") && args.has("resume") &&
             std::filesystem::equivalent(args.get<std::string>("log"),
                                         args.get<std::string>("resume"), ec);
  if (args.has("log")) {
    const auto path = args.get<std::string>("log");
    if (same_log) {  // continue the log in place, past a line a crash may have cut off
      std::filesystem::resize_file(path, s.resume_complete(), ec);
      if (ec) {
        std::cerr << fmt::format("amk search: cannot truncate --log {}: {}\n", path, ec.message());
        return kUnreadable;
      }
    }
    log.f = std::fopen(path.c_str(), "a");
    if (!log.f) {
      std::cerr << fmt::format("amk search: cannot open --log {}\n", path);
      return kUnreadable;
    }
    if (!same_log) log.write(search::header_json(s.header()));
  }
  return std::nullopt;
}

// The human summary line of a finished search.
void print_summary(const Args& args, const app::SearchSession& s, const search::SearchResult& res) {
  const search::Trial& b = res.trials[static_cast<size_t>(res.best)];
  const search::Trial& start = res.trials.front();
  const double rate = static_cast<double>(res.evaluations) / std::max(res.wall_s, 1e-9);
  std::cout << fmt::format(
      "searched {} for {} ({}): {} trials, {} evaluated, {} valid, {} duplicates{}; best trial {} "
      "({}) {:.1f} us{} vs start {} us; {:.0f} candidates/s over {} job(s){}\n",
      s.model().name, s.target().record.name,
      s.options().min_batch > 0
          ? fmt::format("{}, min-batch {}", search::name(s.options().algorithm),
                        s.options().min_batch)
          : std::string(search::name(s.options().algorithm)),
      res.trials.size(), res.evaluations, res.valid, res.duplicates,
      res.replayed ? fmt::format(", {} replayed", res.replayed) : "", b.index,
      search::name(b.source), b.score, b.measured_us ? " measured" : " predicted",
      std::isfinite(start.score) ? fmt::format("{:.1f}", start.score) : std::string("invalid"),
      rate, args.get<int>("jobs"),
      res.exhausted ? "; stopped early: every config the algorithm could still reach was tried"
                    : "");
}

}  // namespace

int cmd_search(int argc, char** argv) {
  Args args = search_args();
  if (auto rc = args.parse(argc, argv)) return *rc;
  if (!args.has("model")) {
    std::cerr << "amk search: give a MODEL (amk models)\n";
    return kUnreadable;
  }
  const bool json = args.has("json");
  app::SearchRequest req;
  std::filesystem::path measure_dir;
  if (auto rc = search_request(args, req, measure_dir)) return *rc;
  auto session = app::SearchSession::create(std::move(req));
  if (!session) return fail(session.diagnostics, "amk search");
  print_diagnostics(session.diagnostics, "amk search");
  app::SearchSession& s = **session;

  LogFile log;
  bool same_log = false;
  if (auto rc = open_log(args, s, log, same_log)) return *rc;
  const bool bar = !json && isatty(2);
  const auto t0 = std::chrono::steady_clock::now();
  int64_t done = 0, valid = 0;
  double best = INFINITY;
  bool log_ok = true;
  auto on_trial = [&](const search::Trial& t) {
    // A trial the log already has at its index is not written again (a later line for an index
    // replaces an earlier one: a search extended past where its budget changed AMK's policy).
    const search::Trial* was = s.logged(t.index);
    const bool replayed = was && was->key == t.key && was->duplicate_of == t.duplicate_of;
    if (log.f && !(same_log && replayed)) log_ok = log.write(search::trial_json(t)) && log_ok;
    if (t.duplicate_of < 0) ++done;
    if (t.valid && t.duplicate_of < 0) ++valid;
    if (t.valid) best = std::min(best, t.score);
    if (bar) {
      const double el =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::cerr << fmt::format(
          "\r{} {}/{} evaluated, {:.0f}% valid, best {:.1f} us, {:.0f}/s   ", "amk search:", done,
          args.get<int64_t>("budget"),
          done ? 100.0 * static_cast<double>(valid) / static_cast<double>(done) : 0.0, best,
          static_cast<double>(done) / std::max(el, 1e-9));
    }
    return true;
  };
  ir::Result<search::SearchResult> r = s.run(on_trial, [&](const search::Trial& t) {
    ojson m = {{"measured", t.index},
               {"us", t.measured_us ? ojson(*t.measured_us) : ojson(nullptr)}};
    if (!t.measured_us && !t.diagnostics.empty()) m["why"] = t.diagnostics.back().message;
    log_ok = log.write(ir::dump_text(m)) && log_ok;
    if (!t.measured_us && !t.diagnostics.empty())
      std::cerr << "amk search: " << t.diagnostics.back().message << " (keeping the prediction)\n";
  });
  if (bar) std::cerr << "\n";
  if (!measure_dir.empty()) std::filesystem::remove_all(measure_dir);
  if (!log_ok) std::cerr << "amk search: warning: could not write every line of --log\n";
  if (!r) return fail(r.diagnostics, "amk search");
  const search::SearchResult& res = *r;
  const search::Trial& b = res.trials[static_cast<size_t>(res.best)];
  if (args.has("tsv") && !write_output(args.get<std::string>("tsv"), search::results_tsv(res)))
    return kUnreadable;
  if (args.has("output") &&
      !write_output(args.get<std::string>("output"), ir::write_config(b.config) + "\n"))
    return kUnreadable;
  if (args.has("program") &&
      !write_output(args.get<std::string>("program"), ir::write_program(res.best_program)))
    return kUnreadable;
  if (json) {
    const ojson j = app::search_summary_json(s, res);
    std::string out;
    ir::append_json_value(out, j, 0);
    std::cout << out << "\n";
    return kOk;
  }
  print_summary(args, s, res);
  return kOk;
}

}  // namespace amk::cli
