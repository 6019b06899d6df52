// training_step: training a two-layer perceptron (relu hidden layer, mean
// squared error) with SGD, one operation per layer and per gradient, as a
// framework's imperative frontend would push them. Each step also loads
// its batch. The engine finds the parallelism on its own: the two
// gradients of the output layer, the update of one layer next to the
// backward pass of the other, the next batch's loading next to everything.
// Sync reads the loss after every step (naive engine); async reads all the
// losses at the end.

#include "bench/depbench/ideal.h"
#include "bench/depbench/kernels.h"
#include "bench/depbench/scenarios/common.h"
#include "bench/depbench/scenarios/scenarios.h"

namespace depbench {
namespace {

constexpr int kIn = 128;
constexpr int kHidden = 256;
constexpr int kOut = 32;
constexpr float kLearningRate = 0.05f;

struct Batch {
  Floats x, target;
};

struct Model {
  Floats w1, w2;                   // kIn x kHidden, kHidden x kOut
  Floats h, y, dy, dh, g1, g2;     // activations and gradients
  Floats teacher;                  // kIn x kOut: the targets are x * teacher
  std::vector<float> losses;
};

class TrainingStep final : public Scenario {
 public:
  std::string name() const override { return "training_step"; }
  std::string description() const override {
    return "MLP training loop, one op per layer and gradient; sync: naive engine, loss read every step, "
           "async: losses read at the end";
  }
  std::string ideal_formula() const override { return "ops' time / max(critical path, ops' time / workers)"; }

  Outcome run(Mode mode, const Config& config, Trace* trace) const override {
    const int rows = scaled(256, config.size, 8);
    const int steps = 20;
    Model m;
    m.w1 = uniform(std::size_t(kIn) * kHidden, 11, -0.1f, 0.1f);
    m.w2 = uniform(std::size_t(kHidden) * kOut, 12, -0.1f, 0.1f);
    m.teacher = uniform(std::size_t(kIn) * kOut, 13, -0.2f, 0.2f);
    m.h.resize(std::size_t(rows) * kHidden);
    m.dh.resize(m.h.size());
    m.y.resize(std::size_t(rows) * kOut);
    m.dy.resize(m.y.size());
    m.g1.resize(m.w1.size());
    m.g2.resize(m.w2.size());
    m.losses.assign(steps, 0.0f);
    Batch batches[2];
    for (Batch& b : batches) {
      b.x.resize(std::size_t(rows) * kIn);
      b.target.resize(std::size_t(rows) * kOut);
    }

    OpTimes times;
    Outcome out;
    {
      RunEngine engine(engine_kind(mode), trace);
      depengine::Engine& e = *engine;
      using depengine::Var;
      Var batch_var[2] = {e.new_var("batch 0"), e.new_var("batch 1")};
      Var w1 = e.new_var("W1"), w2 = e.new_var("W2"), h = e.new_var("H"), y = e.new_var("Y"),
          dy = e.new_var("dY"), dh = e.new_var("dH"), g1 = e.new_var("dW1"), g2 = e.new_var("dW2"),
          losses = e.new_var("losses");
      // Pushes `fn` as an op and, in sync runs, times it for the ideal speedup.
      auto push = [&](const char* name, depengine::VarList reads, depengine::VarList writes, auto fn) {
        double* slot = mode == Mode::sync ? times.add(reads, writes) : nullptr;
        e.push([fn, slot](depengine::RunContext&) { timed(slot, fn); }, reads, writes, {.name = name});
      };
      Model* mp = &m;
      Stopwatch watch;
      for (int s = 0; s < steps; ++s) {
        Batch* b = &batches[s % 2];
        const Var bv = batch_var[s % 2];
        push("load batch", {}, {bv}, [b, mp, rows, s] {
          fill_uniform(b->x, 500 + s, -1, 1);
          gemm(b->x.data(), mp->teacher.data(), b->target.data(), rows, kOut, kIn);
        });
        push("linear1+relu", {bv, w1}, {h}, [b, mp, rows] {
          gemm(b->x.data(), mp->w1.data(), mp->h.data(), rows, kHidden, kIn);
          relu(mp->h);
        });
        push("linear2", {h, w2}, {y}, [mp, rows] { gemm(mp->h.data(), mp->w2.data(), mp->y.data(), rows, kOut, kHidden); });
        push("mse loss+grad", {y, bv}, {dy, losses}, [b, mp, s] {
          double loss = 0;
          const float scale = 2.0f / static_cast<float>(mp->y.size());
          for (std::size_t i = 0; i < mp->y.size(); ++i) {
            const float d = mp->y[i] - b->target[i];
            loss += double(d) * d;
            mp->dy[i] = scale * d;
          }
          mp->losses[s] = static_cast<float>(loss / static_cast<double>(mp->y.size()));
        });
        push("grad W2", {h, dy}, {g2}, [mp, rows] {
          gemm(mp->h.data(), mp->dy.data(), mp->g2.data(), kHidden, kOut, rows, 1, 0, /*transpose_a=*/true);
        });
        push("grad H", {dy, w2, h}, {dh}, [mp, rows] {
          gemm(mp->dy.data(), mp->w2.data(), mp->dh.data(), rows, kHidden, kOut, 1, 0, false, /*transpose_b=*/true);
          for (std::size_t i = 0; i < mp->dh.size(); ++i) {
            if (mp->h[i] <= 0) mp->dh[i] = 0;
          }
        });
        push("grad W1", {bv, dh}, {g1}, [b, mp, rows] {
          gemm(b->x.data(), mp->dh.data(), mp->g1.data(), kIn, kHidden, rows, 1, 0, /*transpose_a=*/true);
        });
        push("sgd W2", {g2}, {w2}, [mp] { axpy(-kLearningRate, mp->g2, mp->w2); });
        push("sgd W1", {g1}, {w1}, [mp] { axpy(-kLearningRate, mp->g1, mp->w1); });
        // Reading the loss every step is what makes a training loop synchronous.
        if (mode == Mode::sync) e.wait_to_read(losses);
      }
      e.wait_to_read(losses);
      out.seconds = watch.seconds();
    }
    out.digest = digest(m.losses, digest(m.w2, digest(m.w1)));
    if (mode == Mode::sync) out.ideal_speedup = times.ideal_speedup(cpu_workers());
    out.metrics["steps"] = steps;
    out.metrics["batch_rows"] = rows;
    out.metrics["first_loss"] = m.losses.front();
    out.metrics["last_loss"] = m.losses.back();
    return out;
  }
};

}  // namespace

std::unique_ptr<Scenario> make_training_step() { return std::make_unique<TrainingStep>(); }

}  // namespace depbench
