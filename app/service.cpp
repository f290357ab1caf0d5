#include "app/service.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <new>

#include <fmt/format.h>

#include "app/load.h"
#include "app/search_session.h"
#include "app/service_args.h"
#include "ir/checked.h"
#include "ir/diagnostic_json.h"
#include "ir/diff.h"
#include "ir/digraph.h"
#include "ir/fileio.h"
#include "ir/json_io.h"
#include "ir/pyjson.h"
#include "lower/compile.h"
#include "lower/config.h"
#include "lower/model.h"

namespace amk::app {

namespace {

// A warm evaluator with the model and target it lowers for.
struct Warm {
  lower::ModelSpec model;
  targets::TargetSpec target;
  std::optional<targets::Runtime> runtime;  ///< the request's (else the target's)
  std::unique_ptr<search::Evaluator> evaluator;
};

}  // namespace

ojson operation_schema(const Operation& op, const ServiceOptions& o) {
  ojson j = ojson::parse(op.schema);
  if (op.name != "search") return j;
  ojson& p = j["properties"];
  p["budget"]["maximum"] = o.max_budget;
  p["min_batch"]["maximum"] = o.max_budget;
  if (o.max_seconds > 0) p["time"]["maximum"] = o.max_seconds;
  p["jobs"]["description"] = fmt::format(
      "evaluator threads (at most the service's --jobs, {}; more is capped)", o.max_jobs);
  return j;
}

ojson cost_json(const targets::CostEstimate& c) {
  ojson j = ojson::object();
  j["predicted_us"] = c.makespan_us;
  j["amk_formula_us"] = c.amk_makespan_us;
  j["floor_us"] = c.floor_us;
  j["queue_us"] = c.queue_us;
  j["bandwidth_us"] = c.bandwidth_us;
  j["critical_path_us"] = c.critical_path_us;
  j["total_us"] = c.total_us;
  j["sm_assigned"] = c.sm_assigned;
  j["runtime"] = c.runtime;
  j["bytes_in_flight"] = c.bytes_in_flight;
  j["breakdown"] = {
      {"launch_us", c.breakdown.launch_us},         {"dispatch_us", c.breakdown.dispatch_us},
      {"dependency_us", c.breakdown.dependency_us}, {"sync_us", c.breakdown.sync_us},
      {"memory_us", c.breakdown.memory_us},         {"compute_us", c.breakdown.compute_us}};
  return j;
}

ProgramInfo program_info(const ir::Program& p, const std::optional<ir::Target>& target, bool unsafe,
                         const targets::Runtime* runtime) {
  ProgramInfo in;
  in.graph = ir::Graph::build(p);
  in.critical = ir::critical_path(p, in.graph);
  in.target = target ? target : p.target;
  in.verdict = validate::validate(p);
  for (const ir::Diagnostic& d : in.verdict.errors)
    if (std::find(in.rules.begin(), in.rules.end(), d.code) == in.rules.end())
      in.rules.push_back(d.code);
  if (in.target && (in.verdict.ok || unsafe)) {
    const targets::Runtime& rt = runtime ? *runtime : targets::default_runtime(*in.target);
    in.cost = targets::estimate(p, *in.target, rt);
    if (p.config) in.runtime_warnings = targets::runtime_limits(rt, *p.config, &p);
  }
  in.capacities = validate::smallest_safe_capacities(p);
  for (const auto& t : p.tasks) {
    ++in.ops[std::string(ir::name(t.op))];
    in.est_bytes = ir::saturating_add(in.est_bytes, t.est_bytes);
    in.est_flops = ir::saturating_add(in.est_flops, t.est_flops);
    in.waits += static_cast<int64_t>(t.waits.size());
  }
  for (const auto& b : p.buffers) {
    ++in.buffer_kinds[std::string(ir::name(b.kind))];
    in.weights += b.kind == ir::BufferKind::WEIGHT;
  }
  return in;
}

ojson ProgramInfo::json(const ir::Program& p, std::string_view file) const {
  ojson j;
  j["file"] = std::string(file);
  j["valid"] = verdict.ok;
  j["rules"] = rules;
  j["errors"] = verdict.errors.size();
  j["ir_version"] = p.ir_version;
  j["abi_version"] = p.abi_version;
  j["meta"] = p.meta.json();
  j["target"] = p.target ? ojson(p.target->name) : ojson();
  j["tasks"] = p.tasks.size();
  j["buffers"] = p.buffers.size();
  j["counters"] = p.counters.size();
  j["waits"] = waits;
  j["edges"] = graph.edge_count();
  j["acyclic"] = graph.acyclic();
  j["weight_bytes"] = p.total_weight_bytes();
  j["weight_MB"] = std::stod(ir::py_round2(static_cast<double>(p.total_weight_bytes()) / 1e6));
  j["sm_assigned"] = p.sm_assigned();
  j["ops"] = ops;
  j["buffer_kinds"] = buffer_kinds;
  j["est_bytes"] = est_bytes;
  j["est_flops"] = est_flops;
  j["pages"] = p.pages ? ojson({{"pages", p.pages->pages.size()},
                                {"buffers", p.pages->buffer_to_page.size()},
                                {"scratch_bytes", p.pages->total_scratch_bytes()}})
                       : ojson();
  j["config"] = p.config ? ojson(true) : ojson(false);
  if (p.runtime) {
    ojson caps = ojson::array();
    for (const validate::CapacityNeed& c : capacities)
      caps.push_back({{"key", std::string(ir::cap_info(c.key).name)},
                      {"ring", c.ring >= 0 ? ojson(c.ring) : ojson()},
                      {"needed", c.needed},
                      {"capacity", c.capacity ? ojson(*c.capacity) : ojson()},
                      {"ok", !c.capacity || c.needed <= *c.capacity},
                      {"rule", std::string(c.rule)},
                      {"warning_only", c.warn_only},
                      {"where", c.what}});
    j["runtime"] = {{"kind", std::string(ir::name(p.runtime->kind))},
                    {"smallest_safe_capacities", std::move(caps)}};
  }
  ojson crit = ojson::object();
  crit["tasks"] = critical.tasks;
  crit["est_bytes"] = critical.est_bytes;
  ojson path = ojson::array();
  for (uint32_t t : critical.path) path.push_back(t);
  crit["path"] = std::move(path);
  j["critical_path"] = graph.acyclic() ? crit : ojson();
  if (cost) {  // the cost model's numbers under the names cost_json gives them everywhere
    ojson c = {{"target", target->name}};
    c.update(cost_json(*cost));
    c["warnings"] = ir::to_json(runtime_warnings);
    j["cost"] = std::move(c);
  }
  return j;
}

ojson evaluation_request(const SearchSession& s) {
  const lower::LowerOptions& o = s.options().lower;
  ojson j = ojson::object();
  j["op"] = "search_eval";
  j["model"] = ir::reread_object(lower::write_model(s.model()));
  j["target"] = ir::reread_object(targets::write_target_spec(s.target()));
  j["runtime"] = ir::reread_object(targets::write_runtime(s.runtime()));
  j["objective"] = search::name(s.options().objective);
  j["pos"] = o.pos;
  j["batch"] = o.batch;
  j["dtype"] = ir::name(o.dtype);
  j["quant"] = o.quant == lower::Quant::None ? ojson() : ojson(ir::quant_name(o.quant));
  return j;
}

ir::Result<ojson> parse_request(std::string_view line) {
  ir::Result<ir::JsonValue> v = ir::parse_json_object(line, "a request");
  if (!v) return std::move(v.diagnostics);
  return std::move(v->mut());  // its only owner: moved, not copied
}

ojson error_json(const ir::Diagnostics& d) {
  ojson e = ojson::object();
  std::string message;
  for (const ir::Diagnostic& x : d)
    if (x.severity == ir::Severity::Error) {
      if (e.empty()) e["code"] = x.code;
      message += (message.empty() ? "" : "\n") + ir::format_diagnostic(x, x.file);
    }
  if (e.empty()) e["code"] = "request.failed";
  e["message"] = message;
  e["diagnostics"] = ir::to_json(d);
  return e;
}

// What a Service does: its options, its warm evaluators and the operations' handlers.
struct ServiceWorker {
  ServiceOptions options;
  std::map<std::string, Warm> warm;  // by the model, target and options of the request

  ir::Result<ojson> validate(Args& a) {
    if (ir::Status st = a.status(); !st) return std::move(st.diagnostics);
    ir::Result<ir::Program> p = the_program(a);
    if (!p) return std::move(p.diagnostics);
    return ir::reread_object(validate::validate(*p).to_json());
  }

  ir::Result<ojson> lower(Args& a) {
    lower::LowerOptions o = lower_options(a);
    const std::string output = a.str("output");
    if (!output.empty()) ir::append(a.errors, a.file("output", output).diagnostics);
    if (ir::Status st = a.status(); !st) return std::move(st.diagnostics);
    ir::Result<lower::ModelSpec> m = model_arg(a);
    if (!m) return std::move(m.diagnostics);
    ir::Result<targets::TargetSpec> t = target_arg(a);
    if (!t) return std::move(t.diagnostics);
    ir::Result<std::optional<ir::ScheduleConfig>> c = config_arg(a, "config");
    if (!c) return std::move(c.diagnostics);
    ir::Result<std::optional<targets::Runtime>> rt = runtime_arg(a);
    if (!rt) return std::move(rt.diagnostics);
    if (*rt) o.runtime = &**rt;
    ir::Result<lower::Compiled> r = lower::compile(*m, *t, *c, o);
    if (!r) return std::move(r.diagnostics);
    ojson j = ojson::object();
    j["tasks"] = r->program.tasks.size();
    j["cost"] = cost_json(r->cost);
    ir::Diagnostics warnings = r->verdict.warnings;
    ir::append(warnings, r.diagnostics);  // what the runtime's launch refuses
    j["warnings"] = ir::to_json(warnings);
    const std::string text = ir::write_program(r->program);
    if (!output.empty()) {
      if (ir::Status st = ir::write_file_atomic(output, text); !st)
        return std::move(st.diagnostics);
      j["path"] = output;
    } else if (text.size() > options.max_inline) {  // its JSON tree would be ~25x that
      return bad("output", fmt::format("the program is {} bytes, more than this worker answers "
                                       "inline ({}, its --max-line): give 'output'",
                                       text.size(), options.max_inline));
    } else {
      j["program"] = ir::reread_object(text);
    }
    return j;
  }

  ir::Result<ojson> cost(Args& a) {
    if (ir::Status st = a.status(); !st) return std::move(st.diagnostics);
    ir::Result<ir::Program> p = the_program(a);
    if (!p) return std::move(p.diagnostics);
    ir::Result<std::optional<targets::Runtime>> rt = runtime_arg(a);
    if (!rt) return std::move(rt.diagnostics);
    std::optional<ir::Target> target = p->target;
    if (a.has("target")) {
      ir::Result<targets::TargetSpec> t = target_arg(a);
      if (!t) return std::move(t.diagnostics);
      target = t->record;
      if (!*rt) *rt = targets::default_runtime(*t);
    }
    if (!target)
      return bad("target", "the program names no target: give 'target' (a built-in name or file)");
    ojson j = ojson::object();
    j["target"] = target->name;
    j.update(
        cost_json(targets::estimate(*p, *target, *rt ? **rt : targets::default_runtime(*target))));
    return j;
  }

  ir::Result<ojson> search_eval(Args& a, const std::atomic<bool>* stop) {
    lower::LowerOptions o = lower_options(a);
    const std::optional<search::Objective> objective = objective_arg(a);
    if (ir::Status st = a.status(); !st) return std::move(st.diagnostics);
    if (!a.has("model")) return bad("model", "missing 'model'");
    if (!a.has("target")) return bad("target", "missing 'target'");
    const std::string key = ir::json_line(
        ojson::array({a.at("model"), a.at("target"), o.pos, o.batch, ir::name(o.dtype),
                      a.str("quant"), a.has("runtime") ? a.at("runtime") : ojson()}));
    auto it = warm.find(key);
    if (it == warm.end()) {
      ir::Result<lower::ModelSpec> m = model_arg(a);
      if (!m) return std::move(m.diagnostics);
      ir::Result<targets::TargetSpec> t = target_arg(a);
      if (!t) return std::move(t.diagnostics);
      ir::Result<std::optional<targets::Runtime>> rt = runtime_arg(a);
      if (!rt) return std::move(rt.diagnostics);
      if (warm.size() >= 8) warm.clear();  // a worker serving many searches keeps the recent
      it = warm.emplace(key, Warm{std::move(*m.value), std::move(*t.value), std::move(*rt.value),
                                  nullptr})
               .first;
      if (it->second.runtime) o.runtime = &*it->second.runtime;
      it->second.evaluator =
          std::make_unique<search::Evaluator>(it->second.model, it->second.target, o);
    }
    search::Evaluator& evaluator = *it->second.evaluator;
    auto evaluate = [&](const ojson& config) -> ir::Result<ojson> {
      const ojson wrapped{{"config", config}};
      Args one{wrapped, {}, a.files};
      ir::Result<std::optional<ir::ScheduleConfig>> c = config_arg(one, "config");
      if (!c) return std::move(c.diagnostics);
      if (!*c) return bad("config", "search_eval needs a ScheduleConfig, not 'auto'");
      search::Trial t;
      t.config = std::move(**c);
      t.key = ir::config_key(t.config);
      evaluator.evaluate(t, *objective);
      ojson j = ir::reread_object(search::trial_json(t));
      j.erase("index");
      j.erase("source");
      j.erase("duplicate_of");
      return j;
    };
    if (!a.has("configs")) return evaluate(a.has("config") ? a.at("config") : ojson());
    if (a.has("config")) return bad("configs", "give 'config' or 'configs', not both");
    if (!a.at("configs").is_array()) return bad("configs", "'configs' must be an array");
    ojson trials = ojson::array();
    for (size_t i = 0; i < a.at("configs").size(); ++i) {
      if (stop && stop->load()) return ir::error("search.cancelled", "the batch was cancelled");
      ir::Result<ojson> t = evaluate(a.at("configs")[i]);
      if (!t) {
        for (ir::Diagnostic& d : t.diagnostics)  // "/config/..." -> "/configs/I/..."
          if (d.pointer.starts_with("/config"))
            d.pointer.replace(0, 7, "/configs/" + std::to_string(i));
        return std::move(t.diagnostics);
      }
      trials.push_back(std::move(*t.value));
    }
    return ojson{{"trials", std::move(trials)}};
  }

  ir::Result<ojson> info(Args& a) {
    const bool unsafe = a.flag("unsafe");
    if (ir::Status st = a.status(); !st) return std::move(st.diagnostics);
    if (!a.has("program") && !a.has("path") && !a.has("text")) {
      ojson j = ojson::object();
      j["amk"] = AMK_VERSION;
      ojson ops = ojson::array();
      for (const Operation& op : operations()) ops.push_back(op.name);
      j["operations"] = std::move(ops);
      j["models"] = lower::builtin_model_names();
      j["targets"] = targets::builtin_target_names();
      return j;
    }
    ir::Result<ir::Program> p = the_program(a);
    if (!p) return std::move(p.diagnostics);
    ir::Result<std::optional<targets::Runtime>> rt = runtime_arg(a);
    if (!rt) return std::move(rt.diagnostics);
    std::optional<ir::Target> target;
    if (a.has("target")) {
      ir::Result<targets::TargetSpec> t = target_arg(a);
      if (!t) return std::move(t.diagnostics);
      target = t->record;
      if (!*rt) *rt = targets::default_runtime(*t);
    }
    const std::string file = a.has("path")                 ? a.str("path")
                             : a.at("program").is_string() ? a.str("program")
                                                           : std::string("<program>");
    return program_info(*p, target, unsafe, *rt ? &**rt : nullptr).json(*p, file);
  }

  ir::Result<ojson> diff(Args& a) {
    if (ir::Status st = a.status(); !st) return std::move(st.diagnostics);
    for (const char* k : {"a", "b"})
      if (!a.has(k)) return bad(k, fmt::format("missing '{}' (a program object or a path)", k));
    ir::Result<ir::Program> pa = program_arg(a, "a");
    if (!pa) return std::move(pa.diagnostics);
    ir::Result<ir::Program> pb = program_arg(a, "b");
    if (!pb) return std::move(pb.diagnostics);
    return ir::reread_object(ir::diff_to_json(ir::diff_programs(*pa, *pb)));
  }

  ir::Result<ojson> search(Args& a, const std::atomic<bool>* stop) {
    SearchRequest req;
    req.model = a.str("model");
    req.target = a.str("target");
    req.runtime = a.str("runtime");
    req.options.budget = a.integer("budget", 200, 1, options.max_budget);
    req.options.deadline_s = a.number("time", 0, options.max_seconds);
    req.options.seed = static_cast<uint64_t>(a.integer("seed", 0, 0, int64_t(1) << 53));
    req.options.jobs = static_cast<int>(a.integer("jobs", 1, 1, search::kMaxJobs));
    req.options.stop = stop;
    ir::Diagnostics warnings;
    if (req.options.jobs > options.max_jobs) {  // the trials do not depend on it
      warnings.push_back(
          ir::warning("request.jobs",
                      fmt::format("'jobs' {} is capped at {}, the service's own --jobs",
                                  req.options.jobs, options.max_jobs),
                      "/jobs"));
      req.options.jobs = options.max_jobs;
    }
    req.options.min_batch = a.integer("min_batch", 0, 0, options.max_budget);
    ir::Result<search::Algorithm> algo = search::algorithm_named("algo", a.str("algo", "descent"));
    if (!algo) a.errors.push_back(bad("algo", algo.diagnostics.front().message));
    const std::optional<search::Objective> objective = objective_arg(a);
    const std::string output = a.str("output");
    if (!output.empty()) ir::append(a.errors, a.file("output", output).diagnostics);
    for (const char* k : {"model", "target", "runtime"})
      if (ir::names_a_file(a.str(k))) ir::append(a.errors, a.file(k, a.str(k)).diagnostics);
    if (ir::Status st = a.status(); !st) return std::move(st.diagnostics);
    if (req.model.empty()) return bad("model", "missing 'model' (a built-in name or a file)");
    if (req.target.empty()) return bad("target", "missing 'target' (a built-in name or a file)");
    req.options.algorithm = *algo;
    req.options.objective = *objective;
    if (a.has("start")) {  // an object, its JSON text or a file, as `amk search --start`
      const ojson& v = a.at("start");
      ir::Result<std::optional<ir::ScheduleConfig>> c = config_arg(a, "start");
      if (!c) return std::move(c.diagnostics);
      if (!*c) return bad("start", "'start' must be a ScheduleConfig, not 'auto'");
      req.start = std::move(**c);
      req.start_origin = v.is_string()
                             ? lower::config_origin(v.get_ref<const std::string&>(), "/start")
                             : "/start";
    }
    ir::Result<std::unique_ptr<SearchSession>> s = SearchSession::create(std::move(req));
    if (!s) return std::move(s.diagnostics);
    ir::append(warnings, std::move(s.diagnostics));  // the model's, the start's, the log's
    ir::Result<search::SearchResult> r = (*s)->run();
    if (!r) return std::move(r.diagnostics);
    ojson j = search_summary_json(**s, *r);
    const search::Trial& best = r->trials[static_cast<size_t>(r->best)];
    j["best_config"] = ir::reread_object(ir::write_config(best.config));
    if (!output.empty()) {
      if (ir::Status st = ir::write_file_atomic(output, ir::write_config(best.config) + "\n"); !st)
        return std::move(st.diagnostics);
      j["output"] = output;
    }
    ir::Result<ojson> out(std::move(j));
    out.diagnostics = std::move(warnings);
    return out;
  }
};

namespace {

// The operations: each one's contract (name, description, JSON Schema of its arguments) and its
// handler, declared once; call() refuses an argument its schema lacks before the handler runs.
struct OperationDef {
  Operation op;
  ir::Result<ojson> (*run)(ServiceWorker&, Args&, const std::atomic<bool>*);
};

constexpr OperationDef kOperations[] = {
    {{"validate",
      "Prove a megakernel program deadlock- and race-free (every rule of AMK's "
      "validator and "
      "more); errors come with JSON pointers and task ids. Also reads MPK task_graph.json and "
      "PTO deps.json graphs, with their runtimes' capacity rules.",
      R"json({"type":"object","properties":{"program":{"description":"the program: an AMK IR object, or a path to a program file","type":["object","string"]},"path":{"type":"string","description":"a program file (instead of program)"},"text":{"type":"string","description":"the program's JSON text (instead of program)"},"target":{"type":"string","description":"MPK/PTO: the chip whose SMs or cores the runtime's defaults assume"},"format":{"enum":["amk","mpk","pto"],"description":"the file's format (default: by its top-level keys): amk's program, MPK's task_graph.json, PTO's deps.json"},"scope_stats":{"type":"string","description":"PTO: the scope_stats.jsonl to read (default: scope_stats/ beside the file)"},"launch":{"type":"array","items":{"type":"string"},"description":"KEY=VALUE runtime capacity or launch-shape overrides (a number, or a comma list per ring); PTO: twait=WAITER:NOTIFIER task ids for a task blocking in TWAIT until another one's TNOTIFY"}},"additionalProperties":false})json"},
     [](ServiceWorker& w, Args& a, const std::atomic<bool>*) { return w.validate(a); }},
    {{"lower",
      "Lower one decode step of a model for a target under a ScheduleConfig into a "
      "program the "
      "validator proved; returns the program (or writes it to output) with its "
      "predicted latency.",
      R"json({"type":"object","properties":{"runtime":{"description":"a built-in runtime name (amk runtimes), a runtime file, or an inline profile (default: the target's)","type":["string","object"]},"model":{"description":"a built-in model name (see info), a model spec file, or an inline spec","type":["string","object"]},"target":{"description":"a built-in target name (see info), a target file, or an inline record","type":["string","object"]},"config":{"description":"a ScheduleConfig object, its JSON text, a config file path, 'auto' (amk's auto-tiling) or null (AMK's default_config)","type":["object","string","null"]},"pos":{"type":"integer","minimum":0},"batch":{"type":"integer","minimum":1},"dtype":{"enum":["F32","BF16","F16"]},"quant":{"enum":[null,"int8","int4"]},"output":{"type":"string","description":"write the program to this file (atomically) instead of returning it"}},"required":["model","target"],"additionalProperties":false})json"},
     [](ServiceWorker& w, Args& a, const std::atomic<bool>*) { return w.lower(a); }},
    {{"cost",
      "The cost model's predicted latency of a program on a target (its own target by "
      "default).",
      R"json({"type":"object","properties":{"runtime":{"description":"a built-in runtime name (amk runtimes), a runtime file, or an inline profile (default: the target's)","type":["string","object"]},"program":{"type":["object","string"]},"path":{"type":"string"},"text":{"type":"string"},"target":{"type":["string","object"]}},"additionalProperties":false})json"},
     [](ServiceWorker& w, Args& a, const std::atomic<bool>*) { return w.cost(a); }},
    {{"search_eval",
      "Evaluate one ScheduleConfig as a search does: lower, prove and score it (a warm "
      "lowering "
      "and validator are kept per model, target and options).",
      R"json({"type":"object","properties":{"runtime":{"description":"a built-in runtime name (amk runtimes), a runtime file, or an inline profile (default: the target's)","type":["string","object"]},"model":{"type":["string","object"]},"target":{"type":["string","object"]},"config":{"type":["object","string","null"]},"configs":{"type":"array","items":{"type":"object"},"description":"several configs in one request (the result is {trials: [...]})"},"objective":{"enum":["predicted","amk-formula"]},"pos":{"type":"integer","minimum":0},"batch":{"type":"integer","minimum":1},"dtype":{"enum":["F32","BF16","F16"]},"quant":{"enum":[null,"int8","int4"]}},"required":["model","target"],"additionalProperties":false})json"},
     [](ServiceWorker& w, Args& a, const std::atomic<bool>* stop) {
       return w.search_eval(a, stop);
     }},
    {{"info",
      "Summarise a program (counts, op mix, critical path, verdict, predicted latency); "
      "without a "
      "program, the amk version, operations, built-in models and targets.",
      R"json({"type":"object","properties":{"runtime":{"description":"a built-in runtime name (amk runtimes), a runtime file, or an inline profile (default: the target's)","type":["string","object"]},"program":{"type":["object","string"]},"path":{"type":"string"},"text":{"type":"string"},"target":{"type":["string","object"]},"unsafe":{"type":"boolean","description":"predict even for a rejected program"},"format":{"enum":["amk","mpk","pto"],"description":"the file's format (default: by its top-level keys): amk's program, MPK's task_graph.json, PTO's deps.json"},"scope_stats":{"type":"string","description":"PTO: the scope_stats.jsonl to read (default: scope_stats/ beside the file)"},"launch":{"type":"array","items":{"type":"string"},"description":"KEY=VALUE runtime capacity or launch-shape overrides (a number, or a comma list per ring); PTO: twait=WAITER:NOTIFIER task ids for a task blocking in TWAIT until another one's TNOTIFY"}},"additionalProperties":false})json"},
     [](ServiceWorker& w, Args& a, const std::atomic<bool>*) { return w.info(a); }},
    {{"diff", "The semantic changes from program a to program b (tasks matched by label).",
      R"json({"type":"object","properties":{"a":{"type":["object","string"]},"b":{"type":["object","string"]}},"required":["a","b"],"additionalProperties":false})json"},
     [](ServiceWorker& w, Args& a, const std::atomic<bool>*) { return w.diff(a); }},
    {{"search",
      "Search ScheduleConfigs for a model on a target with the full proof in the loop; "
      "returns "
      "the start and the best trial (config, predicted latency) and optionally writes "
      "the best "
      "config.",
      R"json({"type":"object","properties":{"runtime":{"description":"a built-in runtime name or a runtime file (default: the target's)","type":"string"},"model":{"type":"string"},"target":{"type":"string"},"budget":{"type":"integer","minimum":1,"maximum":100000},"time":{"type":"number","exclusiveMinimum":0,"description":"stop after this many seconds"},"seed":{"type":"integer","minimum":0},"jobs":{"type":"integer","minimum":1,"maximum":256},"algo":{"enum":["descent","amk"]},"min_batch":{"type":"integer","minimum":0,"description":"descent: at least this many new configs per round"},"objective":{"enum":["predicted","amk-formula"]},"start":{"type":["object","string"],"description":"the start ScheduleConfig: an object, its JSON text or a config file path (default: AMK's default_config)"},"output":{"type":"string","description":"write the best config to this file"}},"required":["model","target"],"additionalProperties":false})json"},
     [](ServiceWorker& w, Args& a, const std::atomic<bool>* stop) { return w.search(a, stop); }},
};

// The arguments an operation takes: its schema's properties, in its order ("op" and "id" are
// the request's own).
const std::vector<std::string>& arguments_of(const OperationDef& def) {
  static const auto kArguments = [] {
    std::vector<std::vector<std::string>> all;
    for (const OperationDef& d : kOperations) {
      std::vector<std::string>& names = all.emplace_back();
      const ojson schema = ojson::parse(d.op.schema);
      for (const auto& [name, v] : schema["properties"].items()) names.push_back(name);
    }
    return all;
  }();
  return kArguments[static_cast<size_t>(&def - kOperations)];
}

}  // namespace

std::span<const Operation> operations() {
  static const auto kContracts = [] {
    std::vector<Operation> v;
    for (const OperationDef& d : kOperations) v.push_back(d.op);
    return v;
  }();
  return kContracts;
}

struct Service::Impl : ServiceWorker {};

Service::Service(ServiceOptions o) : impl_(std::make_unique<Impl>()) {
  impl_->options = o;
}
Service::~Service() = default;
Service::Service(Service&&) noexcept = default;
Service& Service::operator=(Service&&) noexcept = default;

const ServiceOptions& Service::options() const {
  return impl_->options;
}

ir::Result<ojson> Service::call(std::string_view op, const ojson& args,
                                const std::atomic<bool>* stop) {
  if (!args.is_object()) return ir::error("request.invalid", "the arguments must be an object");
  const OperationDef* def = nullptr;
  for (const OperationDef& d : kOperations)
    if (d.op.name == op) def = &d;
  if (!def) {
    std::vector<std::string_view> names;
    for (const OperationDef& d : kOperations) names.push_back(d.op.name);
    return ir::error("request.op",
                     fmt::format("unknown op '{}' (use one of: {})", op, fmt::join(names, ", ")),
                     "/op");
  }
  Args a{args, {}, impl_->options.files};
  a.only(arguments_of(*def));
  // A server answers every request: an exception that escapes an operation (a bug) or memory
  // that runs out is this request's error, not the end of the worker and of the requests after.
  try {
    return def->run(*impl_, a, stop);
  } catch (const std::bad_alloc&) {
    return ir::error("request.memory", fmt::format("out of memory answering '{}'", op));
  } catch (const std::exception& e) {
    return ir::error("request.internal",
                     fmt::format("internal error answering '{}' (a bug; please report it with "
                                 "the request): {}",
                                 op, e.what()));
  }
}

ir::Result<ojson> Service::handle(const ojson& request, const std::atomic<bool>* stop) {
  if (!request.is_object()) return ir::error("request.invalid", "a request must be a JSON object");
  if (!request.contains("op") || !request["op"].is_string())
    return ir::error("request.op", "a request needs \"op\": a string naming the operation", "/op");
  return call(request["op"].get<std::string>(), request, stop);
}

}  // namespace amk::app
