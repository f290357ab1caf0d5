// Internal: an exact image of a program as words, in the parts the incremental proof tells apart.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/program.h"

namespace amk::validate {

/// Every field of a program, bit for bit, as words: two programs with equal images are equal in
/// everything a proof reads (floats by their bits, JSON by its types, so -0.0 and 0.0, 1 and 1.0
/// differ), whatever the proof reads. The tasks but their SMs, the tasks' SMs, the page
/// allocation, meta and the config are kept apart; `core` holds everything else.
struct ProgramImage {
  /// Words and how many of them are in use (the memory only grows).
  struct Words {
    std::vector<uint64_t> w;
    size_t n = 0;
  };
  /// Which parts a rebuild found different from the image it overwrote.
  struct Changes {
    bool core = true, tasks = true, sm = true, pages = true, meta = true, config = true;
  };
  Words core;    ///< versions, target, buffers, counters, extra, runtime
  Words tasks;   ///< the tasks but their SMs
  Words sm;      ///< each task's SM: presence, value
  Words pages;   ///< the page allocation
  Words meta;    ///< meta
  Words config;  ///< the schedule config
  /// Where each task's words start in `tasks`.
  std::vector<size_t> task_at;
  /// Per task: 1 when it (but its SM) differs from the task at its index in the image the last
  /// rebuild overwrote, or that image had none there. Set by a rebuild that compares the tasks.
  std::vector<uint8_t> task_changed;
  /// Writes the image of `p` over the one held, word by word, and says which parts differ from
  /// it (one pass: each word is compared as it is stored, where it is stored). `tasks_kept`: the
  /// caller knows p's tasks but their SMs to be those imaged (Validator::validate's stamp), so
  /// their words are neither read nor written, and `tasks` is reported unchanged.
  Changes rebuild(const ir::Program& p, bool tasks_kept = false);
};

}  // namespace amk::validate
