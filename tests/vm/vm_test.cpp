// The reference VM: AMK's toy decode within 1e-5 across every mode and worker count, identical
// outputs however tasks interleave, refusal of invalid programs, watchdog and deadlock reports that
// end instead of hanging, kernel failures that end the run cleanly, placement and bindings.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/json_io.h"
#include "support.h"
#include "vm/vm.h"
#include "vm/weights.h"

namespace amk::vm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The logits of AMK's CUDA megakernel on an H100 (RightNow-AI/AutoMegaKernel a514bbc) for toy-2L
// lowered by amk in five weight formats, one decode step (token 11, pos 0) on seeded random
// weights: tests/vm/amk_cuda/, made by bench/amk_cuda_numerics.py. amk's VM gives the same
// logits. fp32, bf16 and int4 (as amk and as AMK declare it) within fp32 rounding; int8 within
// two bf16 steps of the largest logit: its activations are bf16, its weights reach 2.5, and a
// sum that rounds the other way in one bf16 activation of layer 0 moves layer 1 by a bf16 step
// (amk's AVX2 and scalar kernels give AMK's logits within 3e-6, its AVX-512 one, which adds in
// another order, within 0.16 of 27).
TEST(VmAgainstAmkCuda, ReproducesTheLogitsOfAmksCudaMegakernelOnAnH100) {
  const fs::path dir = test::source_dir() / "tests" / "vm" / "amk_cuda";
  const fs::path tmp = test::temp_dir();
  auto logits = [](const fs::path& f) {
    auto st = test::must(SafeTensors::open(f.string()));
    const StTensor* t = st->find("logits");
    EXPECT_TRUE(t && t->dtype == StDType::F32) << f;
    std::vector<float> v(t ? t->nbytes / 4 : 0);
    if (t) std::memcpy(v.data(), t->data, v.size() * 4);
    return v;
  };
  for (const char* name : {"fp32", "bf16", "int8", "int4", "int4-amk"})
    for (const char* workers : {"1", "4"}) {
      const fs::path base = dir / name;
      const fs::path out = tmp / fmt::format("{}.{}.safetensors", name, workers);
      const auto r = test::run_amk({"run", base.string() + ".json", "--weights",
                                    base.string() + ".weights.safetensors", "--token-id", "11",
                                    "--workers", workers, "-o", out.string()});
      ASSERT_EQ(r.rc, 0) << name << ": " << r.err;
      const std::vector<float> cuda = logits(base.string() + ".logits.safetensors"),
                               mine = logits(out);
      ASSERT_EQ(mine.size(), cuda.size()) << name;
      ASSERT_FALSE(cuda.empty());
      float top = 0, diff = 0;
      for (size_t i = 0; i < cuda.size(); ++i) {
        top = std::max(top, std::fabs(cuda[i]));
        diff = std::max(diff, std::fabs(cuda[i] - mine[i]));
      }
      const bool int8 = std::string_view(name) == "int8";
      // int8: two bf16 steps (8 bits of mantissa) of the largest logit.
      const float bound = int8 ? top * 2 * std::ldexp(1.0f, -8) : top * 1e-5f;
      EXPECT_LE(diff, bound) << name << " with " << workers << " workers: largest logit " << top;
      EXPECT_EQ(std::max_element(mine.begin(), mine.end()) - mine.begin(),
                std::max_element(cuda.begin(), cuda.end()) - cuda.begin())
          << name;
    }
}

// Tensors kept alive next to their safetensors image.
struct Blob {
  std::vector<std::vector<uint8_t>> data;
  std::vector<StOut> outs;
  std::string image;
  std::unique_ptr<SafeTensors> file;
  void add(std::string name, StDType dt, std::vector<int64_t> shape, std::vector<uint8_t> bytes) {
    data.push_back(std::move(bytes));
    outs.push_back(
        {std::move(name), dt, std::move(shape), {data.back().data(), data.back().size()}});
  }
  void add_json(const std::string& name, const json& t) {
    std::vector<uint8_t> b;
    const bool f32 = t["dtype"] == "float32";
    for (const auto& v : t["data"]) {
      uint8_t e[4];
      if (f32) {
        float x = v.get<float>();
        std::memcpy(e, &x, 4);
      } else {
        int32_t x = v.get<int32_t>();
        std::memcpy(e, &x, 4);
      }
      b.insert(b.end(), e, e + 4);
    }
    add(name, f32 ? StDType::F32 : StDType::I32, t["shape"].get<std::vector<int64_t>>(),
        std::move(b));
  }
  const SafeTensors& finish() {
    for (size_t i = 0; i < outs.size(); ++i) outs[i].bytes = {data[i].data(), data[i].size()};
    image = test::must(st_serialize(outs));
    file = test::must(
        SafeTensors::parse({reinterpret_cast<const uint8_t*>(image.data()), image.size()}, "mem"));
    return *file;
  }
};

ir::Program load_conf(const std::string& rel) {
  auto lr = ir::load_program((test::conformance_dir() / rel).string());
  if (!lr.ok()) throw std::runtime_error("cannot load " + rel);
  return *lr.value;
}

json toy_spec() {
  return json::parse(test::slurp(test::conformance_dir() / "numerics/toy_decode.json"));
}

std::vector<RunOptions> every_mode() {
  std::vector<RunOptions> v;
  for (int w : {1, 2, 3, 4, 8}) {
    RunOptions o;
    o.workers = w;
    v.push_back(o);
  }
  for (uint64_t seed : {1, 2, 3}) {
    RunOptions o;
    o.mode = Mode::Deterministic;
    o.seed = seed;
    v.push_back(o);
  }
  RunOptions t;
  t.mode = Mode::ThreadPerSm;
  v.push_back(t);
  // AICore mode on a2a3's topology: schedulers x core threads (0: cores run on their scheduler),
  // then seeded single-thread interleavings.
  for (auto [sched, cores] : {std::pair{1, 0}, {3, 0}, {2, 2}, {4, 1}}) {
    RunOptions o;
    o.mode = Mode::Aicore;
    o.aicore.schedulers = sched;
    o.aicore.core_threads = cores;
    v.push_back(o);
  }
  for (uint64_t seed : {1, 2}) {
    RunOptions o;
    o.mode = Mode::Aicore;
    o.aicore.deterministic = true;
    o.seed = seed;
    v.push_back(o);
  }
  return v;
}

std::string describe(const RunOptions& o) {
  const char* m = o.mode == Mode::Multiplexed     ? "sm"
                  : o.mode == Mode::Deterministic ? "deterministic"
                  : o.mode == Mode::Aicore        ? "aicore"
                                                  : "sm-threads";
  return std::string(m) + " workers=" + std::to_string(o.workers) +
         " seed=" + std::to_string(o.seed) + " schedulers=" + std::to_string(o.aicore.schedulers) +
         " core_threads=" + std::to_string(o.aicore.core_threads) +
         (o.aicore.deterministic ? " deterministic" : "");
}

const float* logits_of(const Vm& m) {
  const auto& bufs = m.program().buffers;
  for (size_t b = 0; b < bufs.size(); ++b)
    if (bufs[b].name == "logits") return static_cast<const float*>(m.data(static_cast<int64_t>(b)));
  return nullptr;
}

TEST(VmToyDecode, MatchesAmkLogitsWithinOneEMinus5InEveryModeWithKvCarried) {
  const json spec = toy_spec();
  for (const RunOptions& o : every_mode()) {
    for (const auto& model : spec["models"]) {
      Blob w;
      for (const auto& [k, v] : model["weights"].items()) w.add_json(k, v);
      const SafeTensors& wf = w.finish();
      TensorStore kv;  // persists across the three launches
      for (const auto& step : model["steps"]) {
        auto m = test::must(Vm::load(load_conf(step["program"]), {}));
        Blob in;
        for (const auto& [k, v] : step["inputs"].items()) in.add_json(k, v);
        ASSERT_TRUE(test::ok(m->bind_weights(wf)));
        ASSERT_TRUE(test::ok(m->set_inputs(in.finish())));
        ASSERT_TRUE(test::ok(m->bind_kv(kv)));
        RunResult r = m->run(o);
        ASSERT_TRUE(r.ok()) << describe(o) << ": " << test::errors(r.diagnostics);
        EXPECT_EQ(r.tasks_done, r.tasks);
        const float* got = logits_of(*m);
        ASSERT_TRUE(got);
        const auto& want = step["expected_logits"]["data"];
        double worst = 0;
        for (size_t i = 0; i < want.size(); ++i)
          worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i].get<double>()));
        EXPECT_LE(worst, 1e-5) << describe(o) << " " << step["program"];
      }
    }
  }
}

// Seeded random weights (the VM's generator) and decode inputs for any program of the toy family.
struct Fixture {
  std::vector<uint8_t> wimage;
  std::unique_ptr<SafeTensors> wfile;
  std::vector<int32_t> tokens;
  int32_t pos = 0;
  explicit Fixture(const ir::Program& p, uint32_t seed = 1)
      : wimage(test::must(random_weights_image(p, seed))) {
    wfile = test::must(SafeTensors::parse(wimage, "random"));
    const auto& meta = p.meta.json();
    if (meta.is_object() && meta.contains("pos") && meta["pos"].is_number_integer())
      pos = meta["pos"].get<int32_t>();
    for (const auto& b : p.buffers)
      if (b.name == "token_id")
        for (int64_t i = 0; i < b.numel(); ++i) tokens.push_back(static_cast<int32_t>(7 + 13 * i));
  }
  ir::Status feed(Vm& m) const { return m.set_decode_inputs(tokens, pos); }
};

std::unique_ptr<Vm> ready_vm(const ir::Program& p, Fixture& fx, TensorStore& kv,
                             LoadOptions lo = {}) {
  auto m = test::must(Vm::load(p, lo));
  for (const ir::Status& st : {m->bind_weights(*fx.wfile), fx.feed(*m), m->bind_kv(kv)})
    if (!st) throw std::runtime_error(test::text(st.diagnostics));
  return m;
}

std::vector<std::string> output_bytes(const Vm& m) {
  std::vector<std::string> v;
  for (const StOut& o : m.outputs())
    v.emplace_back(reinterpret_cast<const char*>(o.bytes.data()), o.bytes.size());
  return v;
}

TEST(VmConformance, EveryValidToyProgramRunsWithBitIdenticalOutputsInEveryMode) {
  const json manifest = json::parse(test::slurp(test::conformance_dir() / "manifest.json"));
  int ran = 0;
  for (const auto& e : manifest) {
    if (e["ok"] != true) continue;
    ir::Program p = load_conf(e["file"]);
    if (p.total_weight_bytes() > (int64_t{64} << 20)) continue;  // the 1B-class programs: bench/
    Fixture fx(p);
    std::vector<std::string> first;
    for (const RunOptions& o : every_mode()) {
      TensorStore kv;
      auto m = ready_vm(p, fx, kv);
      RunResult r = m->run(o);
      ASSERT_TRUE(r.ok()) << e["file"] << " " << describe(o) << ": " << test::errors(r.diagnostics);
      auto out = output_bytes(*m);
      if (first.empty()) {
        first = out;
        const float* l = logits_of(*m);
        ASSERT_TRUE(l);
        for (int i = 0; i < 8; ++i) EXPECT_TRUE(std::isfinite(l[i]));
      } else {
        EXPECT_EQ(out, first) << e["file"] << " " << describe(o);
      }
    }
    ++ran;
  }
  EXPECT_GE(ran, 10);
}

TEST(VmConformance, SharedPagesGiveTheSameResultsAsPrivateBuffers) {
  ir::Program p = load_conf("programs/toy_1L_pages_ok.json");
  ASSERT_TRUE(p.pages);
  Fixture fx(p);
  TensorStore kv1, kv2;
  auto paged = ready_vm(p, fx, kv1);
  LoadOptions lo;
  lo.honor_pages = false;
  auto flat = ready_vm(p, fx, kv2, lo);
  EXPECT_LT(paged->image_bytes(), flat->image_bytes());
  for (int w : {1, 2, 4}) {
    RunOptions o;
    o.workers = w;
    ASSERT_TRUE(paged->run(o).ok());
    ASSERT_TRUE(flat->run(o).ok());
    EXPECT_EQ(output_bytes(*paged), output_bytes(*flat));
  }
}

TEST(VmLoader, RefusesWhatTheValidatorRejectsWithItsReport) {
  auto r = Vm::load(load_conf("programs/bad_waw_overlapping_tiles.json"), {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.diagnostics[0].code, "vm.rejected");
  const std::string err = r.diagnostics[0].message;
  EXPECT_EQ(err.rfind("refusing to load an invalid schedule: [REJECTED] {'tasks': 27", 0), 0u)
      << err;
  EXPECT_EQ(r.diagnostics[1].code, "race.waw");  // then the validator's own errors
}

// A NOP program: `n` tasks in a chain, optionally closed into a cycle.
ir::Program chain(int n, bool cycle) {
  ir::Program p;
  for (int i = 0; i < n; ++i) p.add_counter("c" + std::to_string(i));
  for (int i = 0; i < n; ++i) {
    ir::Task t;
    t.op = ir::Op::NOP;
    t.out_counter = i;
    t.label = "t" + std::to_string(i);
    if (i > 0) t.waits.push_back({i - 1, 1, {}});
    if (i == 0 && cycle) t.waits.push_back({n - 1, 1, {}});
    p.add_task(std::move(t));
  }
  return p;
}

TEST(VmWatchdog, ADeadlockedProgramEndsWithAReportNotAHang) {
  LoadOptions lo;
  lo.skip_validate = true;
  lo.num_sms = 4;
  auto probe = Vm::load(chain(6, true), {});
  EXPECT_FALSE(probe);  // the validator refuses it
  const std::string err = test::text(probe.diagnostics);
  EXPECT_NE(err.find("CYCLE"), std::string::npos) << err;
  auto m = test::must(Vm::load(chain(6, true), lo));
  for (RunOptions o : every_mode()) {
    o.watchdog_ms = 2000;
    StuckReporter reporter;  // the stuck report is an observer too
    o.observer = &reporter;
    const auto t0 = std::chrono::steady_clock::now();
    RunResult r = m->run(o);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5)) << describe(o);
    ASSERT_EQ(r.status, RunResult::Status::Stuck) << describe(o);
    EXPECT_EQ(r.tasks_done, 0);
    ASSERT_FALSE(r.blocked.empty());
    const std::string rep = stuck_report(m->program(), r);
    EXPECT_EQ(reporter.report(), rep);
    EXPECT_NE(rep.find("deadlock"), std::string::npos) << rep;
    if (o.mode == Mode::Aicore) {
      EXPECT_EQ(r.stall_class, StallClass::DependencyDeadlock) << rep;
      EXPECT_NE(rep.find("stall class: dependency-deadlock; 0 ready task(s) not dispatched"),
                std::string::npos)
          << rep;
      EXPECT_NE(rep.find("task 0 (t0, NOP) never became ready"), std::string::npos) << rep;
    } else {
      EXPECT_NE(rep.find("head task 0 (t0, NOP)"), std::string::npos) << rep;
    }
    EXPECT_NE(rep.find("waits on counter 5 'c5' >= 1 (value 0); producers that never ran: 5 (t5)"),
              std::string::npos)
        << rep;
  }
}

inst::Status slow_kernel(const inst::KernelArgs&) {
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  return {};
}
inst::Kernel slow_registry(ir::Op) {
  return slow_kernel;
}

TEST(VmWatchdog, NoProgressForTheLimitAbortsTheRun) {
  LoadOptions lo;
  lo.num_sms = 2;
  auto m = test::must(Vm::load(chain(4, false), lo));
  for (int w : {2, 3}) {
    RunOptions o;
    o.workers = w;
    o.watchdog_ms = 50;
    o.kernel_for = slow_registry;
    RunResult r = m->run(o);
    ASSERT_EQ(r.status, RunResult::Status::Stuck);
    EXPECT_NE(test::errors(r.diagnostics).find("watchdog: no progress for 50 ms"),
              std::string::npos)
        << test::errors(r.diagnostics);
    EXPECT_LT(r.tasks_done, 4);
  }
}

inst::Status failing_kernel(const inst::KernelArgs& a) {
  if (a.task && a.task->label == "t3") throw std::runtime_error("boom");
  if (a.task && a.task->label == "t5") return inst::kernel_error("bad shape");
  return {};
}
inst::Kernel failing_registry(ir::Op) {
  return failing_kernel;
}

TEST(VmKernels, AThrowingKernelEndsTheRunWithTheFirstErrorInEveryMode) {
  LoadOptions lo;
  lo.num_sms = 3;
  auto m = test::must(Vm::load(chain(8, false), lo));
  for (RunOptions o : every_mode()) {
    o.kernel_for = failing_registry;
    RunResult r = m->run(o);
    ASSERT_EQ(r.status, RunResult::Status::KernelError) << describe(o);
    EXPECT_EQ(test::errors(r.diagnostics), "task 3 (t3): kernel threw: boom") << describe(o);
    EXPECT_EQ(r.tasks_done, 3);
  }
}

TEST(VmLoader, KeepsTaskSmPlacesTheRestAndRejectsTooFewSms) {
  ir::Program p = chain(10, false);
  p.tasks[4].sm = 2;
  LoadOptions lo;
  lo.num_sms = 3;
  lo.placement = Placement::RoundRobin;
  auto m = test::must(Vm::load(p, lo));
  EXPECT_EQ(m->program().tasks[4].sm, 2);
  EXPECT_EQ(m->program().tasks[5].sm, 5 % 3);
  auto q = m->queues();
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(q[2], (std::vector<int64_t>{2, 4, 5, 8}));
  lo.placement = Placement::Lpt;  // NOPs cost nothing: ties go to the lowest (count, sm)
  m = test::must(Vm::load(chain(6, false), lo));
  EXPECT_EQ(m->queues()[0], (std::vector<int64_t>{0, 3}));
  lo.num_sms = 2;
  auto few = Vm::load(p, lo);
  ASSERT_FALSE(few);
  const std::string err = test::text(few.diagnostics);
  EXPECT_NE(err.find("/tasks/4/sm: error[sm.range]: task 4 assigned to SM 2 out of range [0,2)"),
            std::string::npos)
      << err;
}

TEST(VmBindings, MissingAndMisShapedTensorsAreErrorsNamingTheKey) {
  ir::Program p = load_conf("programs/toy_1L_default.json");
  auto m = test::must(Vm::load(p, {}));
  RunResult r = m->run({});
  EXPECT_EQ(r.status, RunResult::Status::KernelError);
  EXPECT_EQ(test::errors(r.diagnostics),
            "input 'token_id' was not given (an IO_INPUT buffer needs a tensor of that name)");
  Fixture fx(p);
  ASSERT_TRUE(test::ok(fx.feed(*m)));
  r = m->run({});
  EXPECT_NE(test::errors(r.diagnostics).find("(key 'embed.weight') is not bound"),
            std::string::npos)
      << test::errors(r.diagnostics);
  Blob w;
  w.add("embed.weight", StDType::F32, {2, 2}, std::vector<uint8_t>(16));
  ir::Status e = m->bind_weights(w.finish());
  ASSERT_FALSE(e);
  EXPECT_EQ(test::text(e.diagnostics),
            "mem: /embed.weight: error[vm.binding]: tensor 'embed.weight' has shape [2, 2] but "
            "buffer 'embed.weight' needs [256, 64]\n");
  Blob w2;
  w2.add("final_norm", StDType::F32, {64}, std::vector<uint8_t>(256));
  e = m->bind_weights(w2.finish());
  ASSERT_FALSE(e);
  EXPECT_EQ(test::text(e.diagnostics),
            "mem: /embed.weight: error[vm.binding]: no tensor 'embed.weight' for WEIGHT buffer "
            "'embed.weight'\n");
}

TEST(VmBindings, WeightsOfTheRightDtypeAreViewsAndOthersAreConverted) {
  ir::Program p = load_conf("programs/toy_1L_default.json");
  Fixture fx(p);
  TensorStore kv;
  auto m = ready_vm(p, fx, kv);
  for (size_t b = 0; b < p.buffers.size(); ++b)
    if (p.buffers[b].name == "embed.weight") {
      EXPECT_EQ(m->data(static_cast<int64_t>(b)), fx.wfile->find("embed.weight")->data);
    }
  // The same weights as F64 (converted on bind) give the same logits.
  Blob w64;
  for (const StTensor& o : fx.wfile->tensors()) {
    std::vector<uint8_t> d(o.nbytes * 2);
    for (size_t i = 0; i < o.nbytes / 4; ++i) {
      float f;
      std::memcpy(&f, o.data + 4 * i, 4);
      double x = f;
      std::memcpy(d.data() + 8 * i, &x, 8);
    }
    w64.add(o.name, StDType::F64, o.shape, std::move(d));
  }
  TensorStore kv2;
  auto m2 = test::must(Vm::load(p, {}));
  ASSERT_TRUE(test::ok(m2->bind_weights(w64.finish())));
  ASSERT_TRUE(test::ok(fx.feed(*m2)));
  ASSERT_TRUE(test::ok(m2->bind_kv(kv2)));
  ASSERT_TRUE(m->run({}).ok());
  ASSERT_TRUE(m2->run({}).ok());
  EXPECT_EQ(output_bytes(*m), output_bytes(*m2));
}

TEST(VmTrace, OneSlicePerTaskOnItsSmLane) {
  LoadOptions lo;
  lo.num_sms = 2;
  auto m = test::must(Vm::load(chain(5, false), lo));
  RunOptions o;
  o.workers = 2;
  TraceRecorder rec;
  o.observer = &rec;
  RunResult r = m->run(o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(rec.events().size(), 5u);
  json t = json::parse(chrome_trace(m->program(), rec));
  int slices = 0;
  for (const auto& ev : t["traceEvents"])
    if (ev["ph"] == "X" && ev["cat"] == "task") {
      ++slices;
      EXPECT_EQ(ev["tid"], m->program().tasks[ev["args"]["task"].get<size_t>()].sm.value());
    }
  EXPECT_EQ(slices, 5);
}

TEST(VmCli, RunWritesOutputsAtomicallyAndUsesTheContractsExitCodes) {
  auto dir = test::temp_dir();
  ir::Program p = load_conf("programs/toy_1L_default.json");
  Fixture fx(p);
  auto put = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary) << bytes;
    return (dir / name).string();
  };
  const auto w = put("w.safetensors", std::string(fx.wimage.begin(), fx.wimage.end()));
  Blob inputs;  // AMK's own step-0 inputs
  const json spec = toy_spec();
  for (const auto& [k, v] : spec["models"][0]["steps"][0]["inputs"].items()) inputs.add_json(k, v);
  inputs.finish();
  const auto in = put("in.safetensors", inputs.image);
  const auto prog = (test::conformance_dir() / "programs/toy_1L_default.json").string();
  const auto out = (dir / "out.safetensors").string();
  auto r = test::run_amk({"run", prog, "--weights", w, "--inputs", in, "--out", out, "--workers",
                          "2", "--trace", (dir / "t.json").string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("ran 27 tasks on 82 SMs (2 workers)"), std::string::npos) << r.out;
  auto f = test::must(SafeTensors::open(out));
  EXPECT_TRUE(f->find("logits") && f->find("L0.kcache") && f->find("L0.vcache"));
  EXPECT_TRUE(fs::exists(dir / "t.json"));
  const std::string before = test::slurp(out);
  // Rejected (1), unreadable weights (2), deadlock (3): the existing output stays as it was.
  auto bad = (test::conformance_dir() / "programs/bad_cycle.json").string();
  EXPECT_EQ(test::run_amk({"run", bad, "--weights", w, "--inputs", in, "--out", out}).rc, 1);
  r = test::run_amk({"run", prog, "--weights", in, "--inputs", in, "--out", out});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("no tensor 'embed.weight'"), std::string::npos) << r.err;
  r = test::run_amk({"run", bad, "--weights", w, "--inputs", in, "--out", out,
                     "--unsafe-skip-validate", "--watchdog-ms", "1000"});
  EXPECT_EQ(r.rc, 3);
  EXPECT_NE(r.err.find("SM 0: head task 0 (embed, EMBED)"), std::string::npos) << r.err;
  EXPECT_EQ(test::slurp(out), before);
  // On a target with clusters the default is AICore mode: same bytes out as SM mode.
  const auto out2 = (dir / "out2.safetensors").string();
  r = test::run_amk({"run", prog, "--target", "a2a3", "--weights", w, "--inputs", in, "--out", out2,
                     "--core-threads", "1", "--trace", (dir / "t2.json").string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("ran 27 tasks on 72 AICore cores (4 scheduler threads, 1 core thread)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(test::slurp(out2), before);
  EXPECT_NE(test::slurp(dir / "t2.json").find("AICPU scheduler 3"), std::string::npos);
  r = test::run_amk({"run", bad, "--target", "a2a3", "--weights", w, "--inputs", in,
                     "--unsafe-skip-validate", "--watchdog-ms", "1000"});
  EXPECT_EQ(r.rc, 3);
  EXPECT_NE(r.err.find("stall class: dependency-deadlock"), std::string::npos) << r.err;
  r = test::run_amk(
      {"run", prog, "--target", "a2a3", "--weights", w, "--inputs", in, "--core-type", "3=gpu"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--core-type takes ID=aic|aiv"), std::string::npos) << r.err;
}

TEST(VmCli, GenerateCarriesKvAcrossPositionsAndPicksAmksArgmax) {
  const json spec = toy_spec();
  auto dir = test::temp_dir();
  for (const auto& model : spec["models"]) {
    Blob w;
    for (const auto& [k, v] : model["weights"].items()) w.add_json(k, v);
    w.finish();
    const auto wpath = (dir / "w.safetensors").string();
    std::ofstream(wpath, std::ios::binary) << w.image;
    std::vector<std::string> args{"generate"};
    std::vector<int> tokens;
    for (const auto& step : model["steps"]) {
      args.push_back((test::conformance_dir() / step["program"].get<std::string>()).string());
      tokens.push_back(step["token"].get<int>());
    }
    // AMK fed tokens 7, 42, 200 at positions 0..2: the argmax of its last logits is the new token.
    const auto& last = model["steps"].back()["expected_logits"]["data"];
    size_t best = 0;
    for (size_t i = 1; i < last.size(); ++i)
      if (last[i].get<double>() > last[best].get<double>()) best = i;
    auto full = args;
    for (const char* a : {"--weights", "--prompt-ids"}) full.push_back(a), full.push_back("");
    full[full.size() - 3] = wpath;
    full.back() = fmt::format("{},{},{}", tokens[0], tokens[1], tokens[2]);
    auto r = test::run_amk(full);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.out.substr(0, r.out.find('\n')), std::to_string(best)) << r.out;
    // Two new tokens need a fourth program.
    full.push_back("--max-tokens");
    full.push_back("2");
    r = test::run_amk(full);
    EXPECT_EQ(r.rc, 2);
    EXPECT_NE(r.err.find("need 4 per-position programs; 3 given"), std::string::npos) << r.err;
  }
}

TEST(VmCli, GenWeightsIsSeededAndCoversEveryWeightKey) {
  auto dir = test::temp_dir();
  const auto prog = (dir / "p.json").string();
  ASSERT_EQ(test::run_amk({"gen", "--shape", "llama", "--tasks", "200", "-o", prog}).rc, 0);
  const auto a = (dir / "a.st").string(), b = (dir / "b.st").string(), c = (dir / "c.st").string();
  ASSERT_EQ(test::run_amk({"gen-weights", prog, "--seed", "3", "-o", a}).rc, 0);
  ASSERT_EQ(test::run_amk({"gen-weights", prog, "--seed", "3", "-o", b}).rc, 0);
  ASSERT_EQ(test::run_amk({"gen-weights", prog, "--seed", "4", "-o", c}).rc, 0);
  EXPECT_EQ(test::slurp(a), test::slurp(b));
  EXPECT_NE(test::slurp(a), test::slurp(c));
  auto lr = ir::load_program(prog);
  ASSERT_TRUE(lr.ok());
  auto f = test::must(SafeTensors::open(a));
  for (const auto& buf : lr.value->buffers)
    if (buf.kind == ir::BufferKind::WEIGHT) {
      const StTensor* t = f->find(buf.source.value_or(buf.name));
      ASSERT_TRUE(t) << buf.name;
      EXPECT_EQ(t->shape, buf.shape);
    }
  auto r = test::run_amk({"generate", prog, "--weights", a, "--prompt-ids", "5"});
  EXPECT_EQ(r.rc, 0) << r.err;
}

}  // namespace
}  // namespace amk::vm
