#pragma once
// The training set of the scenarios that train the MLP example
// (training_step, data_parallel, hybridize): the handwritten digits, or
// generated data shaped like them, less the fifth held out for testing;
// loaded once per process.

#include "examples/mlp.h"

namespace depbench {

inline const depengine::examples::Dataset& training_data() {
  namespace ex = depengine::examples;
  static const ex::Dataset data = ex::split(ex::load_digits_or_generate(), 0.2, 1).first;
  return data;
}

}  // namespace depbench
