// glibc malloc as amk uses it: its settings for programs of millions of tasks, and what it holds.
#pragma once

#include <cstddef>

namespace amk::app {

/// Starts this process again, once, with glibc malloc's settings for big programs (huge pages, a
/// 64 MiB top pad, a 32 MiB mmap threshold) that the environment does not set already; returns
/// at once when they are in force, when AMK_SMALL_PAGES is set, under a sanitizer, or on failure.
/// What the process later runs sees the user's GLIBC_TUNABLES again. Call first thing in main.
void restart_with_big_heap(char** argv);

/// Bytes glibc malloc has handed out and not taken back: blocks on its heaps and blocks it mapped
/// on their own (the big vectors under its default settings).
size_t heap_bytes_in_use();

}  // namespace amk::app
