#include "ir/schema.h"

#include <array>

namespace amk::ir {

namespace {

using T = Target;
constexpr std::array<Field<T>, 17> kTargetFields{{
    {"name", &T::name, true, "a string"},
    {"sm_arch", &T::sm_arch, true, "an integer (compute capability x 10)"},
    {"num_sms", &T::num_sms, true, "a positive integer"},
    {"smem_bytes_per_sm", &T::smem_bytes_per_sm, true, "bytes"},
    {"smem_bytes_per_block_optin", &T::smem_bytes_per_block_optin, true, "bytes"},
    {"regs_per_sm", &T::regs_per_sm, true, "a count"},
    {"max_threads_per_sm", &T::max_threads_per_sm, true, "a count"},
    {"max_regs_per_thread", &T::max_regs_per_thread, true, "a count"},
    {"l2_bytes", &T::l2_bytes, true, "bytes"},
    {"hbm_bytes", &T::hbm_bytes, true, "bytes"},
    {"hbm_bandwidth_gbs", &T::hbm_bandwidth_gbs, true, "GB/s"},
    {"fp16_tflops", &T::fp16_tflops, true, "TFLOP/s"},
    {"clock_ghz", &T::clock_ghz, false, "GHz"},
    {"supports_cooperative", &T::supports_cooperative, false, "a boolean"},
    {"wddm_tdr", &T::wddm_tdr, false, "a boolean"},
    {"measured_bw_gbs", &T::measured_bw_gbs, false, "GB/s (0: not measured)"},
    {"note", &T::note, false, "a string"},
}};

using C = ScheduleConfig;
constexpr std::array<Field<C>, 7> kConfigFields{{
    {"tiling", &C::tiling, false,
     "{\"gemv\": {\"N_tile\" | \"base_width\": int}, \"attention\": {\"n_partitions\" | "
     "\"kv_block\": int}}"},
    {"fusion_grouping", &C::fusion_grouping, false, "a list of lists of op names"},
    {"sm_assignment", &C::sm_assignment, false,
     "\"round_robin\", \"load_balance\" or an object {\"<task id>\": sm}"},
    {"pipelining_depth", &C::pipelining_depth, false, "an integer in [0, 16]"},
    {"page_allocation", &C::page_allocation, false, "\"linear\", \"graph_color\" or \"none\""},
    {"threads_per_block", &C::threads_per_block, false, "a multiple of 32 in [32, 1024]"},
    {"smem_bytes_per_block", &C::smem_bytes_per_block, false, "a non-negative integer"},
}};

}  // namespace

std::span<const Field<Target>> target_fields() {
  return kTargetFields;
}

std::span<const Field<ScheduleConfig>> config_fields() {
  return kConfigFields;
}

std::optional<double> target_number(const Target& t, std::string_view name) {
  const Field<Target>* f = find_field(target_fields(), name);
  if (!f) return std::nullopt;
  if (auto* n = std::get_if<Number Target::*>(&f->member)) return (t.*(*n)).as_double();
  return std::nullopt;
}

}  // namespace amk::ir
