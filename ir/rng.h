// The one pseudo-random generator of amk: splitmix64, tiny, seedable and identical on every
// platform (std's distributions are not), for generated programs, random weights and the seeded
// interleavings of the simulator and the VM.
#pragma once

#include <cstdint>

namespace amk::ir {

/// splitmix64 over a 64-bit state; each user derives the state from its seed its own way, so
/// two users given the same seed draw different streams.
struct Rng {
  uint64_t state = 0;
  /// A generator whose state is `seed` mixed with `salt` (the user's own constant).
  static Rng seeded(uint64_t seed, uint64_t salt) {
    return Rng{seed * 0x9E3779B97F4A7C15ull + salt};
  }
  /// The next 64 random bits.
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Nearly uniform in [0, n) (0 when n is 0).
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }
  /// True with probability `percent`/100.
  bool chance(unsigned percent) { return below(100) < percent; }
};

}  // namespace amk::ir
