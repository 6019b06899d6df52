// frontend_backend: many small operations on one variable. Sync waits for
// each one (wait_to_read after every push: the "blocker" of d2l's
// asynchronous computation chapter, like printing a value every step);
// async pushes them all and blocks once at the end, so the frontend's
// pushing overlaps the backend's running. Both modes use the threaded
// engine: the difference is only where the program blocks.

#include <atomic>
#include <thread>

#include "bench/depbench/kernels.h"
#include "bench/depbench/scenarios/common.h"
#include "bench/depbench/scenarios/scenarios.h"

namespace depbench {
namespace {

constexpr std::size_t kValues = 256;
constexpr double kBaseOps = 20000;
constexpr int kMinOps = 10;

void small_step(float* x) {
  for (std::size_t i = 0; i < kValues; ++i) x[i] = x[i] * 0.999f + 0.001f;
}

// The frontend's cost of `ops` pushes alone, untimed by the scenario: the
// ops queue up behind a gate, so no push hands work to a worker.
double push_only_seconds(depengine::Engine& engine, depengine::Var v, float* data, int ops) {
  std::atomic<bool> open{false};
  engine.push([&open](depengine::RunContext&) { while (!open.load()) std::this_thread::yield(); }, {}, {v},
              {.name = "gate"});
  Stopwatch watch;
  for (int i = 0; i < ops; ++i) {
    engine.push([data](depengine::RunContext&) { small_step(data); }, {}, {v}, {.name = "small op"});
  }
  const double seconds = watch.seconds();
  open = true;
  engine.wait_to_read(v);
  return seconds;
}

class FrontendBackend final : public Scenario {
 public:
  std::string name() const override { return "frontend_backend"; }
  std::string description() const override {
    return "many small ops on one variable; sync: a blocking wait after each op, async: one wait at the end";
  }
  std::string ideal_formula() const override { return "sync time / (ops * max(push cost, op cost))"; }
  // It measures the engine's host-side costs: pushes and blocking calls.
  bool runs_on_device(const Config&) const override { return false; }

  Footprint footprint(const Config& config) const override {
    const double ops = scaled_count(kBaseOps, config.size, kMinOps);
    // A sync run pushes the ops twice (timed, then push_only_seconds) and a
    // gate; the engine holds at most max_ops_in_flight of them at once.
    return {.int_counts = {{"ops per run", ops}}, .ops = 2 * ops + 1, .host_bytes = float_bytes(2 * kValues)};
  }

  Outcome run(Mode mode, const Config& config, Trace* trace) const override {
    const int ops = scaled(kBaseOps, config.size, kMinOps);
    Floats x = uniform(kValues, 3);
    Outcome out;
    double push_seconds = 0, wait_seconds = 0;  // sync runs only
    {
      RunEngine engine(depengine::EngineKind::Threaded, trace);
      depengine::Var v = engine->new_var("x");
      float* data = x.data();
      Stopwatch watch;
      for (int i = 0; i < ops; ++i) {
        engine->push([data](depengine::RunContext&) { small_step(data); }, {}, {v}, {.name = "small op"});
        if (mode == Mode::async) continue;
        Stopwatch wait_watch;
        engine->wait_to_read(v);
        wait_seconds += wait_watch.seconds();
      }
      engine->wait_to_read(v);
      out.seconds = watch.seconds();
      out.digest = digest(x);  // before push_only_seconds changes x further
      if (mode == Mode::sync) push_seconds = push_only_seconds(*engine, v, data, ops);
    }
    out.metrics["ops"] = ops;
    out.metrics["us_per_op"] = 1e6 * out.seconds / ops;
    if (mode == Mode::sync) {
      // The ops' own cost, measured without an engine.
      Floats scratch = uniform(kValues, 3);
      Stopwatch plain;
      for (int i = 0; i < ops; ++i) small_step(scratch.data());
      asm volatile("" : : "r"(scratch.data()) : "memory");  // keep the loop: its result is not read
      const double op_cost = plain.seconds() / ops;
      const double push_cost = push_seconds / ops;
      out.metrics["op_us"] = 1e6 * op_cost;
      out.metrics["push_us"] = 1e6 * push_cost;
      out.metrics["blocker_us"] = 1e6 * wait_seconds / ops;  // the cost of one blocker
      out.ideal_speedup = out.seconds / (ops * std::max(push_cost, op_cost));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Scenario> make_frontend_backend() { return std::make_unique<FrontendBackend>(); }

}  // namespace depbench
