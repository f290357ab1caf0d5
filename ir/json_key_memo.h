// Internal: the key memo of the program reader. The bytes that lead to each key of the records of
// one kind repeat exactly in a canonical file, so the reader finds a record's keys by comparing
// bytes (see KeyMemo).
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <string_view>
#include <vector>

#include "ir/json_lexer.h"

namespace amk::ir::detail {

// The bytes that led to each key of the last object of one kind: from where the member began
// (after the '{' or the previous value) through the ':' and the blank after it, the key a view
// into the text without escapes. A canonical file repeats them exactly from object to object,
// so read_object finds the next object's keys by one comparison each. Bytes equal to a lead
// are lexed as that lead was (the same blanks, ',', key and ':'; a first member's lead has no
// ','), so a match reads exactly what the lexer would have read.
struct KeyMemo {
  static constexpr size_t kMaxLead = 64;
  struct Lead {
    std::array<char, kMaxLead> bytes{};  // the first `size` of them
    size_t size = 0;
    size_t key_at = 0;  // the key's first character in `bytes`
    size_t key_size = 0;
    uint8_t field = 0;  // a record reader's field of this key, plus one (0: not looked up yet)
  };
  static constexpr size_t kMaxMembers = 32;
  std::vector<Lead> leads;  // by member position; an empty one was not learned

  Lead* learned(size_t member) {
    return member < leads.size() && leads[member].size != 0 ? &leads[member] : nullptr;
  }

  // Records how member `member`'s key was reached: the text from `lead_at` to the lexer's
  // position (after its blanks), when the key is in the text and the lead is short; returns the
  // lead, or nullptr when none was learned.
  Lead* learn(size_t member, std::string_view text, size_t lead_at, std::string_view key,
              Lexer& lx) {
    if (member >= kMaxMembers || key.data() < text.data() ||
        key.data() + key.size() > text.data() + text.size())
      return nullptr;
    lx.ws();  // the value's leading blanks, which its reader would skip anyway
    const size_t end = lx.offset();
    if (end - lead_at > kMaxLead) return nullptr;
    if (leads.size() <= member) leads.resize(member + 1);
    Lead& l = leads[member];
    l.size = end - lead_at;
    std::memcpy(l.bytes.data(), text.data() + lead_at, l.size);
    l.key_at = static_cast<size_t>(key.data() - text.data()) - lead_at;
    l.key_size = key.size();
    l.field = 0;
    return &l;
  }
};

}  // namespace amk::ir::detail
