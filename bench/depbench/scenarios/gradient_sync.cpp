// gradient_sync: the same gradients (a small convolutional network's ten
// layers, ~8.4 MiB per device at --size 1) on 4 emulated devices of each
// process, summed by each aggregation strategy of the background chapter in
// turn (d2l, "parameter servers": the strategy alone moves the same step
// between 15 and 80 ms):
//  - one_device: every device's gradients copied to emulated:0, summed
//    there, copied back — all through emulated:0's peer-copy stream, the
//    one link that carries 2 (k - 1) N; under mpirun the per-process sums
//    are then allreduced across processes before the copies back;
//  - ring: the Communicator's allreduce (inside a process the ring over the
//    devices, each link carrying 2 (k - 1) / k N; under mpirun over every
//    device of every process);
//  - kvstore_local (one process): KVStore "local", the host as the one
//    parameter server: it sums the k devices' values, each device pulls;
//  - ps_one_server, ps_co_located (under mpirun): KVStore "dist_sync" with
//    one server shard (process 0's: every worker's push crosses its link) or
//    one shard in every process, large layers cut into parts over them. In
//    one process the dist types run as "local", so they would only repeat
//    kvstore_local and are not run there.
// Each strategy's ideal is the bytes its bottleneck link carries over the
// link bandwidth, measured in the run as one copy of all the gradients on
// one device's peer-copy stream: in one process every "link" is a host
// memory copy by a stream thread. Sync runs the strategies on the naive
// engine (one transfer at a time), async on the threaded one. The
// gradients are small integers, so every strategy's sum is exact: each is
// checked against a host reference, element by element, after its timing.

#include "bench/depbench/scenarios/gradient_sync.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>

#include <depengine/comm.h>
#include <depengine/kvstore.h>
#include <depengine/ops.h>
#include <depengine/tensor.h>

#include "bench/depbench/ideal.h"
#include "bench/depbench/kernels.h"
#include "bench/depbench/scenarios/common.h"
#include "bench/depbench/scenarios/scenarios.h"

namespace depbench {
namespace gradient_sync {

const std::vector<std::string>& strategies() {
  static const std::vector<std::string> all = {"one_device", "ring", "kvstore_local", "ps_one_server",
                                               "ps_co_located"};
  return all;
}

std::string metric(const std::string& strategy, const std::string& what) { return strategy + "_" + what; }

std::vector<double> layer_counts(double size) {
  // conv 3x3 weights of 3->64, 64->64, 64->128, 128->128, 128->256, 256->256
  // channels, a 1024x1024 dense layer, its bias, a 1024x10 classifier and its bias.
  static const double base[] = {1728, 36864, 73728, 147456, 294912, 589824, 1048576, 1024, 10240, 10};
  std::vector<double> counts;
  for (double b : base) counts.push_back(scaled_count(b, size));
  return counts;
}

}  // namespace gradient_sync

namespace {

namespace gs = gradient_sync;
using depengine::Device;
using depengine::Tensor;

constexpr int kDevices = 4;

// One device's gradients, one tensor per layer.
using Grads = std::vector<Tensor>;

class GradientSync final : public Scenario {
 public:
  std::string name() const override { return "gradient_sync"; }
  std::string description() const override {
    return "the same gradients (10 layers) on 4 emulated devices per process, summed by each strategy: "
           "on one device, the Communicator's ring, parameter servers (the KVStore); sync: naive engine, "
           "async: threaded engine; always on emulated devices";
  }
  std::string ideal_formula() const override {
    return "sync time / the strategies' ideal times, each the bytes on its bottleneck link / the measured "
           "bandwidth of one copy stream";
  }
  // Its devices are always emulated (the Communicator and the KVStore take
  // host memory only): --device changes nothing.
  bool runs_on_device(const Config&) const override { return false; }

  Footprint footprint(const Config& config) const override {
    const std::vector<double> layers = gs::layer_counts(config.size);
    double elements = 0, largest = 0;
    for (double n : layers) elements += n, largest = std::max(largest, n);
    const double l = static_cast<double>(layers.size());
    // Per layer and strategy at most: the ring's 2 k (k + 1) steps, the
    // resets, the checks' reads, the stores' copies and parts (bounded by k^2 more).
    const double ops_per_layer = 3.0 * (2 * kDevices * (kDevices + 1) + 4 * kDevices) + kDevices * kDevices;
    // Per device: its gradients and their initial values; emulated:0's k - 1
    // receive buffers; the stores' values and buffers (at most 4 N); the
    // reference and one rank's values while it is built.
    const double floats = elements * (2.0 * kDevices + (kDevices - 1) + 4 + 2);
    return {.int_counts = {{"layer elements", largest}},
            .ops = l * ops_per_layer * static_cast<double>(gs::strategies().size()),
            .host_bytes = float_bytes(floats)};
  }

  Outcome run(Mode mode, const Config& config, Trace* trace) const override {
    std::vector<std::int64_t> layers;
    for (double n : gs::layer_counts(config.size)) layers.push_back(checked_int(n, "a layer's elements"));
    const int k = kDevices;
    Outcome out;
    RunEngine engine(engine_kind(mode), trace, k);
    depengine::Engine& e = *engine;
    depengine::Communicator comm = depengine::Communicator::world(e);
    const int processes = comm.process_count(), process = comm.process_rank();

    // The gradients each device starts from, and their sum over every rank.
    std::vector<std::vector<Floats>> initial(k, std::vector<Floats>(layers.size()));
    std::vector<Floats> reference(layers.size());
    double gradient_bytes = 0;
    for (std::size_t l = 0; l < layers.size(); ++l) {
      const std::int64_t n = layers[l];
      gradient_bytes += float_bytes(static_cast<double>(n));
      Floats& sum = reference[l];
      sum.assign(static_cast<std::size_t>(n), 0.0f);
      for (int rank = 0; rank < k * processes; ++rank) {
        Floats mine(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) mine[static_cast<std::size_t>(i)] = gs::gradient_value(rank, static_cast<int>(l), i);
        for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += mine[i];
        if (rank / k == process) initial[rank % k][l] = std::move(mine);
      }
    }
    std::vector<Grads> grads(k), received(k);  // received[j]: device j's gradients, on emulated:0
    for (int d = 0; d < k; ++d) {
      for (std::int64_t n : layers) {
        grads[d].push_back(Tensor::empty(e, {n}, depengine::DType::float32, Device::emulated(d)));
        if (d > 0) received[d].push_back(Tensor::empty(e, {n}, depengine::DType::float32, Device::emulated(0)));
      }
    }
    const double link_bandwidth = measure_link(e, grads[1], received[1]);

    // Bytes in units of N (one rank's gradients): on the strategy's busiest
    // link, and over all its links together, on every process of the machine.
    struct Strategy {
      std::string name;
      double bottleneck_n, all_links_n;
      std::function<void()> push;  // pushes the whole aggregation
      std::string store_type;      // the KVStore it goes through, if any
      int shards;                  // its KVStoreOptions::shards
    };
    const double kd = k, p = processes, ranks = kd * p;
    std::vector<Strategy> strategies;
    // emulated:0's stream receives k - 1 values and sends k - 1 back (and,
    // between processes, the ring over the processes' sums).
    const double across = p > 1 ? 2 * (p - 1) / p : 0;
    strategies.push_back({"one_device", 2 * (kd - 1) + across, p * (2 * (kd - 1) + across),
                          [&] { aggregate_on_one_device(e, comm, grads, received); }, "", 0});
    // Each link: 2 (R - 1) / R N, on R links.
    strategies.push_back({"ring", 2 * (ranks - 1) / ranks, 2 * (ranks - 1),
                          [&] {
                            for (std::size_t l = 0; l < layers.size(); ++l) comm.allreduce(layer_of(grads, l));
                          },
                          "", 0});
    std::optional<depengine::KVStore> store;
    auto through_store = [&] {
      for (std::size_t l = 0; l < layers.size(); ++l) {
        store->push(static_cast<int>(l), layer_of(grads, l));
        store->pull(static_cast<int>(l), layer_of(grads, l));
      }
    };
    if (processes == 1) {
      // The host sums k N in one op, then each device pulls N on its own stream.
      strategies.push_back({"kvstore_local", kd + 1, 2 * kd, through_store, "local", 0});
    } else {
      // Each worker sums its k N and each of its devices pulls N; between
      // them the busiest shard's link carries the other workers' pushes in
      // and their pulls out, divided over the shards. shards = 1: process
      // 0's shard alone; 0: one in every process.
      for (const auto& [name, shards] : {std::pair{"ps_one_server", 1}, std::pair{"ps_co_located", 0}}) {
        const double servers = shards == 0 ? p : shards;
        strategies.push_back({name, kd + 1 + 2 * (p - 1) / servers, p * (2 * kd + 2), through_store, "dist_sync",
                              shards});
      }
    }

    double total = 0, ideal_total = 0;
    for (Strategy& s : strategies) {
      if (!s.store_type.empty()) {
        depengine::KVStoreOptions options;
        options.shards = s.shards;
        store = depengine::KVStore::create(e, s.store_type, options);
        for (std::size_t l = 0; l < layers.size(); ++l) {
          store->init(static_cast<int>(l), Tensor::zeros(e, {layers[l]}));
        }
      }
      reset(e, grads, initial);
      e.wait_all();
      if (processes > 1) comm.barrier();  // every process starts the strategy together
      Stopwatch watch;
      s.push();
      e.wait_all();
      const double seconds = watch.seconds();
      const double ideal = s.bottleneck_n * gradient_bytes / link_bandwidth;
      out.metrics[gs::metric(s.name, "seconds")] = seconds;
      out.metrics[gs::metric(s.name, "ideal_s")] = ideal;
      out.metrics[gs::metric(s.name, "vs_ideal")] = seconds / ideal;
      out.metrics[gs::metric(s.name, "bottleneck_mib")] = s.bottleneck_n * gradient_bytes / (1 << 20);
      out.metrics[gs::metric(s.name, "shared_memory_s")] = s.all_links_n * gradient_bytes / link_bandwidth;
      out.metrics[gs::metric(s.name, "checksum")] = check(e, s.name, grads, reference);
      total += seconds;
      ideal_total += ideal;
      store.reset();
    }
    out.seconds = total;
    // Every strategy's result equals the reference, element by element (or check threw).
    out.digest = digest(std::span<const float>{});
    for (const Floats& layer : reference) out.digest = digest(layer, out.digest);
    if (mode == Mode::sync) out.ideal_speedup = total / ideal_total;
    out.metrics["devices_per_process"] = k;
    out.metrics["processes"] = processes;
    out.metrics["layers"] = static_cast<double>(layers.size());
    out.metrics["gradient_mib"] = gradient_bytes / (1 << 20);
    out.metrics["link_gbs"] = link_bandwidth * 1e-9;
    return out;
  }

 private:
  static std::vector<Tensor> layer_of(const std::vector<Grads>& grads, std::size_t layer) {
    std::vector<Tensor> tensors;
    for (const Grads& g : grads) tensors.push_back(g[layer]);
    return tensors;
  }

  // dst = src between devices' host memory, on `on`'s peer-copy stream.
  static void copy_between(depengine::Engine& e, const Tensor& src, const Tensor& dst, Device on) {
    e.push([s = src.data(), d = dst.data(), bytes = src.nbytes()](depengine::RunContext&) { std::memcpy(d, s, bytes); },
           {src.var()}, {dst.var()},
           {.name = "gradient copy", .device = on, .property = depengine::OpProperty::DeviceToDevice});
  }

  static void aggregate_on_one_device(depengine::Engine& e, depengine::Communicator& comm,
                                      const std::vector<Grads>& grads, const std::vector<Grads>& received) {
    const Device hub = Device::emulated(0);
    for (std::size_t l = 0; l < grads[0].size(); ++l) {
      const Tensor& sum = grads[0][l];
      for (std::size_t j = 1; j < grads.size(); ++j) copy_between(e, grads[j][l], received[j][l], hub);
      for (std::size_t j = 1; j < grads.size(); ++j) depengine::ops::add(sum, received[j][l], sum);
      if (comm.process_count() > 1) comm.allreduce({sum});
      for (std::size_t j = 1; j < grads.size(); ++j) copy_between(e, sum, grads[j][l], hub);
    }
  }

  // The bandwidth of one link: the best of three copies of every layer on
  // emulated:0's peer-copy stream, each timed inside its op.
  static double measure_link(depengine::Engine& e, const Grads& from, const Grads& to) {
    double best = 0, bytes = 0;
    for (const Tensor& t : from) bytes += static_cast<double>(t.nbytes());
    std::vector<depengine::Var> reads, writes;
    for (const Tensor& t : from) reads.push_back(t.var());
    for (const Tensor& t : to) writes.push_back(t.var());
    for (int attempt = 0; attempt < 3; ++attempt) {
      double seconds = 0;
      e.push(
          [&](depengine::RunContext&) {
            timed(&seconds, [&] {
              for (std::size_t l = 0; l < from.size(); ++l) std::memcpy(to[l].data(), from[l].data(), from[l].nbytes());
            });
          },
          reads, writes, {.name = "link probe", .device = Device::emulated(0), .property = depengine::OpProperty::DeviceToDevice});
      e.wait_all();
      best = attempt == 0 ? seconds : std::min(best, seconds);
    }
    return bytes / std::max(best, 1e-9);
  }

  static void reset(depengine::Engine& e, const std::vector<Grads>& grads, const std::vector<std::vector<Floats>>& initial) {
    for (std::size_t d = 0; d < grads.size(); ++d) {
      for (std::size_t l = 0; l < grads[d].size(); ++l) {
        const Tensor& t = grads[d][l];
        e.push([p = t.data(), &values = initial[d][l]](depengine::RunContext&) {
                 std::memcpy(p, values.data(), values.size() * sizeof(float));
               },
               {}, {t.var()},
               {.name = "gradient reset", .device = t.device(), .property = depengine::OpProperty::CopyToDevice});
      }
    }
  }

  // Every device must hold the exact sum: each tensor is compared with the
  // reference by an operation that reads it (no copies back). Returns the
  // sum of every element compared.
  static double check(depengine::Engine& e, const std::string& strategy, const std::vector<Grads>& grads,
                      const std::vector<Floats>& reference) {
    struct Found {
      std::int64_t sum = 0;  // the values are small integers
      std::int64_t first_wrong = -1;
      float wrong_value = 0;
    };
    std::vector<std::vector<Found>> found(grads.size(), std::vector<Found>(reference.size()));
    for (std::size_t d = 0; d < grads.size(); ++d) {
      for (std::size_t l = 0; l < reference.size(); ++l) {
        const Tensor& t = grads[d][l];
        e.push(
            [p = static_cast<const float*>(t.data()), &want = reference[l], &f = found[d][l]](depengine::RunContext&) {
              const auto wrong = std::mismatch(want.begin(), want.end(), p);
              if (wrong.first != want.end()) {
                f.first_wrong = wrong.first - want.begin();
                f.wrong_value = *wrong.second;
              }
              std::int64_t sum = 0;
              for (std::size_t i = 0; i < want.size(); ++i) sum += static_cast<std::int64_t>(p[i]);
              f.sum = sum;
            },
            {t.var()}, {}, {.name = "check against the reference"});
      }
    }
    e.wait_all();
    double checksum = 0;
    for (std::size_t d = 0; d < grads.size(); ++d) {
      for (std::size_t l = 0; l < reference.size(); ++l) {
        const Found& f = found[d][l];
        if (f.first_wrong >= 0) {
          throw std::runtime_error("gradient_sync: " + strategy + " left " + std::to_string(f.wrong_value) +
                                   " at element " +
                                   std::to_string(f.first_wrong) + " of layer " + std::to_string(l) + " on emulated:" +
                                   std::to_string(d) + ", not the sum " +
                                   std::to_string(reference[l][static_cast<std::size_t>(f.first_wrong)]));
        }
        checksum += static_cast<double>(f.sum);
      }
    }
    return checksum;
  }
};

}  // namespace

std::unique_ptr<Scenario> make_gradient_sync() { return std::make_unique<GradientSync>(); }

}  // namespace depbench
