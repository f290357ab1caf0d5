// glibc malloc as amk uses it: its settings for programs of millions of tasks (applied by starting
// the process again), and what it holds.
#include "app/heap.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>

namespace amk::app {
namespace {

// A program of a million tasks is millions of small objects, and on a kernel that gives
// transparent huge pages only on request (the "madvise" mode) every 4 KiB of new heap is a page
// fault. Asked to, glibc's malloc requests huge pages for its heaps (hugetlb=1); a top pad of
// 64 MiB makes every heap a thread's arena opens writable and huge-paged at once (without it an
// arena grows a few pages at a time, and a loader's second thread is slowed by its faults); an
// mmap threshold of 32 MiB keeps blocks up to that size on the heap (a fixed top pad turns
// glibc's dynamic threshold off, and every block over 128 KiB would be mapped and faulted in
// anew). glibc reads them only at start-up, so amk starts itself again once with those the
// environment does not set already (AMK_SMALL_PAGES set: none), and then puts GLIBC_TUNABLES back
// as it was, so that what amk runs (a --measure command, git) sees the user's environment.
constexpr const char* kTunablesBefore = "AMK_GLIBC_TUNABLES_BEFORE";  // "=VALUE", or "" for unset

// Puts GLIBC_TUNABLES back as `before` (kTunablesBefore's value) records it (unused under the
// sanitizers, which keep their own allocator).
[[maybe_unused]] void restore_tunables(const char* before) {
  if (*before == '=')
    ::setenv("GLIBC_TUNABLES", before + 1, 1);
  else
    ::unsetenv("GLIBC_TUNABLES");
  ::unsetenv(kTunablesBefore);
}

}  // namespace

void restart_with_big_heap(char** argv) {
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  if (const char* before = std::getenv(kTunablesBefore)) {  // started again: malloc has read them
    restore_tunables(before);
    return;
  }
  if (std::getenv("AMK_SMALL_PAGES")) return;
  struct Setting {
    const char* tunable;
    const char* env;  // glibc's older name for it, which the user may have set instead
    const char* value;
  };
  static constexpr Setting kSettings[] = {
      {"glibc.malloc.hugetlb", nullptr, "1"},
      {"glibc.malloc.top_pad", "MALLOC_TOP_PAD_", "67108864"},
      {"glibc.malloc.mmap_threshold", "MALLOC_MMAP_THRESHOLD_", "33554432"},
  };
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  std::string value = tunables ? tunables : "";
  bool added = false;
  for (const Setting& s : kSettings) {
    if ((tunables && std::strstr(tunables, s.tunable) != nullptr) || (s.env && std::getenv(s.env)))
      continue;
    value += fmt::format("{}{}={}", value.empty() ? "" : ":", s.tunable, s.value);
    added = true;
  }
  if (!added) return;
  const std::string before = tunables ? "=" + std::string(tunables) : std::string();
  if (::setenv(kTunablesBefore, before.c_str(), 1) != 0) return;
  if (::setenv("GLIBC_TUNABLES", value.c_str(), 1) == 0)
    ::execv("/proc/self/exe", argv);  // returns only on failure: go on as we are
  restore_tunables(before.c_str());
#else
  (void)argv;
#endif
}

size_t heap_bytes_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

}  // namespace amk::app
