#include "app/calibrate.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/fileio.h"
#include "ir/json_io.h"
#include "ir/pyjson.h"
#include "lower/config.h"
#include "lower/lower.h"
#include "lower/model.h"
#include "search/search.h"

namespace amk::app {

namespace {

using json = nlohmann::ordered_json;

// An error about line `line` of `file` at `pointer`.
ir::Diagnostics at(const std::string& file, int line, std::string pointer, std::string msg) {
  ir::Diagnostic d = ir::error("calibrate.measurement", std::move(msg), std::move(pointer));
  d.file = file;
  d.line = line;
  d.column = 1;
  return {d};
}

// A model lowered under a config for a target.
ir::Result<ir::Program> lowered(const std::string& model,
                                const std::optional<ir::ScheduleConfig>& c,
                                const targets::TargetSpec& t, const lower::LowerOptions& o) {
  ir::Result<lower::ModelSpec> m = lower::load_model(model);
  if (!m) return std::move(m.diagnostics);
  lower::LowerResult r = lower::lower(*m, t, c, o);
  if (!r) return std::move(r.diagnostics);
  return std::move(*r.value);
}

// The measured trials of a search log.
ir::Result<std::vector<targets::Measurement>> from_log(const std::string& file,
                                                       const MeasureDefaults& d) {
  ir::Result<search::Log> log = search::read_log(file);
  if (!log) return std::move(log.diagnostics);
  const search::LogHeader& h = *log->header;
  ir::Result<targets::TargetSpec> t =
      d.target ? ir::Result<targets::TargetSpec>(*d.target) : targets::load_target(h.target);
  if (!t) return std::move(t.diagnostics);
  // --measure appends {"measured": trial, "us": latency} lines after the trials.
  std::map<int64_t, double> measured;
  ir::Result<std::string> text = ir::read_file(file);
  if (!text) return std::move(text.diagnostics);
  std::istringstream lines(*text);
  int line_no = 0;
  for (std::string l; std::getline(lines, l);) {
    ++line_no;
    if (!l.starts_with("{\"measured\"")) continue;
    const json j = json::parse(l, nullptr, false);
    if (j.is_discarded() || !j["measured"].is_number_integer() || !j.contains("us") ||
        !j["us"].is_number() || !(j["us"].get<double>() > 0))
      return at(file, line_no, "", "a measurement line needs {\"measured\": trial, \"us\": > 0}");
    measured[j["measured"].get<int64_t>()] = j["us"].get<double>();
  }
  std::vector<targets::Measurement> out;
  for (const search::Trial& x : log->trials) {
    const auto m = measured.find(static_cast<int64_t>(x.index));
    const std::optional<double> us = m != measured.end() ? std::optional(m->second) : x.measured_us;
    if (!us || x.duplicate_of >= 0) continue;
    ir::Result<ir::Program> p = lowered(h.model, x.config, *t, d.lower);
    if (!p) return std::move(p.diagnostics);
    out.push_back({fmt::format("{}: trial {}", file, x.index), std::move(*p), t->record, *us});
  }
  if (out.empty())
    return at(file, 1, "", "the search log has no measured trial (amk search --measure)");
  return out;
}

// A record's latency: "measured_us", or the fastest of its "trace" files (one path or a list of
// runs: on a shared machine interference only ever slows a run down).
ir::Result<double> measured_of(const json& j, const std::string& file, int line) {
  if (j.contains("measured_us") == j.contains("trace"))
    return at(file, line, "", "give \"measured_us\" or \"trace\" (amk run --trace)");
  if (j.contains("measured_us")) {
    if (!j["measured_us"].is_number() || !(j["measured_us"].get<double>() > 0))
      return at(file, line, "/measured_us", "must be a positive latency in microseconds");
    return j["measured_us"].get<double>();
  }
  const json traces = j["trace"].is_string() ? json::array({j["trace"]}) : j["trace"];
  if (!traces.is_array() || traces.empty())
    return at(file, line, "/trace", "must be a file path or a list of them");
  const std::filesystem::path dir = std::filesystem::path(file).parent_path();
  double best = std::numeric_limits<double>::infinity();
  for (const json& t : traces) {
    if (!t.is_string()) return at(file, line, "/trace", "must be a file path or a list of them");
    ir::Result<double> us = trace_span_us((dir / t.get<std::string>()).string());
    if (!us) return std::move(us.diagnostics);
    best = std::min(best, *us);
  }
  return best;
}

// One JSONL record.
ir::Result<targets::Measurement> from_record(const json& j, const std::string& file, int line,
                                             const MeasureDefaults& d) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    static const char* kKnown[] = {"program", "model", "config", "target", "measured_us",
                                   "trace",   "label", "pos",    "dtype",  "amk_compat"};
    if (std::none_of(std::begin(kKnown), std::end(kKnown),
                     [&](const char* k) { return it.key() == k; }))
      return at(file, line, "/" + it.key(),
                "unknown field (known: program, model, config, target, measured_us, trace, "
                "label, pos, dtype, amk_compat)");
  }
  const std::filesystem::path dir = std::filesystem::path(file).parent_path();
  auto path_of = [&](const char* key) { return (dir / j[key].get<std::string>()).string(); };
  targets::Measurement m;
  std::optional<targets::TargetSpec> t;
  if (j.contains("target")) {
    if (!j["target"].is_string()) return at(file, line, "/target", "must be a target name or file");
    ir::Result<targets::TargetSpec> r = targets::load_target(j["target"].get<std::string>());
    if (!r) return std::move(r.diagnostics);
    t = std::move(*r.value);
  } else if (d.target) {
    t = *d.target;
  }
  lower::LowerOptions o = d.lower;
  if (j.contains("pos")) {
    if (!j["pos"].is_number_integer() || j["pos"].get<int64_t>() < 0)
      return at(file, line, "/pos", "must be a position >= 0");
    o.pos = j["pos"].get<int64_t>();
  }
  if (j.contains("amk_compat")) {
    if (!j["amk_compat"].is_boolean())
      return at(file, line, "/amk_compat", "must be true or false");
    o.amk_compat = j["amk_compat"].get<bool>();
  }
  if (j.contains("dtype")) {
    if (!j["dtype"].is_string()) return at(file, line, "/dtype", "must be F32, BF16 or F16");
    ir::Result<ir::DType> dt = lower::lower_dtype_named("dtype", j["dtype"].get<std::string>());
    if (!dt) return at(file, line, "/dtype", dt.diagnostics.front().message);
    o.dtype = *dt;
  }
  if (j.contains("program") == j.contains("model"))
    return at(file, line, "", "give \"program\" (a file) or \"model\" (and \"config\")");
  if (j.contains("program")) {
    if (!j["program"].is_string()) return at(file, line, "/program", "must be a file path");
    ir::Result<ir::Program> p = ir::load_program(path_of("program"));
    if (!p) return std::move(p.diagnostics);
    m.program = std::move(*p.value);
    if (!t && !m.program.target) return at(file, line, "/target", "the program names no target");
    m.target = t ? t->record : *m.program.target;
  } else {
    if (!j["model"].is_string()) return at(file, line, "/model", "must be a model name or file");
    if (!t) t = *targets::load_target("h100");
    std::optional<ir::ScheduleConfig> c = lower::default_config();
    if (j.contains("config") && j["config"].is_string()) {  // "auto", its text or a file
      ir::Result<std::optional<ir::ScheduleConfig>> r =
          lower::resolve_config(j["config"].get<std::string>(), "/config");
      if (!r) return std::move(r.diagnostics);
      c = std::move(*r.value);
    } else if (j.contains("config")) {
      ir::Result<ir::ScheduleConfig> r = lower::parse_config(ir::json_line(j["config"]), "/config");
      if (!r) return std::move(r.diagnostics);
      c = std::move(*r.value);
    }
    ir::Result<ir::Program> p = lowered(j["model"].get<std::string>(), c, *t, o);
    if (!p) return std::move(p.diagnostics);
    m.program = std::move(*p.value);
    m.target = t->record;
  }
  ir::Result<double> us = measured_of(j, file, line);
  if (!us) return std::move(us.diagnostics);
  m.measured_us = *us;
  m.label = j.contains("label") && j["label"].is_string() ? j["label"].get<std::string>()
                                                          : fmt::format("{}:{}", file, line);
  return m;
}

}  // namespace

ir::Result<double> trace_span_us(const std::string& path) {
  ir::Result<std::string> text = ir::read_file(path);
  if (!text) return std::move(text.diagnostics);
  ir::Result<ir::JsonValue> doc = ir::parse_json_object(*text, "a Chrome trace");
  if (!doc) {
    ir::set_file(doc.diagnostics, path);
    return std::move(doc.diagnostics);
  }
  const json& j = doc->json();
  double first = std::numeric_limits<double>::infinity(), last = -first;
  if (j.contains("traceEvents") && j["traceEvents"].is_array())
    for (const json& e : j["traceEvents"]) {
      if (!e.is_object() || e.value("ph", "") != "X" || !e.contains("ts") || !e["ts"].is_number())
        continue;
      const double ts = e["ts"].get<double>();
      first = std::min(first, ts);
      last = std::max(
          last, ts + (e.contains("dur") && e["dur"].is_number() ? e["dur"].get<double>() : 0.0));
    }
  if (!(last > first)) {
    ir::Diagnostic d =
        ir::error("calibrate.measurement", "the trace has no task events", "/traceEvents");
    d.file = path;
    return d;
  }
  return last - first;
}

ir::Result<std::vector<targets::Measurement>> read_measurements(std::span<const std::string> files,
                                                                const MeasureDefaults& d) {
  std::vector<targets::Measurement> out;
  for (const std::string& file : files) {
    ir::Result<std::string> text = ir::read_file(file);
    if (!text) return std::move(text.diagnostics);
    if (text->substr(0, 256).find("\"traceEvents\"") != std::string::npos)
      return at(file, 1, "/traceEvents",
                "a trace alone does not say what ran: list it in a JSONL line "
                "{\"program\": P, \"trace\": T}");
    if (text->starts_with("{\"search\"")) {
      ir::Result<std::vector<targets::Measurement>> log = from_log(file, d);
      if (!log) return std::move(log.diagnostics);
      for (targets::Measurement& m : *log) out.push_back(std::move(m));
      continue;
    }
    size_t at_byte = 0;
    int line = 0;
    while (at_byte < text->size()) {
      size_t end = text->find('\n', at_byte);
      if (end == std::string::npos) end = text->size();
      const std::string_view l(text->data() + at_byte, end - at_byte);
      at_byte = end + 1;
      ++line;
      if (l.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      ir::Result<ir::JsonValue> j = ir::parse_json_object(l, "a measurement");
      if (!j) {
        for (ir::Diagnostic& x : j.diagnostics) {
          x.file = file;
          x.line = line;
        }
        return std::move(j.diagnostics);
      }
      ir::Result<targets::Measurement> m = from_record(j->json(), file, line, d);
      if (!m) return std::move(m.diagnostics);
      out.push_back(std::move(*m.value));
    }
  }
  if (out.empty()) return ir::error("calibrate.measurement", "no measurement in the files given");
  return out;
}

}  // namespace amk::app
