#include "app/view.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
// GCC 12 reports Boost.Graph's edge iterator (inside write_graphviz) as maybe-uninitialized: a
// false positive in the library's header, silenced for these headers only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graphviz.hpp>
#include <boost/graph/subgraph.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include <nlohmann/json.hpp>

#include "ir/diff.h"
#include "ir/graph.h"
#include "ir/json_io.h"
#include "ir/pyjson.h"
#include "ir/schema.h"
#include "targets/cost.h"

namespace amk::app {
namespace {

using ojson = nlohmann::ordered_json;

std::string param_text(const ir::ParamValue& v) {
  switch (v.kind) {
    case ir::ParamValue::Kind::Int:
      return std::to_string(v.i);
    case ir::ParamValue::Kind::Float:
      return ir::py_float(v.f);
    case ir::ParamValue::Kind::Bool:
      return v.i ? "true" : "false";
    case ir::ParamValue::Kind::Other:
      break;
  }
  return ir::dump_text(v.other.json());
}

// "L3.q_proj[t7]" -> {"L3.q_proj", 7}; nullopt for a label without a tile index.
std::optional<std::pair<std::string, int64_t>> tile_of(std::string_view label) {
  if (label.size() < 4 || label.back() != ']') return std::nullopt;
  const size_t open = label.rfind("[t");
  if (open == std::string_view::npos || open + 2 >= label.size() - 1) return std::nullopt;
  int64_t k = 0;
  for (size_t i = open + 2; i + 1 < label.size(); ++i) {
    if (label[i] < '0' || label[i] > '9' || k > (int64_t{1} << 40)) return std::nullopt;
    k = k * 10 + (label[i] - '0');
  }
  return std::pair{std::string(label.substr(0, open)), k};
}

// Labels with runs of consecutive tiles folded: "L0.q_proj[t0..t3], L0.k_proj[t0]".
std::string fold_labels(const std::vector<std::string>& labels) {
  std::vector<std::string> out;
  for (size_t i = 0; i < labels.size();) {
    const auto tile = tile_of(labels[i]);
    size_t j = i + 1;
    if (tile) {
      while (j < labels.size()) {
        const auto next = tile_of(labels[j]);
        if (!next || next->first != tile->first ||
            next->second != tile->second + static_cast<int64_t>(j - i))
          break;
        ++j;
      }
    }
    if (tile && j - i > 1)
      out.push_back(fmt::format("{}[t{}..t{}]", tile->first, tile->second,
                                tile->second + static_cast<int64_t>(j - i) - 1));
    else
      out.push_back(labels[i]);
    i = j;
  }
  return fmt::format("{}", fmt::join(out, ", "));
}

// The labels of the tasks that increment each of the program's counters, in list order (a
// counter's slot in the counter graph is its id).
std::vector<std::vector<std::string>> producers_by_counter(const ir::Program& p,
                                                           const ir::Graph& g) {
  std::vector<std::vector<std::string>> by(p.counters.size());
  for (size_t c = 0; c < by.size(); ++c)
    for (uint32_t t : g.producers(static_cast<uint32_t>(c)))
      by[c].emplace_back(p.tasks[t].display());
  return by;
}

std::string buffer_names(const ir::Program& p, const std::vector<int64_t>& ids) {
  std::vector<std::string_view> names;
  for (int64_t b : ids)
    names.push_back(b >= 0 && static_cast<size_t>(b) < p.buffers.size()
                        ? std::string_view(p.buffers[static_cast<size_t>(b)].name)
                        : std::string_view("?"));
  return names.empty() ? "-" : fmt::format("{}", fmt::join(names, ", "));
}

// One line per knob, "prefix.key = value"; a list of lists or objects gives a line per entry.
void knob_lines(const ojson& v, const std::string& key, std::string& out) {
  if (v.is_object() && !v.empty()) {
    for (const auto& [k, x] : v.items()) knob_lines(x, key.empty() ? k : key + "." + k, out);
    return;
  }
  if (v.is_array() && std::any_of(v.begin(), v.end(),
                                  [](const ojson& x) { return x.is_array() || x.is_object(); })) {
    for (const ojson& x : v) out += fmt::format("config {}[] = {}\n", key, ir::dump_text(x));
    return;
  }
  out += fmt::format("config {} = {}\n", key, ir::dump_text(v));
}

}  // namespace

std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string show_config(const ir::ScheduleConfig& c) {
  ojson knobs = ir::config_json(c).json();
  for (const ir::Field<ir::ScheduleConfig>& f : ir::config_fields())
    if (knobs[std::string(f.name)].is_null()) knobs.erase(std::string(f.name));  // not set
  std::string out;
  knob_lines(knobs, "", out);
  return out;
}

std::string show_program(const ir::Program& p, const targets::TargetSpec* predict_on,
                         const targets::Runtime* runtime) {
  std::string out = fmt::format(
      "program: {} tasks, {} buffers, {} counters, {} pages; {:.2f} MB weights; ir {}, abi {}\n",
      p.tasks.size(), p.buffers.size(), p.counters.size(), p.pages ? p.pages->pages.size() : 0,
      static_cast<double>(p.total_weight_bytes()) / 1e6, p.ir_version, p.abi_version);
  if (p.target) out += fmt::format("target: {}\n", p.target->name);
  if (predict_on) {
    const targets::CostEstimate c = targets::estimate(
        p, predict_on->record, runtime ? *runtime : targets::default_runtime(*predict_on));
    out += fmt::format(
        "predicted on {} ({}): {:.1f} us (AMK's formula {:.1f} us, floor {:.1f} us)\n",
        predict_on->record.name, c.runtime, c.makespan_us, c.amk_makespan_us, c.floor_us);
  }
  if (p.meta.json().is_object())
    for (const auto& [k, v] : p.meta.json().items())
      out += fmt::format("meta {} = {}\n", k, ir::dump_text(v));
  const auto producers = producers_by_counter(p, ir::Graph::build(p));
  for (const ir::Task& t : p.tasks) {
    std::vector<std::string> params;
    for (const ir::Param& q : t.params) params.push_back(q.key + "=" + param_text(q.value));
    std::vector<std::string> waits;
    for (const ir::Wait& w : t.waits) {
      const bool known = w.counter >= 0 && static_cast<size_t>(w.counter) < producers.size();
      const std::string from = known && !producers[static_cast<size_t>(w.counter)].empty()
                                   ? fold_labels(producers[static_cast<size_t>(w.counter)])
                                   : std::string("(no producer)");
      waits.push_back(fmt::format("{} >= {}", from, w.threshold));
    }
    out += fmt::format(
        "task {}: {}{}{} | {} -> {} | waits {}\n", t.display(), ir::name(t.op),
        t.sm ? fmt::format(" sm {}", *t.sm) : std::string(),
        params.empty() ? std::string() : " " + fmt::format("{}", fmt::join(params, " ")),
        buffer_names(p, t.inputs), buffer_names(p, t.outputs),
        waits.empty() ? std::string("-") : fmt::format("{}", fmt::join(waits, "; ")));
  }
  std::map<int64_t, int64_t> page_of;
  if (p.pages)
    for (const auto& [b, pg] : p.pages->buffer_to_page) page_of[b] = pg;
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const ir::Buffer& b = p.buffers[i];
    const auto pg = page_of.find(static_cast<int64_t>(i));
    out += fmt::format("buffer {}: {} {} [{}] {}{}{}\n", b.name, ir::name(b.kind),
                       ir::name(b.dtype), fmt::join(b.shape, ", "), ir::name(b.space),
                       b.source ? " source " + *b.source : std::string(),
                       pg != page_of.end() ? fmt::format(" page {}", pg->second) : std::string());
  }
  for (size_t c = 0; c < p.counters.size(); ++c) {
    const ir::Counter& k = p.counters[c];
    out += fmt::format("counter {}: init {}, {} producer{}{}\n",
                       producers[c].empty() ? std::string("(none)") : fold_labels(producers[c]),
                       k.init, producers[c].size(), producers[c].size() == 1 ? "" : "s",
                       k.note.empty() ? std::string() : ", note " + ir::py_repr_str(k.note));
  }
  if (p.pages) {
    std::map<int64_t, std::vector<int64_t>> held;
    for (const auto& [b, pg] : p.pages->buffer_to_page) held[pg].push_back(b);
    for (size_t i = 0; i < p.pages->pages.size(); ++i) {
      const ir::Page& pg = p.pages->pages[i];
      out +=
          fmt::format("page {}: {} {} B, live {}..{}, holds {}\n", i, ir::name(pg.space), pg.nbytes,
                      pg.live_start, pg.live_end, buffer_names(p, held[static_cast<int64_t>(i)]));
    }
  }
  if (p.config) out += show_config(*p.config);
  return out;
}

namespace {

// The nodes of a drawing: each task's node (itself, its op with tiles folded, or its layer), the
// nodes' keys and their tasks.
struct DotNodes {
  std::vector<size_t> node_of;
  std::vector<std::string> key;
  std::vector<std::vector<uint32_t>> members;
};

DotNodes dot_nodes(const ir::Program& p, Fold fold) {
  DotNodes d;
  d.node_of.resize(p.tasks.size());
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    const ir::Task& t = p.tasks[i];
    std::string k;
    if (fold == Fold::None) {
      k = fmt::format("#{}", i);
    } else if (fold == Fold::Layers) {
      k = ir::layer_of(t.label);
    } else {
      const auto tile = tile_of(t.label);
      k = tile ? tile->first : std::string(t.display());
    }
    auto [it, fresh] = index.emplace(k, d.key.size());
    if (fresh) {
      d.key.push_back(k);
      d.members.emplace_back();
    }
    d.node_of[i] = it->second;
    d.members[it->second].push_back(static_cast<uint32_t>(i));
  }
  return d;
}

}  // namespace

std::string program_dot(const ir::Program& p, Fold fold) {
  using Attrs = std::map<std::string, std::string>;
  using Graph = boost::subgraph<boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS, boost::property<boost::vertex_attribute_t, Attrs>,
      boost::property<boost::edge_index_t, int, boost::property<boost::edge_attribute_t, Attrs>>,
      boost::property<boost::graph_name_t, std::string,
                      boost::property<boost::graph_graph_attribute_t, Attrs,
                                      boost::property<boost::graph_vertex_attribute_t, Attrs,
                                                      boost::property<boost::graph_edge_attribute_t,
                                                                      Attrs>>>>>>;
  const DotNodes nodes = dot_nodes(p, fold);
  const std::vector<size_t>& node_of = nodes.node_of;
  const std::vector<std::string>& node_key = nodes.key;
  const std::vector<std::vector<uint32_t>>& members = nodes.members;
  Graph g(node_key.size());
  boost::get_property(g, boost::graph_name) = "amk";
  boost::get_property(g, boost::graph_graph_attribute)["rankdir"] = "TB";
  boost::get_property(g, boost::graph_vertex_attribute)["shape"] = "box";
  boost::get_property(g, boost::graph_vertex_attribute)["fontsize"] = "10";
  boost::get_property(g, boost::graph_edge_attribute)["fontsize"] = "8";
  // One cluster per layer (not when the nodes are layers).
  std::map<std::string, Graph*> clusters;
  for (size_t n = 0; n < node_key.size(); ++n) {
    const ir::Task& first = p.tasks[members[n].front()];
    Attrs& a = boost::get(boost::vertex_attribute, g)[n];
    if (fold == Fold::None) {
      a["label"] = fmt::format("{}\\n{}{}", first.display(), ir::name(first.op),
                               first.sm ? fmt::format(" sm {}", *first.sm) : std::string());
    } else {
      a["label"] = fmt::format("{}\\n{} task{}", node_key[n], members[n].size(),
                               members[n].size() == 1 ? "" : "s");
    }
    if (fold == Fold::Layers) continue;
    const std::string layer = ir::layer_of(first.label);
    auto [it, fresh] = clusters.emplace(layer, nullptr);
    if (fresh) {
      it->second = &g.create_subgraph();
      boost::get_property(*it->second, boost::graph_name) =
          fmt::format("cluster_{}", clusters.size());
      boost::get_property(*it->second, boost::graph_graph_attribute)["label"] = layer;
    }
    boost::add_vertex(n, *it->second);
  }
  // Edges producer -> waiter; folded ones carry how many dependencies they stand for.
  const ir::Graph deps = ir::Graph::build(p);
  std::map<std::pair<size_t, size_t>, std::pair<size_t, std::string>> edges;
  for (size_t i = 0; i < p.tasks.size(); ++i)
    for (const ir::Wait& w : p.tasks[i].waits) {
      if (w.counter < 0 || static_cast<size_t>(w.counter) >= p.counters.size()) continue;
      for (uint32_t q : deps.producers(static_cast<uint32_t>(w.counter))) {
        const std::pair<size_t, size_t> e{node_of[q], node_of[i]};
        if (fold != Fold::None && e.first == e.second) continue;
        auto& [n, label] = edges[e];
        ++n;
        label = fmt::format("c{} >= {}", w.counter, w.threshold);
      }
    }
  int eid = 0;
  for (const auto& [e, v] : edges) {
    auto [edge, added] = boost::add_edge(e.first, e.second, eid++, g);
    if (!added) continue;
    boost::get(boost::edge_attribute, g)[edge]["label"] =
        fold == Fold::None ? v.second : fmt::format("{} dep{}", v.first, v.first == 1 ? "" : "s");
  }
  std::ostringstream os;
  boost::write_graphviz(os, g);
  return os.str();
}

std::optional<Timeline> predicted_timeline(const ir::Program& p, const targets::TargetSpec& t,
                                           const targets::Runtime* runtime) {
  const targets::Runtime& rt = runtime ? *runtime : targets::default_runtime(t);
  const ir::Graph g = ir::Graph::build(p);
  const targets::TaskTimes times = targets::predicted_times(p, t.record, rt, g);
  if (!times.acyclic) return std::nullopt;
  const targets::CostEstimate cost = targets::estimate(p, t.record, rt, g);
  Timeline tl;
  tl.title = fmt::format("{} on {} run by {}: predicted {:.1f} us (cost model)",
                         p.meta.json().is_object() && p.meta.json().contains("model")
                             ? ir::dump_text(p.meta.json()["model"])
                             : std::string("program"),
                         t.record.name, rt.name, cost.makespan_us);
  // Lanes are the workers a task's `sm` indexes; named by kind where the target has one kind (a
  // lowering for a mixed chip indexes one pool, so there they are "worker i").
  const std::string kind = t.workers.size() == 1 ? t.workers[0].kind : std::string("worker");
  for (int64_t i = 0; i < t.num_workers(); ++i) tl.lanes.push_back(fmt::format("{} {}", kind, i));
  if (tl.lanes.empty()) tl.lanes.push_back("SM 0");
  for (uint32_t i = 0; i < p.tasks.size(); ++i) {
    const uint32_t lane = times.worker[i];
    while (lane >= tl.lanes.size()) tl.lanes.push_back(fmt::format("lane {}", tl.lanes.size()));
    tl.bars.push_back({i, static_cast<int32_t>(lane), times.start_us[i], times.finish_us[i]});
  }
  tl.critical = times.critical;
  tl.marks = {{"weight-streaming floor", cost.floor_us}, {"predicted makespan", cost.makespan_us}};
  return tl;
}

Timeline measured_timeline(const ir::Program& p, const vm::TraceRecorder& r) {
  Timeline tl;
  tl.lanes = r.lanes();
  const std::vector<vm::TraceEvent> ev = r.events();
  int64_t t0 = INT64_MAX;
  for (const vm::TraceEvent& e : ev) t0 = std::min(t0, e.start_ns);
  double end = 0;
  for (const vm::TraceEvent& e : ev) {
    const double s = static_cast<double>(e.start_ns - t0) / 1e3,
                 f = static_cast<double>(e.end_ns - t0) / 1e3;
    tl.bars.push_back({static_cast<uint32_t>(e.task), e.worker, s, f});
    end = std::max(end, f);
    while (static_cast<size_t>(std::max(e.worker, 0)) >= tl.lanes.size())
      tl.lanes.push_back(fmt::format("lane {}", tl.lanes.size()));
  }
  tl.title = fmt::format("{} tasks measured on the reference VM: {:.1f} us", ev.size(), end);
  (void)p;
  tl.marks = {{"end", end}};
  return tl;
}

namespace {

// The timeline's legend: a swatch per op, then the critical path's.
void svg_legend(std::string& out, const std::vector<ir::Op>& ops,
                std::map<ir::Op, std::string>& colour, size_t critical, double left, double top) {
  double lx = left, ly = top;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (i && i % 6 == 0) lx = left, ly += 16;
    out += fmt::format(
        "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
        "<text x=\"{:.0f}\" y=\"{:.0f}\">{}</text>\n",
        lx, ly - 9, colour[ops[i]], lx + 14, ly, ir::name(ops[i]));
    lx += 170;
  }
  out += fmt::format(
      "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"10\" height=\"10\" fill=\"none\" stroke=\"#d00000\" "
      "stroke-width=\"1.5\"/><text x=\"{:.0f}\" y=\"{:.0f}\">critical path ({} tasks)</text>\n",
      lx, ly - 9, lx + 14, ly, critical);
}

}  // namespace

std::string timeline_svg(const ir::Program& p, const Timeline& t) {
  constexpr double kLeft = 90, kRight = 20, kTop = 48, kLane = 14, kWidth = 1200;
  double span = 1e-9;
  for (const Bar& b : t.bars) span = std::max(span, b.end_us);
  for (const auto& [name, x] : t.marks)
    if (std::isfinite(x)) span = std::max(span, x);
  const double scale = (kWidth - kLeft - kRight) / span;
  auto x_of = [&](double us) { return kLeft + us * scale; };
  // Colours by op, in the order the ops first appear.
  static constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                             "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                                             "#9c755f", "#bab0ac", "#86bcb6", "#d37295"};
  std::map<ir::Op, std::string> colour;
  std::vector<ir::Op> ops;
  for (const Bar& b : t.bars) {
    const ir::Op op = p.tasks[b.task].op;
    if (colour.emplace(op, kPalette[colour.size() % std::size(kPalette)]).second) ops.push_back(op);
  }
  const std::set<uint32_t> critical(t.critical.begin(), t.critical.end());
  const double lanes_h = kLane * static_cast<double>(t.lanes.size());
  const double height = kTop + lanes_h + 60 + 16 * std::ceil(static_cast<double>(ops.size()) / 6);

  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"10\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"18\" font-size=\"13\">{}</text>\n",
      kWidth, height, kLeft, xml_escape(t.title));
  std::vector<std::vector<const Bar*>> on_lane(t.lanes.size());
  for (const Bar& b : t.bars)
    if (b.lane >= 0 && static_cast<size_t>(b.lane) < on_lane.size())
      on_lane[static_cast<size_t>(b.lane)].push_back(&b);
  for (size_t l = 0; l < t.lanes.size(); ++l) {
    const double y = kTop + kLane * static_cast<double>(l);
    out += fmt::format("<g class=\"lane\" data-lane=\"{}\">\n", xml_escape(t.lanes[l]));
    out += fmt::format(
        "<rect x=\"{}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>\n"
        "<text x=\"4\" y=\"{:.1f}\">{}</text>\n",
        kLeft, y, kWidth - kLeft - kRight, kLane, l % 2 ? "#f7f7f7" : "#ffffff", y + kLane - 3,
        xml_escape(t.lanes[l]));
    for (const Bar* b : on_lane[l]) {
      const ir::Task& task = p.tasks[b->task];
      const bool crit = critical.count(b->task) > 0;
      out += fmt::format(
          "<rect class=\"task{}\" x=\"{:.2f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{}\" "
          "fill=\"{}\"{}><title>{} ({}): {:.2f}..{:.2f} us</title></rect>\n",
          crit ? " critical" : "", x_of(b->start_us), y + 1,
          std::max(0.5, (b->end_us - b->start_us) * scale), kLane - 2, colour[task.op],
          crit ? " stroke=\"#d00000\" stroke-width=\"1.5\"" : "", xml_escape(task.display()),
          ir::name(task.op), b->start_us, b->end_us);
    }
    out += "</g>\n";
  }
  // Time axis: five ticks.
  const double axis_y = kTop + lanes_h + 4;
  out +=
      fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"black\"/>\n",
                  kLeft, axis_y, kWidth - kRight, axis_y);
  for (int k = 0; k <= 5; ++k) {
    const double us = span * k / 5;
    out += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"black\"/>"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4:.1f} us</text>\n",
        x_of(us), axis_y, axis_y + 4, axis_y + 16, us);
  }
  for (const auto& [name, us] : t.marks) {
    if (!std::isfinite(us)) continue;
    out += fmt::format(
        "<g class=\"mark\"><line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" "
        "stroke=\"#333\" stroke-dasharray=\"4 3\"/><text x=\"{0:.1f}\" y=\"{3}\" "
        "text-anchor=\"{6}\">{4} {5:.1f} us</text></g>\n",
        x_of(us), kTop - 4, axis_y, kTop - 6 - (name.size() % 2) * 10, xml_escape(name), us,
        x_of(us) < kWidth / 2 ? "start" : "end");
  }
  svg_legend(out, ops, colour, t.critical.size(), kLeft, axis_y + 34);
  out += "</svg>\n";
  return out;
}

}  // namespace amk::app
