// The arguments of a service request (app/service.cpp): typed access with errors that point
// at the argument, and the readers of the values several operations take (a program, a model, a
// target, a runtime, a config, lowering options, an objective). Private to the app library.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "app/load.h"
#include "app/service.h"
#include "ir/fileio.h"
#include "ir/json_io.h"
#include "ir/pyjson.h"
#include "lower/lower.h"
#include "lower/model.h"
#include "search/search.h"
#include "targets/runtime.h"
#include "targets/target.h"

namespace amk::app {

/// A `request.invalid` error at argument `key`.
ir::Diagnostic bad(std::string_view key, std::string message);
/// Diagnostics about an inline value, their pointers prefixed with its key (line:column dropped:
/// the re-serialised text would mislead).
ir::Diagnostics inside(ir::Diagnostics d, std::string_view key);

// Typed access to optional arguments.
struct Args {
  const ojson& j;
  ir::Diagnostics errors;
  bool files = true;  // ServiceOptions::files

  // A file named by argument `k`: "-" never (standard input is the request stream), any other
  // only when the worker may touch files.
  ir::Status file(std::string_view k, std::string_view path) const {
    if (path == "-")
      return ir::error("request.stdin",
                       fmt::format("'{}' is \"-\", standard input, which is the request stream "
                                   "here: give a file path or the value inline",
                                   k),
                       "/" + ir::pointer_token(k));
    if (files) return {};
    return ir::error("request.files",
                     fmt::format("'{}' names a file ({}), and this worker reads and writes none: "
                                 "give the value inline",
                                 k, path),
                     "/" + ir::pointer_token(k));
  }

  bool has(std::string_view k) const { return !at(k).is_null(); }
  // The value of `k`, null when the request has none (a const json's [] of a missing key reads
  // past its members).
  const ojson& at(std::string_view k) const {
    static const ojson none;
    const auto it = j.find(k);
    return it == j.end() ? none : *it;
  }
  std::string str(std::string_view k, std::string fallback = {}) {
    if (!has(k)) return fallback;
    if (!at(k).is_string()) {
      errors.push_back(bad(k, fmt::format("'{}' must be a string", k)));
      return fallback;
    }
    return at(k).get<std::string>();
  }
  int64_t integer(std::string_view k, int64_t fallback, int64_t lo, int64_t hi) {
    if (!has(k)) return fallback;
    const ojson& v = at(k);
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(hi)) ||
        v.get<int64_t>() < lo || v.get<int64_t>() > hi) {
      errors.push_back(bad(k, fmt::format("'{}' must be an integer in [{}, {}]", k, lo, hi)));
      return fallback;
    }
    return v.get<int64_t>();
  }
  // A positive number, at most `hi` (0: any).
  double number(std::string_view k, double fallback, double hi = 0) {
    if (!has(k)) return fallback;
    if (!at(k).is_number() || at(k).get<double>() <= 0 || (hi > 0 && at(k).get<double>() > hi)) {
      errors.push_back(bad(
          k, hi > 0 ? fmt::format("'{}' must be a positive number, at most {}", k, ir::py_float(hi))
                    : fmt::format("'{}' must be a positive number", k)));
      return fallback;
    }
    return at(k).get<double>();
  }
  bool flag(std::string_view k) {
    if (!has(k)) return false;
    if (!at(k).is_boolean()) {
      errors.push_back(bad(k, fmt::format("'{}' must be true or false", k)));
      return false;
    }
    return at(k).get<bool>();
  }
  // How to read a program of another format: "format", "scope_stats", "launch" (a list of
  // "KEY=VALUE") and, where the operation takes it, "target".
  FormatOptions format_options() {
    FormatOptions o;
    if (has("format")) {
      o.format = parse_format(str("format"));
      if (!o.format)
        errors.push_back(bad("format", "'format' must be \"amk\", \"mpk\" or \"pto\""));
    }
    o.scope_stats = str("scope_stats");
    if (!o.scope_stats.empty()) ir::append(errors, file("scope_stats", o.scope_stats).diagnostics);
    if (has("launch")) {
      const ojson& l = at("launch");
      bool ok = l.is_array();
      for (size_t i = 0; ok && i < l.size(); ++i) {
        ok = l[i].is_string();
        if (ok) o.launch.push_back(l[i].get<std::string>());
      }
      if (!ok) errors.push_back(bad("launch", "'launch' must be a list of \"KEY=VALUE\" strings"));
    }
    if (has("target") && at("target").is_string()) {
      o.target = at("target").get<std::string>();
      if (ir::names_a_file(o.target)) ir::append(errors, file("target", o.target).diagnostics);
    }
    return o;
  }
  // Refuses arguments the operation does not know (a typo must not be ignored).
  void only(const std::vector<std::string>& known) {
    for (const auto& [k, v] : j.items())
      if (k != "op" && k != "id" && std::find(known.begin(), known.end(), k) == known.end())
        errors.push_back(bad(k, fmt::format("unknown argument '{}' (this operation takes: {})", k,
                                            fmt::join(known, ", "))));
  }
  ir::Status status() {
    if (errors.empty()) return {};
    return std::move(errors);
  }
};

/// A program given inline (an object) or by path (a string) under `key`.
ir::Result<ir::Program> program_arg(Args& a, std::string_view key);
/// The program of validate, cost and info: "program" (inline or a path), "path" or "text".
ir::Result<ir::Program> the_program(Args& a);
/// "model": a built-in name, a file (refused without files) or an inline spec.
ir::Result<lower::ModelSpec> model_arg(Args& a);
/// "target": a built-in name, a file or an inline record.
ir::Result<targets::TargetSpec> target_arg(Args& a);
/// "runtime": a built-in name, a file or an inline profile; absent: nullopt (the target's).
ir::Result<std::optional<targets::Runtime>> runtime_arg(Args& a);
/// A config under `key`: an object, its JSON text, a file path, "auto" (nullopt) or absent/null
/// (AMK's default_config), as `amk lower --config` takes it.
ir::Result<std::optional<ir::ScheduleConfig>> config_arg(Args& a, std::string_view key);
/// "pos", "batch", "dtype" and "quant" as lowering options.
lower::LowerOptions lower_options(Args& a);
/// "objective" (default: predicted); nullopt with an error recorded in `a`.
std::optional<search::Objective> objective_arg(Args& a);

}  // namespace amk::app
