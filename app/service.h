// The request/response seam: amk's operations (validate, lower, cost, search_eval, info, diff,
// search) on JSON requests, answered as JSON. `amk serve` (JSONL), `amk mcp` (an agent's tools),
// the Python module's evaluate and a cluster's workers all run requests through this one place.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/search_session.h"
#include "ir/digraph.h"
#include "ir/graph.h"
#include "ir/program.h"
#include "ir/result.h"
#include "search/search.h"
#include "targets/cost.h"
#include "targets/target.h"
#include "validate/validate.h"

namespace amk::app {

using ojson = nlohmann::ordered_json;

/// One operation of the seam: its name, what it does and the JSON Schema of its arguments.
struct Operation {
  std::string_view name;
  std::string_view description;
  std::string_view schema;  ///< JSON Schema text (an object of its arguments)
};
/// Every operation, in a stable order.
std::span<const Operation> operations();

/// What `amk info` reports about a program: counts, op mix, critical path, the verdict and (for
/// a valid program, or `unsafe`) the cost on its target or `target`.
struct ProgramInfo {
  validate::Result verdict;
  std::vector<std::string> rules;  ///< the rejection's rule codes, each once, in order
  ir::Graph graph;
  ir::CriticalPath critical;
  std::optional<ir::Target> target;
  std::optional<targets::CostEstimate> cost;
  ir::Diagnostics runtime_warnings;  ///< targets::runtime_limits of the program's config
  std::map<std::string, int64_t> ops, buffer_kinds;
  int64_t est_bytes = 0, est_flops = 0, weights = 0, waits = 0;
  /// The runtime's smallest safe capacities (validate::smallest_safe_capacities).
  std::vector<validate::CapacityNeed> capacities;
  /// The `amk info --json` document (`file` as given).
  ojson json(const ir::Program& p, std::string_view file) const;
};
/// Summarises `p`; `target` overrides the program's own, `runtime` the target's default.
ProgramInfo program_info(const ir::Program& p, const std::optional<ir::Target>& target, bool unsafe,
                         const targets::Runtime* runtime = nullptr);

/// The cost model's numbers as JSON (predicted_us, amk_formula_us, floor, bandwidth, ...).
ojson cost_json(const targets::CostEstimate& c);

/// What a worker may do.
struct ServiceOptions {
  bool files = true;                ///< read and write files named in requests (false: inline only)
  int64_t max_budget = 100000;      ///< the largest search budget (and min_batch) it takes
  int max_jobs = search::kMaxJobs;  ///< a search's most threads (more is capped, with a warning)
  double max_seconds = 0;  ///< the largest search `time` it takes (0: any); a server's ceiling
  size_t max_inline = SIZE_MAX;  ///< the largest program `lower` answers inline (bytes)
};
/// The JSON Schema of an operation's arguments with `o`'s limits in it (a search's budget, time
/// and min_batch maxima), as tools/list shows it.
ojson operation_schema(const Operation& op, const ServiceOptions& o);

/// A worker of the seam: one warm lowering and validator per (model, target, lowering options),
/// kept across requests. Not thread-safe: one per thread.
class Service {
 public:
  explicit Service(ServiceOptions o = {});
  ~Service();
  Service(Service&&) noexcept;
  Service& operator=(Service&&) noexcept;
  /// Answers `{"op": NAME, ...arguments}`; errors point into the request (e.g. "/config/x").
  /// `stop`, set by another thread, ends a search or a batch of configs early (its answer is then
  /// of no use: the caller answers the request as cancelled).
  ir::Result<ojson> handle(const ojson& request, const std::atomic<bool>* stop = nullptr);
  /// Runs operation `op` on `args` (an object).
  ir::Result<ojson> call(std::string_view op, const ojson& args,
                         const std::atomic<bool>* stop = nullptr);
  /// What this worker may do.
  const ServiceOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The search_eval request (without "config") that evaluates candidates of `s` anywhere: the
/// model spec and target record inline, the objective and the lowering options.
ojson evaluation_request(const SearchSession& s);

/// One line of a JSON-lines protocol as a JSON object (errors carry line 1's column and a pointer).
ir::Result<ojson> parse_request(std::string_view line);

/// The response to one line of `amk serve` (line number `lineno`): {id, ok, result[, warnings]}
/// or {id, ok: false, error: {code, message, diagnostics, line}} (id null when the line is not a
/// JSON object).
ojson serve_answer(Service& service, std::string_view line, size_t lineno);

/// A failed request's "error" object: the first error's code, every error formatted in one
/// message, and the diagnostics.
ojson error_json(const ir::Diagnostics& d);

}  // namespace amk::app
