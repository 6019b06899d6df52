// The README's ten lines on graphs: a training step captured once and
// replayed (built and run by the tests).
#include <depengine/graph.h>
#include <cstdio>

int main() {
  depengine::Engine engine;
  double w = 1.0, grad = 0;
  auto vw = engine.new_var("w");
  depengine::Graph step = engine.capture([&] {                 // recorded, not run
    auto vg = engine.new_var("grad");                          // the graph's own, made once
    engine.push([&](depengine::RunContext&) { grad = w / 2; }, {vw}, {vg});
    engine.push([&](depengine::RunContext&) { w -= grad; }, {vg}, {vw});
  });
  for (int i = 0; i < 3; ++i) engine.replay(step);            // one op per replay
  engine.wait_to_read(vw); std::printf("w = %g\n", w);        // w = 0.125
}
