// AMK steps 3-4: acyclicity with AMK's exact DFS witness, plus one witness per other strongly
// connected component (Boost.Graph), each with the hops spelled out as counter waits.
#include <algorithm>
#include <limits>

#include <fmt/format.h>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/strong_components.hpp>

#include "validate/context.h"

namespace amk::validate {

// The rules this file checks, in emission order (rules() lists every family's).
constexpr Rule kGraphCycle{"graph.cycle",
                           "the producer->consumer graph has a cycle (structural deadlock)", true};

std::span<const Rule> cycle_rules() {
  static constexpr Rule kList[] = {kGraphCycle};
  return kList;
}

namespace {

constexpr uint8_t kWhite = 0, kGray = 1, kBlack = 2;

// Iterative white/gray/black DFS over adj = consumers (ascending), roots in `roots` order, visiting
// only tasks with in_scope(t). Returns the first cycle found as path[i:] + [v] (AMK's witness).
template <typename InScope>
std::vector<uint32_t> dfs_cycle(const ir::Graph& g, const std::vector<uint32_t>& roots,
                                InScope in_scope) {
  const uint32_t n = g.num_tasks();
  std::vector<uint8_t> color(n, kWhite);
  std::vector<uint32_t> at(n, 0);  // position in `path` of a gray node
  struct Frame {
    uint32_t node;
    uint32_t next;
  };
  std::vector<Frame> stack;
  std::vector<uint32_t> path;
  for (uint32_t root : roots) {
    if (color[root] != kWhite || !in_scope(root)) continue;
    stack.push_back({root, 0});
    path.push_back(root);
    at[root] = 0;
    color[root] = kGray;
    while (!stack.empty()) {
      Frame& f = stack.back();
      auto adj = g.consumers(f.node);
      bool advanced = false;
      while (f.next < adj.size()) {
        uint32_t v = adj[f.next++];
        if (!in_scope(v)) continue;
        if (color[v] == kGray) {
          std::vector<uint32_t> cyc(path.begin() + at[v], path.end());
          cyc.push_back(v);
          return cyc;
        }
        if (color[v] == kWhite) {
          color[v] = kGray;
          at[v] = static_cast<uint32_t>(path.size());
          stack.push_back({v, 0});
          path.push_back(v);
          advanced = true;
          break;
        }
      }
      if (!advanced) {
        color[stack.back().node] = kBlack;
        stack.pop_back();
        path.pop_back();
      }
    }
  }
  return {};
}

std::string node_label(const ir::Program& p, uint32_t t) {
  return fmt::format("{}:{}", t, p.tasks[t].display());
}

std::string render(const ir::Program& p, const std::vector<uint32_t>& cyc) {
  std::string s = "cycle: ";
  for (size_t i = 0; i < cyc.size(); ++i) s += (i ? " -> " : "") + node_label(p, cyc[i]);
  return s;
}

// Notes: the cycle from its lowest task, then each hop as "a increments c, b waits for it".
std::vector<ir::Note> hop_notes(const ir::Program& p, std::vector<uint32_t> cyc) {
  std::vector<ir::Note> notes;
  cyc.pop_back();  // drop the repeated closing node
  auto lowest = std::min_element(cyc.begin(), cyc.end());
  std::rotate(cyc.begin(), lowest, cyc.end());
  cyc.push_back(cyc.front());
  std::string canon = "from its lowest task: ";
  for (size_t i = 0; i < cyc.size(); ++i)
    canon += (i ? " -> " : "") + fmt::format("t{}:{}", cyc[i], p.tasks[cyc[i]].display());
  notes.push_back({canon, ""});
  for (size_t i = 0; i + 1 < cyc.size() && notes.size() < 17; ++i) {
    uint32_t a = cyc[i], b = cyc[i + 1];
    int64_t counter = p.tasks[a].out_counter;
    size_t k = 0;
    while (k < p.tasks[b].waits.size() && p.tasks[b].waits[k].counter != counter) ++k;
    int64_t thr = k < p.tasks[b].waits.size() ? p.tasks[b].waits[k].threshold : 0;
    notes.push_back({fmt::format("t{} increments counter {}, which t{} waits for (threshold {})", a,
                                 counter, b, thr),
                     ir::task_pointer(b, fmt::format("waits/{}", k))});
  }
  return notes;
}

}  // namespace

std::string check_cycles(Context& c) {
  const ir::Graph& g = c.g;
  if (g.acyclic()) return {};
  const ir::Program& p = c.p;
  const uint32_t n = g.num_tasks();
  std::vector<uint32_t> all(n);
  for (uint32_t t = 0; t < n; ++t) all[t] = t;
  std::vector<uint32_t> amk = dfs_cycle(g, all, [](uint32_t) { return true; });
  std::string witness = amk.empty() ? "cycle: <not localized>" : render(p, amk);
  const std::string prefix = "producer\u2192consumer graph has a CYCLE, structural deadlock. ";
  std::vector<ir::Note> notes;
  if (!amk.empty()) notes = hop_notes(p, amk);
  notes.push_back({"race proofs (RAW, WAW, KV, pages) need an acyclic graph and were not run", ""});
  c.error(kGraphCycle, prefix + witness, amk.empty() ? "" : ir::task_pointer(amk.front()),
          std::move(notes));

  // Every other strongly connected component holds at least one more cycle: report one each.
  // Vertices: tasks, then counter slots; edges task -> its slot -> the slot's waiters.
  using BGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  BGraph bg(n + g.num_slots());
  for (uint32_t t = 0; t < n; ++t) boost::add_edge(t, n + g.out_slot(t), bg);
  for (uint32_t s = 0; s < g.num_slots(); ++s)
    for (uint32_t w : g.waiters(s)) boost::add_edge(n + s, w, bg);
  std::vector<int> comp(boost::num_vertices(bg));
  boost::strong_components(
      bg, boost::make_iterator_property_map(comp.begin(), boost::get(boost::vertex_index, bg)));
  std::vector<int> size(comp.size(), 0);
  for (int x : comp) ++size[static_cast<size_t>(x)];
  std::vector<uint8_t> reported(comp.size(), 0);
  if (!amk.empty()) reported[static_cast<size_t>(comp[amk.front()])] = 1;
  for (uint32_t t = 0; t < n; ++t) {  // components in order of their lowest task
    auto k = static_cast<size_t>(comp[t]);
    if (size[k] < 2 || reported[k]) continue;
    reported[k] = 1;
    std::vector<uint32_t> roots{t};
    std::vector<uint32_t> cyc = dfs_cycle(g, roots, [&](uint32_t v) { return comp[v] == comp[t]; });
    if (cyc.empty()) continue;
    c.error(kGraphCycle, prefix + render(p, cyc), ir::task_pointer(cyc.front()), hop_notes(p, cyc));
  }
  return witness;
}

}  // namespace amk::validate
