#include "ir/diagnostic.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/diagnostic_json.h"
#include "ir/pyjson.h"
#include "ir/result.h"

namespace amk::ir {

bool has_errors(const Diagnostics& d) {
  return std::any_of(d.begin(), d.end(),
                     [](const Diagnostic& x) { return x.severity == Severity::Error; });
}

size_t count_errors(const Diagnostics& d) {
  return static_cast<size_t>(std::count_if(
      d.begin(), d.end(), [](const Diagnostic& x) { return x.severity == Severity::Error; }));
}

std::string pointer_token(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string task_pointer(size_t task, std::string_view rest) {
  if (rest.empty()) return fmt::format("/tasks/{}", task);
  return fmt::format("/tasks/{}/{}", task, rest);
}

std::string error_messages(const Diagnostics& d) {
  std::string out;
  for (const Diagnostic& x : d)
    if (x.severity == Severity::Error) out += (out.empty() ? "" : "; ") + x.message;
  return out;
}

std::optional<int64_t> pointer_task(std::string_view pointer) {
  constexpr std::string_view kPrefix = "/tasks/";
  if (!pointer.starts_with(kPrefix)) return std::nullopt;
  pointer.remove_prefix(kPrefix.size());
  int64_t id = -1;
  auto [end, ec] = std::from_chars(pointer.data(), pointer.data() + pointer.size(), id);
  if (ec != std::errc() || id < 0 || end == pointer.data() ||
      (end != pointer.data() + pointer.size() && *end != '/'))
    return std::nullopt;
  return id;
}

void set_file(Diagnostics& d, std::string_view file) {
  for (Diagnostic& x : d)
    if (x.file.empty()) x.file = file;
}

std::string format_diagnostic(const Diagnostic& d, std::string_view file) {
  std::string out(d.file.empty() ? file : std::string_view(d.file));
  if (d.line > 0) out += fmt::format(":{}:{}", d.line, d.column);
  auto part = [&](std::string_view text) {
    if (!out.empty()) out += ": ";
    out += text;
  };
  if (!d.pointer.empty()) part(d.pointer);
  part(fmt::format("{}[{}]: {}", d.severity == Severity::Error ? "error" : "warning", d.code,
                   d.message));
  for (const Note& n : d.notes) {
    out += "\n    note: " + n.message;
    if (!n.pointer.empty()) out += " (" + n.pointer + ")";
  }
  return out;
}

nlohmann::ordered_json to_json(const Diagnostic& x) {
  nlohmann::ordered_json j;
  j["code"] = x.code;
  j["severity"] = x.severity == Severity::Error ? "error" : "warning";
  j["message"] = x.message;
  if (!x.file.empty()) j["file"] = x.file;
  j["pointer"] = x.pointer;
  if (x.line > 0) {
    j["line"] = x.line;
    j["column"] = x.column;
  }
  if (auto t = pointer_task(x.pointer)) j["task"] = *t;
  nlohmann::ordered_json notes = nlohmann::ordered_json::array();
  for (const Note& n : x.notes) notes.push_back({{"message", n.message}, {"pointer", n.pointer}});
  j["notes"] = std::move(notes);
  return j;
}

nlohmann::ordered_json to_json(const Diagnostics& d) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const Diagnostic& x : d) arr.push_back(to_json(x));
  return arr;
}

std::optional<Diagnostic> diagnostic_from_json(const nlohmann::ordered_json& j) {
  if (!j.is_object() || !j.contains("code") || !j["code"].is_string()) return std::nullopt;
  auto str = [&](const nlohmann::ordered_json& o, const char* k) {
    return o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string();
  };
  auto num = [&](const char* k) {
    return j.contains(k) && j[k].is_number_integer() && j[k].get<int64_t>() > 0 &&
                   j[k].get<int64_t>() < (int64_t(1) << 31)
               ? static_cast<int>(j[k].get<int64_t>())
               : 0;
  };
  Diagnostic d = error(str(j, "code"), str(j, "message"), str(j, "pointer"));
  if (str(j, "severity") == "warning") d.severity = Severity::Warning;
  d.file = str(j, "file");
  d.line = num("line");
  d.column = num("column");
  if (j.contains("notes") && j["notes"].is_array())
    for (const auto& n : j["notes"])
      if (n.is_object()) d.notes.push_back({str(n, "message"), str(n, "pointer")});
  return d;
}

std::string diagnostics_json(const Diagnostics& d, int level) {
  std::string out;
  append_json_value(out, to_json(d), level);
  return out;
}

Diagnostic error(std::string code, std::string message, std::string pointer) {
  Diagnostic d;
  d.code = std::move(code);
  d.message = std::move(message);
  d.pointer = std::move(pointer);
  return d;
}

Diagnostic warning(std::string code, std::string message, std::string pointer) {
  Diagnostic d = error(std::move(code), std::move(message), std::move(pointer));
  d.severity = Severity::Warning;
  return d;
}

}  // namespace amk::ir
