// The trial log (one JSON line per trial, for --log and --resume) and AMK's results.tsv.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <type_traits>
#include <variant>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>

#include "ir/choice.h"
#include "ir/diagnostic_json.h"
#include "ir/fileio.h"
#include "ir/json_io.h"
#include "ir/pyjson.h"
#include "lower/config.h"
#include "search/search.h"

namespace amk::search {

namespace {

using json = nlohmann::ordered_json;

json number_or_null(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

}  // namespace

std::string trial_json(const Trial& t) {
  json j = json::object();
  j["index"] = t.index;
  j["source"] = std::string(name(t.source));
  j["config"] = ir::config_json(t.config).json();
  j["duplicate_of"] = t.duplicate_of;
  for (const TrialField& f : trial_results()) {
    json& v = j[std::string(f.name)];
    std::visit(
        [&](auto m) {
          using T = std::remove_cvref_t<decltype(t.*m)>;
          if constexpr (std::is_same_v<T, double>)
            v = number_or_null(t.*m);
          else if constexpr (std::is_same_v<T, std::optional<double>>)
            v = t.*m ? json(*(t.*m)) : json(nullptr);
          else if constexpr (std::is_same_v<T, ir::Diagnostics>)
            v = ir::to_json(t.*m);
          else
            v = t.*m;
        },
        f.member);
  }
  return ir::dump_text(j);
}

namespace {

// Reads result `f` of a logged trial into `t`: "valid" must be a boolean, a number may be null
// (absent: the default), a count an integer, diagnostics a list (what is not one is skipped).
bool read_result(const json& j, const TrialField& f, Trial& t) {
  const std::string key(f.name);
  const bool given = j.contains(key) && !j[key].is_null();
  return std::visit(
      [&](auto m) {
        using T = std::remove_cvref_t<decltype(t.*m)>;
        if constexpr (std::is_same_v<T, bool>) {
          if (!given || !j[key].is_boolean()) return false;
          t.*m = j[key].get<bool>();
        } else if constexpr (std::is_same_v<T, int64_t>) {
          if (given && j[key].is_number_integer()) t.*m = j[key].get<int64_t>();
        } else if constexpr (std::is_same_v<T, std::string>) {
          if (given && j[key].is_string()) t.*m = j[key].get<std::string>();
        } else if constexpr (std::is_same_v<T, ir::Diagnostics>) {
          if (given && j[key].is_array())
            for (const json& d : j[key])
              if (std::optional<ir::Diagnostic> x = ir::diagnostic_from_json(d))
                (t.*m).push_back(std::move(*x));
        } else {  // double, or optional<double> (set only when finite)
          if (given && !j[key].is_number()) return false;
          if (given && (std::is_same_v<T, double> || std::isfinite(j[key].get<double>())))
            t.*m = j[key].get<double>();
        }
        return true;
      },
      f.member);
}

}  // namespace

ir::Result<Trial> parse_trial(std::string_view line) {
  ir::Result<ir::JsonValue> doc = ir::parse_json_object(line, "a trial");
  if (!doc) return std::move(doc.diagnostics);
  const json& j = doc->json();
  auto bad = [](std::string_view field, std::string what) {
    return ir::Result<Trial>(ir::error("search.log", std::move(what), "/" + std::string(field)));
  };
  Trial t;
  if (!j.contains("index") || !j["index"].is_number_integer() || j["index"].get<int64_t>() < 0)
    return bad("index", "must be a non-negative integer");
  t.index = j["index"].get<int64_t>();
  const auto src = j.contains("source") && j["source"].is_string()
                       ? parse_source(j["source"].get<std::string>())
                       : std::nullopt;
  if (!src) return bad("source", "must be a trial source (start, random, mutate, ...)");
  t.source = *src;
  if (!j.contains("config") || !j["config"].is_object()) return bad("config", "must be an object");
  ir::Result<ir::ScheduleConfig> c = ir::parse_config(ir::dump_text(j["config"]), /*strict=*/true);
  if (!c) return bad("config", "is not a ScheduleConfig: " + ir::error_messages(c.diagnostics));
  t.config = std::move(*c.value);
  t.key = config_key(t.config);
  if (j.contains("duplicate_of") && j["duplicate_of"].is_number_integer())
    t.duplicate_of = j["duplicate_of"].get<int64_t>();
  for (const TrialField& f : trial_results())
    if (!read_result(j, f, t))
      return bad(f.name, f.name == "valid" ? "must be true or false"
                                           : "scores and times must be numbers or null");
  if (!t.valid || (j.contains("score") && j["score"].is_null())) t.score = INFINITY;
  return t;
}

std::string results_tsv(const SearchResult& r) {
  std::string out =
      "trial\tsource\tvalid\tscore_us\tpredicted_us\tmeasured_us\ttasks\tkept\treason\tconfig\n";
  double best = INFINITY;
  for (const Trial& t : r.trials) {
    const bool kept = t.valid && t.duplicate_of < 0 && t.score < best;
    if (kept) best = t.score;
    auto us = [](double v) { return std::isfinite(v) ? fmt::format("{:.3f}", v) : std::string(); };
    std::string reason;
    if (t.duplicate_of >= 0)
      reason = fmt::format("duplicate of trial {}", t.duplicate_of);
    else if (!t.valid && !t.diagnostics.empty())
      reason = fmt::format("{}: {}", t.diagnostics[0].code, t.diagnostics[0].message);
    for (char& ch : reason)
      if (ch == '\t' || ch == '\n') ch = ' ';
    out += fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", t.index, name(t.source),
                       t.valid ? "1" : "0", us(t.score), us(t.predicted_us),
                       t.measured_us ? us(*t.measured_us) : std::string(), t.tasks,
                       kept ? "1" : "0", reason, config_key(t.config));
  }
  return out;
}

std::string_view name(Algorithm a) {
  return a == Algorithm::Amk ? "amk" : "descent";
}

std::string_view name(Objective o) {
  return o == Objective::AmkFormula ? "amk-formula" : "predicted";
}

ir::Result<Algorithm> algorithm_named(std::string_view what, std::string_view s) {
  static constexpr ir::Choice<Algorithm> kAlgorithms[] = {{"descent", Algorithm::Descent},
                                                          {"amk", Algorithm::Amk}};
  return ir::choose<Algorithm>(what, s, kAlgorithms);
}

ir::Result<Objective> objective_named(std::string_view what, std::string_view s) {
  static constexpr ir::Choice<Objective> kObjectives[] = {{"predicted", Objective::Predicted},
                                                          {"amk-formula", Objective::AmkFormula}};
  return ir::choose<Objective>(what, s, kObjectives);
}

LogHeader header_of(const lower::ModelSpec& m, const targets::TargetSpec& t, const Space& s,
                    const SearchOptions& o) {
  std::string space;
  for (const Knob& k : s.knobs) {
    space += k.path + "=";
    for (const ir::JsonValue& v : k.values) space += ir::dump_text(v.json()) + ",";
    space += ";";
  }
  return {m.name,
          t.record.name,
          std::string(name(o.algorithm)),
          std::string(name(o.objective)),
          config_key(o.start ? *o.start : lower::default_config()),
          o.seed,
          config_hash(space),
          o.min_batch,
          o.lower.runtime ? o.lower.runtime->name : targets::default_runtime(t).name};
}

std::string header_json(const LogHeader& h) {
  json j = {{"model", h.model},
            {"target", h.target},
            {"algorithm", h.algorithm},
            {"objective", h.objective},
            {"seed", h.seed},
            {"space", fmt::format("{:016x}", h.space)},
            {"start", ir::reread_object(h.start)}};
  if (h.min_batch > 0) j["min_batch"] = h.min_batch;  // absent: 0, as in logs written before it
  j["runtime"] = h.runtime;
  return ir::dump_text(json{{"search", j}});
}

ir::Result<Log> read_log(const std::string& path) {
  ir::Result<std::string> text = ir::read_file(path);
  if (!text) return std::move(text.diagnostics);
  Log log;
  std::map<int64_t, Trial> by_index;
  size_t at = 0;
  int line_no = 0;
  while (at < text->size()) {
    size_t end = text->find('\n', at);
    if (end == std::string::npos) end = text->size();
    const std::string_view line(text->data() + at, end - at);
    at = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto fail = [&](ir::Diagnostics d) {
      for (ir::Diagnostic& x : d) {
        x.file = path;
        x.line = line_no;
        if (x.column == 0) x.column = 1;
      }
      return ir::Result<Log>(std::move(d));
    };
    if (line.starts_with("{\"measured\"")) {  // the exploit's measurements (not trials)
      log.complete = std::min(at, text->size());
      continue;
    }
    if (line.starts_with("{\"search\"")) {
      ir::Result<ir::JsonValue> doc = ir::parse_json_object(line, "a log header");
      if (!doc) return fail(std::move(doc.diagnostics));
      const json& h = doc->json()["search"];
      if (!h.is_object() || !h.contains("start"))
        return fail(
            {ir::error("search.log", "a header needs model, target, ... and start", "/search")});
      const std::string space = h.value("space", std::string("0"));
      uint64_t space_hash = 0;
      std::from_chars(space.data(), space.data() + space.size(), space_hash, 16);
      log.header = LogHeader{h.value("model", ""),
                             h.value("target", ""),
                             h.value("algorithm", ""),
                             h.value("objective", ""),
                             ir::dump_text(h["start"]),
                             h.value("seed", uint64_t{0}),
                             space_hash,
                             h.value("min_batch", int64_t{0}),
                             h.value("runtime", "")};
      log.complete = std::min(at, text->size());
      continue;
    }
    ir::Result<Trial> t = parse_trial(line);
    if (!t && end == text->size() && !text->ends_with('\n')) {  // cut off by a crash
      ir::Diagnostic w = ir::error(
          "search.log", "the last line is incomplete (the run was interrupted): it is dropped");
      w.severity = ir::Severity::Warning;
      w.file = path;
      w.line = line_no;
      w.column = 1;
      log.warnings.push_back(std::move(w));
      break;
    }
    if (!t) return fail(std::move(t.diagnostics));
    by_index[t->index] = std::move(*t.value);
    log.complete = std::min(at, text->size());
  }
  for (auto& [i, t] : by_index) log.trials.push_back(std::move(t));
  return log;
}

}  // namespace amk::search
