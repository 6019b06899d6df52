// Trains the MLP of mlp_train data-parallel, both ways the chapter
// describes: k local devices in one process, or k processes under mpirun
// (or both). Each of the R ranks holds a replica and takes `--batch` rows
// of every global batch of batch x R rows; the learning rate is scaled by R
// (the chapter: a k times larger batch wants a larger learning rate).
//
//   data_parallel_mlp [--devices cpu|emulated:K] [--epochs N] [--batch B]
//                     [--hidden H] [--lr X] [--kvstore TYPE] [--check]
//   mpirun -np 2 data_parallel_mlp --devices emulated:2
//   mpirun -np 2 data_parallel_mlp --devices emulated:2 --kvstore dist_sync
//
// --kvstore local|device|dist_sync|dist_async sends the gradients through
// a KVStore of that type (push, SGD where the values are stored, pull)
// instead of the allreduce; local and device are for one process.
// --lr is the rate for one rank (default 0.1, used as 0.1 x R). --check
// also trains one model on the CPU of this process with the same global
// batches and learning rate, and exits with 1 unless the two test
// accuracies are within one percentage point (two with dist_async, whose
// workers update the parameters as their pushes arrive). Exits with 1 if the loss did
// not fall.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <depengine/comm.h>
#include <depengine/emulated_device.h>
#include <depengine/engine.h>
#include <depengine/kvstore.h>
#include <depengine/ops.h>

#include <optional>

#include "examples/data_parallel.h"

using namespace depengine;

namespace {

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "data_parallel_mlp: %s\nusage: data_parallel_mlp [--devices cpu|emulated:K] [--epochs N] "
                       "[--batch B] [--hidden H] [--lr X] [--kvstore local|device|dist_sync|dist_async] [--check]\n",
               why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int epochs = 20, local = 1;
  std::int64_t batch = 32, hidden = 64;
  double lr = 0.1;
  bool check = false, emulated = false;
  std::string kvstore_type;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + arg).c_str());
      return argv[++i];
    };
    if (arg == "--devices") {
      const std::string d = value();
      if (d.rfind("emulated:", 0) == 0) {
        emulated = true;
        local = std::stoi(d.substr(9));
        if (local < 1 || local > 16) usage("--devices emulated:K takes K from 1 to 16");
      } else if (d != "cpu") {
        usage(("unknown devices " + d).c_str());
      }
    } else if (arg == "--epochs") epochs = std::stoi(value());
    else if (arg == "--batch") batch = std::stoll(value());
    else if (arg == "--hidden") hidden = std::stoll(value());
    else if (arg == "--lr") lr = std::stod(value());
    else if (arg == "--kvstore") kvstore_type = value();
    else if (arg == "--check") check = true;
    else usage(("unknown argument " + arg).c_str());
  }

  Engine engine;
  std::vector<Device> devices;
  for (int j = 0; j < local; ++j) {
    if (emulated) add_emulated_device(engine, j);
    devices.push_back(emulated ? Device::emulated(j) : Device::cpu());
  }
  Communicator comm = Communicator::world(engine);
  const bool lead = comm.process_rank() == 0;
  std::optional<KVStore> kvstore;
  if (!kvstore_type.empty()) {
    if ((kvstore_type == "local" || kvstore_type == "device") && comm.process_count() > 1) {
      usage("--kvstore local and device are for one process; under mpirun use dist_sync or dist_async");
    }
    try {
      kvstore.emplace(KVStore::create(engine, kvstore_type));
    } catch (const std::invalid_argument& e) {
      usage(e.what());
    }
  }

  const auto [all_train, test] = examples::split(examples::load_digits_or_generate(), 0.2, 1);
  const int ranks = local * comm.process_count();
  const double scaled_lr = lr * ranks;
  const examples::Dataset train = examples::whole_global_batches(all_train, batch * ranks);
  examples::DataParallelMlp mlp(engine, comm,
                                {.layers = {train.cols, hidden, train.classes}, .learning_rate = scaled_lr,
                                 .devices = devices, .kvstore = kvstore ? &*kvstore : nullptr});
  const auto shards = examples::shard_batches(engine, train, batch, mlp, comm.process_rank());
  if (lead) {
    std::printf("data: %s, %lld train rows used / %lld test rows\n%s; %d ranks (%d processes x %d devices), "
                "global batch %lld, learning rate %g\n",
                train.source.c_str(), static_cast<long long>(train.rows), static_cast<long long>(test.rows),
                comm.describe().c_str(), ranks, comm.process_count(), local,
                static_cast<long long>(batch * ranks), scaled_lr);
    if (kvstore) std::printf("gradients through the KVStore: %s\n", kvstore->describe().c_str());
  }

  double first = 0, last = 0;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    std::vector<Tensor> totals;
    for (Device d : devices) totals.push_back(Tensor::zeros(engine, {}, DType::float32, d));
    for (const auto& step : shards) {
      const std::vector<Tensor> losses = mlp.train_step(step);
      for (int j = 0; j < local; ++j) {
        ops::axpy(1.0 / static_cast<double>(shards.size()), losses[static_cast<std::size_t>(j)],
                  totals[static_cast<std::size_t>(j)]);
      }
    }
    comm.allreduce(totals, ReduceOp::mean);
    last = totals[0].item<double>();
    if (epoch == 1) first = last;
    if (lead) std::printf("epoch %d: loss %.4f\n", epoch, last);
  }
  const double accuracy = mlp.accuracy(test);
  if (lead) std::printf("test accuracy: %.3f\n", accuracy);
  int status = 0;
  if (epochs >= 2 && !(last < first)) {
    std::fprintf(stderr, "data_parallel_mlp: the loss did not fall (%.4f -> %.4f)\n", first, last);
    status = 1;
  }
  if (check) {
    // The same global batches on one model, on the CPU of this process.
    examples::Mlp single(engine, {.layers = {train.cols, hidden, train.classes}, .learning_rate = scaled_lr});
    const auto batches = examples::make_batches(engine, train, batch * ranks, DType::float32, Device::cpu());
    for (int epoch = 1; epoch <= epochs; ++epoch) examples::train_epoch(single, batches, false);
    const double reference = single.accuracy(test);
    if (lead) std::printf("single-device test accuracy with the same global batches: %.3f\n", reference);
    const double tolerance = kvstore_type == "dist_async" ? 0.02 : 0.01;
    if (std::abs(accuracy - reference) > tolerance) {
      std::fprintf(stderr, "data_parallel_mlp: test accuracy %.3f is not within %g%% of the single device's %.3f\n",
                   accuracy, tolerance * 100, reference);
      status = 1;
    }
  }
  return status;
}
