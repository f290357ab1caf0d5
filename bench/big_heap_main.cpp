// main() of the benchmark programs that run under amk's allocator settings, as the amk binary does
// (app/heap.h: restart_with_big_heap; AMK_SMALL_PAGES=1 for glibc's defaults).
#include <benchmark/benchmark.h>

#include "app/heap.h"

int main(int argc, char** argv) {
  amk::app::restart_with_big_heap(argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
