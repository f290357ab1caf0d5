// Loads one program file as `amk` does (its allocator settings, its reader) and exits without
// freeing it: the whole-process cost of the load alone, which bench/load_whole_process.sh times.
//   load_program FILE   (exit 0 when it loads, 1 when it does not)
#include <cstdio>
#include <cstdlib>

#include "app/heap.h"
#include "ir/json_io.h"

int main(int argc, char** argv) {
  amk::app::restart_with_big_heap(argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: load_program FILE\n");
    return 2;
  }
  auto r = amk::ir::load_program(argv[1]);
  if (!r.ok()) std::fprintf(stderr, "%s: does not load\n", argv[1]);
  std::fflush(stderr);
  std::_Exit(r.ok() ? 0 : 1);  // as amk keeps its program to the end: no time spent freeing it
}
