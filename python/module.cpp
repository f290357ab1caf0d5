// The extension of the Python package `amk` (pybind11): load, validate, lower, cost, diff and
// search from Python, and the request seam (call, evaluate) that executors and cluster workers
// run. Every call that can take long releases the GIL; malformed input raises amk.LoadError.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <malloc.h>

#include <cstdlib>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/load.h"
#include "app/search_session.h"
#include "app/service.h"
#include "ir/diagnostic.h"
#include "ir/diagnostic_json.h"
#include "ir/diff.h"
#include "ir/json_io.h"
#include "ir/json_value.h"
#include "ir/pyjson.h"
#include "lower/compile.h"
#include "lower/config.h"
#include "lower/model.h"
#include "search/search.h"
#include "targets/cost.h"
#include "targets/target.h"
#include "validate/validate.h"

namespace py = pybind11;
using namespace amk;
using ojson = nlohmann::ordered_json;

namespace {

py::object load_error;            // amk.LoadError, set at import
PyObject* amk_warning = nullptr;  // amk.AmkWarning, set at import (kept to the end: no decref)

// Raises amk.LoadError with every error rendered (file, line:column, pointer, code, message).
[[noreturn]] void raise(const ir::Diagnostics& d, const std::string& where) {
  std::string msg;
  for (const ir::Diagnostic& x : d)
    if (x.severity == ir::Severity::Error)
      msg += (msg.empty() ? "" : "\n") + ir::format_diagnostic(x, where);
  if (msg.empty()) msg = where + ": failed";
  PyErr_SetString(load_error.ptr(), ir::valid_utf8(msg).c_str());
  throw py::error_already_set();
}

template <class T>
T take(ir::Result<T> r, const std::string& where) {
  if (!r) raise(r.diagnostics, where);
  return std::move(*r);
}

// Issues each warning of `d` as an amk.AmkWarning (Python's warnings module: shown once per place
// by default, filterable, an error under -W error).
void warn(const ir::Diagnostics& d, const std::string& where) {
  for (const ir::Diagnostic& x : d)
    if (x.severity == ir::Severity::Warning &&
        PyErr_WarnEx(amk_warning, ir::valid_utf8(ir::format_diagnostic(x, where)).c_str(), 1) != 0)
      throw py::error_already_set();
}

// A string for Python: valid UTF-8, U+FFFD for what is not (a lone surrogate read from "\ud800").
py::str str(std::string_view s) {
  return py::str(ir::valid_utf8(s));
}

// A Python str's text as UTF-8, a lone surrogate in it as its 3-byte form (which the reader then
// refuses with its line:column, as any invalid UTF-8); bytes as they are.
std::string text_of(const py::handle& x) {
  if (!PyUnicode_Check(x.ptr())) return x.cast<std::string>();
  const py::object b = py::reinterpret_steal<py::object>(
      PyUnicode_AsEncodedString(x.ptr(), "utf-8", "surrogatepass"));
  if (!b) throw py::error_already_set();
  return b.cast<std::string>();
}

// A JSON value as Python objects (dicts keep the key order).
py::object to_py(const ojson& j) {
  switch (j.type()) {
    case ojson::value_t::null:
      return py::none();
    case ojson::value_t::boolean:
      return py::bool_(j.get<bool>());
    case ojson::value_t::number_integer:
      return py::int_(j.get<int64_t>());
    case ojson::value_t::number_unsigned:
      return py::int_(j.get<uint64_t>());
    case ojson::value_t::number_float:
      return py::float_(j.get<double>());
    case ojson::value_t::string:
      return str(j.get_ref<const std::string&>());
    case ojson::value_t::array: {
      py::list l;
      for (const ojson& x : j) l.append(to_py(x));
      return l;
    }
    case ojson::value_t::object: {
      py::dict d;
      for (const auto& [k, v] : j.items()) d[str(k)] = to_py(v);
      return d;
    }
    default:
      return py::none();
  }
}

// JSON text (amk's own output) parsed by amk's reader, which keeps "\ud800" as AMK does (to_py
// then shows U+FFFD); a discarded value when it is not an object.
ojson parse_json(const std::string& text) {
  ir::Result<ir::JsonValue> r = ir::parse_json_object(text, "JSON text");
  if (!r) return ojson(ojson::value_t::discarded);
  return std::move(r->mut());
}

// A config given as a dict (or a JSON string): AMK's ScheduleConfig.
std::optional<ir::ScheduleConfig> config_of(const py::object& config, const char* key) {
  if (config.is_none()) return lower::default_config();
  if (py::isinstance<py::str>(config))  // 'auto', JSON text or a file, as `amk lower --config`
    return take(lower::resolve_config(config.cast<std::string>(), key), key);
  const std::string text = py::module_::import("json").attr("dumps")(config).cast<std::string>();
  return take(lower::parse_config(text, key), key);
}

struct Program {
  ir::Program p;
};

// A Program argument, or program JSON text parsed (without the GIL): a Program is used in place,
// never copied (a copy of Llama-1B costs a third of its proof).
struct ProgramArg {
  std::optional<ir::Program> parsed;
  const ir::Program* p = nullptr;
  const ir::Program& operator*() const { return *p; }
};

// Program JSON text parsed without the GIL; malformed text raises amk.LoadError.
ir::Program parse_text(const std::string& text) {
  ir::Result<ir::Program> r;
  {
    py::gil_scoped_release free;
    r = ir::parse_program(text);
  }
  return take(std::move(r), "<text>");
}

ProgramArg program_of(const py::object& x) {
  ProgramArg a;
  if (py::isinstance<Program>(x)) {
    a.p = &x.cast<const Program&>().p;
    return a;
  }
  a.parsed = parse_text(text_of(x));
  a.p = &*a.parsed;
  return a;
}

py::object program_json(const ir::Program& p, const char* key) {
  return to_py(parse_json(ir::write_program(p))[key]);
}

py::dict diagnostic(const ir::Diagnostic& d) {
  py::dict o;
  o["code"] = str(d.code);
  o["message"] = str(d.message);
  o["pointer"] = str(d.pointer);
  // The task a diagnostic is about: its pointer's /tasks/N.
  py::object task = py::none();
  if (d.pointer.starts_with("/tasks/")) {
    const size_t end = d.pointer.find('/', 7);
    const std::string n = d.pointer.substr(7, end == std::string::npos ? end : end - 7);
    if (!n.empty() && n.find_first_not_of("0123456789") == std::string::npos && n.size() < 12)
      task = py::int_(std::stoll(n));
  }
  o["task"] = task;
  o["line"] = d.line;
  o["column"] = d.column;
  return o;
}

// Setting MALLOC_TRIM_THRESHOLD_ (Dask's nanny does, for every worker) turns off glibc's dynamic
// mmap threshold, so every block over 128 KiB a lowering allocates is mmap'ed and faulted in
// anew, evaluation after evaluation. A process that evaluates candidates for a search keeps such
// blocks on its heap instead (trimming still returns the heap's top).
void keep_large_blocks_on_the_heap() {
  static const bool once = [] {
    if (std::getenv("MALLOC_TRIM_THRESHOLD_") && !std::getenv("MALLOC_MMAP_THRESHOLD_"))
      mallopt(M_MMAP_THRESHOLD, 32 << 20);
    return true;
  }();
  (void)once;
}

// This thread's warm worker of the request seam (one per executor or cluster thread).
app::Service& service() {
  thread_local app::Service s;
  return s;
}

// {ok, result} or {ok: false, error} for one operation on its arguments (or why they could not
// be read).
ojson answer(const std::string& op, const ir::Result<ojson>& args) {
  ir::Result<ojson> r = args ? service().call(op, *args) : ir::Result<ojson>(args.diagnostics);
  if (!r) return {{"ok", false}, {"error", app::error_json(r.diagnostics)}};
  return {{"ok", true}, {"result", std::move(*r.value)}};
}

ir::Diagnostics diagnostics_of(const ojson& error) {
  ir::Diagnostics d;
  for (const ojson& x : error["diagnostics"])
    if (std::optional<ir::Diagnostic> y = ir::diagnostic_from_json(x)) d.push_back(std::move(*y));
  return d;
}

struct Verdict {
  validate::Result r;
};

std::string type_name(const py::handle& x) {
  return py::str(py::type::handle_of(x).attr("__name__")).cast<std::string>();
}

// An executor's results for a batch of `n` configs: a list (or tuple) of trials' JSON texts;
// anything else is a RuntimeError naming what came instead.
std::vector<std::string> executor_texts(const py::object& out, size_t n) {
  if (!py::isinstance<py::list>(out) && !py::isinstance<py::tuple>(out))
    throw std::runtime_error(
        fmt::format("the executor returned a {} for a batch of {} configs, not a list of trials",
                    type_name(out), n));
  std::vector<std::string> texts;
  size_t i = 0;
  for (const py::handle x : out) {
    if (!py::isinstance<py::str>(x))
      throw std::runtime_error(
          fmt::format("the executor's result {} is of type {}, not a trial (the JSON text "
                      "amk._amk.evaluate gives)",
                      i, type_name(x)));
    texts.push_back(text_of(x));
    ++i;
  }
  return texts;
}

// amk.search's answer: the trials (as the log writes them), the best and the counts.
py::dict search_result_py(search::SearchResult res) {
  py::dict out;
  py::list trials;
  for (const search::Trial& t : res.trials) trials.append(to_py(parse_json(search::trial_json(t))));
  out["trials"] = trials;
  out["best"] = res.best;
  out["best_config"] =
      to_py(parse_json(ir::write_config(res.trials[static_cast<size_t>(res.best)].config)));
  out["best_predicted_us"] = res.trials[static_cast<size_t>(res.best)].predicted_us;
  out["best_program"] = Program{std::move(res.best_program)};
  out["evaluations"] = res.evaluations;
  out["valid"] = res.valid;
  out["duplicates"] = res.duplicates;
  out["stopped"] = res.stopped;
  return out;
}

// amk.search: a search session with Python's on_trial hook and executor (evaluate_batch).
py::dict run_search(const std::string& model, const std::string& target, int64_t budget,
                    uint64_t seed, int jobs, const std::string& algo, const std::string& objective,
                    const py::object& start, const py::object& on_trial,
                    const py::object& evaluate_batch, int64_t min_batch,
                    const py::object& runtime) {
  app::SearchRequest req;
  req.model = model;
  req.target = target;
  if (!runtime.is_none()) req.runtime = runtime.cast<std::string>();
  req.options.budget = budget;
  req.options.seed = seed;
  req.options.jobs = jobs;
  req.options.algorithm = take(search::algorithm_named("algo", algo), "algo");
  req.options.min_batch = min_batch;
  req.options.objective = take(search::objective_named("objective", objective), "objective");
  if (!start.is_none()) {
    req.start = config_of(start, "start");
    if (!req.start)
      raise({ir::error("usage.option", "start needs a ScheduleConfig, not 'auto'")}, "start");
    req.start_origin = py::isinstance<py::str>(start)
                           ? lower::config_origin(start.cast<std::string>(), "start")
                           : "start";
  }
  ir::Result<std::unique_ptr<app::SearchSession>> created =
      app::SearchSession::create(std::move(req));
  if (created) warn(created.diagnostics, "search");
  std::unique_ptr<app::SearchSession> session = take(std::move(created), "search");
  std::exception_ptr failure;  // a Python exception from on_trial stops the search
  std::function<bool(const search::Trial&)> hook;
  if (!on_trial.is_none())
    hook = [&](const search::Trial& t) {
      py::gil_scoped_acquire hold;
      try {
        const py::object r = on_trial(to_py(parse_json(search::trial_json(t))));
        return r.is_none() || r.cast<bool>();
      } catch (...) {
        failure = std::current_exception();
        return false;
      }
    };
  // Batches evaluated by evaluate_batch(request, configs) -> trials (an executor's
  // workers running amk._amk.evaluate), in place of the jobs threads.
  std::function<ir::Status(const std::vector<search::Trial*>&)> remote;
  const std::string request = ir::dump_text(app::evaluation_request(*session));
  if (!evaluate_batch.is_none())
    remote = [&](const std::vector<search::Trial*>& batch) -> ir::Status {
      py::gil_scoped_acquire hold;
      try {
        py::list configs;
        for (const search::Trial* t : batch) configs.append(ir::write_config(t->config));
        // What comes back is checked (count, type, and each against the config it was
        // sent for); a result that is not what was asked for is a RuntimeError.
        ir::Status st = app::take_executor_results(
            batch, executor_texts(evaluate_batch(request, configs), batch.size()));
        if (!st) throw std::runtime_error(ir::error_messages(st.diagnostics));
        return {};
      } catch (...) {
        failure = std::current_exception();
        return ir::error("search.evaluate", "the executor failed");
      }
    };
  ir::Result<search::SearchResult> r;
  {
    py::gil_scoped_release free;
    r = session->run(hook, {}, remote);
  }
  if (failure) std::rethrow_exception(failure);
  return search_result_py(take(std::move(r), "search"));
}

// The types: LoadError, Program and Result (the verdict).
void bind_types(py::module_& m) {
  load_error = py::exception<std::runtime_error>(m, "LoadError", PyExc_ValueError);
  m.attr("LoadError").attr("__doc__") =
      "Malformed input: the message names the file, line:column and JSON pointer.";
  amk_warning = PyErr_NewExceptionWithDoc("amk._amk.AmkWarning",
                                          "What amk warns of (a config beyond its runtime's "
                                          "limits): the message names the code and the JSON "
                                          "pointer.",
                                          PyExc_UserWarning, nullptr);
  if (!amk_warning) throw py::error_already_set();
  m.attr("AmkWarning") = py::reinterpret_borrow<py::object>(amk_warning);

  py::class_<Program>(m, "Program", "A megakernel schedule (AMK's MegakernelProgram).")
      .def(
          "dumps", [](const Program& p) { return ir::write_program(p.p); },
          "AMK's canonical bytes.")
      .def("__len__", [](const Program& p) { return p.p.tasks.size(); })
      .def_property_readonly("tasks", [](const Program& p) { return program_json(p.p, "tasks"); })
      .def_property_readonly("buffers",
                             [](const Program& p) { return program_json(p.p, "buffers"); })
      .def_property_readonly("counters",
                             [](const Program& p) { return program_json(p.p, "counters"); })
      .def_property_readonly("meta", [](const Program& p) { return to_py(p.p.meta.json()); })
      .def("__repr__", [](const Program& p) {
        return "<amk.Program " + std::to_string(p.p.tasks.size()) + " tasks>";
      });

  py::class_<Verdict>(m, "Result", "The validator's verdict.")
      .def_property_readonly("ok", [](const Verdict& v) { return v.r.ok; })
      .def_property_readonly("errors",
                             [](const Verdict& v) {
                               py::list l;
                               for (const auto& d : v.r.errors) l.append(diagnostic(d));
                               return l;
                             })
      .def_property_readonly("warnings",
                             [](const Verdict& v) {
                               py::list l;
                               for (const auto& d : v.r.warnings) l.append(diagnostic(d));
                               return l;
                             })
      .def_property_readonly(
          "stats", [](const Verdict& v) { return to_py(parse_json(v.r.to_json())["stats"]); })
      .def(
          "report", [](const Verdict& v) { return str(v.r.report()); }, "AMK's report text.")
      .def("__bool__", [](const Verdict& v) { return v.r.ok; });
}

// Reading and proving programs: load, loads, validate.
void bind_programs(py::module_& m) {
  m.def(
      "load",
      [](const std::string& path, const std::optional<std::string>& format,
         const std::optional<std::string>& scope_stats, const std::vector<std::string>& launch,
         const std::optional<std::string>& target) {
        app::FormatOptions o;
        if (format) {
          o.format = app::parse_format(*format);
          if (!o.format) throw py::value_error("format must be 'amk', 'mpk' or 'pto'");
        }
        o.scope_stats = scope_stats.value_or("");
        o.launch = launch;
        o.target = target.value_or("");
        ir::Result<ir::Program> r;
        {
          py::gil_scoped_release free;
          r = app::load_program(path, o);
        }
        return Program{take(std::move(r), path)};
      },
      py::arg("path"), py::arg("format") = py::none(), py::arg("scope_stats") = py::none(),
      py::arg("launch") = std::vector<std::string>(), py::arg("target") = py::none(),
      "Reads a program file: amk's JSON, an MPK task_graph.json or a PTO deps.json (format: "
      "'amk', 'mpk' or 'pto', default by its top-level keys; scope_stats: PTO's scope_stats.jsonl; "
      "launch: ['KEY=VALUE', ...] runtime capacity overrides (PTO: 'twait=WAITER:NOTIFIER' too); "
      "target: the chip for the runtime's "
      "defaults).");
  m.def(
      "loads", [](const py::object& text) { return Program{parse_text(text_of(text))}; },
      py::arg("text"), "Parses program JSON text.");
  m.def(
      "validate",
      [](const py::object& program) {
        const ProgramArg p = program_of(program);
        Verdict v;
        {
          py::gil_scoped_release free;
          v.r = validate::validate(*p);
        }
        return v;
      },
      py::arg("program"), "Proves a Program (or program JSON text) deadlock- and race-free.");
}

// Lowering and predicting: lower, the built-in names, cost and diff.
void bind_lowering(py::module_& m) {
  m.def(
      "lower",
      [](const std::string& model, const std::string& target, const py::object& config, int64_t pos,
         int64_t batch, const std::string& dtype, const py::object& quant,
         const py::object& runtime) {
        const lower::ModelSpec ms = take(lower::load_model(model), model);
        const targets::TargetSpec ts = take(targets::load_target(target), target);
        const std::optional<ir::ScheduleConfig> cfg = config_of(config, "config");
        lower::LowerOptions o;
        std::optional<targets::Runtime> rt;
        if (!runtime.is_none()) {
          const std::string r = runtime.cast<std::string>();
          rt = take(targets::load_runtime(r), r);
          o.runtime = &*rt;
        }
        o.pos = pos;
        o.batch = batch;
        o.dtype = take(lower::lower_dtype_named("dtype", dtype), "dtype");
        if (!quant.is_none())
          o.quant = take(lower::quant_named("quant", quant.cast<std::string>(), false), "quant");
        ir::Result<lower::Compiled> c;
        {
          py::gil_scoped_release free;
          c = lower::compile(ms, ts, cfg, o);
        }
        if (c) warn(c.diagnostics, "lower " + model);
        return Program{take(std::move(c), "lower " + model).program};
      },
      py::arg("model"), py::arg("target"), py::arg("config") = py::none(), py::arg("pos") = 0,
      py::arg("batch") = 1, py::arg("dtype") = "F32", py::arg("quant") = py::none(),
      py::arg("runtime") = py::none(),
      "Lowers one decode step of a model for a target under a ScheduleConfig (dict, JSON text, "
      "a file path, 'auto' or None for AMK's default_config); the program is proven before it is "
      "returned.");
  m.def("models", &lower::builtin_model_names, "The built-in model specs.");
  m.def("targets", &targets::builtin_target_names, "The built-in targets.");
  m.def("runtimes", &targets::builtin_runtime_names, "The built-in runtime profiles.");
  m.def(
      "cost",
      [](const py::object& program, const std::string& target, const py::object& runtime) {
        const ProgramArg p = program_of(program);
        const targets::TargetSpec t = take(targets::load_target(target), target);
        std::optional<targets::Runtime> rt;
        if (!runtime.is_none()) {
          const std::string r = runtime.cast<std::string>();
          rt = take(targets::load_runtime(r), r);
        }
        return to_py(app::cost_json(
            targets::estimate(*p, t.record, rt ? *rt : targets::default_runtime(t))));
      },
      py::arg("program"), py::arg("target"), py::arg("runtime") = py::none(),
      "The cost model's prediction on a target, run by a runtime (a name or file; default: the "
      "target's).");
  m.def(
      "diff",
      [](const py::object& a, const py::object& b) {
        const ProgramArg pa = program_of(a), pb = program_of(b);
        std::string json;
        {
          py::gil_scoped_release free;
          json = ir::diff_to_json(ir::diff_programs(*pa, *pb));
        }
        return to_py(parse_json(json)["changes"]);
      },
      py::arg("a"), py::arg("b"), "The semantic changes from a to b.");
}

// The search and the request seam executors and cluster workers run (call, evaluate).
void bind_seam(py::module_& m) {
  m.def("search", &run_search, py::arg("model"), py::arg("target"), py::arg("budget") = 200,
        py::arg("seed") = 0, py::arg("jobs") = 1, py::arg("algo") = "descent",
        py::arg("objective") = "predicted", py::arg("start") = py::none(),
        py::arg("on_trial") = py::none(), py::arg("evaluate_batch") = py::none(),
        py::arg("min_batch") = 0, py::arg("runtime") = py::none(),
        "Searches ScheduleConfigs with the full proof in the loop (the trials and best of `amk "
        "search` with the same arguments). on_trial(trial) sees each trial in order; returning "
        "False stops the search, an exception stops it and propagates. evaluate_batch(request, "
        "configs) -> trials evaluates batches elsewhere (see amk.search's executor).");
  m.def(
      "call",
      [](const std::string& op, const std::string& args) {
        std::string out;
        {
          py::gil_scoped_release free;
          out = ir::dump_text(answer(op, app::parse_request(args)));
        }
        return out;
      },
      py::arg("op"), py::arg("args"),
      "Runs one operation of `amk serve` (args: JSON text of an object) on this thread's warm "
      "worker: the JSON text of {ok, result} or {ok: false, error}.");
  m.def(
      "affinity_chunks",
      [](const std::vector<std::string>& configs, size_t parts) {
        std::vector<ir::ScheduleConfig> parsed;
        for (size_t i = 0; i < configs.size(); ++i)
          parsed.push_back(
              take(lower::parse_config(configs[i], fmt::format("configs[{}]", i)), "configs"));
        std::vector<const ir::ScheduleConfig*> ptrs;
        for (const ir::ScheduleConfig& c : parsed) ptrs.push_back(&c);
        return search::affinity_chunks(ptrs, parts);
      },
      py::arg("configs"), py::arg("parts"),
      "Deals a batch of ScheduleConfigs (JSON texts) to at most `parts` chunks of about equal "
      "cost, keeping the configs of one structure (tiling and fusion) together: the positions "
      "of each chunk's configs.");
  m.def(
      "evaluate",
      [](const std::string& request, const std::vector<std::string>& configs) {
        std::vector<std::string> trials;
        ojson r;
        {
          py::gil_scoped_release free;
          keep_large_blocks_on_the_heap();
          ojson args = parse_json(request);
          if (!args.is_object()) args = ojson::object();
          args.erase("op");
          ojson list = ojson::array();
          for (const std::string& c : configs) list.push_back(parse_json(c));
          args["configs"] = std::move(list);
          r = answer("search_eval", ir::Result<ojson>(std::move(args)));
          if (r["ok"].get<bool>())
            for (const ojson& t : r["result"]["trials"]) trials.push_back(ir::dump_text(t));
        }
        if (!r["ok"].get<bool>()) raise(diagnostics_of(r["error"]), "evaluate");
        return trials;
      },
      py::arg("request"), py::arg("configs"),
      "Evaluates ScheduleConfigs (JSON texts) for a search's evaluation request on this thread's "
      "warm worker: one trial (JSON text) per config. What executors and cluster workers run.");
}

}  // namespace

PYBIND11_MODULE(_amk, m) {
  m.doc() =
      "amk: megakernel schedules (AMK's IR, the validator, the lowering, the cost model, the "
      "search)";
  bind_types(m);
  bind_programs(m);
  bind_lowering(m);
  bind_seam(m);
}
