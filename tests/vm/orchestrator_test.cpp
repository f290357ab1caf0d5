// The orchestration API: dependencies from overlapping regions (RAW, WAW and the WAR edges PTO
// leaves out), back-pressure from a small task ring, the paged-attention example against a direct
// evaluation at ring sizes 16..65536, PTO's deadlock diagnosis instead of a hang, scope escapes,
// the schedulers' stall classes (orchestrator starvation, a running stall), and record() giving a
// program the validator proves and AICore mode runs to the same output.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "examples/paged_attention/paged_attention.h"
#include "ir/json_io.h"
#include "support.h"
#include "validate/validate.h"
#include "vm/orchestrator.h"
#include "vm/vm.h"

namespace amk::vm {
namespace {

using examples::PagedAttentionCase;
using examples::PagedAttentionResult;
using examples::run_paged_attention;

// A kernel that logs the order tasks ran in (ADD, NOP and friends as markers).
std::vector<std::string> g_log;
std::mutex g_log_mu;
inst::Status logging_kernel(const inst::KernelArgs& a) {
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // let misordering show
  std::lock_guard lk(g_log_mu);
  g_log.push_back(a.task->label);
  return {};
}
inst::Kernel logging_registry(ir::Op) {
  return logging_kernel;
}

size_t pos(const std::string& label) {
  return static_cast<size_t>(std::find(g_log.begin(), g_log.end(), label) - g_log.begin());
}

TEST(OrchestratorTrace, AnObserverSeesEveryTaskDispatchedRunAndRetiredOnItsCore) {
  TraceRecorder rec;
  OrchestratorOptions o;
  o.machine.clusters = 2;
  o.machine.schedulers = 2;
  o.observer = &rec;
  std::vector<float> x(4, 1.0f), y(4), z(4);
  {
    Orchestrator orch(o);
    const int64_t X = orch.tensor("x", ir::DType::F32, {4}, x.data(), ir::BufferKind::IO_INPUT);
    const int64_t Y = orch.tensor("y", ir::DType::F32, {4}, y.data(), ir::BufferKind::IO_OUTPUT);
    const int64_t Z = orch.tensor("z", ir::DType::F32, {4}, z.data(), ir::BufferKind::IO_OUTPUT);
    ASSERT_TRUE(test::ok(
        orch.submit(ir::Op::COPY, CoreType::Aiv, {{X, ArgDir::Input}, {Y, ArgDir::Output}})));
    ASSERT_TRUE(test::ok(
        orch.submit(ir::Op::COPY, CoreType::Aic, {{Y, ArgDir::Input}, {Z, ArgDir::Output}})));
    ASSERT_TRUE(test::ok(orch.finish()));
  }
  EXPECT_EQ(z, x);
  // Lanes: 2 AIC, 4 AIV, then the 2 schedulers.
  ASSERT_EQ(rec.lanes().size(), 8u);
  EXPECT_EQ(rec.lanes()[6], "AICPU scheduler 0");
  const std::vector<TraceEvent> ev = rec.events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_GE(ev[0].worker, 2);               // the AIV task on an AIV core
  EXPECT_LT(ev[1].worker, 2);               // the AIC task on an AIC core
  EXPECT_LE(ev[0].end_ns, ev[1].start_ns);  // the second reads what the first wrote
  for (const TraceEvent& e : ev) {
    EXPECT_GE(e.scheduler, 0);
    EXPECT_LE(e.dispatch_ns, e.start_ns);
    EXPECT_LE(e.end_ns, e.retire_ns);
  }
}

TEST(OrchestratorDeps, RawWawWarAndDisjointRowRegions) {
  g_log.clear();
  OrchestratorOptions o;
  o.machine.schedulers = 3;
  o.kernel_for = logging_registry;
  std::vector<float> x(8 * 4), y(8 * 4);
  Orchestrator orch(o);
  const int64_t X = orch.tensor("x", ir::DType::F32, {8, 4}, x.data(), ir::BufferKind::IO_INPUT);
  const int64_t Y = orch.tensor("y", ir::DType::F32, {8, 4}, y.data(), ir::BufferKind::IO_OUTPUT);
  const ir::Region top{0, 0, 4}, bottom{0, 4, 8};
  ASSERT_TRUE(orch.submit(ir::Op::NOP, CoreType::Aiv, {{X, ArgDir::Output, top}}, {}, "w_top"));
  ASSERT_TRUE(orch.submit(ir::Op::NOP, CoreType::Aiv, {{X, ArgDir::Output, bottom}}, {}, "w_bot"));
  ASSERT_TRUE(orch.submit(ir::Op::NOP, CoreType::Aiv,
                          {{X, ArgDir::Input, top}, {Y, ArgDir::Output, top}}, {}, "r_top"));
  ASSERT_TRUE(orch.submit(ir::Op::NOP, CoreType::Aiv, {{X, ArgDir::Output, top}}, {}, "war_top"));
  ASSERT_TRUE(orch.submit(ir::Op::NOP, CoreType::Aiv, {{X, ArgDir::InOut}}, {}, "inout_all"));
  ASSERT_TRUE(test::ok(orch.finish()));
  ASSERT_EQ(g_log.size(), 5u);
  EXPECT_LT(pos("w_top"), pos("r_top"));        // RAW
  EXPECT_LT(pos("r_top"), pos("war_top"));      // WAR: the overwrite waits for the read
  EXPECT_LT(pos("w_top"), pos("war_top"));      // WAW
  EXPECT_LT(pos("war_top"), pos("inout_all"));  // the whole-buffer INOUT follows everything
  EXPECT_LT(pos("w_bot"), pos("inout_all"));
  const OrchestratorStats st = orch.stats();
  EXPECT_EQ(st.tasks, 5u);
  EXPECT_EQ(st.war_edges, 1u);  // war_top after r_top (w_top -> war_top is WAW)
  // The recorded program names exactly these edges; sub-regions cannot be recorded.
  const auto failed = orch.record();
  EXPECT_FALSE(failed);
  EXPECT_NE(test::errors(failed.diagnostics).find("uses a sub-region"), std::string::npos)
      << test::errors(failed.diagnostics);
}

TEST(OrchestratorPagedAttention, MatchesTheDirectEvaluationAtRingSizesFrom16To65536) {
  PagedAttentionCase c;
  c.batch = 64;
  c.head_dim = 64;
  for (uint32_t window : {16u, 17u, 64u, 1000u, 1024u, 65536u})
    for (int schedulers : {1, 2, 4}) {
      OrchestratorOptions o;
      o.rings.task_window = window;
      if (window == 17 || window == 1000) o.rings.dep_pool = 37;  // rings indexed by %, not a mask
      o.machine.schedulers = schedulers;
      o.record = schedulers != 2;  // the run does not depend on keeping the record
      o.publish_every = schedulers == 4 ? 1 : window == 64 ? 1000 : 16;  // each, groups, > ring
      const auto res = run_paged_attention(c, o);
      ASSERT_TRUE(res) << test::text(res.diagnostics);
      const PagedAttentionResult& r = *res;
      EXPECT_LE(r.max_abs_error, 1e-5) << "window " << window << " schedulers " << schedulers
                                       << " publish_every " << o.publish_every;
      EXPECT_EQ(r.stats.tasks, 4u * 10u);  // 4 chunks x (hub + 8 blocks + combine)
      EXPECT_LE(r.stats.max_active, window);
    }
}

TEST(OrchestratorPagedAttention, TheSeedsBatch256WithARingOf16AppliesBackPressure) {
  PagedAttentionCase c;  // batch 256, chunks of 16, head_dim 256, context 128 in blocks of 16
  OrchestratorOptions o;
  o.rings.task_window = 16;
  o.rings.heap_bytes = 1 << 20;  // one chunk's intermediates are 9 x 16 KiB-ish: the heap cycles
  const auto res = run_paged_attention(c, o);
  ASSERT_TRUE(res) << test::text(res.diagnostics);
  const PagedAttentionResult& r = *res;
  EXPECT_LE(r.max_abs_error, 1e-5);
  EXPECT_EQ(r.stats.tasks, 160u);
  EXPECT_GT(r.stats.blocked, 0u);  // the orchestrator waited for slots: back-pressure
  EXPECT_LE(r.stats.max_active, 16u);
  EXPECT_LE(r.stats.max_heap_bytes, int64_t{1} << 20);
}

TEST(OrchestratorPagedAttention, TheSeedsFourKernelsGive208TasksAndMatchAtRingsOf16And65536) {
  PagedAttentionCase c;  // batch 256 in chunks of 16, head_dim 256
  c.seed_kernels = true;
  c.context = 48;  // 3 KV blocks of 16: hub + 3 x (QK, SF, PV, UP) = 13 tasks per chunk
  for (uint32_t window : {16u, 65536u})
    for (int schedulers : {1, 4}) {
      OrchestratorOptions o;
      o.rings.task_window = window;
      o.machine.schedulers = schedulers;
      o.record = false;
      const auto res = run_paged_attention(c, o);
      ASSERT_TRUE(res) << test::text(res.diagnostics);
      const PagedAttentionResult& r = *res;
      EXPECT_LE(r.max_abs_error, 1e-5) << "window " << window << " schedulers " << schedulers;
      EXPECT_EQ(r.stats.tasks, 208u);
      // Per block: QK reads only caller tensors (no edge); SF <- QK; PV <- SF; UP <- PV, SF (m
      // and l) and the accumulators' last writer (the hub or the previous UP).
      EXPECT_EQ(r.stats.edges, 16u * 3u * 5u);
      EXPECT_EQ(r.stats.war_edges, 0u);
      EXPECT_LE(r.stats.max_active, window);
      if (window == 16) {
        EXPECT_GT(r.stats.blocked, 0u);  // back-pressure
      }
    }
}

TEST(OrchestratorKernels, ARegisteredKernelRunsItsTasksAndRecordRefusesThem) {
  Orchestrator orch;
  const KernelId twice = orch.kernel("TWICE", [](const inst::KernelArgs& a) {
    const auto* in = static_cast<const float*>(a.in[0].data);
    auto* out = static_cast<float*>(a.out[0].data);
    for (int64_t i = 0; i < a.in[0].numel; ++i)
      out[i] = 2 * in[i] + static_cast<float>(a.params.real(ir::ParamField::scale, 0));
    return inst::Status{};
  });
  std::vector<float> x = {1, 2, 3}, y(3), z(3);
  const int64_t tx = orch.tensor("x", ir::DType::F32, {3}, x.data(), ir::BufferKind::IO_INPUT);
  const int64_t ty = orch.tensor("y", ir::DType::F32, {3}, y.data(), ir::BufferKind::IO_OUTPUT);
  const int64_t tz = orch.tensor("z", ir::DType::F32, {3}, z.data(), ir::BufferKind::IO_OUTPUT);
  ASSERT_TRUE(orch.submit(twice, CoreType::Aiv, {{tx, ArgDir::Input}, {ty, ArgDir::Output}}));
  ASSERT_TRUE(orch.submit(twice, CoreType::Aic, {{ty, ArgDir::Input}, {tz, ArgDir::Output}},
                          {{"scale", ir::ParamValue::of_float(0.5)}}));
  ASSERT_TRUE(test::ok(orch.finish()));
  EXPECT_EQ(y, (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(z, (std::vector<float>{4.5, 8.5, 12.5}));  // after y: the edge was inferred
  EXPECT_EQ(orch.stats().edges, 1u);
  const auto failed = orch.record();
  EXPECT_FALSE(failed);
  EXPECT_EQ(test::errors(failed.diagnostics),
            "record(): task 0 (TWICE#0) runs the registered kernel 'TWICE', which has no amk "
            "opcode");
}

TEST(OrchestratorKernels, AnUnknownKernelIdAndAFailingKernelAreClearErrors) {
  {
    Orchestrator orch;
    float x = 0;
    const int64_t t = orch.tensor("x", ir::DType::F32, {1}, &x, ir::BufferKind::IO_OUTPUT);
    const auto failed = orch.submit(KernelId{3}, CoreType::Aiv, {{t, ArgDir::Output}}, {}, "k");
    EXPECT_FALSE(failed);
    EXPECT_EQ(test::errors(failed.diagnostics),
              "submit k: kernel 3 is not registered (or has no function)");
  }
  Orchestrator orch;
  const KernelId boom = orch.kernel(
      "BOOM", [](const inst::KernelArgs&) { return inst::kernel_error("out of range"); });
  float x = 0;
  const int64_t t = orch.tensor("x", ir::DType::F32, {1}, &x, ir::BufferKind::IO_OUTPUT);
  ASSERT_TRUE(orch.submit(boom, CoreType::Aiv, {{t, ArgDir::Output}}));
  const auto failed = orch.finish();
  EXPECT_FALSE(failed);
  EXPECT_EQ(test::errors(failed.diagnostics), "task 0 (BOOM#0): out of range");
}

TEST(OrchestratorDeadlock, AScopeLargerThanTheRingEndsInTheDiagnosisNotAHang) {
  PagedAttentionCase c;
  c.batch = 32;
  c.head_dim = 32;
  OrchestratorOptions o;
  o.rings.task_window = 8;  // a chunk's scope holds 10 tasks
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_paged_attention(c, o);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  ASSERT_FALSE(r);
  EXPECT_NE(test::errors(r.diagnostics)
                .find("FATAL: Flow Control Deadlock Detected! (task ring / dependency pool "
                      "full)"),
            std::string::npos)
      << test::errors(r.diagnostics);
  EXPECT_NE(test::errors(r.diagnostics).find("task ring: window 8, active tasks 8/8"),
            std::string::npos)
      << test::errors(r.diagnostics);
  EXPECT_NE(test::errors(r.diagnostics).find("belongs to scope #0, still open with 8 task(s)"),
            std::string::npos)
      << test::errors(r.diagnostics);
  EXPECT_NE(test::errors(r.diagnostics).find("recommended task_window = 16"), std::string::npos)
      << test::errors(r.diagnostics);
}

TEST(OrchestratorDeadlock, AHeapTooSmallForOneScopeIsDiagnosedToo) {
  PagedAttentionCase c;
  c.batch = 32;
  c.head_dim = 64;
  OrchestratorOptions o;
  o.rings.heap_bytes = 12 * 1024;  // q_staged 4 KiB + 2 partials of ~4.2 KiB, then full
  const auto r = run_paged_attention(c, o);
  ASSERT_FALSE(r);
  EXPECT_NE(
      test::errors(r.diagnostics).find("FATAL: Heap Ring Deadlock Detected! (heap ring full)"),
      std::string::npos)
      << test::errors(r.diagnostics);
  EXPECT_NE(test::errors(r.diagnostics).find("scope #0, still open"), std::string::npos)
      << test::errors(r.diagnostics);
}

TEST(OrchestratorScopes, ATensorUsedAfterItsScopeEndedIsAnError) {
  Orchestrator orch;
  ir::Result<int64_t> t = ir::error("test.unset", "no tensor yet");
  {
    Scope s(orch);
    t = orch.make_tensor("tmp", ir::DType::F32, {4});
    ASSERT_TRUE(t);
    ASSERT_TRUE(orch.submit(ir::Op::NOP, CoreType::Aiv, {{*t, ArgDir::Output}}));
  }
  const auto failed = orch.submit(ir::Op::NOP, CoreType::Aiv, {{*t, ArgDir::Input}}, {}, "late");
  EXPECT_FALSE(failed);
  EXPECT_NE(test::errors(failed.diagnostics).find("submit late: tensor 'tmp' escaped its scope #0"),
            std::string::npos)
      << test::errors(failed.diagnostics);
}

// A kernel that holds its core until the test lets it go (the label "hold" marks it).
std::atomic<bool> g_release{false};
inst::Status holding_kernel(const inst::KernelArgs& a) {
  if (a.task->label == "hold")
    while (!g_release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return {};
}
inst::Kernel holding_registry(ir::Op) {
  return holding_kernel;
}

TEST(OrchestratorStalls, AnIdleMachineWhileTheOrchestrationIsOpenIsOrchestratorStarvation) {
  for (int core_threads : {0, 2}) {
    OrchestratorOptions o;
    o.watchdog_ms = 40;
    o.machine.schedulers = 2;
    o.machine.core_threads = core_threads;
    Orchestrator orch(o);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // not started: no stall
    float x = 0;
    const int64_t t = orch.tensor("x", ir::DType::F32, {1}, &x, ir::BufferKind::IO_OUTPUT);
    ASSERT_TRUE(orch.submit(ir::Op::NOP, CoreType::Aiv, {{t, ArgDir::Output}}, {}, "first"));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // slow host code
    const auto failed = orch.submit(ir::Op::NOP, CoreType::Aiv, {{t, ArgDir::InOut}}, {}, "second");
    EXPECT_FALSE(failed);
    EXPECT_EQ(orch.stats().stall_class, StallClass::OrchestratorStarvation);
    EXPECT_NE(test::errors(failed.diagnostics)
                  .find("FATAL: Scheduler Timeout (orchestrator-starvation): no task "
                        "retired for 40 ms; completed 1/1, running 0, ready 0, waiting 0, "
                        "orchestrator not done; every submitted task has run"),
              std::string::npos)
        << test::errors(failed.diagnostics);
    EXPECT_FALSE(orch.finish());
  }
}

TEST(OrchestratorStalls, AFinishedOrchestrationAtRestIsNotAStall) {
  OrchestratorOptions o;
  o.watchdog_ms = 30;
  Orchestrator orch(o);
  float x = 0;
  const int64_t t = orch.tensor("x", ir::DType::F32, {1}, &x, ir::BufferKind::IO_OUTPUT);
  ASSERT_TRUE(orch.submit(ir::Op::NOP, CoreType::Aiv, {{t, ArgDir::Output}}));
  ASSERT_TRUE(test::ok(orch.finish()));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(test::ok(orch.submit(ir::Op::NOP, CoreType::Aic, {{t, ArgDir::InOut}})));
  EXPECT_TRUE(test::ok(orch.finish()));
  EXPECT_EQ(orch.stats().stall_class, StallClass::None);
}

TEST(OrchestratorStalls, AKernelThatNeverFinishesIsRunningStalledAndFinishReturns) {
  for (int core_threads : {0, 1}) {
    g_release = false;
    OrchestratorOptions o;
    o.watchdog_ms = 50;
    o.machine.schedulers = 1;
    o.machine.core_threads = core_threads;
    o.kernel_for = holding_registry;
    Orchestrator orch(o);
    float x = 0, y = 0;
    const int64_t a = orch.tensor("a", ir::DType::F32, {1}, &x, ir::BufferKind::IO_OUTPUT);
    const int64_t b = orch.tensor("b", ir::DType::F32, {1}, &y, ir::BufferKind::IO_OUTPUT);
    ASSERT_TRUE(orch.submit(ir::Op::GEMV_TILE, CoreType::Aic, {{a, ArgDir::Output}}, {}, "hold"));
    ASSERT_TRUE(orch.submit(ir::Op::NOP, CoreType::Aiv, {{a, ArgDir::Input}, {b, ArgDir::Output}},
                            {}, "after"));
    const auto failed = orch.finish();
    EXPECT_FALSE(failed);
    EXPECT_EQ(orch.stats().stall_class, StallClass::RunningStalled);
    EXPECT_NE(test::errors(failed.diagnostics)
                  .find("FATAL: Scheduler Timeout (running-stalled): no task retired for "
                        "50 ms; completed 0/2, running 1, ready 0, waiting 1, orchestrator "
                        "done; stuck task 0 on AIC core 0 (ACK, no FIN)"),
              std::string::npos)
        << test::errors(failed.diagnostics);
    g_release = true;  // the destructor waits for the running kernel
  }
}

std::atomic<int> g_ran{0};
inst::Status counting_kernel(const inst::KernelArgs&) {
  g_ran.fetch_add(1);
  return {};
}
inst::Kernel counting_registry(ir::Op) {
  return counting_kernel;
}

TEST(OrchestratorPublishing, TasksAnIdleOrchestratorLeftUnpublishedStillRun) {
  g_ran = 0;
  OrchestratorOptions o;
  o.publish_every = 16;
  o.kernel_for = counting_registry;
  Orchestrator orch(o);
  float x = 0;
  const int64_t a = orch.tensor("a", ir::DType::F32, {1}, &x, ir::BufferKind::IO_OUTPUT);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(orch.submit(ir::Op::NOP, CoreType::Aiv, {{a, ArgDir::InOut}}));
  // Fewer than publish_every, and no finish(): the monitor publishes them. The deadline only
  // keeps a broken build from hanging; the monitor ticks every 2 ms.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (g_ran.load() < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(g_ran.load(), 3);
  EXPECT_TRUE(test::ok(orch.finish()));
  EXPECT_EQ(g_ran.load(), 3);
}

inst::Status failing_kernel(const inst::KernelArgs& a) {
  if (a.op == ir::Op::ADD) return inst::kernel_error("bad tile");
  return {};
}
inst::Kernel failing_registry(ir::Op) {
  return failing_kernel;
}

TEST(OrchestratorErrors, AFailingKernelNamesItsTaskAndTheRunStillDrains) {
  OrchestratorOptions o;
  o.kernel_for = failing_registry;
  Orchestrator orch(o);
  float x = 0, y = 0;
  const int64_t a = orch.tensor("a", ir::DType::F32, {1}, &x, ir::BufferKind::IO_OUTPUT);
  const int64_t b = orch.tensor("b", ir::DType::F32, {1}, &y, ir::BufferKind::IO_OUTPUT);
  ASSERT_TRUE(orch.submit(ir::Op::NOP, CoreType::Aiv, {{a, ArgDir::Output}}));
  ASSERT_TRUE(orch.submit(ir::Op::ADD, CoreType::Aiv, {{a, ArgDir::Input}, {b, ArgDir::Output}}));
  ASSERT_TRUE(orch.submit(ir::Op::NOP, CoreType::Aiv, {{b, ArgDir::InOut}}));
  const auto failed = orch.finish();
  EXPECT_FALSE(failed);
  EXPECT_EQ(test::errors(failed.diagnostics), "task 1 (ADD#1): bad tile");
  EXPECT_EQ(orch.stats().tasks, 3u);
}

TEST(OrchestratorStalls, ACoreTypeTheMachineLacksIsRefusedAtSubmit) {
  OrchestratorOptions o;
  o.machine.aic_per_cluster = 0;
  Orchestrator orch(o);
  float x = 0;
  const int64_t t = orch.tensor("x", ir::DType::F32, {1}, &x, ir::BufferKind::IO_OUTPUT);
  const auto failed =
      orch.submit(ir::Op::GEMV_TILE, CoreType::Aic, {{t, ArgDir::Output}}, {}, "mm");
  EXPECT_FALSE(failed);
  EXPECT_EQ(test::errors(failed.diagnostics),
            "submit mm: it runs on an AIC core and the machine has none");
}

TEST(OrchestratorRecord, ARecordSpanningSeveralChunksKeepsEveryTasksBuffersWaitsAndCore) {
  constexpr int64_t n = 9000;  // the record grows in chunks of 4096 tasks
  Orchestrator orch;
  std::vector<float> cells(n);
  std::vector<int64_t> ids;
  for (int64_t t = 0; t < n; ++t)
    ids.push_back(orch.tensor(fmt::format("c{}", t), ir::DType::F32, {1}, &cells[t],
                              ir::BufferKind::IO_OUTPUT));
  for (int64_t t = 0; t < n; ++t) {
    std::vector<TensorArg> args;
    if (t > 0) args.push_back({ids[t - 1], ArgDir::Input});
    args.push_back({ids[t], ArgDir::Output});
    ASSERT_TRUE(orch.submit(ir::Op::NOP, t % 3 ? CoreType::Aiv : CoreType::Aic, args,
                            {{"n_off", ir::ParamValue::of_int(t)}}));
  }
  ASSERT_TRUE(test::ok(orch.finish()));
  const ir::Result<ir::Program> p = orch.record();
  ASSERT_TRUE(p) << test::text(p.diagnostics);
  ASSERT_EQ(p->tasks.size(), static_cast<size_t>(n));
  const auto cores = orch.core_types();
  ASSERT_EQ(cores.size(), static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) {
    const ir::Task& k = p->tasks[static_cast<size_t>(t)];
    ASSERT_EQ(k.label, fmt::format("NOP#{}", t));
    ASSERT_EQ(k.outputs, std::vector<int64_t>{t});
    ASSERT_EQ(k.inputs, t ? std::vector<int64_t>{t - 1} : std::vector<int64_t>{});
    ASSERT_EQ(k.waits.size(), t ? 1u : 0u);
    if (t) {
      ASSERT_EQ(k.waits[0].counter, t - 1);
    }
    ASSERT_EQ(k.int_param("n_off"), t);
    ASSERT_EQ(cores[static_cast<size_t>(t)].second, t % 3 ? CoreType::Aiv : CoreType::Aic);
  }
}

TEST(OrchestratorRecord, WithoutRecordingRecordIsAClearError) {
  OrchestratorOptions o;
  o.record = false;
  Orchestrator orch(o);
  float x = 0;
  const int64_t t = orch.tensor("x", ir::DType::F32, {1}, &x, ir::BufferKind::IO_OUTPUT);
  ASSERT_TRUE(orch.submit(ir::Op::NOP, CoreType::Aiv, {{t, ArgDir::Output}}));
  ASSERT_TRUE(orch.finish());
  const auto failed = orch.record();
  EXPECT_FALSE(failed);
  EXPECT_EQ(test::errors(failed.diagnostics),
            "record(): this orchestrator was created with OrchestratorOptions::record = false");
}

// The TensorMap drops the entries of reclaimed tasks (PTO's stale-entry cleanup), so at submit a
// reader of a tensor whose writer is long gone follows nothing. Its record must still wait on that
// writer, or the program has a race the validator rightly rejects. A ring of 16 forces the
// watermark past the writer long before the reader comes, and with it the cleanup that runs every
// 64 submits.
TEST(OrchestratorRecord, AReaderStillWaitsOnAWriterTheTensorMapHasSinceForgotten) {
  OrchestratorOptions o;
  o.rings.task_window = 16;
  Orchestrator orch(o);
  float src = 2, x = 0, y = 0;
  std::vector<float> cells(300);
  const int64_t s = orch.tensor("src", ir::DType::F32, {1}, &src, ir::BufferKind::IO_INPUT);
  const int64_t xt = orch.tensor("x", ir::DType::F32, {1}, &x, ir::BufferKind::IO_OUTPUT);
  const int64_t yt = orch.tensor("y", ir::DType::F32, {1}, &y, ir::BufferKind::IO_OUTPUT);
  ASSERT_TRUE(orch.submit(ir::Op::COPY, CoreType::Aiv, {{s, ArgDir::Input}, {xt, ArgDir::Output}}));
  for (int64_t t = 0; t < 300; ++t) {
    const int64_t c = orch.tensor(fmt::format("c{}", t), ir::DType::F32, {1}, &cells[t],
                                  ir::BufferKind::IO_OUTPUT);
    ASSERT_TRUE(
        orch.submit(ir::Op::COPY, CoreType::Aiv, {{s, ArgDir::Input}, {c, ArgDir::Output}}));
  }
  ASSERT_TRUE(orch.submit(ir::Op::COPY, CoreType::Aiv, {{xt, ArgDir::Input}, {yt, ArgDir::Output}},
                          {}, "reader"));
  ASSERT_TRUE(test::ok(orch.finish()));
  EXPECT_EQ(y, 2.0f);
  const ir::Result<ir::Program> p = orch.record();
  ASSERT_TRUE(p) << test::text(p.diagnostics);
  const ir::Task& reader = p->tasks.back();
  ASSERT_EQ(reader.label, "reader");
  ASSERT_EQ(reader.waits.size(), 1u);
  EXPECT_EQ(reader.waits[0].counter, 0);
  const validate::Result v = validate::validate(*p);
  EXPECT_TRUE(v.ok) << v.report();
}

TEST(OrchestratorRecord, TheRecordedProgramIsProvedAndRunsInAicoreModeToTheSameOutput) {
  PagedAttentionCase c;
  c.batch = 32;
  c.head_dim = 32;
  c.record = true;
  OrchestratorOptions o;
  o.rings.task_window = 16;
  const auto res = run_paged_attention(c, o);
  ASSERT_TRUE(res) << test::text(res.diagnostics);
  const PagedAttentionResult& r = *res;
  ASSERT_TRUE(r.program);
  const ir::Program& p = *r.program;
  EXPECT_EQ(p.tasks.size(), 20u);
  validate::Result v = validate::validate(p);
  EXPECT_TRUE(v.ok) << v.report();
  // One counter per task, threshold-1 waits: the combine of chunk 0 waits on its 8 blocks.
  const ir::Task& comb = p.tasks[9];
  EXPECT_EQ(comb.op, ir::Op::ATTENTION_COMBINE);
  EXPECT_EQ(comb.waits.size(), 8u);
  for (const ir::Wait& w : comb.waits) EXPECT_EQ(w.threshold, 1);
  const std::string text = ir::write_program(p);
  auto back = ir::parse_program(text);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(ir::write_program(*back.value), text);

  // The recorded program on the VM in AICore mode (a2a3's topology): the same outputs, bit for bit.
  auto m = test::must(Vm::load(p, {}));
  const int64_t S = c.chunk, D = c.head_dim, T = c.context;
  TensorStore kv;
  for (int64_t ch = 0; ch < c.batch / S; ++ch) {
    StTensor q{fmt::format("c{}.q", ch),
               StDType::F32,
               {S, D},
               reinterpret_cast<const uint8_t*>(r.q.data() + ch * S * D),
               static_cast<size_t>(S * D * 4)};
    ASSERT_TRUE(test::ok(m->set_input(q, "test")));
    for (const auto* src : {&r.k, &r.v}) {
      TensorStore::Entry e{ir::DType::F32, {T, S, D}, {}};
      const auto* b = reinterpret_cast<const uint8_t*>(src->data() + ch * T * S * D);
      e.bytes.assign(b, b + T * S * D * 4);
      kv.tensors[fmt::format("c{}.{}", ch, src == &r.k ? "k_cache" : "v_cache")] = std::move(e);
    }
  }
  ASSERT_TRUE(test::ok(m->bind_kv(kv)));
  for (int sched : {1, 4}) {
    RunOptions ro;  // core types by opcode: the partials on AIC, hub and combine on AIV
    ro.mode = Mode::Aicore;
    ro.aicore.schedulers = sched;
    RunResult run = m->run(ro);
    ASSERT_TRUE(run.ok()) << test::errors(run.diagnostics);
    int64_t compared = 0;
    for (size_t b = 0; b < p.buffers.size(); ++b) {
      const std::string& n = p.buffers[b].name;
      if (!n.ends_with(".out")) continue;
      const int64_t ch = std::stoll(n.substr(1, n.find('.') - 1));
      EXPECT_EQ(std::memcmp(m->data(static_cast<int64_t>(b)), r.out.data() + ch * S * D,
                            static_cast<size_t>(S * D * 4)),
                0)
          << n << " schedulers " << sched;
      ++compared;
    }
    EXPECT_EQ(compared, c.batch / S);
  }
}

}  // namespace
}  // namespace amk::vm
