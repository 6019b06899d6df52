// depbench as a program: its command line, and the files it writes (JSON
// records, the HTML report, the trace), from one run at a tiny size.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <depengine/cuda_memory.h>
#include <depengine/profiler.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <nlohmann/json.hpp>

#include "sync/usable_cores.h"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Command {  // what a finished command left
  int exit_code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Made again after a suite's teardown removed it (--gtest_repeat).
const fs::path& scratch() {
  static const fs::path dir = fs::temp_directory_path() / ("depbench_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

Command run(const std::string& command) {
  const fs::path out = scratch() / "stdout", err = scratch() / "stderr";
  const std::string line = command + " >" + out.string() + " 2>" + err.string();
  const int status = std::system(line.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

Command depbench(const std::string& args) { return run(std::string(DEPBENCH_PATH) + " " + args); }

const char* kScenarios[] = {"roofline", "frontend_backend", "auto_parallel", "overlap_copy_compute",
                            "data_loading", "training_step", "hybridize", "data_parallel", "gradient_sync"};
// gradient_sync's strategies in one process.
const char* kStrategies[] = {"one_device", "ring", "kvstore_local"};

// A build with DEPENGINE_PROFILER_HOOKS=OFF has no profiler: no trace, no
// timeline, and no ideal speedup for training_step and data_parallel
// (measured by profiling).
const bool kProfiler = depengine::Profiler::available();

}  // namespace

TEST(DepbenchCli, HelpDocumentsEveryFlag) {
  const Command r = depbench("--help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag : {"--scenario", "--size", "--repeat", "--device", "--workers", "--json", "--report", "--trace", "--help"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
  for (const char* name : kScenarios) EXPECT_NE(r.out.find(name), std::string::npos) << name;
  EXPECT_NE(r.out.find("{cpu,emulated,cuda}"), std::string::npos) << "--device's choices";
}

TEST(DepbenchCli, BadArgumentsFailWithAReason) {
  const std::map<std::string, std::string> cases = {
      {"--scenario nope", "unknown scenario 'nope'"},
      {"--size -1", "--size"},
      {"--size abc", "--size"},
      {"--repeat 0", "--repeat"},
      {"--device gpu7", "--device"},
      {"--workers -1", "--workers"},
      {"--workers 100000", "--workers"},
      {"--no-such-flag", "no-such-flag"},
  };
  for (const auto& [args, reason] : cases) {
    const Command r = depbench(args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_NE(r.err.find(reason), std::string::npos) << args << ": " << r.err;
    EXPECT_TRUE(r.out.empty() || r.out.find("scenario ") == std::string::npos) << args << " ran anyway";
  }
}

TEST(DepbenchCli, WorkersSetTheAsyncEnginesWorkers) {
  const Command r = depbench("--scenario auto_parallel --size 0.02 --repeat 1 --workers 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("threaded engine, 1 CPU worker)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("DIFFER"), std::string::npos) << r.out;
}

TEST(DepbenchCli, ReportsEachCpusSpeedBeforeAndAfter) {
  const Command r = depbench("--scenario frontend_backend --size 0.02 --repeat 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string head = "Memory-bound op per CPU (relu over 32 KiB, median us), before and after:";
  const std::size_t at = r.out.find(head);
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  // One "B and A" per CPU the process may use, each a time in microseconds.
  std::istringstream pairs(line.substr(head.size(), line.find(" (slowest") - head.size()));
  int cpus = 0;
  for (std::string pair; std::getline(pairs, pair, ',');) {
    double before = 0, after = 0;
    EXPECT_EQ(std::sscanf(pair.c_str(), " %lf and %lf", &before, &after), 2) << line;
    EXPECT_GT(before, 0) << line;
    EXPECT_GT(after, 0) << line;
    ++cpus;
  }
  EXPECT_EQ(cpus, depengine::detail::usable_cores()) << line;
  EXPECT_NE(line.find("x the fastest)"), std::string::npos) << line;
}

TEST(DepbenchCli, RunsOnEmulatedDevices) {
  const Command r = depbench("--scenario auto_parallel,overlap_copy_compute --device emulated --size 0.02 --repeat 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("device emulated"), std::string::npos);
  EXPECT_EQ(r.out.find("DIFFER"), std::string::npos);
}

// Without a GPU (or in a build without CUDA) --device cuda is refused
// before anything runs, with the reason.
TEST(DepbenchCli, CudaWithoutAGpuFailsWithAReason) {
  if (depengine::cuda_device_count() > 0) GTEST_SKIP() << "this machine has a CUDA GPU";
  const Command r = depbench("--scenario auto_parallel --device cuda --size 0.02 --repeat 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--device cuda: "), std::string::npos) << r.err;
  EXPECT_TRUE(r.err.find("no usable CUDA GPU") != std::string::npos ||
              r.err.find("no CUDA support") != std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("scenario "), std::string::npos) << "ran anyway";
}

TEST(DepbenchCli, RunsOnCuda) {
  if (depengine::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU on this machine (or a build without CUDA)";
  const Command r = depbench("--device cuda --size 0.02 --repeat 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("device cuda"), std::string::npos);
  EXPECT_NE(r.out.find("on the CPU whatever --device says: roofline, frontend_backend\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("DIFFER"), std::string::npos) << r.out;
}

TEST(DepbenchCli, TraceWithoutTheProfilerFailsWithAReason) {
  if (kProfiler) GTEST_SKIP() << "this build has the profiler's hooks";
  const Command r = depbench("--scenario auto_parallel --size 0.02 --repeat 1 --trace " +
                             (scratch() / "no-trace.json").string());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("DEPENGINE_PROFILER_HOOKS=OFF"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(scratch() / "no-trace.json"));
}

// Each unwritable output is found before any scenario runs: no table, no
// progress, exit code 2, and the path and the reason in the message.
TEST(DepbenchCli, UnwritableOutputFailsBeforeRunningAnything) {
  for (const char* flag : {"--json", "--report", "--trace"}) {
    if (std::string(flag) == "--trace" && !kProfiler) continue;  // refused for another reason, tested above
    const std::string path = "/nonexistent-dir/x.json";
    const Command r = depbench("--scenario frontend_backend --size 0.02 --repeat 1 " + std::string(flag) + " " + path);
    EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.err;
    EXPECT_NE(r.err.find("cannot write '" + path + "'"), std::string::npos) << flag << ": " << r.err;
    EXPECT_NE(r.err.find("No such file or directory"), std::string::npos) << flag << ": " << r.err;
    EXPECT_EQ(r.out.find("frontend_backend"), std::string::npos) << flag << ": a scenario ran first:\n" << r.out;
    EXPECT_EQ(r.out.find("scenario "), std::string::npos) << flag << ": the table was printed:\n" << r.out;
  }
}

TEST(DepbenchCli, TwoOutputsInOneFileAreRefused) {
  const std::string path = (scratch() / "same.json").string();
  const Command r = depbench("--scenario frontend_backend --size 0.02 --repeat 1 --json " + path + " --report " +
                             (scratch() / "." / "same.json").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--json and --report name the same file"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("scenario "), std::string::npos) << "ran anyway:\n" << r.out;
}

// --size is bounded by what the machine can hold: non-finite values by the
// command line, finite ones by each scenario's footprint (its counts against
// the int they go into, its memory against the physical memory), before
// anything runs, with the bound in the message.
TEST(DepbenchCli, NonFiniteSizesAreRefused) {
  for (const char* size : {"inf", "-inf", "nan", "infinity", "1e400"}) {
    const Command r = depbench(std::string("--scenario frontend_backend --repeat 1 --size ") + size);
    EXPECT_NE(r.exit_code, 0) << size;
    EXPECT_NE(r.err.find("--size: must be a finite positive number, not '" + std::string(size) + "'"),
              std::string::npos)
        << size << ": " << r.err;
    EXPECT_EQ(r.out.find("frontend_backend"), std::string::npos) << size << " ran anyway:\n" << r.out;
  }
}

TEST(DepbenchCli, SizesBeyondTheMachineAreRefusedWithTheBound) {
  struct Case {
    std::string size, scenario, reason;
    std::string shown;  // how the message writes the size
  };
  const Case cases[] = {
      // 2e10 ops: more than the int that counts them; it used to wrap to 10 ops.
      {"1e6", "frontend_backend", "frontend_backend: its ops per run would be 2e+10, more than an int holds (2147483647)", "1e+06"},
      {"1e308", "frontend_backend", "frontend_backend: its ops per run would be", "1e+308"},
      {"1e308", "auto_parallel", "auto_parallel: its matrix side would be", "1e+308"},
      {"1e308", "roofline", "roofline: its vector length would be", "1e+308"},
      {"1e308", "data_loading", "data_loading: its batch rows would be", "1e+308"},
      {"1e308", "training_step", "training_step: its epochs would be", "1e+308"},
      {"1e308", "overlap_copy_compute", "overlap_copy_compute: its matrix side would be", "1e+308"},
      // Fits an int (side 1024 * 10^4 / 16 * 16) but not the memory: 18 results of side^2 floats.
      {"1e12", "overlap_copy_compute", "of physical memory", "1e+12"},
      {"1e308", "gradient_sync", "gradient_sync: its layer elements would be", "1e+308"},
      // Its largest layer fits an int (1,048,576,000) but not the memory: 17 copies of 2.2e9 floats.
      {"1000", "gradient_sync", "of physical memory", "1000"},
      {"1e6", "all", "frontend_backend: its ops per run would be", "1e+06"},
  };
  for (const Case& c : cases) {
    const Command r = depbench("--repeat 1 --size " + c.size + " --scenario " + c.scenario);
    EXPECT_EQ(r.exit_code, 2) << c.size << " " << c.scenario << ": " << r.err;
    EXPECT_NE(r.err.find("depbench: --size " + c.shown + " is too large for this machine:\n"), std::string::npos)
        << c.size << " " << c.scenario << ": " << r.err;
    EXPECT_NE(r.err.find(c.reason), std::string::npos) << c.size << " " << c.scenario << ": " << r.err;
    EXPECT_NE(r.err.find("the largest --size at which these scenarios fit here is "), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("scenario "), std::string::npos) << c.size << " " << c.scenario << " ran anyway:\n" << r.out;
  }
}

// A size that fits the machine's memory but not the process's (here: an
// address-space limit of 1.5 GB against data_loading's ~3 GB of batches)
// ends with a message and exit code 3, not an uncaught std::bad_alloc.
TEST(DepbenchCli, OutOfMemoryIsReportedWithTheScenario) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer reserves more address space than the limit this test sets";
#else
  const Command r = run("ulimit -v 1500000; " + std::string(DEPBENCH_PATH) +
                        " --scenario data_loading --repeat 1 --size 2000");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("depbench: out of memory (std::bad_alloc) in data_loading; try a smaller --size"),
            std::string::npos)
      << r.err;
#endif
}

// The bound it names is one that runs: a size just below it is accepted
// (and frontend_backend's bound is its int: 2147483647 / 20000 ops).
TEST(DepbenchCli, TheNamedBoundIsTheLargestThatFits) {
  const Command refused = depbench("--scenario frontend_backend --repeat 1 --size 1e6");
  const std::string marker = "the largest --size at which these scenarios fit here is ";
  const std::size_t at = refused.err.find(marker);
  ASSERT_NE(at, std::string::npos) << refused.err;
  const double largest = std::stod(refused.err.substr(at + marker.size()));
  EXPECT_LE(largest, 2147483647.0 / 20000);
  EXPECT_GT(largest, 0.99 * 2147483647.0 / 20000);
}

// One full run at a tiny size; the tests below read what it wrote.
class DepbenchOutputs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    json_path_ = scratch() / "results.json";
    report_path_ = scratch() / "report.html";
    trace_path_ = scratch() / "trace.json";
    run_ = depbench("--size 0.02 --repeat 1 --json " + json_path_.string() + " --report " + report_path_.string() +
                    (kProfiler ? " --trace " + trace_path_.string() : std::string()));
  }
  static void TearDownTestSuite() { fs::remove_all(scratch()); }
  void SetUp() override { ASSERT_EQ(run_.exit_code, 0) << run_.err; }

  static inline Command run_;
  static inline fs::path json_path_, report_path_, trace_path_;
};

TEST_F(DepbenchOutputs, TableOnStdoutProgressNotOnAPipe) {
  for (const char* name : kScenarios) EXPECT_NE(run_.out.find(name), std::string::npos) << name;
  EXPECT_NE(run_.out.find("speedup"), std::string::npos);
  EXPECT_EQ(run_.out.find("DIFFER"), std::string::npos);
  EXPECT_TRUE(run_.err.empty()) << "stderr is not a terminal here, so no progress line: " << run_.err;
  // gradient_sync's own table: one row per strategy, after its heading.
  const std::size_t strategies = run_.out.find("\ngradient_sync: 4 emulated devices x 1 process(es)");
  ASSERT_NE(strategies, std::string::npos) << run_.out;
  for (const char* name : kStrategies) {
    EXPECT_NE(run_.out.find("\n  " + std::string(name) + " ", strategies), std::string::npos) << name;
  }
}

TEST_F(DepbenchOutputs, JsonHasOneSaneRecordPerScenarioAndMode) {
  const json records = json::parse(slurp(json_path_));
  ASSERT_TRUE(records.is_array());
  ASSERT_EQ(records.size(), 2 * std::size(kScenarios));
  std::map<std::string, std::map<std::string, json>> by;
  for (const json& r : records) {
    for (const char* field : {"scenario", "mode", "seconds", "speedup", "ideal_speedup", "results_equal", "runs"}) {
      ASSERT_TRUE(r.contains(field)) << field << " in " << r.dump();
    }
    by[r.at("scenario")][r.at("mode")] = r;
    EXPECT_GT(r.at("seconds").get<double>(), 0);
    if (!kProfiler && (r.at("scenario") == "training_step" || r.at("scenario") == "hybridize" ||
                       r.at("scenario") == "data_parallel")) {
      EXPECT_TRUE(r.at("ideal_speedup").is_null()) << r.dump();
    } else {
      EXPECT_GT(r.at("ideal_speedup").get<double>(), 0);
    }
    EXPECT_TRUE(r.at("results_equal").get<bool>());
  }
  for (const char* name : kScenarios) {
    ASSERT_EQ(by[name].size(), 2u) << name;
    const double sync = by[name]["sync"].at("seconds"), async = by[name]["async"].at("seconds");
    EXPECT_NEAR(by[name]["async"].at("speedup").get<double>(), sync / async, 1e-9 * sync / async) << name;
    EXPECT_EQ(by[name]["sync"].at("speedup"), by[name]["async"].at("speedup"));
  }
  EXPECT_TRUE(by["roofline"]["sync"].at("ops").is_array());
  EXPECT_TRUE(by["frontend_backend"]["sync"].contains("blocker_us"));
  for (const char* mode : {"sync", "async"}) {
    const json& strategies = by["gradient_sync"][mode].at("strategies");
    EXPECT_EQ(strategies.size(), std::size(kStrategies)) << strategies.dump();
    for (const char* name : kStrategies) {
      ASSERT_TRUE(strategies.contains(name)) << name << " in " << strategies.dump();
      const json& s = strategies.at(name);
      EXPECT_GT(s.at("seconds").get<double>(), 0) << name;
      EXPECT_EQ(s.at("runs").size(), 1u) << name;
      EXPECT_GT(s.at("ideal_seconds").get<double>(), 0) << name;
      EXPECT_DOUBLE_EQ(s.at("vs_ideal").get<double>(), s.at("seconds").get<double>() / s.at("ideal_seconds").get<double>());
      EXPECT_GT(s.at("bottleneck_mib").get<double>(), 0) << name;
    }
  }
}

TEST_F(DepbenchOutputs, ReportIsWellFormedWithItsCharts) {
  const std::string html = slurp(report_path_);
  // Well-formed XML, parsed offline (no DTD fetched).
  xmlDocPtr doc = xmlReadMemory(html.data(), static_cast<int>(html.size()), "report.html", nullptr,
                                XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  ASSERT_NE(doc, nullptr) << "the report is not well-formed XML";
  std::set<std::string> svg_ids;
  std::function<void(xmlNodePtr)> walk = [&](xmlNodePtr node) {
    for (; node != nullptr; node = node->next) {
      if (node->type == XML_ELEMENT_NODE && std::string(reinterpret_cast<const char*>(node->name)) == "svg") {
        xmlChar* id = xmlGetProp(node, BAD_CAST "id");
        xmlChar* width = xmlGetProp(node, BAD_CAST "width");
        if (id) svg_ids.insert(reinterpret_cast<char*>(id));
        EXPECT_GT(std::atof(reinterpret_cast<char*>(width)), 0);
        xmlFree(id);
        xmlFree(width);
      }
      walk(node->children);
    }
  };
  walk(xmlDocGetRootElement(doc));
  xmlFreeDoc(doc);
  if (kProfiler) {
    EXPECT_EQ(svg_ids, (std::set<std::string>{"speedup-chart", "roofline-plot", "strategy-chart", "timeline-chart"}));
  } else {
    EXPECT_EQ(svg_ids, (std::set<std::string>{"speedup-chart", "roofline-plot", "strategy-chart"}));
    EXPECT_NE(html.find("No timeline"), std::string::npos);
  }
  // gradient_sync's chart has a row for each strategy.
  const std::size_t chart = html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"strategy-chart\"");
  ASSERT_NE(chart, std::string::npos);
  const std::string strategy_chart = html.substr(chart, html.find("</svg>", chart) - chart);
  for (const char* name : kStrategies) {
    EXPECT_NE(strategy_chart.find(">" + std::string(name) + "</text>"), std::string::npos) << name;
  }
  // Self-contained: nothing to fetch, no scripts.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

TEST_F(DepbenchOutputs, TraceHasOneSlicePerOpAndNoOverlapOnAStream) {
  if (!kProfiler) GTEST_SKIP() << "no profiler in this build (DEPENGINE_PROFILER_HOOKS=OFF), so no trace";
  const json trace = json::parse(slurp(trace_path_));
  // Op ids per process; a scenario's processes are its host and its devices
  // ("auto_parallel: host", "gradient_sync: emulated:0").
  std::map<int, std::multiset<std::uint64_t>> slices, pushes;
  std::map<int, std::string> scenario_of;
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> by_track;
  std::set<std::string> processes;
  for (const json& e : trace.at("traceEvents")) {
    const int pid = e.at("pid");
    if (e.at("ph") == "X" && e.at("cat") == "op") {
      slices[pid].insert(e.at("args").at("id").get<std::uint64_t>());
      const double ts = e.at("ts");
      by_track[{pid, e.at("tid")}].push_back({ts, ts + e.at("dur").get<double>()});
    } else if (e.at("ph") == "i" && e.at("cat") == "push") {
      pushes[pid].insert(e.at("args").at("id").get<std::uint64_t>());
    } else if (e.at("ph") == "M" && e.at("name") == "process_name") {
      const std::string name = e.at("args").at("name");
      processes.insert(name);
      scenario_of[pid] = name.substr(0, name.find(": "));
    }
  }
  for (const char* name : kScenarios) EXPECT_TRUE(processes.count(std::string(name) + ": host")) << name;
  ASSERT_FALSE(slices.empty());
  std::map<std::string, std::multiset<std::uint64_t>> scenario_slices, scenario_pushes;
  for (const auto& [pid, ids] : slices) {
    ASSERT_TRUE(scenario_of.contains(pid)) << "process " << pid << " has no name";
    scenario_slices[scenario_of[pid]].insert(ids.begin(), ids.end());
  }
  for (const auto& [pid, ids] : pushes) scenario_pushes[scenario_of[pid]].insert(ids.begin(), ids.end());
  // Every op pushed in a traced run ran exactly once: one slice each, on
  // its scenario's host or one of its devices.
  for (const auto& [scenario, ids] : scenario_pushes) {
    EXPECT_EQ(scenario_slices[scenario], ids) << scenario;
    EXPECT_EQ(std::set<std::uint64_t>(ids.begin(), ids.end()).size(), ids.size());
  }
  for (auto& [track, spans] : by_track) {
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i) {
      EXPECT_LE(spans[i - 1].second, spans[i].first + 1e-6) << "overlap on " << track.first << "/" << track.second;
    }
  }
}

// Renders the report in headless Chromium and checks that every chart has a size on screen.
TEST_F(DepbenchOutputs, ChartsRenderInHeadlessChromium) {
  std::string browser;
  for (const char* candidate : {"chromium", "chromium-browser", "google-chrome"}) {
    if (run(std::string("command -v ") + candidate).exit_code == 0) {
      browser = candidate;
      break;
    }
  }
  if (browser.empty()) GTEST_SKIP() << "no chromium on PATH (Debian: apt-get install chromium); not rendered";

  // A copy of the report with a script that writes each chart's rendered size into the page.
  std::string html = slurp(report_path_);
  const std::string probe =
      "<script>window.addEventListener('load', function () {"
      " var out = document.createElement('pre'); out.id = 'sizes';"
      " document.querySelectorAll('svg').forEach(function (s) {"
      "  var r = s.getBoundingClientRect(); out.textContent += s.id + ' ' + r.width + ' ' + r.height + '\\n'; });"
      " document.body.appendChild(out); });</script>";
  html.insert(html.rfind("</body>"), probe);
  const fs::path page = scratch() / "render.html";
  std::ofstream(page) << html;

  const Command r = run("timeout 120 " + browser +
                    " --headless --no-sandbox --disable-gpu --no-first-run --virtual-time-budget=5000 --dump-dom "
                    "file://" + page.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::size_t begin = r.out.find("<pre id=\"sizes\">");
  ASSERT_NE(begin, std::string::npos) << "the page did not run its probe";
  std::istringstream sizes(r.out.substr(begin + 16, r.out.find("</pre>", begin) - begin - 16));
  std::map<std::string, std::pair<double, double>> rendered;
  std::string id;
  double w, h;
  while (sizes >> id >> w >> h) rendered[id] = {w, h};
  for (const char* chart : {"speedup-chart", "roofline-plot", "strategy-chart", "timeline-chart"}) {
    if (!kProfiler && std::string(chart) == "timeline-chart") continue;
    ASSERT_TRUE(rendered.count(chart)) << chart;
    EXPECT_GT(rendered[chart].first, 0) << chart;
    EXPECT_GT(rendered[chart].second, 0) << chart;
  }
}
