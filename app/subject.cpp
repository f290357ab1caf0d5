#include "app/subject.h"

#include <algorithm>

#include "ir/fileio.h"
#include "ir/json_io.h"

namespace amk::app {

ir::Result<Subject> load_subject(std::string_view arg) {
  Subject s;
  s.origin = std::string(arg);
  const auto names = lower::builtin_model_names();
  const bool builtin = std::find(names.begin(), names.end(), arg) != names.end();
  if (!builtin) {
    ir::Result<std::string> text = ir::read_file(s.origin);
    if (!text) return std::move(text.diagnostics);
    if (ir::looks_like_program(*text)) {
      ir::Result<ir::Program> p = ir::parse_program(*text);
      ir::set_file(p.diagnostics, s.origin);
      if (!p) return std::move(p.diagnostics);
      s.program = std::move(p.value);
      ir::Result<Subject> r(std::move(s));
      r.diagnostics = std::move(p.diagnostics);
      return r;
    }
    ir::Result<lower::ModelSpec> m = lower::parse_model(*text, s.origin);
    if (!m) return std::move(m.diagnostics);
    s.model = std::move(m.value);
    ir::Result<Subject> r(std::move(s));
    r.diagnostics = std::move(m.diagnostics);
    return r;
  }
  ir::Result<lower::ModelSpec> m = lower::load_model(arg);
  if (!m) return std::move(m.diagnostics);
  s.model = std::move(m.value);
  return s;
}

}  // namespace amk::app
