// paced_chain: a frontend that does work of its own between pushes, and
// blocks once per epoch — a training loop's shape, without its math. Each
// epoch pushes `--ops` chained ops of `--op-us` each, spends `--push-us` of
// its own before each push, then waits for the last. On 2 CPUs with one
// worker the ops overlap the pushing: an epoch takes about
// max(ops x op, ops x push), where running each op at its push takes
// ops x (op + push). Printed: the mean epoch, both references, and the
// share of ops that ran while the frontend was still pushing (none when the
// frontend and the worker end up on one CPU).
//
//   ./build/bench/paced_chain                  # 1 worker, 20 epochs
//   ./build/bench/paced_chain --workers 2 --epochs 50

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <depengine/engine.h>

#include "bench/support/cross_core_roundtrip.h"

namespace {

using Clock = std::chrono::steady_clock;

void busy_for(std::chrono::nanoseconds span) {
  const auto end = Clock::now() + span;
  while (Clock::now() < end) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"paced_chain: chained ops pushed by a frontend that works between pushes, one wait per epoch"};
  int workers = 1, epochs = 20, ops = 1000;
  double op_us = 1.5, push_us = 0.4;
  app.add_option("--workers", workers, "CPU workers")->check(CLI::Range(1, 1024));
  app.add_option("--epochs", epochs, "Epochs; the first is left out of the mean")->check(CLI::Range(2, 100000));
  app.add_option("--ops", ops, "Ops per epoch")->check(CLI::Range(1, 1000000));
  app.add_option("--op-us", op_us, "Each op's time, µs")->check(CLI::Range(0.0, 1e6));
  app.add_option("--push-us", push_us, "The frontend's own time before each push, µs")->check(CLI::Range(0.0, 1e6));
  CLI11_PARSE(app, argc, argv);

  const double roundtrip_before = depengine::bench::cross_core_roundtrip_ns();
  const auto op_time = std::chrono::nanoseconds(static_cast<long>(op_us * 1e3));
  const auto push_time = std::chrono::nanoseconds(static_cast<long>(push_us * 1e3));
  depengine::Engine engine({.cpu_threads = workers});
  const depengine::Var chain = engine.new_var("chain");
  std::vector<Clock::time_point> finished(static_cast<std::size_t>(ops));
  double epochs_us = 0;
  long during_pushes = 0;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    const auto start = Clock::now();
    for (int i = 0; i < ops; ++i) {
      busy_for(push_time);
      engine.push(
          [&finished, i, op_time](depengine::RunContext&) {
            busy_for(op_time);
            finished[static_cast<std::size_t>(i)] = Clock::now();
          },
          {}, {chain});
    }
    const auto pushed = Clock::now();
    engine.wait_to_read(chain);
    if (epoch == 0) continue;  // the workers' first start
    epochs_us += std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    during_pushes += std::count_if(finished.begin(), finished.end(), [&](Clock::time_point t) { return t < pushed; });
  }
  const int measured = epochs - 1;
  std::printf("workers %d: mean epoch %.0f us; overlapped %.0f us, serial %.0f us; ops run during the pushes %.0f%%\n",
              workers, epochs_us / measured, ops * std::max(op_us, push_us), ops * (op_us + push_us),
              100.0 * static_cast<double>(during_pushes) / (static_cast<double>(measured) * ops));
  const std::string line = depengine::bench::roundtrips_line(roundtrip_before, depengine::bench::cross_core_roundtrip_ns());
  if (!line.empty()) std::printf("%s\n", line.c_str());
  return 0;
}
