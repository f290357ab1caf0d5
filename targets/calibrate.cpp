#include "targets/calibrate.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "targets/cost.h"
#include "targets/simulate.h"

namespace amk::targets {

namespace {

using json = nlohmann::ordered_json;

// A point ready to predict many times: its walk input and floor, built once.
struct Prepared {
  const Measurement* m;
  WalkInput in;
  double floor_us;
};

double predict(const Prepared& p, const Runtime& rt) {
  const ir::ScheduleConfig* cfg = p.m->program.config ? &*p.m->program.config : nullptr;
  const Machine machine(cfg, p.m->target, rt);
  const Walk w = simulate(p.in, machine, false);
  return bounded_makespan(w.makespan, w, machine, p.floor_us);
}

// The fields fitted: those asked for, or every fit field with a nonzero start.
ir::Result<std::vector<const RuntimeField*>> fitted_fields(const Runtime& start,
                                                           const std::vector<std::string>& asked) {
  std::vector<const RuntimeField*> out;
  std::vector<std::string> fit;
  for (const RuntimeField& f : runtime_fields())
    if (f.fit) fit.emplace_back(f.key);
  for (const RuntimeField& f : runtime_fields()) {
    if (!f.fit) continue;
    const bool want = asked.empty() ? start.*f.number > 0
                                    : std::find(asked.begin(), asked.end(), f.key) != asked.end();
    if (want) out.push_back(&f);
  }
  for (const std::string& a : asked)
    if (std::find(fit.begin(), fit.end(), a) == fit.end())
      return ir::error("runtime.fit", fmt::format("{} is not a constant calibrate fits (those are: "
                                                  "{})",
                                                  a, fmt::join(fit, ", ")));
  if (out.empty()) return ir::error("runtime.fit", "no constant to fit");
  return out;
}

// The runtime at point `theta`: each fitted field its start times e^theta, within its range.
Runtime at(const Runtime& start, const std::vector<const RuntimeField*>& fields,
           const std::vector<double>& theta) {
  Runtime r = start;
  for (size_t k = 0; k < fields.size(); ++k) {
    const RuntimeField& f = *fields[k];
    const double base = start.*f.number > 0 ? start.*f.number : std::max(f.min, 1.0);
    r.*f.number = std::clamp(base * std::exp(theta[k]), f.min, f.max);
  }
  return r;
}

// Nelder-Mead over theta from 0 (the start); returns the best point and counts evaluations.
template <class F>
std::vector<double> nelder_mead(F&& f, size_t dims, int budget, int& evaluations) {
  std::vector<std::vector<double>> x(dims + 1, std::vector<double>(dims, 0.0));
  for (size_t k = 0; k < dims; ++k) x[k + 1][k] = 0.5;
  std::vector<double> y(dims + 1);
  for (size_t i = 0; i <= dims; ++i) y[i] = f(x[i]);
  evaluations += static_cast<int>(dims + 1);
  std::vector<size_t> idx(dims + 1);
  while (evaluations < budget) {
    std::iota(idx.begin(), idx.end(), size_t{0});
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return y[a] < y[b]; });
    const size_t best = idx.front(), worst = idx.back(), second = idx[dims - (dims > 0 ? 1 : 0)];
    if (std::abs(y[worst] - y[best]) < 1e-12) break;
    std::vector<double> c(dims, 0.0);
    for (size_t i : idx)
      if (i != worst)
        for (size_t k = 0; k < dims; ++k) c[k] += x[i][k] / static_cast<double>(dims);
    auto towards = [&](double t) {
      std::vector<double> p(dims);
      for (size_t k = 0; k < dims; ++k) p[k] = c[k] + t * (x[worst][k] - c[k]);
      return p;
    };
    std::vector<double> r = towards(-1.0);
    const double fr = f(r);
    ++evaluations;
    if (fr < y[best]) {
      std::vector<double> e = towards(-2.0);
      const double fe = f(e);
      ++evaluations;
      x[worst] = fe < fr ? e : r;
      y[worst] = std::min(fe, fr);
    } else if (fr < y[second]) {
      x[worst] = r;
      y[worst] = fr;
    } else {
      std::vector<double> k = towards(fr < y[worst] ? -0.5 : 0.5);
      const double fk = f(k);
      ++evaluations;
      if (fk < std::min(fr, y[worst])) {
        x[worst] = k;
        y[worst] = fk;
      } else {  // shrink towards the best
        for (size_t i : idx)
          if (i != best) {
            for (size_t d = 0; d < dims; ++d) x[i][d] = x[best][d] + 0.5 * (x[i][d] - x[best][d]);
            y[i] = f(x[i]);
            ++evaluations;
          }
      }
    }
  }
  return x[static_cast<size_t>(std::min_element(y.begin(), y.end()) - y.begin())];
}

json report(const Calibration& c, const CalibrateOptions& o) {
  json points = json::array();
  for (const PointFit& p : c.points)
    points.push_back({{"label", p.label},
                      {"measured_us", p.measured_us},
                      {"before_us", p.before_us},
                      {"after_us", p.after_us},
                      {"error_percent", 100.0 * (p.after_us / p.measured_us - 1.0)}});
  json moved = json::object();
  for (const Moved& m : c.moved) moved[m.key] = {{"before", m.before}, {"after", m.after}};
  return {{"measurements", c.points.size()},
          {"from", o.origin},
          {"rms_log_error", {{"before", c.rms_before}, {"after", c.rms_after}}},
          {"moved", moved},
          {"points", points}};
}

}  // namespace

double rank_correlation(std::span<const double> a, std::span<const double> b) {
  const size_t n = std::min(a.size(), b.size());
  auto ranks = [n](std::span<const double> x) {
    std::vector<size_t> idx(n);
    std::iota(idx.begin(), idx.end(), size_t{0});
    std::sort(idx.begin(), idx.end(), [&](size_t i, size_t j) { return x[i] < x[j]; });
    std::vector<double> r(n);
    for (size_t i = 0; i < n;) {
      size_t j = i;
      while (j + 1 < n && x[idx[j + 1]] == x[idx[i]]) ++j;
      for (size_t k = i; k <= j; ++k) r[idx[k]] = 0.5 * static_cast<double>(i + j);
      i = j + 1;
    }
    return r;
  };
  if (n < 2) return 0;
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double mean = 0.5 * static_cast<double>(n - 1);
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < n; ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0.0;
}

double predict_us(const Measurement& m, const Runtime& rt) {
  const ir::Graph g = ir::Graph::build(m.program);
  return predict({&m, walk_input(m.program, g, nullptr), weight_floor_us(m.program, m.target)}, rt);
}

ir::Result<Calibration> calibrate(std::span<const Measurement> points, const Runtime& start,
                                  const CalibrateOptions& o) {
  if (points.empty()) return ir::error("runtime.fit", "no measurement to fit");
  std::vector<Prepared> prepared;
  for (const Measurement& m : points) {
    if (!(m.measured_us > 0) || !std::isfinite(m.measured_us))
      return ir::error("runtime.fit", fmt::format("{}: the measured latency {} is not positive",
                                                  m.label, m.measured_us));
    const ir::Graph g = ir::Graph::build(m.program);
    prepared.push_back(
        {&m, walk_input(m.program, g, nullptr), weight_floor_us(m.program, m.target)});
    if (!prepared.back().in.acyclic)
      return ir::error("runtime.fit", fmt::format("{}: the program has a cycle", m.label));
  }
  ir::Result<std::vector<const RuntimeField*>> fields = fitted_fields(start, o.fields);
  if (!fields) return std::move(fields.diagnostics);
  auto rms = [&](const Runtime& rt) {
    double s = 0;
    for (const Prepared& p : prepared)
      s += std::pow(std::log(predict(p, rt) / p.m->measured_us), 2);
    return std::sqrt(s / static_cast<double>(prepared.size()));
  };
  auto objective = [&](const std::vector<double>& theta) {
    double prior = 0;
    for (double t : theta) prior += t * t;
    const double e = rms(at(start, *fields, theta));
    return e * e + o.prior * prior;
  };
  Calibration c;
  std::vector<double> theta(fields->size(), 0.0);
  for (int round = 0; round < 3 && c.evaluations < o.max_evaluations; ++round) {
    // A restart from the best point so far: Nelder-Mead can stall on a flat face.
    auto shifted = [&](const std::vector<double>& d) {
      std::vector<double> t = theta;
      for (size_t k = 0; k < t.size(); ++k) t[k] += d[k];
      return objective(t);
    };
    const std::vector<double> step =
        nelder_mead(shifted, fields->size(), o.max_evaluations, c.evaluations);
    for (size_t k = 0; k < theta.size(); ++k) theta[k] += step[k];
  }
  c.runtime = at(start, *fields, theta);
  c.rms_before = rms(start);
  c.rms_after = rms(c.runtime);
  for (const Prepared& p : prepared)
    c.points.push_back({p.m->label, p.m->measured_us, predict(p, start), predict(p, c.runtime)});
  json sources = start.sources.is_null() ? json::object() : start.sources.json();
  for (const RuntimeField* f : *fields) {
    const double before = start.*f->number, after = c.runtime.*f->number;
    if (std::abs(after - before) <= 0.01 * std::max(std::abs(before), 1e-12)) continue;
    c.moved.push_back({std::string(f->key), before, after});
    sources[std::string(f->key)] =
        fmt::format("fitted by amk calibrate to {} measurements{}", points.size(),
                    o.origin.empty() ? "" : " (" + o.origin + ")");
  }
  c.runtime.sources = ir::JsonValue(sources);
  c.runtime.fit = ir::JsonValue(report(c, o));
  return c;
}

}  // namespace amk::targets
