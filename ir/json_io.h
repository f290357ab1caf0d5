// Reading and writing AMK's on-disk JSON: AMK's load rules, byte-identical canonical output.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ir/program.h"
#include "ir/result.h"

namespace amk::ir {

/// Parses one target record (AMK's GpuTarget fields; unknown fields land in Target::extra).
Result<Target> parse_target(std::string_view text);
/// A target record in AMK's canonical bytes (the same writer as a program's "target").
std::string write_target(const Target& t);
/// Parses AMK JSON text. Never throws on bad input: every problem is a diagnostic with a pointer
/// and a line:column; warnings (a duplicate key, a BOM) accompany a program.
Result<Program> parse_program(std::string_view text);
/// Reads and parses a file; an unreadable file is an `io.read` diagnostic.
Result<Program> load_program(const std::string& path);
/// Parses a ScheduleConfig document: the fields a program's "config" has (one schema). Unknown
/// fields are kept in ScheduleConfig::extra, or with `strict` are `config.unknown-field` errors.
Result<ScheduleConfig> parse_config(std::string_view text, bool strict);
/// True when a JSON document's first key is one of a program's top-level fields (ir_version,
/// abi_version, meta, target, buffers, counters, tasks, pages, config): AMK writes ir_version
/// first, so telling a program from a model spec or config.json costs a few bytes, not a parse.
bool looks_like_program(std::string_view text);
/// Parses a JSON document that must be an object (`what` names it in errors: "a model spec"),
/// with the same diagnostics as a program (pointer, line:column; NaN/Infinity refused).
Result<JsonValue> parse_json_object(std::string_view text, std::string_view what);
/// amk's own JSON text (an object one of its writers gave) read back as a value by amk's reader,
/// which keeps a lone surrogate that a name read from the user may hold (nlohmann's parser throws
/// on one). Text that is not such an object is a bug in its writer: std::logic_error.
nlohmann::ordered_json reread_object(std::string_view text);
/// A ScheduleConfig as AMK writes a program's "config" (json.dumps(indent=2) layout, its key
/// order, unknown fields at the end): the text of a ScheduleConfig file; parse_config reads it.
std::string write_config(const ScheduleConfig& c);
/// A config's fields as one JSON object: AMK's key order, unknown fields after (config_key's text).
JsonValue config_json(const ScheduleConfig& c);
/// A target's fields as one JSON object: AMK's key order, unknown fields after.
JsonValue target_json(const Target& t);
/// A config's canonical text: one line, AMK's key order (its identity: equal configs, equal
/// keys; a search's duplicates, a program's meta.config_hash).
std::string config_key(const ScheduleConfig& c);
/// 64-bit FNV-1a of a text (of a config_key: the config's hash).
uint64_t config_hash(std::string_view key);
/// The exact bytes AMK's MegakernelProgram.to_json() writes (unknown fields kept at the end).
std::string write_program(const Program& p);

}  // namespace amk::ir
