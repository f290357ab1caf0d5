#include "app/load.h"

#include <filesystem>

#include <fmt/format.h>

#include "formats/formats.h"
#include "ir/fileio.h"
#include "ir/json_io.h"
#include "targets/target.h"

namespace amk::app {
namespace {

// The key of a JSON object member starting at `i` (at its opening quote), or "" when there is
// none; `i` is left after the key's closing quote.
std::string_view key_at(std::string_view text, size_t& i) {
  auto ws = [&] {
    while (i < text.size() &&
           (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t'))
      ++i;
  };
  ws();
  if (i >= text.size() || text[i] != '"') return {};
  const size_t end = text.find('"', i + 1);
  if (end == std::string_view::npos) return {};
  std::string_view k = text.substr(i + 1, end - i - 1);
  i = end + 1;
  return k;
}

// Starting after `{` at i: the first key.
std::string_view first_key(std::string_view text, size_t i) {
  return key_at(text, i);
}

ir::Status apply_launch(ir::Program& p, const std::vector<std::string>& launch) {
  if (launch.empty()) return {};
  if (!p.runtime) p.runtime.emplace();
  ir::Diagnostics d;
  for (const std::string& kv : launch) ir::append(d, ir::apply_launch(*p.runtime, kv).diagnostics);
  return d;
}

}  // namespace

std::string_view format_name(Format f) {
  switch (f) {
    case Format::Amk:
      return "amk";
    case Format::Mpk:
      return "mpk";
    case Format::Pto:
      return "pto";
  }
  return "amk";
}

std::optional<Format> parse_format(std::string_view s) {
  for (Format f : {Format::Amk, Format::Mpk, Format::Pto})
    if (format_name(f) == s) return f;
  return std::nullopt;
}

std::optional<Format> detect_format(std::string_view text) {
  size_t i = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  while (i < text.size() &&
         (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t'))
    ++i;
  if (i >= text.size() || text[i] != '{') return std::nullopt;
  const std::string_view k = first_key(text, i + 1);
  if (k == "all_tasks" || k == "all_events" || k == "first_tasks") return Format::Mpk;
  if (k == "tensors" || k == "edges") return Format::Pto;
  if (k != "tasks") return ir::looks_like_program(text) ? std::optional(Format::Amk) : std::nullopt;
  // "tasks" first: PTO's dump unless its first task is amk's (PTO tasks start with task_id).
  size_t j = text.find('[', i);
  if (j == std::string_view::npos) return Format::Amk;
  ++j;
  while (j < text.size() &&
         (text[j] == ' ' || text[j] == '\n' || text[j] == '\r' || text[j] == '\t'))
    ++j;
  if (j < text.size() && text[j] == ']') {  // no tasks: the other top-level keys tell
    return text.find("\"tensors\"") != std::string_view::npos &&
                   text.find("\"edges\"") != std::string_view::npos
               ? Format::Pto
               : Format::Amk;
  }
  if (j >= text.size() || text[j] != '{') return Format::Amk;
  const std::string_view tk = first_key(text, j + 1);
  return tk == "task_id" || tk == "kernel_ids" || tk == "args" ? Format::Pto : Format::Amk;
}

namespace {

// A format forced against the file's own top-level keys would read nothing useful (amk's reader
// skips fields it does not know): refused, naming the format the keys say.
ir::Status forced_mismatch(const FormatOptions& o, std::string_view text,
                           const std::string& origin) {
  const std::optional<Format> seen = o.format ? detect_format(text) : std::nullopt;
  if (!seen || *seen == *o.format) return {};
  ir::Diagnostics d{ir::error(
      "format.mismatch",
      fmt::format("--format {}, but the file's top-level keys are those of {} (give --format {} "
                  "or leave it out)",
                  format_name(*o.format), format_name(*seen), format_name(*seen)),
      "")};
  ir::set_file(d, origin);
  return ir::Status(std::move(d));
}

// A PTO dump's scope_stats/scope_stats.jsonl beside the file at `path`, when none is given and
// it is there: only a file's own folder is looked in, never a text's.
FormatOptions with_stats_beside(const FormatOptions& o, const std::string& path) {
  FormatOptions out = o;
  if (!out.scope_stats.empty() || path.empty() || path == "-") return out;
  const auto beside =
      std::filesystem::path(path).parent_path() / "scope_stats" / "scope_stats.jsonl";
  std::error_code ec;
  if (std::filesystem::is_regular_file(beside, ec)) out.scope_stats = beside.string();
  return out;
}

}  // namespace

ir::Result<ir::Program> parse_program(std::string_view text, const std::string& origin,
                                      const FormatOptions& o) {
  if (ir::Status st = forced_mismatch(o, text, origin); !st) return std::move(st.diagnostics);
  const std::optional<Format> f = o.format ? o.format : detect_format(text);
  ir::Result<ir::Program> r;
  if (!f || *f == Format::Amk) {
    r = ir::parse_program(text);
    ir::set_file(r.diagnostics, origin);
  } else {
    formats::ReadOptions ro;
    ro.origin = origin;
    ir::Diagnostics warn;
    for (const std::string& kv : o.launch) {
      ir::Status st = ir::apply_launch(ro.launch, kv);
      if (!st) return std::move(st.diagnostics);
    }
    std::optional<ir::Target> target;
    if (!o.target.empty()) {
      ir::Result<targets::TargetSpec> t = targets::load_target(o.target);
      if (!t) return std::move(t.diagnostics);
      ro.num_sms = t->record.num_sms.i;
      ro.cores_aic = t->count_of("aic");
      ro.cores_aiv = t->count_of("aiv");
      target = t->record;
    }
    if (*f == Format::Mpk) {
      r = formats::read_mpk(text, ro);
    } else {
      const std::string& stats_path = o.scope_stats;
      if (!stats_path.empty()) {
        ir::Result<std::string> s = ir::read_file(stats_path);
        if (!s) return std::move(s.diagnostics);
        ro.scope_stats = std::move(*s);
        ro.scope_stats_origin = stats_path;
      }
      r = formats::read_pto(text, ro);
    }
    if (r && target) r->target = std::move(target);
    return r;
  }
  if (r) {
    ir::Status st = apply_launch(*r, o.launch);
    if (!st) return std::move(st.diagnostics);
  }
  return r;
}

ir::Result<ir::Program> load_program(const std::string& path, const FormatOptions& o) {
  if (o.format == Format::Amk || (!o.format && path != "-")) {
    // Detect from the first bytes; amk's own programs keep the reader's mapped-file path.
    ir::Result<ir::FileBytes> bytes = ir::FileBytes::open(path);
    if (!bytes) return std::move(bytes.diagnostics);
    if (ir::Status st = forced_mismatch(o, bytes->view(), path); !st)
      return std::move(st.diagnostics);
    const std::optional<Format> f = o.format ? o.format : detect_format(bytes->view());
    if (!f || *f == Format::Amk) {
      ir::Result<ir::Program> r = ir::load_program(path);
      ir::set_file(r.diagnostics, path);
      if (r) {
        ir::Status st = apply_launch(*r, o.launch);
        if (!st) return std::move(st.diagnostics);
      }
      return r;
    }
    FormatOptions forced = with_stats_beside(o, path);
    forced.format = f;
    return parse_program(bytes->view(), path, forced);
  }
  ir::Result<std::string> text = ir::read_file(path);
  if (!text) return std::move(text.diagnostics);
  return parse_program(*text, path, with_stats_beside(o, path));
}

}  // namespace amk::app
