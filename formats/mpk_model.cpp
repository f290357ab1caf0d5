// MPK's task types, data types and the schedulers' deal of tasks to workers
// (mirage runtime_header.h, type.h, persistent_kernel.cuh execute_scheduler).
#include <algorithm>

#include "formats/mpk.h"

namespace amk::formats::mpk {
namespace {

struct Named {
  int64_t code;
  std::string_view name;
};

constexpr Named kTaskTypes[] = {
    {0, "TERMINATE"},
    {10, "BEGIN_TASK_GRAPH"},
    {101, "EMBEDDING"},
    {102, "RMS_NORM_LINEAR"},
    {103, "ATTENTION_1"},
    {104, "ATTENTION_2"},
    {105, "SILU_MUL_LINEAR_WITH_RESIDUAL"},
    {106, "ALLREDUCE"},
    {107, "REDUCE"},
    {108, "LINEAR_WITH_RESIDUAL"},
    {109, "ARGMAX"},
    {110, "ARGMAX_PARTIAL"},
    {111, "ARGMAX_REDUCE"},
    {112, "FIND_NGRAM_PARTIAL"},
    {113, "FIND_NGRAM_GLOBAL"},
    {114, "TARGET_VERIFY_GREEDY"},
    {115, "SINGLE_BATCH_EXTEND_ATTENTION"},
    {116, "PAGED_ATTENTION_1"},
    {117, "PAGED_ATTENTION_2"},
    {118, "SILU_MUL"},
    {119, "RMS_NORM"},
    {120, "LINEAR"},
    {121, "IDENTITY"},
    {151, "LINEAR_WITH_RESIDUAL_HOPPER"},
    {152, "LINEAR_HOPPER"},
    {153, "PAGED_ATTENTION_HOPPER"},
    {154, "RMS_NORM_HOPPER"},
    {155, "LINEAR_SWAPAB_HOPPER"},
    {156, "LINEAR_SWAPAB_WITH_RESIDUAL_HOPPER"},
    {157, "LINEAR_CUTLASS_HOPPER"},
    {158, "LINEAR_CUTLASS_WITH_RESIDUAL_HOPPER"},
    {159, "SILU_MUL_HOPPER"},
    {160, "EMBEDDING_HOPPER"},
    {161, "MOE_W13_LINEAR_SM90"},
    {162, "MOE_W2_LINEAR_SM90"},
    {163, "SPLITK_LINEAR_SWAPAB_HOPPER"},
    {164, "PAGED_ATTENTION_SPLIT_KV_HOPPER"},
    {248, "MOE_W13_FP8_SM100"},
    {249, "MOE_W2_FP8_SM100"},
    {251, "SPLITK_LINEAR_SM100"},
    {252, "LINEAR_WITH_RESIDUAL_SM100"},
    {253, "LINEAR_SM100"},
    {254, "MOE_W13_LINEAR_SM100"},
    {255, "MOE_W2_LINEAR_SM100"},
    {257, "ATTN_SM100"},
    {258, "ARGMAX_REDUCE_SM100"},
    {259, "ARGMAX_PARTIAL_SM100"},
    {260, "MOE_TOPK_SOFTMAX_SM100"},
    {261, "MOE_MUL_SUM_ADD_SM100"},
    {262, "TENSOR_INIT"},
    {263, "PAGED_ATTENTION_SPLIT_KV_SM100"},
    {264, "PAGED_ATTENTION_SPLIT_KV_MERGE_SM100"},
    {265, "SAMPLING_SM100"},
    {266, "MLA_DECODE_SM100"},
    {267, "MLA_REDUCE_SM100"},
    {268, "MLA_PREFILL_SM100"},
    {301, "NVSHMEM_ALLGATHER_STRIDED_PUT"},
    {302, "NVSHMEM_TILE_ALLREDUCE"},
};

}  // namespace

std::string_view task_type_name(int64_t t) {
  for (const Named& n : kTaskTypes)
    if (n.code == t) return n.name;
  return {};
}

bool elem_type(int64_t code, detail::ElemType& out) {
  using ir::DType;
  switch (code) {
    case 920:  // DT_FLOAT4
    case 925:  // DT_INT4
    case 926:  // DT_UINT4
      out = {DType::I4, 4};
      return true;
    case 930:  // DT_FLOAT8
      out = {DType::F8E4M3, 8};
      return true;
    case 935:  // DT_INT8
      out = {DType::I8, 8};
      return true;
    case 936:  // DT_UINT8
      out = {DType::U8, 8};
      return true;
    case 940:  // DT_FLOAT16
    case 945:  // DT_INT16 (a 16-bit element)
    case 946:  // DT_UINT16
      out = {DType::F16, 16};
      return true;
    case 941:  // DT_BFLOAT16
      out = {DType::BF16, 16};
      return true;
    case 950:  // DT_FLOAT32
      out = {DType::F32, 32};
      return true;
    case 955:  // DT_INT32
    case 956:  // DT_UINT32
      out = {DType::I32, 32};
      return true;
    case 960:  // DT_DOUBLE
    case 965:  // DT_INT64
    case 966:  // DT_UINT64
      out = {DType::I32, 64};
      return true;
    default:
      return false;
  }
}

int64_t data_type_code(ir::DType d) {
  using ir::DType;
  switch (d) {
    case DType::F32:
      return 950;
    case DType::F16:
      return 940;
    case DType::BF16:
      return 941;
    case DType::F8E4M3:
    case DType::F8E5M2:
      return 930;
    case DType::I32:
      return 955;
    case DType::I8:
      return 935;
    case DType::I4:
      return 925;
    case DType::U8:
    case DType::BOOL:
      return 936;
  }
  return 936;
}

std::vector<int64_t> placement(const Graph& g, int64_t workers, int64_t schedulers) {
  std::vector<int64_t> at(g.tasks.size(), -1);
  // Scheduler s owns workers [first[s], last[s]) (get_first_last_ids) and deals round-robin from
  // next[s] on.
  const auto ns = static_cast<size_t>(schedulers);
  std::vector<int64_t> first(ns), last(ns), next(ns);
  const int64_t per = workers / schedulers, rem = workers % schedulers;
  for (size_t s = 0; s < ns; ++s) {
    const auto si = static_cast<int64_t>(s);
    first[s] = si < rem ? (per + 1) * si : per * si + rem;
    last[s] = first[s] + (si < rem ? per + 1 : per);
    next[s] = first[s];
  }
  auto deal = [&](size_t s, size_t task) {
    if (first[s] == last[s]) return;
    if (task < at.size()) at[task] = next[s];
    next[s] = next[s] == last[s] - 1 ? first[s] : next[s] + 1;
  };
  // prepare_kernel seeds scheduler 0 with END_OF_TASK_GRAPH: it queues task 1 (BEGIN_TASK_GRAPH).
  deal(0, 1);
  // Every local scheduler takes each LAUNCH_DEPENDENT_TASKS event from the broadcast queue and
  // queues the positions of its own workers' columns.
  for (const Event& e : g.events) {
    if (e.event_type != kLaunchDependent) continue;
    const int64_t n = e.last_task_id - e.first_task_id;
    if (n <= 0) continue;
    const int64_t rows = (n + workers - 1) / workers;
    for (size_t s = 0; s < ns; ++s)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = first[s]; j < last[s]; ++j) {
          const int64_t pos = e.first_task_id + i * workers + j;
          if (pos < e.last_task_id) deal(s, static_cast<size_t>(pos));
        }
  }
  return at;
}

}  // namespace amk::formats::mpk
