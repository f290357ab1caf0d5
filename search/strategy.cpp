#include "search/strategy.h"

#include <algorithm>
#include <optional>
#include <random>
#include <string_view>
#include <unordered_set>

namespace amk::search {

namespace {

// Counts the proposals whose config is new: not tried before, not earlier in the batch.
struct Fresh {
  const History& h;
  const KeyOf& key_of;
  std::unordered_set<std::string> keys;
  size_t n = 0;
  void add(const Point& p) {
    std::string k = key_of(p);
    if (!h.by_key.count(k) && keys.insert(std::move(k)).second) ++n;
  }
};

// Shared moves over a space.
struct Moves {
  const Space& space;
  std::mt19937_64 rng;
  size_t below(size_t n) { return static_cast<size_t>(rng() % n); }
  Point random_point() {
    Point p(space.knobs.size());
    for (size_t k = 0; k < p.size(); ++k)
      p[k] = static_cast<uint16_t>(below(space.knobs[k].values.size()));
    return p;
  }
  // Whether some one-knob change of `p` was never proposed.
  bool has_unseen_neighbour(const History& h, Point p) const {
    for (size_t k = 0; k < p.size(); ++k) {
      const uint16_t was = p[k];
      for (size_t v = 0; v < space.knobs[k].values.size(); ++v) {
        p[k] = static_cast<uint16_t>(v);
        if (v != was && !h.seen.count(p)) return true;
      }
      p[k] = was;
    }
    return false;
  }
  // One knob changed to another of its values, chosen uniformly (AMK's mutate_config).
  Point mutate(Point p) {
    std::vector<size_t> movable;
    for (size_t k = 0; k < p.size(); ++k)
      if (space.knobs[k].values.size() > 1) movable.push_back(k);
    if (movable.empty()) return p;
    const size_t k = movable[below(movable.size())];
    const size_t n = space.knobs[k].values.size();
    p[k] = static_cast<uint16_t>((p[k] + 1 + below(n - 1)) % n);
    return p;
  }
};

// AMK's search(): after the start, round((budget - 1) x 0.35) random configs, then one-knob
// mutations of the incumbent, one at a time (the run keeps a trial iff strictly better).
class AmkStrategy : public Strategy {
 public:
  AmkStrategy(const Space& s, uint64_t seed, int64_t budget)
      : mv_{s, std::mt19937_64(seed)},
        explore_(static_cast<int64_t>(std::llround(static_cast<double>(budget - 1) * 0.35))) {}
  std::vector<Proposal> next(const History& h) override {
    if (explored_ < explore_) {  // independent of the results: one batch
      std::vector<Proposal> batch;
      for (; explored_ < explore_; ++explored_)
        batch.push_back({mv_.random_point(), Source::Random});
      return batch;
    }
    const Point& inc = h.points[static_cast<size_t>(h.incumbent >= 0 ? h.incumbent : 0)];
    if (!mv_.has_unseen_neighbour(h, inc)) return {};  // nothing a mutation could still find
    return {{mv_.mutate(inc), Source::Mutate}};
  }

 private:
  Moves mv_;
  int64_t explore_, explored_ = 0;
};

// The knob at which `p` differs from `at`, when it differs at exactly one.
std::optional<size_t> one_knob_apart(const Point& at, const Point& p) {
  std::optional<size_t> changed;
  for (size_t k = 0; k < at.size(); ++k)
    if (p[k] != at[k]) {
      if (changed) return std::nullopt;
      changed = k;
    }
  return changed;
}

// The default: steepest descent over every one-knob neighbour of the current point (a batch the
// workers evaluate together); when two or more knobs improved the point alone, their changes
// together (one more trial: where knobs act independently, several steps at once) before the
// descent moves to the better of that and the best neighbour; at a local optimum, first the
// repairs of the neighbours the lowering refused because of another knob (a smaller N_tile
// refused for a fusion preset that cannot fuse it is tried with each other preset: the two
// knobs move together where neither moves alone), then a diversification batch (crossovers of the
// best points, perturbations of the incumbent, random points) whose best becomes the new current
// point, and descent resumes. Knobs that keep the tiling come first in a batch, so the workers'
// lowerings reuse their tile/fuse/deps work.
class DescentStrategy : public Strategy {
 public:
  DescentStrategy(const Space& s, uint64_t seed, int64_t min_batch, KeyOf key_of)
      : mv_{s, std::mt19937_64(seed)},
        min_batch_(static_cast<size_t>(std::max<int64_t>(min_batch, 0))),
        key_of_(std::move(key_of)) {
    for (const Knob& k : s.knobs) {  // "tiling.gemv.N_tile" -> "/config/tiling/gemv/N_tile"
      std::string ptr = "/config/" + k.path;
      std::replace(ptr.begin() + 8, ptr.end(), '.', '/');
      pointers_.push_back(std::move(ptr));
    }
  }
  std::vector<Proposal> next(const History& h) override {
    if (current_ < 0) current_ = 0;  // the start
    if (!last_.empty()) {            // the results of the previous batch (remember clears them)
      int64_t best = -1;
      for (int64_t i : last_)
        if (best < 0 || h.score(i) < h.score(best)) best = i;
      if (combining_) {  // the combination (and a widened batch's others) against the best
                         // neighbour
        current_ = h.score(best) < h.score(moving_to_) ? best : moving_to_;
        combining_ = false;
      } else if (diversifying_ || h.score(best) < h.score(current_)) {
        const bool descended = !diversifying_;
        diversifying_ = false;
        if (std::optional<Point> both = descended ? combined(h, best) : std::nullopt) {
          moving_to_ = best;
          combining_ = true;
          std::vector<Proposal> batch = {{std::move(*both), Source::Combine}};
          if (min_batch_ > 1) widen(h, batch);
          return remember(h, std::move(batch));
        }
        current_ = best;
      } else {
        stuck_ = true;
        diversifying_ = false;
      }
    }
    std::vector<Proposal> batch;
    if (!stuck_) {
      neighbours(h, h.points[static_cast<size_t>(current_)], batch);
      if (!batch.empty() && batch.size() < min_batch_) widen(h, batch);
    }
    if (batch.empty() && repaired_ != current_) {  // a local optimum: its repairs first
      repaired_ = current_;
      repairs(h, batch);
      if (!batch.empty()) {
        if (batch.size() < min_batch_) widen(h, batch);
        stuck_ = false;
        return remember(h, std::move(batch));
      }
    }
    if (batch.empty()) {  // a local optimum (or every neighbour already seen): diversify
      batch = diversify(h);
      diversifying_ = true;
      stuck_ = false;
    }
    return remember(h, std::move(batch));
  }

 private:
  // Appends the unseen one-knob neighbours of `at` that `batch` does not hold yet.
  void neighbours(const History& h, const Point& at, std::vector<Proposal>& batch) const {
    std::vector<Proposal> same_tiling, retile;
    for (size_t k = 0; k < at.size(); ++k) {
      const Knob& knob = mv_.space.knobs[k];
      const bool tiling = knob.path.starts_with("tiling.") || knob.path == "fusion_grouping";
      for (size_t v = 0; v < knob.values.size(); ++v) {
        if (v == at[k]) continue;
        Point p = at;
        p[k] = static_cast<uint16_t>(v);
        if (seen(h, p) || std::any_of(batch.begin(), batch.end(),
                                      [&](const Proposal& q) { return q.point == p; }))
          continue;
        (tiling ? retile : same_tiling).push_back({std::move(p), Source::Neighbor});
      }
    }
    batch.insert(batch.end(), same_tiling.begin(), same_tiling.end());
    batch.insert(batch.end(), retile.begin(), retile.end());
  }

  // The knob a config error's pointer names (npos: none).
  size_t knob_named(std::string_view pointer) const {
    for (size_t k = 0; k < pointers_.size(); ++k)
      if (pointer.starts_with(pointers_[k]) &&
          (pointer.size() == pointers_[k].size() || pointer[pointers_[k].size()] == '/'))
        return k;
    return std::string::npos;
  }

  // Appends the repairs of the current point's refused neighbours: each one-knob neighbour the
  // lowering or the proof refused, where its first error names another knob, with that knob at
  // each of its other values (unseen points only, in trial order).
  void repairs(const History& h, std::vector<Proposal>& batch) const {
    const Point& at = h.points[static_cast<size_t>(current_)];
    for (size_t i = 0; i < h.trials.size(); ++i) {
      const Trial& t = h.trials[i];
      if (t.valid || t.diagnostics.empty()) continue;
      const std::optional<size_t> changed = one_knob_apart(at, h.points[i]);
      const size_t j = knob_named(t.diagnostics.front().pointer);
      if (!changed || j == std::string::npos || j == *changed) continue;
      for (size_t v = 0; v < mv_.space.knobs[j].values.size(); ++v) {
        Point p = h.points[i];
        if (v == p[j]) continue;
        p[j] = static_cast<uint16_t>(v);
        if (seen(h, p) || std::any_of(batch.begin(), batch.end(),
                                      [&](const Proposal& q) { return q.point == p; }))
          continue;
        batch.push_back({std::move(p), Source::Repair});
      }
    }
  }

  // A batch of at least min_batch new configs: the neighbours of the next best valid points (by
  // score, the earliest first among equals) join the current point's until it holds that many
  // or none is left.
  void widen(const History& h, std::vector<Proposal>& batch) const {
    Fresh fresh{h, key_of_, {}, 0};
    for (const Proposal& q : batch) fresh.add(q.point);
    std::vector<int64_t> best;
    for (int64_t i = 0; i < static_cast<int64_t>(h.trials.size()); ++i)
      if (i != current_ && h.trials[static_cast<size_t>(i)].valid &&
          h.trials[static_cast<size_t>(i)].duplicate_of < 0)
        best.push_back(i);
    std::stable_sort(best.begin(), best.end(),
                     [&](int64_t a, int64_t b) { return h.score(a) < h.score(b); });
    for (size_t r = 0; r < best.size() && fresh.n < min_batch_; ++r) {
      const size_t from = batch.size();
      neighbours(h, h.points[static_cast<size_t>(best[r])], batch);
      for (size_t i = from; i < batch.size(); ++i) {
        fresh.add(batch[i].point);
        if (fresh.n == min_batch_) {
          batch.resize(i + 1);
          break;
        }
      }
    }
  }

  std::vector<Proposal> diversify(const History& h) {
    // The best distinct valid points so far.
    std::vector<int64_t> elite;
    for (int64_t i = 0; i < static_cast<int64_t>(h.trials.size()); ++i)
      if (h.trials[static_cast<size_t>(i)].valid &&
          h.trials[static_cast<size_t>(i)].duplicate_of < 0)
        elite.push_back(i);
    std::stable_sort(elite.begin(), elite.end(),
                     [&](int64_t a, int64_t b) { return h.score(a) < h.score(b); });
    if (elite.size() > 4) elite.resize(4);
    std::vector<Proposal> batch;
    const Point& inc = h.points[static_cast<size_t>(h.incumbent >= 0 ? h.incumbent : 0)];
    // kDiversify proposals, or with min_batch that many new configs.
    const size_t want = std::max(kDiversify, min_batch_);
    Fresh fresh{h, key_of_, {}, 0};
    for (size_t attempt = 0; attempt < 8 * want && (min_batch_ ? fresh.n : batch.size()) < want;
         ++attempt) {
      Proposal p;
      const auto kind = static_cast<int>(attempt % 4);
      if (kind < 2 && elite.size() >= 2) {  // uniform crossover of two elites
        const Point& a = h.points[static_cast<size_t>(elite[mv_.below(elite.size())])];
        const Point& b = h.points[static_cast<size_t>(elite[mv_.below(elite.size())])];
        p.point = a;
        for (size_t k = 0; k < a.size(); ++k)
          if (mv_.below(2)) p.point[k] = b[k];
        p.source = Source::Crossover;
      } else if (kind < 3) {  // two or three knobs of the incumbent changed
        p.point = mv_.mutate(mv_.mutate(inc));
        if (mv_.below(2)) p.point = mv_.mutate(p.point);
        p.source = Source::Perturb;
      } else {
        p.point = mv_.random_point();
        p.source = Source::Random;
      }
      if (seen(h, p.point) || std::any_of(batch.begin(), batch.end(),
                                          [&](const Proposal& q) { return q.point == p.point; }))
        continue;
      if (min_batch_) fresh.add(p.point);
      batch.push_back(std::move(p));
    }
    if (batch.empty()) batch.push_back({mv_.random_point(), Source::Random});  // let the run dedup
    return batch;
  }

  // Notes the trials a batch will be, whose results the next call reads.
  std::vector<Proposal> remember(const History& h, std::vector<Proposal> batch) {
    const int64_t first = static_cast<int64_t>(h.trials.size());
    last_.clear();
    for (size_t i = 0; i < batch.size(); ++i) last_.push_back(first + static_cast<int64_t>(i));
    return batch;
  }

  // The current point with each knob set to the value that improved it most alone, among the
  // last batch's one-knob neighbours of it (the earliest among equals); nullopt when fewer than
  // two knobs improved it (the best neighbour is that point) or the combination was tried.
  std::optional<Point> combined(const History& h, int64_t best) const {
    const Point& at = h.points[static_cast<size_t>(current_)];
    const double base = h.score(current_);
    std::vector<int64_t> by_knob(at.size(), -1);  // the best improving neighbour per knob
    for (int64_t i : last_) {
      const std::optional<size_t> changed = one_knob_apart(at, h.points[static_cast<size_t>(i)]);
      if (!changed || !(h.score(i) < base)) continue;
      int64_t& b = by_knob[*changed];
      if (b < 0 || h.score(i) < h.score(b)) b = i;
    }
    Point both = at;
    size_t knobs = 0;
    for (size_t k = 0; k < at.size(); ++k)
      if (by_knob[k] >= 0) {
        both[k] = h.points[static_cast<size_t>(by_knob[k])][k];
        ++knobs;
      }
    if (knobs < 2 || both == h.points[static_cast<size_t>(best)] || seen(h, both))
      return std::nullopt;
    return both;
  }

  static bool seen(const History& h, const Point& p) { return h.seen.count(p) > 0; }

  static constexpr size_t kDiversify = 8;
  Moves mv_;
  size_t min_batch_;  // 0: the neighbourhood as it comes
  KeyOf key_of_;
  int64_t current_ = -1;
  int64_t moving_to_ = -1;  // while combining: the best neighbour, the move without it
  int64_t repaired_ = -1;   // the last local optimum whose refused neighbours were repaired
  std::vector<std::string> pointers_;  // each knob's JSON pointer in a lowering's errors
  std::vector<int64_t> last_;
  bool diversifying_ = false, stuck_ = false, combining_ = false;
};

}  // namespace

std::unique_ptr<Strategy> amk_strategy(const Space& s, uint64_t seed, int64_t budget) {
  return std::make_unique<AmkStrategy>(s, seed, budget);
}

std::unique_ptr<Strategy> descent_strategy(const Space& s, uint64_t seed, int64_t min_batch,
                                           KeyOf key_of) {
  return std::make_unique<DescentStrategy>(s, seed, min_batch, std::move(key_of));
}

}  // namespace amk::search
