#include "cli/cli.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <new>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/fileio.h"
#include "ir/json_io.h"
#include "ir/pyjson.h"

namespace amk::cli {

std::string closest(std::string_view word, const std::vector<std::string>& candidates) {
  auto dist = [](std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
        diag = up;
      }
    }
    return row[b.size()];
  };
  std::string best;
  size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    size_t d = dist(word, c);
    if (c.rfind(word, 0) == 0 && !word.empty()) d = std::min<size_t>(d, 1);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best_d <= std::max<size_t>(2, word.size() / 2) ? best : std::string();
}

Args::Args(std::string usage, std::string about)
    : usage_(std::move(usage)), about_(std::move(about)), opts_("options") {
  opts_.add_options()("help,h", "show this help");
}

po::options_description_easy_init Args::add() {
  return opts_.add_options();
}

void Args::range(const char* name, double lo, double hi) {
  ranges_.push_back({name, lo, hi});
}

namespace {

// A numeric option's value as a double (nullopt: not numeric).
std::optional<double> number_of(const boost::any& v) {
  if (auto* i = boost::any_cast<int>(&v)) return *i;
  if (auto* l = boost::any_cast<int64_t>(&v)) return static_cast<double>(*l);
  if (auto* d = boost::any_cast<double>(&v)) return *d;
  return std::nullopt;
}

std::string bound(double x) {
  return std::isinf(x) ? (x < 0 ? "-inf" : "inf") : fmt::format("{}", x);
}

}  // namespace

void Args::positional(const char* name, int max) {
  pos_.add(name, max);
  positional_.emplace_back(name);
}

po::options_description Args::shown() const {
  // Positional arguments are named in the usage line; --help lists only the real options.
  po::options_description out("options");
  for (const auto& o : opts_.options())
    if (std::find(positional_.begin(), positional_.end(), o->long_name()) == positional_.end())
      out.add(o);
  return out;
}

std::optional<int> Args::parse(int argc, char** argv) {
  try {
    po::store(
        po::command_line_parser(argc, argv)
            .options(opts_)
            .positional(pos_)
            .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
            .run(),
        vm_);
    if (vm_.count("help")) {
      std::cout << "usage: " << usage_ << "\n\n" << about_ << "\n\n" << shown() << "\n";
      return kOk;
    }
    po::notify(vm_);
    for (const Range& r : ranges_) {
      if (!vm_.count(r.name)) continue;
      const std::optional<double> x = number_of(vm_[r.name].value());
      if (x && *x >= r.lo && *x <= r.hi) continue;
      std::cerr << fmt::format("amk {}: --{} {} is out of range: allowed [{}, {}]\n", argv[0],
                               r.name, x ? bound(*x) : std::string("?"), bound(r.lo), bound(r.hi));
      return kUnreadable;
    }
  } catch (const po::unknown_option& e) {
    std::vector<std::string> names;
    const po::options_description listed = shown();
    for (const auto& o : listed.options()) names.push_back("--" + o->long_name());
    std::string hint = closest(e.get_option_name(), names);
    std::cerr << "amk " << argv[0] << ": unknown option '" << e.get_option_name() << "'"
              << (hint.empty() ? "" : "; did you mean '" + hint + "'?") << "\nusage: " << usage_
              << "\n";
    return kUnreadable;
  } catch (const po::error& e) {
    std::cerr << "amk " << argv[0] << ": " << e.what() << "\nusage: " << usage_ << "\n";
    return kUnreadable;
  }
  return std::nullopt;
}

int exit_code(const ir::Diagnostics& d) {
  // Codes by family; the first error decides.
  static constexpr std::pair<std::string_view, int> kExit[] = {
      {"vm.rejected", kRejected},   {"lower.rejected", kRejected},    {"merge.", kRejected},
      {"verify.", kRejected},       {"vm.deadlock", kDeadlock},       {"vm.timeout", kDeadlock},
      {"orch.deadlock", kDeadlock}, {"search.none-valid", kRejected}, {"vm.overflow", kDeadlock},
  };
  for (const ir::Diagnostic& x : d) {
    if (x.severity != ir::Severity::Error) continue;
    for (const auto& [prefix, code] : kExit)
      if (x.code.starts_with(prefix)) return code;
    return kUnreadable;
  }
  return kOk;
}

void print_diagnostics(const ir::Diagnostics& d, std::string_view where) {
  for (const auto& x : d) std::cerr << ir::format_diagnostic(x, where) << "\n";
}

int fail(const ir::Diagnostics& d, std::string_view where) {
  print_diagnostics(d, where);
  return exit_code(d);
}

namespace {

// The last members of a failure document: `"errors": [...],\n  "warnings": [...]`.
std::string errors_and_warnings(const ir::Diagnostics& d) {
  ir::Diagnostics errs, warns;
  for (const auto& x : d) (x.severity == ir::Severity::Error ? errs : warns).push_back(x);
  return "\"errors\": " + ir::diagnostics_json(errs, 1) +
         ",\n  \"warnings\": " + ir::diagnostics_json(warns, 1);
}

}  // namespace

int fail(const ir::Diagnostics& d, std::string_view where, bool json) {
  if (!json) return fail(d, where);
  const int code = exit_code(d);
  std::cout << fmt::format("{{\n  \"ok\": false,\n  \"exit\": {},\n  {}\n}}\n", code,
                           errors_and_warnings(d));
  return code;
}

std::string unreadable_json(const ir::Diagnostics& d, std::string_view file) {
  std::string out = "{\n  \"ok\": null,\n  \"file\": ";
  ir::append_json_string(out, file);
  return out + ",\n  \"unreadable\": true,\n  " + errors_and_warnings(d) + "\n}\n";
}

void add_format_options(Args& args) {
  args.add()("format", po::value<std::string>(),
             "the file's format: amk, mpk (task_graph.json) or pto (deps.json); default: by its "
             "top-level keys")(
      "launch", po::value<std::vector<std::string>>(),
      "KEY=VALUE (repeatable): a runtime capacity or launch-shape value, a number or a comma "
      "list per ring (workers, schedulers, sms, worker_queue, scheduler_queue, task_window, heap, "
      "dep_pool, tensormap, ready_queue, fanin_inline, fanin_spill, cores_aic, cores_aiv); PTO: "
      "twait=WAITER:NOTIFIER, task ids as deps.json writes them, for a task that blocks in TWAIT "
      "until another's TNOTIFY")(
      "scope-stats", po::value<std::string>(),
      "PTO: the scope_stats.jsonl to read (default: scope_stats/ beside deps.json)");
}

std::optional<app::FormatOptions> format_options(const Args& args) {
  app::FormatOptions o;
  if (args.has("format")) {
    o.format = app::parse_format(args.get<std::string>("format"));
    if (!o.format) {
      std::cerr << fmt::format("amk: --format {}: expected amk, mpk or pto\n",
                               args.get<std::string>("format"));
      return std::nullopt;
    }
  }
  if (args.has("launch")) o.launch = args.get<std::vector<std::string>>("launch");
  if (args.has("scope-stats")) o.scope_stats = args.get<std::string>("scope-stats");
  if (args.vm().count("target") && !args.vm()["target"].empty())
    o.target = args.get<std::string>("target");
  return o;
}

std::optional<ir::Program> load(const std::string& path, bool json_errors, bool quiet,
                                const app::FormatOptions& o) {
  ir::Result<ir::Program> r = app::load_program(path, o);
  if (!r) {
    if (json_errors) {
      std::cout << unreadable_json(r.diagnostics, path);
    } else {
      print_diagnostics(r.diagnostics, path);
    }
    return std::nullopt;
  }
  if (!quiet) print_diagnostics(r.diagnostics, path);
  return std::move(r.value);
}

void keep_until_exit(ir::Program&& p) noexcept {
  // Reachable from a static to the end, so leak checkers do not count it (the at-exit time of a
  // 1M-task program, 0.1 s here, is what this saves). Without memory for that, it is freed.
  try {
    static auto* kept = new std::vector<ir::Program>();
    kept->push_back(std::move(p));
  } catch (const std::bad_alloc&) {
  }
}

bool write_output(const std::string& path, std::string_view data) {
  if (path == "-") {
    std::fwrite(data.data(), 1, data.size(), stdout);
    std::fflush(stdout);
    return !std::ferror(stdout);
  }
  if (ir::Status st = ir::write_file_atomic(path, data); !st) {
    print_diagnostics(st.diagnostics, "amk");
    return false;
  }
  return true;
}

}  // namespace amk::cli
