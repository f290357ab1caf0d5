// Internal: a big top-level array of records (tasks, buffers, counters; a foreign format's
// records) read by several threads, for the program reader of ir/json_read.cpp and JsonCursor.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/json_reader.h"
#include "ir/parallel.h"

namespace amk::ir::detail {

// What opens each element of the array opened at `open` after the first: a ',', the blanks
// between '[' and the first element's '{', and that element's bytes up to the end of its first
// key (",\n    {\n      \"id\"" in AMK's layout, ",{\"task_id\"" in PTO's compact one, where
// ",{" alone opens nested objects too); "" when the array does not start with an object.
inline std::string element_separator(std::string_view text, size_t open) {
  const size_t first = text.find_first_not_of(" \t\r\n", open + 1);
  if (first == std::string_view::npos || text[first] != '{') return {};
  size_t end = first + 1;  // past the '{', or past the first key's closing quote
  const size_t quote = text.find_first_not_of(" \t\r\n", first + 1);
  if (quote != std::string_view::npos && text[quote] == '"') {
    const size_t close = text.find_first_of("\"\\", quote + 1);
    if (close != std::string_view::npos && text[close] == '"') end = close + 1;
  }
  return "," + std::string(text.substr(open + 1, first - open - 1)) +
         std::string(text.substr(first, end - first));
}

// A big top-level array (tasks, buffers, counters), read by several threads: the array is cut
// at guessed element boundaries (element_separator) spread over its guessed extent, each thread
// reads the elements of one piece with `read_one(reader, element)` (a reader R of its own, whose
// adopt(piece_reader), when R has one, is then given each piece's), and a piece counts only
// when the piece before it ended exactly where it began. Ids are checked against positions
// once merged. False (nothing kept, the caller reads sequentially) for a small array, a guess
// that did not hold, or any diagnostic, so every problem is reported exactly as the sequential
// read reports it.
template <class R, typename T, typename Read>
bool JsonReader::read_in_parallel(std::vector<T>& out, std::string_view key, Read read_one,
                                  bool with_ids) {
  // Arrays of at least this size are read in pieces: below it, starting the threads costs about
  // what they save.
  constexpr size_t kMinBytes = 4u << 20;
  const size_t pieces = max_threads();
  if (pieces < 2 || text_.size() - lx_.offset() < kMinBytes || !diags_.empty() || depth_ != 1 ||
      lx_.peek() != '[')
    return false;
  const size_t open = lx_.offset();  // at the '[' (peek skipped the whitespace)
  const std::string sep = element_separator(text_, open);
  if (sep.empty()) return false;
  const std::string_view gap = std::string_view(sep).substr(1, sep.find('{') - 1);
  const size_t end = guess_array_end(open, gap, sep, kMinBytes);
  if (end - open < kMinBytes) return false;
  // Guessed starts: just after a separator's ',', spread over the guessed extent.
  std::vector<size_t> starts{open + 1};
  const size_t span = end - open;
  for (size_t k = 1; k < pieces; ++k) {
    const size_t at = text_.find(sep, open + span * k / pieces);
    if (at == std::string_view::npos || at >= end) break;
    if (at + 1 > starts.back()) starts.push_back(at + 1);
  }
  if (starts.size() < 2) return false;
  struct Piece {
    std::vector<T> items;
    std::vector<int64_t> ids;
    size_t end = 0;       // the offset after its last element's ',' (or after ']')
    bool closed = false;  // it read the array's ']'
    bool ok = false;      // no diagnostic, no syntax error, ended at a ',' or ']'
  };
  std::vector<Piece> got(starts.size());
  std::vector<std::optional<R>> readers(starts.size());  // kept for R::adopt
  auto read_piece = [&](size_t k) {
    Piece& pc = got[k];
    R& piece = readers[k].emplace(text_);
    JsonReader& r = piece;
    r.push(key);
    r.lx_.seek(starts[k]);
    r.consumed_ = consumed_;
    r.released_ = starts[k];
    const size_t stop = k + 1 < starts.size() ? starts[k + 1] : std::string_view::npos;
    try {
      for (;;) {
        if (r.lx_.peek() != '{') return;
        const size_t at = r.lx_.offset();
        r.push(pc.items.size());
        pc.items.emplace_back();
        read_one(piece, pc.items.back());
        r.pop();
        // Room, at the first element's size, for the piece (no doubling slack), and in the
        // first piece for the whole array: it becomes the result, and the others are moved
        // to its end without a copy of it (capacity never touched costs no memory).
        // Only a hint: a first element far smaller than the rest asks for too much.
        if (pc.items.size() == 1) {
          const size_t bytes = std::max<size_t>(r.lx_.offset() - at, 1);
          try {
            pc.items.reserve(((k == 0 ? end : std::min(stop, end)) - at) / bytes * 5 / 4 + 16);
          } catch (const std::bad_alloc&) {
          }
        }
        if (!r.diags_.empty()) return;  // a wrong guess, or a problem the caller reports
        r.consume_behind();
        const int c = r.lx_.peek();
        r.lx_.advance();
        if (c == ']') {
          pc.closed = true;
          break;
        }
        if (c != ',') return;
        if (r.lx_.offset() >= stop) break;
      }
      pc.end = r.lx_.offset();
      if (r.consumed_) r.consumed_(r.released_, pc.end);  // its tail too: nothing re-reads it
      pc.ok = !with_ids || r.ids_.size() == pc.items.size();
      pc.ids = std::move(r.ids_);
    } catch (const SyntaxError&) {
    } catch (const TooManyErrors&) {
    }
  };
  run_parts(starts.size(), starts.size(), [&](size_t k, size_t, size_t) { read_piece(k); });
  // Chain the pieces: each must begin where the one before ended, until one closes the array.
  size_t n = 0, used = 0;
  for (; used < got.size(); ++used) {
    const Piece& pc = got[used];
    if (!pc.ok || (used > 0 && got[used - 1].end != starts[used])) return false;
    for (int64_t id : pc.ids)
      if (id != static_cast<int64_t>(n++)) return false;
    if (!with_ids) n += pc.items.size();
    if (pc.closed) break;
  }
  if (used == got.size()) return false;  // never closed: cannot happen when the chain holds
  // A format's reader may keep what its records point into (R::adopt takes it from a piece's).
  if constexpr (requires(R & a, R & b) { a.adopt(b); })
    for (size_t k = 0; k <= used; ++k) static_cast<R&>(*this).adopt(*readers[k]);
  out = std::move(got[0].items);
  out.reserve(n);
  for (size_t k = 1; k <= used; ++k) {
    for (T& x : got[k].items) out.push_back(std::move(x));
    got[k].items = std::vector<T>();  // (= {} would keep the memory)
  }
  lx_.seek(got[used].end);
  return true;
}

// Where the array opened at `open` (its first element after the whitespace `gap`, each later one
// opened by `sep`) probably ends: in an indented layout, the first '}' then ']' at the
// indentation of the line that opened it (or the end of the text when there is none); in a
// compact one, just past its last separator, found by bisection with a probe of a window at each
// step (an element longer than the window may end the guess early). Only a guess:
// read_in_parallel's chain check makes a wrong one cost time, never correctness. An indented
// array of fewer than `small` bytes is searched only as far as that (it is read next by one
// thread, which then finds its bytes already read in); the rest of a longer one by several
// threads.
inline size_t JsonReader::guess_array_end(size_t open, std::string_view gap, std::string_view sep,
                                          size_t small) const {
  if (gap.find('\n') == std::string_view::npos) {
    constexpr size_t kWindow = 64u << 10;
    size_t lo = open, hi = text_.size();
    while (hi - lo > kWindow) {
      const size_t mid = lo + (hi - lo) / 2;
      const size_t at = text_.substr(0, std::min(mid + kWindow, hi)).find(sep, mid);
      if (at == std::string_view::npos) {
        hi = mid;
      } else {
        lo = at + 1;
      }
    }
    return hi;
  }
  const size_t line = text_.rfind('\n', open);
  const size_t from = line == std::string_view::npos ? 0 : line + 1;
  const size_t indent = text_.find_first_not_of(' ', from) - from;
  const std::string close = "}\n" + std::string(indent, ' ') + "]";
  const size_t near = open + small;
  size_t at = text_.substr(0, std::min(near, text_.size())).find(close, open);
  if (at == std::string_view::npos && near < text_.size())
    at = detail::find_in_parallel(text_, close, near - close.size() + 1);
  return at == std::string_view::npos ? text_.size() : at + close.size();
}

// A top-level array of records: in parallel when it is big, else (or when that did not hold)
// one element after the other.
template <class R, typename T, typename Read, typename Each>
void JsonReader::read_records(std::vector<T>& out, std::string_view key, Read read_one, Each each,
                              bool with_ids) {
  out.clear();
  const size_t at = lx_.offset();
  if (read_in_parallel<R>(out, key, read_one, with_ids)) return;  // else it kept nothing
  lx_.seek(at);
  read_list(out, each);
}

}  // namespace amk::ir::detail
