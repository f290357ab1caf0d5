// A name picked from a closed set (a dtype, a quantisation, a search algorithm): one parser and
// one wording for every front end, kept by the layer that owns the names.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "ir/diagnostic.h"
#include "ir/result.h"

namespace amk::ir {

/// One name of a closed set and the value it stands for.
template <class E>
struct Choice {
  std::string_view name;
  E value;
};

/// "A, B or C" of the choices' names.
template <class E>
std::string choice_names(std::span<const Choice<E>> choices) {
  std::string out;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i) out += i + 1 == choices.size() ? " or " : ", ";
    out += choices[i].name;
  }
  return out;
}

/// The value named `s`, or a `usage.option` error "<what> '<s>': use A, B or C" (`what` names the
/// argument as its front end spells it: "--dtype", "dtype").
template <class E>
Result<E> choose(std::string_view what, std::string_view s, std::span<const Choice<E>> choices) {
  for (const Choice<E>& c : choices)
    if (c.name == s) return c.value;
  return error("usage.option", fmt::format("{} '{}': use {}", what, s, choice_names(choices)));
}

}  // namespace amk::ir
