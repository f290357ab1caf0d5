#include "app/service_args.h"

#include <utility>

#include "ir/pyjson.h"
#include "lower/config.h"

namespace amk::app {

namespace {

// A model or target under `key`: a built-in name, a file (refused without files) or an inline
// object, read by `load` or `parse`.
template <class T, class Load, class Parse>
ir::Result<T> spec_arg(Args& a, const char* key, std::string_view what, Load load, Parse parse) {
  if (!a.has(key))
    return bad(key, fmt::format("missing '{}' (a built-in name, a file or {})", key, what));
  const ojson& v = a.at(key);
  if (v.is_string()) {
    if (ir::names_a_file(v.get<std::string>()))
      if (ir::Status st = a.file(key, v.get<std::string>()); !st) return std::move(st.diagnostics);
    return load(v.get<std::string>());
  }
  if (v.is_object()) {
    ir::Result<T> r = parse(ir::json_line(v), "/" + std::string(key));
    if (!r) return inside(std::move(r.diagnostics), key);
    return r;
  }
  return bad(key, fmt::format("'{}' must be a name, a file path or {} object", key, what));
}

}  // namespace

ir::Diagnostic bad(std::string_view key, std::string message) {
  return ir::error("request.invalid", std::move(message), "/" + ir::pointer_token(key));
}

// Prefixes the pointers of diagnostics about an inline value with its key; line:column of the
// re-serialised text would mislead, so they go.
ir::Diagnostics inside(ir::Diagnostics d, std::string_view key) {
  for (ir::Diagnostic& x : d) {
    x.pointer = "/" + ir::pointer_token(key) + x.pointer;
    x.line = x.column = 0;
    for (ir::Note& n : x.notes) n.pointer = "/" + ir::pointer_token(key) + n.pointer;
  }
  return d;
}

// A program given inline (an object) or by path (a string) under `key`.
ir::Result<ir::Program> program_arg(Args& a, std::string_view key) {
  const ojson& v = a.at(key);
  const FormatOptions fo = a.format_options();
  if (ir::Status st = a.status(); !st) return std::move(st.diagnostics);
  if (v.is_object()) {
    ir::Result<ir::Program> r = parse_program(ir::json_line(v), "", fo);
    if (!r) return inside(std::move(r.diagnostics), key);
    return r;
  }
  if (v.is_string()) {
    if (ir::Status st = a.file(key, v.get<std::string>()); !st) return std::move(st.diagnostics);
    return load_program(v.get<std::string>(), fo);
  }
  return bad(key, fmt::format("'{}' must be a program object or a file path", key));
}

// The program of validate, cost and info: "program" (inline or a path), "path" or "text" (the
// program's JSON text).
ir::Result<ir::Program> the_program(Args& a) {
  if (a.has("program") + a.has("path") + a.has("text") > 1)
    return bad("path", "give one of 'program', 'path' and 'text'");
  if (a.has("text")) {
    if (!a.at("text").is_string()) return bad("text", "'text' must be a program's JSON text");
    const FormatOptions fo = a.format_options();
    if (ir::Status st = a.status(); !st) return std::move(st.diagnostics);
    return parse_program(a.at("text").get<std::string>(), "/text", fo);
  }
  if (a.has("path")) {
    if (!a.at("path").is_string()) return bad("path", "'path' must be a file path");
    return program_arg(a, "path");
  }
  if (!a.has("program")) return bad("program", "missing 'program' (or 'path' or 'text')");
  return program_arg(a, "program");
}

ir::Result<lower::ModelSpec> model_arg(Args& a) {
  return spec_arg<lower::ModelSpec>(a, "model", "a model spec", lower::load_model,
                                    lower::parse_model);
}

ir::Result<targets::TargetSpec> target_arg(Args& a) {
  return spec_arg<targets::TargetSpec>(a, "target", "a target record", targets::load_target,
                                       targets::parse_target_spec);
}

// "runtime": a built-in name, a file or an inline profile; absent: nullopt (the target's).
ir::Result<std::optional<targets::Runtime>> runtime_arg(Args& a) {
  if (!a.has("runtime")) return std::optional<targets::Runtime>();
  ir::Result<targets::Runtime> r = spec_arg<targets::Runtime>(
      a, "runtime", "a runtime profile", targets::load_runtime, targets::parse_runtime);
  if (!r) return std::move(r.diagnostics);
  return std::optional<targets::Runtime>(std::move(*r.value));
}

// "config": an object, its JSON text, a file path, "auto" (nullopt) or absent/null (AMK's
// default_config), as `amk lower --config` takes it.
ir::Result<std::optional<ir::ScheduleConfig>> config_arg(Args& a, std::string_view key) {
  if (!a.has(key)) return std::optional<ir::ScheduleConfig>(lower::default_config());
  const ojson& v = a.at(key);
  if (v.is_string() && v.get<std::string>() == "auto") return std::optional<ir::ScheduleConfig>();
  ir::Result<ir::ScheduleConfig> c;
  if (v.is_object()) {
    c = lower::parse_config(ir::json_line(v), "/" + std::string(key));
    if (!c) return inside(std::move(c.diagnostics), key);
  } else if (v.is_string()) {  // its JSON text (errors inside /key) or a file
    const std::string& arg = v.get_ref<const std::string&>();
    const bool inline_json = lower::is_inline_json(arg);
    if (!inline_json)
      if (ir::Status st = a.file(key, arg); !st) return std::move(st.diagnostics);
    ir::Result<std::optional<ir::ScheduleConfig>> r =
        lower::resolve_config(arg, "/" + std::string(key));
    if (!r) return inline_json ? inside(std::move(r.diagnostics), key) : std::move(r.diagnostics);
    return std::move(*r.value);
  } else {
    return bad(key,
               fmt::format("'{}' must be a ScheduleConfig object, a file path or 'auto'", key));
  }
  return std::optional<ir::ScheduleConfig>(std::move(*c.value));
}

lower::LowerOptions lower_options(Args& a) {
  lower::LowerOptions o;
  o.pos = a.integer("pos", 0, 0, 1 << 24);
  o.batch = a.integer("batch", 1, 1, lower::kMaxBatch);
  if (ir::Result<ir::DType> d = lower::lower_dtype_named("dtype", a.str("dtype", "F32")))
    o.dtype = *d;
  else
    a.errors.push_back(bad("dtype", d.diagnostics.front().message));
  // null (absent) is no quantisation; the schema has no "none".
  if (const std::string quant = a.str("quant", ""); !quant.empty()) {
    if (ir::Result<lower::Quant> q = lower::quant_named("quant", quant, /*none_word=*/false))
      o.quant = *q;
    else
      a.errors.push_back(bad("quant", q.diagnostics.front().message));
  }
  return o;
}

std::optional<search::Objective> objective_arg(Args& a) {
  const std::string s = a.str("objective", "predicted");
  ir::Result<search::Objective> o = search::objective_named("objective", s);
  if (!o) {
    a.errors.push_back(bad("objective", o.diagnostics.front().message));
    return std::nullopt;
  }
  return *o;
}

}  // namespace amk::app
