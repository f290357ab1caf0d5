// JSON text as Python's json.dumps writes it (AMK's files) or as nlohmann's dump does (amk's
// own answers, logs and keys), a lone surrogate kept by both; Python repr for messages.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace amk::ir {

/// Appends Python's repr of a float ("1e-06", "10000.0", "0.28", "NaN"/"Infinity" as json does).
void append_py_float(std::string& out, double v);
/// Python's repr of a float as a string.
std::string py_float(double v);
/// Appends a code point as UTF-8 (a lone surrogate as its 3-byte form, as Python strings allow).
void append_utf8(std::string& out, uint32_t cp);
/// Appends a JSON string literal with ensure_ascii escaping (non-ASCII as \uXXXX, surrogate pairs).
void append_json_string(std::string& out, std::string_view utf8);
/// Appends a value in json.dumps(indent=2) layout; `level` is the current nesting depth.
void append_json_value(std::string& out, const nlohmann::ordered_json& v, int level);
/// json.dumps(v) on one line (", " and ": " between items): exact for every value amk's reader
/// gives, a lone surrogate as its \uXXXX escape and NaN / Infinity as Python writes them, where
/// nlohmann's dump throws on the one and writes null for the others. For text read back.
std::string json_line(const nlohmann::ordered_json& v);
/// Appends the newline plus 2*level spaces that json.dumps(indent=2) puts before an item.
void append_indent(std::string& out, int level);
/// Python's repr() of a JSON value as AMK's messages show it ('abc', True, None, 64.0, [1, 2]).
std::string py_repr(const nlohmann::ordered_json& v);
/// Python's repr() of a str.
std::string py_repr_str(std::string_view utf8);
/// Python's round(x, 2) then repr, as AMK's stats print weight_MB.
std::string py_round2(double x);

/// The length of the valid UTF-8 sequence at s[i] (strict: no surrogates, overlongs or code
/// points past U+10FFFF), or 0 when s[i] does not start one.
size_t utf8_sequence(std::string_view s, size_t i);
/// True when all of `s` is valid UTF-8 (utf8_sequence's rules): what a file written as UTF-8
/// text (MPK's JSON, a safetensors header) can hold.
bool is_utf8(std::string_view s);
/// Appends `s` with every byte that is not valid UTF-8 replaced by U+FFFD (a lone surrogate kept
/// by the reader as its 3-byte form becomes one U+FFFD): what reaches Python or a terminal.
void append_valid_utf8(std::string& out, std::string_view s);
/// `s` as valid UTF-8 (see append_valid_utf8).
std::string valid_utf8(std::string_view s);

/// `j.dump(indent)` byte for byte, except that it never throws and loses nothing amk's reader
/// gives: a lone surrogate (read from "\ud800", kept as its 3-byte form) is written as its \uXXXX
/// escape, which amk's reader, Python's json and JSON.parse read back as the same string. Bytes
/// no reader gives (not UTF-8, not a surrogate) are written as U+FFFD.
std::string dump_text(const nlohmann::ordered_json& j, int indent = -1);
/// dump_text for a nlohmann::json (keys in sorted order, as its dump writes them).
std::string dump_text(const nlohmann::json& j, int indent = -1);

}  // namespace amk::ir
