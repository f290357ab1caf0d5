// How a search proposes ScheduleConfigs: AMK's policy (random, then one-knob mutations) and the
// default descent (every one-knob neighbour as a batch, then crossovers and perturbations).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "search/search.h"
#include "search/space.h"

namespace amk::search {

/// A proposal: a point and why.
struct Proposal {
  Point point;
  Source source;
};

/// The trials so far, with their points and the incumbent.
struct History {
  std::vector<Trial> trials;
  std::vector<Point> points;
  std::unordered_map<std::string, int64_t> by_key;  // config key -> first trial with it
  std::set<Point> seen;                             // every point proposed so far
  int64_t incumbent = -1;                           // best valid trial (earliest among equals)
  double score(int64_t i) const { return i < 0 ? INFINITY : trials[static_cast<size_t>(i)].score; }
};

/// A point's config key (what tells duplicates apart).
using KeyOf = std::function<std::string(const Point&)>;

/// How a search proposes configs: batches of proposals from the trials so far. A batch never
/// depends on the budget (the run cuts the last one where the budget ends), so the trials of a
/// search are a prefix of those of a search with a larger budget.
class Strategy {
 public:
  virtual ~Strategy() = default;
  /// The next batch of proposals (empty: done), given the trials so far.
  virtual std::vector<Proposal> next(const History& h) = 0;
};

/// AMK's search(): after the start, round((budget - 1) x 0.35) random configs, then one-knob
/// mutations of the incumbent, one at a time.
std::unique_ptr<Strategy> amk_strategy(const Space& s, uint64_t seed, int64_t budget);
/// The default: steepest one-knob descent, then diversification (see DescentStrategy).
std::unique_ptr<Strategy> descent_strategy(const Space& s, uint64_t seed, int64_t min_batch,
                                           KeyOf key_of);

}  // namespace amk::search
