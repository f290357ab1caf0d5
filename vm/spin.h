// Internal: how the VM's threads wait and time: a pause instruction for spin loops, a prefetch
// for writing, the clock and the spin budget before an idle worker blocks.
#pragma once

#include <chrono>
#include <cstdint>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define AMK_PAUSE() _mm_pause()
#else
#define AMK_PAUSE() std::this_thread::yield()
#endif

namespace amk::vm::detail {

/// Starts fetching the cache line at `p` for writing (PREFETCHW on x86, which CPUs without it
/// execute as a no-op), so a later store does not wait for another core to give it up.
inline void prefetch_for_write(const void* p) {
#if defined(__x86_64__) && defined(__GNUC__)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1);
#endif
}

using Clock = std::chrono::steady_clock;
constexpr uint32_t kNone = UINT32_MAX;
constexpr int kSpin = 2000;  // pauses before an idle worker blocks

inline int64_t ns_since(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
}

}  // namespace amk::vm::detail
