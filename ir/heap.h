// The allocator settings under which amk reads and checks programs of millions of tasks.
#pragma once

namespace amk::ir {

/// Starts this process again, once, with glibc malloc's settings for big programs (huge pages, a
/// 64 MiB top pad, a 32 MiB mmap threshold) that the environment does not set already; returns
/// at once when they are in force, when AMK_SMALL_PAGES is set, under a sanitizer, or on failure.
/// What the process later runs sees the user's GLIBC_TUNABLES again. Call first thing in main.
void restart_with_big_heap(char** argv);

}  // namespace amk::ir
