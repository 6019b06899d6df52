// metg: the minimum effective task granularity (Task Bench's METG) of
// depengine, oneTBB's flow graph and OpenMP tasks (with depend clauses, and
// with a taskwait per step), in the same run.
//
// The graph is Task Bench's stencil_1d: `width` columns (default: one per
// core) over `steps` time steps; the task at (t, i) reads the cells
// i - 1, i, i + 1 of step t - 1 and writes cell i of step t. Every task runs
// the same compute-bound kernel of a given number of iterations. Efficiency
// is the work done (tasks x iterations, at the kernel's serial rate) over
// what the cores could have done in the wall time; the granularity is the
// kernel's serial time per task. Granularity is swept down in steps of
// `--ratio` (default sqrt 2); the METG is the granularity where efficiency
// falls through 50%, interpolated between the two points around it (log
// scale). Each point is the best of `--runs` runs: the least disturbed run
// is the closest to what the system can do.
//
//   ./build/bench/metg                       # all systems, the default sweep
//   ./build/bench/metg --systems depengine --json metg.json
//
// Each system builds its graph inside the timing: depengine pushes every task
// (and infers its dependencies), the flow graph is built with its edges
// given, OpenMP creates tasks with depend clauses (omp_task) or waits for
// each step's (omp_taskwait). Each point of each system
// runs in a child process of its own: a system's threads outlive its runs
// (OpenMP's pool spins for a while after its parallel region) and would take
// cores from the next system's runs. The parent starts no threads.

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <depengine/engine.h>

#include "bench/support/cross_core_roundtrip.h"
#include "sync/usable_cores.h"

namespace {

using Clock = std::chrono::steady_clock;

// A dependent chain of multiply-adds: its time is iterations x the latency of
// one, whatever the core's width, and the compiler cannot fold it.
double kernel(long iterations, double seed) {
  double x = seed;
  for (long i = 0; i < iterations; ++i) x = x * 0.999999 + 1e-7;
  return x;
}

// Results land here so that no kernel is optimised away; each task writes
// its own cell, as the graph's dependencies allow.
struct Cells {
  explicit Cells(int width) : values(2 * static_cast<std::size_t>(width), 1.0) {}
  double& at(int step, int i) { return values[static_cast<std::size_t>(step % 2) * values.size() / 2 + i]; }
  std::vector<double> values;
};

void run_task(Cells& cells, int width, int step, int i, long iterations) {
  double seed = 0;
  if (step > 0) {
    for (int d = -1; d <= 1; ++d) {
      if (i + d >= 0 && i + d < width) seed += cells.at(step - 1, i + d);
    }
  }
  cells.at(step, i) = kernel(iterations, seed * 1e-3);
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct Graph {
  int width = 0, steps = 0;
  long iterations = 0;
};

// Runs the graph once on `workers` threads; returns its wall seconds.
using System = std::function<double(const Graph&, int)>;

double run_depengine(const Graph& g, int workers) {
  depengine::Engine engine({.cpu_threads = workers, .read_environment = false});
  std::vector<depengine::Var> vars;
  for (int i = 0; i < 2 * g.width; ++i) vars.push_back(engine.new_var());
  Cells cells(g.width);
  const Clock::time_point start = Clock::now();
  std::vector<depengine::Var> reads;
  for (int t = 0; t < g.steps; ++t) {
    for (int i = 0; i < g.width; ++i) {
      reads.clear();
      if (t > 0) {
        for (int d = -1; d <= 1; ++d) {
          if (i + d >= 0 && i + d < g.width) reads.push_back(vars[((t - 1) % 2) * g.width + i + d]);
        }
      }
      engine.push([&cells, w = g.width, t, i, n = g.iterations](depengine::RunContext&) { run_task(cells, w, t, i, n); },
                  reads, {vars[(t % 2) * g.width + i]});
    }
  }
  engine.wait_all();
  return seconds_since(start);
}

double run_tbb_flow_graph(const Graph& g, int workers) {
  namespace flow = oneapi::tbb::flow;
  oneapi::tbb::global_control parallelism(oneapi::tbb::global_control::max_allowed_parallelism, workers + 1);
  oneapi::tbb::task_arena arena(workers, 0);
  Cells cells(g.width);
  double seconds = 0;
  arena.execute([&] {
    const Clock::time_point start = Clock::now();
    flow::graph graph;
    std::vector<flow::continue_node<flow::continue_msg>> nodes;
    nodes.reserve(static_cast<std::size_t>(g.width) * g.steps);
    for (int t = 0; t < g.steps; ++t) {
      for (int i = 0; i < g.width; ++i) {
        nodes.emplace_back(graph, [&cells, w = g.width, t, i, n = g.iterations](const flow::continue_msg&) {
          run_task(cells, w, t, i, n);
        });
        if (t == 0) continue;
        for (int d = -1; d <= 1; ++d) {
          if (i + d >= 0 && i + d < g.width) flow::make_edge(nodes[(t - 1) * g.width + i + d], nodes.back());
        }
      }
    }
    for (int i = 0; i < g.width; ++i) nodes[i].try_put(flow::continue_msg());
    graph.wait_for_all();
    seconds = seconds_since(start);
  });
  return seconds;
}

double run_omp_task(const Graph& g, int workers) {
  Cells cells(g.width);
  // One dependence token per cell of the two rows, as depengine's variables;
  // each row has a token either side that nobody writes, which the edge
  // columns' tasks name (a dependence on it orders nothing).
  const int stride = g.width + 2;
  std::vector<char> token(2 * static_cast<std::size_t>(stride));
  const Clock::time_point start = Clock::now();
#pragma omp parallel num_threads(workers)
#pragma omp single
  for (int t = 0; t < g.steps; ++t) {
    char* prev = token.data() + ((t + 1) % 2) * stride + 1;
    char* cur = token.data() + (t % 2) * stride + 1;
    for (int i = 0; i < g.width; ++i) {
#pragma omp task depend(in : prev[i - 1], prev[i], prev[i + 1]) depend(out : cur[i]) firstprivate(t, i)
      run_task(cells, g.width, t, i, g.iterations);
    }
  }
  return seconds_since(start);
}

// OpenMP's cheapest form of the same graph: a step's tasks, then a
// taskwait. For width <= 3 every task of a step reads every cell of the one
// before, so the taskwait is exactly the stencil's dependencies; wider, it
// waits for more than they do. No depend clauses, so libgomp's throttle
// (omp_task above) never applies.
double run_omp_taskwait(const Graph& g, int workers) {
  Cells cells(g.width);
  const Clock::time_point start = Clock::now();
#pragma omp parallel num_threads(workers)
#pragma omp single
  for (int t = 0; t < g.steps; ++t) {
    for (int i = 0; i < g.width; ++i) {
#pragma omp task firstprivate(t, i)
      run_task(cells, g.width, t, i, g.iterations);
    }
#pragma omp taskwait
  }
  return seconds_since(start);
}

const std::map<std::string, System>& systems() {
  static const std::map<std::string, System> all{{"depengine", run_depengine},
                                                 {"tbb_flow_graph", run_tbb_flow_graph},
                                                 {"omp_task", run_omp_task},
                                                 {"omp_taskwait", run_omp_taskwait}};
  return all;
}

double best_of(const System& system, const Graph& g, int workers, int runs) {
  double best = 1e30;
  for (int r = 0; r < runs; ++r) best = std::min(best, system(g, workers));
  return best;
}

// best_of in a forked child, which sends its result back through a pipe;
// nullopt (with the reason on stderr) when the child does not deliver one.
std::optional<double> best_of_in_child(const System& system, const Graph& g, int workers, int runs) {
  int fds[2];
  if (pipe(fds) != 0) {
    std::perror("metg: pipe");
    return std::nullopt;
  }
  const pid_t child = fork();
  if (child < 0) {
    std::perror("metg: fork");
    close(fds[0]);
    close(fds[1]);
    return std::nullopt;
  }
  if (child == 0) {
    close(fds[0]);
    const double best = best_of(system, g, workers, runs);
    const bool sent = write(fds[1], &best, sizeof best) == static_cast<ssize_t>(sizeof best);
    _exit(sent ? 0 : 1);
  }
  close(fds[1]);
  double best = 0;
  const bool received = read(fds[0], &best, sizeof best) == static_cast<ssize_t>(sizeof best);
  close(fds[0]);
  int status = 0;
  if (waitpid(child, &status, 0) != child) {
    std::perror("metg: waitpid");
    return std::nullopt;
  }
  if (WIFSIGNALED(status)) {
    std::fprintf(stderr, "metg: the child process died of signal %d\n", WTERMSIG(status));
    return std::nullopt;
  }
  if (!received || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "metg: the child process exited with status %d without a result\n", WEXITSTATUS(status));
    return std::nullopt;
  }
  return best;
}

// Seconds per kernel iteration on one thread, the best of several timings.
double seconds_per_iteration() {
  constexpr long kIterations = 20'000'000;
  double best = 1e30;
  volatile double sink = 0;
  for (int r = 0; r < 5; ++r) {
    const Clock::time_point start = Clock::now();
    sink = sink + kernel(kIterations, 1.0);
    best = std::min(best, seconds_since(start));
  }
  return best / kIterations;
}

struct Point {
  double granularity_us = 0;
  double efficiency = 0;
};

// Where efficiency falls through `level`, between the last point at or above
// it and the next one below, on a log scale of granularity; nullopt when no
// point reaches it or none falls below.
std::optional<double> crossing(const std::vector<Point>& points, double level) {
  for (std::size_t k = 1; k < points.size(); ++k) {
    const Point& above = points[k - 1];
    const Point& below = points[k];
    if (above.efficiency >= level && below.efficiency < level) {
      const double f = (above.efficiency - level) / (above.efficiency - below.efficiency);
      return std::exp(std::log(above.granularity_us) + f * (std::log(below.granularity_us) - std::log(above.granularity_us)));
    }
  }
  return std::nullopt;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
  return parts;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("metg: minimum effective task granularity (50% efficiency) on Task Bench's stencil_1d, for "
               "depengine, oneTBB's flow graph and OpenMP tasks in the same run");
  const int cores = depengine::detail::usable_cores();
  int width = cores, workers = cores, steps = 1000, runs = 5;
  double max_us = 200, min_us = 0.05, ratio = std::sqrt(2.0);
  std::string system_list = "depengine,tbb_flow_graph,omp_task,omp_taskwait", json_path;
  bool in_process = false;
  app.add_option("--width", width, "Columns of the stencil (default: the usable cores)")->check(CLI::Range(1, 4096));
  app.add_option("--workers", workers, "Threads of each system (default: the usable cores)")->check(CLI::Range(1, 1024));
  app.add_option("--steps", steps, "Time steps")->check(CLI::Range(2, 1'000'000));
  app.add_option("--runs", runs, "Runs per point; the best counts")->check(CLI::Range(1, 100));
  app.add_option("--max-grain-us", max_us, "Largest granularity, µs")->check(CLI::Range(0.001, 1e6));
  app.add_option("--min-grain-us", min_us, "Smallest granularity, µs")->check(CLI::Range(0.001, 1e6));
  app.add_option("--ratio", ratio, "Step between granularities")->check(CLI::Range(1.01, 100.0));
  app.add_option("--systems", system_list, "Comma-separated: depengine, tbb_flow_graph, omp_task, omp_taskwait");
  app.add_option("--json", json_path, "Write every point and each METG to FILE");
  app.add_flag("--in-process", in_process,
               "Run every system in this process (default: each point of each system in a child process of its own)");
  CLI11_PARSE(app, argc, argv);
  const std::vector<std::string> names = split(system_list);
  for (const std::string& name : names) {
    if (!systems().count(name)) {
      std::fprintf(stderr, "metg: unknown system '%s' (depengine, tbb_flow_graph, omp_task, omp_taskwait)\n", name.c_str());
      return 2;
    }
  }
  if (min_us > max_us) {
    std::fprintf(stderr, "metg: --min-grain-us (%g) is above --max-grain-us (%g)\n", min_us, max_us);
    return 2;
  }

  const double iteration_s = seconds_per_iteration();
  const double used_cores = std::min(workers, cores);
  std::printf("metg: stencil_1d, width %d, %d steps, %d workers on %d usable cores; kernel %.2f ns per iteration; "
              "best of %d runs, %s\n\n",
              width, steps, workers, cores, iteration_s * 1e9, runs,
              in_process ? "every system in one process" : "each point of each system in its own process");
  std::printf("| granularity (µs) |");
  for (const std::string& name : names) std::printf(" %s |", name.c_str());
  std::printf("\n|---|");
  for (std::size_t k = 0; k < names.size(); ++k) std::printf("---|");
  std::printf("\n");

  // A sweep in one of the machine's slow spells of cross-core traffic moves
  // every system (docs/performance.md, "Slow spells"): said with the result.
  const double roundtrip_before_ns = depengine::bench::cross_core_roundtrip_ns();
  std::map<std::string, std::vector<Point>> curves;
  for (double grain_us = max_us; grain_us >= min_us * 0.999; grain_us /= ratio) {
    const Graph graph{.width = width, .steps = steps,
                      .iterations = std::max(1L, std::lround(grain_us * 1e-6 / iteration_s))};
    const double granularity_us = static_cast<double>(graph.iterations) * iteration_s * 1e6;
    const double work_s = static_cast<double>(width) * steps * graph.iterations * iteration_s;
    std::printf("| %.3g |", granularity_us);
    for (const std::string& name : names) {
      const System& system = systems().at(name);
      const std::optional<double> best =
          in_process ? best_of(system, graph, workers, runs) : best_of_in_child(system, graph, workers, runs);
      if (!best) {
        std::fprintf(stderr, "metg: %s at %.3g µs gave no result\n", name.c_str(), granularity_us);
        return 1;
      }
      const double efficiency = work_s / (*best * used_cores);
      curves[name].push_back({granularity_us, efficiency});
      std::printf(" %.0f%% |", efficiency * 100);
    }
    std::printf("\n");
    std::fflush(stdout);
  }

  const double roundtrip_after_ns = depengine::bench::cross_core_roundtrip_ns();
  nlohmann::json out{{"width", width}, {"steps", steps}, {"workers", workers}, {"cores", cores},
                     {"ns_per_iteration", iteration_s * 1e9}, {"runs", runs}, {"in_process", in_process},
                     {"cross_core_roundtrip_ns", roundtrip_before_ns < 0 ? nlohmann::json(nullptr)
                                                 : nlohmann::json{roundtrip_before_ns, roundtrip_after_ns}}};
  if (const std::string line = depengine::bench::roundtrips_line(roundtrip_before_ns, roundtrip_after_ns, " the sweep");
      !line.empty()) {
    std::printf("\n%s\n", line.c_str());
  }
  std::printf("\nMETG (50%% efficiency), µs:");
  for (const std::string& name : names) {
    const std::optional<double> metg = crossing(curves[name], 0.5);
    if (metg) {
      std::printf(" %s %.3g;", name.c_str(), *metg);
    } else {
      std::printf(" %s not crossed in the sweep;", name.c_str());
    }
    nlohmann::json points = nlohmann::json::array();
    for (const Point& p : curves[name]) points.push_back({{"granularity_us", p.granularity_us}, {"efficiency", p.efficiency}});
    out["systems"][name] = {{"points", points}, {"metg_us", metg ? nlohmann::json(*metg) : nlohmann::json(nullptr)}};
  }
  std::printf("\n");
  if (!json_path.empty()) {
    std::ofstream file(json_path);
    if (!(file << out.dump(2) << '\n')) {
      std::fprintf(stderr, "metg: cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return 0;
}
