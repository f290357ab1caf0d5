// Seeded synthetic programs of any size for tests, fuzzing and benchmarks (`amk gen`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ir/program.h"

namespace amk::ir {

/// DAG families the generator knows.
enum class GenShape : uint8_t { Llama, Mesh, Chain, Fan };

/// Defects the generator can plant (each makes a program the validator must reject).
enum class GenDefect : uint8_t {
  None,
  DropWait,        ///< a tile loses the wait on its input's producer (RAW race)
  PartialWait,     ///< a wait on a shared counter asks for fewer than all producers
  Cycle,           ///< an early task waits on a later task's counter
  SelfWait,        ///< a task waits on its own out_counter
  Unsatisfiable,   ///< a threshold above the producer count
  OverlapTiles,    ///< two tiles of one output overlap (WAW)
  ExtraWriter,     ///< an unordered extra writer of an activation (WAW and RAW)
  SharePage,       ///< two live activations share a page (clobber); implies pages
  MissingBuffer,   ///< a task reads a buffer id that does not exist
  KvBeforeAppend,  ///< attention no longer waits for the KV append (KV race)
};

/// What to generate.
struct GenOptions {
  GenShape shape = GenShape::Llama;
  uint64_t tasks = 1000;  ///< approximate task count (exact for chain and fan)
  uint64_t seed = 1;
  bool nop = false;     ///< every task a NOP without buffers (same DAG), for scheduling benches
  bool pages = false;   ///< add a valid page allocation for activations
  int64_t num_sms = 0;  ///< > 0: assign SMs round-robin in list order (list order is topological)
  GenDefect defect = GenDefect::None;
};

/// A generated program and, for a planted defect, where it is.
struct GenResult {
  Program program;
  std::string defect_note;   ///< human description of the planted defect
  int64_t defect_task = -1;  ///< task the defect was planted in (-1: none)
  std::string not_planted;   ///< why the asked-for defect could not be planted (then none is)
};

/// Generates a program; deterministic for equal options on every platform. A planted defect is
/// one the validator rejects; one that has no place in the program is not planted (not_planted).
GenResult generate(const GenOptions& opt);
/// Parses a shape name (llama, mesh, chain, fan).
std::optional<GenShape> parse_gen_shape(std::string_view s);
/// Parses a defect name (none, drop-wait, partial-wait, cycle, ...).
std::optional<GenDefect> parse_gen_defect(std::string_view s);
/// All defect names, comma separated, for help texts.
std::string_view gen_defect_names();

}  // namespace amk::ir
