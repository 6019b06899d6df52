#include "bench/depbench/scenario.h"
#include "bench/depbench/scenarios/scenarios.h"

namespace depbench {

const char* to_string(Mode mode) { return mode == Mode::sync ? "sync" : "async"; }

std::vector<std::unique_ptr<Scenario>> all_scenarios() {
  std::vector<std::unique_ptr<Scenario>> all;
  all.push_back(make_roofline());
  all.push_back(make_frontend_backend());
  all.push_back(make_auto_parallel());
  all.push_back(make_overlap_copy_compute());
  all.push_back(make_data_loading());
  all.push_back(make_training_step());
  all.push_back(make_hybridize());
  all.push_back(make_data_parallel());
  all.push_back(make_gradient_sync());
  return all;
}

}  // namespace depbench
