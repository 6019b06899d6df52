#pragma once
// One factory per scenario (each in its own file).

#include <memory>

#include "bench/depbench/scenario.h"

namespace depbench {

std::unique_ptr<Scenario> make_roofline();
std::unique_ptr<Scenario> make_frontend_backend();
std::unique_ptr<Scenario> make_auto_parallel();
std::unique_ptr<Scenario> make_overlap_copy_compute();
std::unique_ptr<Scenario> make_data_loading();
std::unique_ptr<Scenario> make_training_step();
std::unique_ptr<Scenario> make_hybridize();
std::unique_ptr<Scenario> make_data_parallel();
std::unique_ptr<Scenario> make_gradient_sync();

}  // namespace depbench
