// Communicator: checks a collective's tensors at push, then pushes it as
// engine operations — the local steps on the tensors' devices, and one
// asynchronous operation per exchange between processes, which hands the
// exchange to the process group once its inputs are ready.

#include "depengine/comm.h"

#include <depengine/executor.h>

#include <algorithm>
#include <climits>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "comm/host_math.h"
#include "comm/inline_executor.h"
#include "comm/process_group.h"

namespace depengine {

namespace detail {

const char* exchange_kind_name(Exchange::Kind kind) {
  switch (kind) {
    case Exchange::Kind::allreduce: return "allreduce";
    case Exchange::Kind::broadcast: return "broadcast";
    case Exchange::Kind::allgather: return "allgather";
    case Exchange::Kind::reduce_scatter: return "reduce_scatter";
    case Exchange::Kind::barrier: return "barrier";
  }
  return "collective";
}

struct CommState {
  Engine* engine;
  std::shared_ptr<ProcessGroup> group;
  // Numbers exchanges and pushes a call's operations as one block, so that
  // calls from several threads keep one order.
  std::mutex push_mutex;
  std::uint64_t calls = 0;
  std::size_t piece_bytes = 0;
};

}  // namespace detail

namespace {

using detail::CommState;
using detail::Exchange;
using detail::ProcessGroup;
using Kind = detail::Exchange::Kind;

[[noreturn]] void fail(const char* op, const std::string& why) {
  throw std::invalid_argument(std::string("depengine::Communicator::") + op + ": " + why);
}

// Hands its exchanges (the pieces of one operation) to the group when the
// operation runs; the operation completes once all of them ended. If the
// operation never runs (the engine skips it because an input failed), the
// destructor tells the group, which still takes part in the exchanges'
// metadata step, so that the other processes fail them too instead of waiting.
class ExchangeStarter {
 public:
  ExchangeStarter(ProcessGroup& group, std::uint64_t first, std::vector<Exchange> pieces)
      : group_(&group), first_(first), pieces_(std::move(pieces)) {}
  ExchangeStarter(ExchangeStarter&& other) noexcept
      : group_(std::exchange(other.group_, nullptr)), first_(other.first_), pieces_(std::move(other.pieces_)) {}
  ExchangeStarter& operator=(ExchangeStarter&&) = delete;
  ~ExchangeStarter() {
    if (group_ == nullptr) return;
    for (std::size_t i = 0; i < pieces_.size(); ++i) group_->skip(first_ + i, pieces_[i]);
  }

  void start(Completion done) {
    ProcessGroup* group = std::exchange(group_, nullptr);
    auto join = std::make_shared<detail::ExchangeJoin>(std::move(done), static_cast<int>(pieces_.size()));
    for (std::size_t i = 0; i < pieces_.size(); ++i) group->start(first_ + i, pieces_[i], detail::ExchangeDone(join));
  }

 private:
  ProcessGroup* group_;
  std::uint64_t first_;
  std::vector<Exchange> pieces_;
};

// FNV-1a over what every process must agree on for one exchange.
std::uint64_t signature(Kind kind, DType dtype, std::int64_t count, int local, int root, ReduceOp op, int part) {
  std::uint64_t h = 14695981039346656037ull;
  for (std::uint64_t v : {std::uint64_t(kind), std::uint64_t(dtype), std::uint64_t(count), std::uint64_t(local),
                          std::uint64_t(root), std::uint64_t(op), std::uint64_t(part)}) {
    for (int b = 0; b < 8; ++b) {
      h ^= (v >> (8 * b)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  return h;
}

int mod(int a, int m) { return ((a % m) + m) % m; }

// The checks every collective makes on one list of tensors.
void require_tensors(const char* op, const Engine& engine, const std::vector<Tensor>& tensors, const char* what,
                     bool float_only) {
  if (tensors.empty()) fail(op, std::string("no ") + what + " (give one per local device)");
  const Tensor& first = tensors.front();
  for (const Tensor& t : tensors) {
    if (!t.defined()) fail(op, std::string("a null tensor among the ") + what);
    if (&t.engine() != &engine) fail(op, t.describe() + " belongs to another engine than the communicator");
    const DeviceKind kind = t.device().kind;
    if (kind != DeviceKind::cpu && kind != DeviceKind::emulated) {
      fail(op, t.describe() + ": the communicator handles CPU and emulated-device tensors only");
    }
    if (float_only && t.dtype() != DType::float32 && t.dtype() != DType::float64) {
      fail(op, "reduces float32 or float64 tensors, got " + t.describe());
    }
    if (t.dtype() != first.dtype() || t.shape() != first.shape()) {
      fail(op, std::string("the ") + what + " differ: " + first.describe() + " and " + t.describe());
    }
  }
}

void require_distinct(const char* op, std::initializer_list<const std::vector<Tensor>*> lists) {
  std::vector<Var> seen;
  for (const auto* list : lists) {
    for (const Tensor& t : *list) {
      if (std::find(seen.begin(), seen.end(), t.var()) != seen.end()) {
        fail(op, t.describe() + " is given twice (tensors of one collective must not share storage)");
      }
      seen.push_back(t.var());
    }
  }
}

std::string_view name_or(const PushOptions& options, std::string_view fallback) {
  return options.name.empty() ? fallback : options.name;
}

// A local step on `t`'s device: its peer copy stream on a stream device.
PushOptions on_device_of(const Tensor& t, const PushOptions& options, std::string_view name) {
  return {.priority = options.priority,
          .name = name,
          .device = t.device(),
          .property = t.device().is_cpu() ? OpProperty::Normal : OpProperty::DeviceToDevice};
}

// `whole` cut into pieces of at most `piece_bytes` (at least one piece,
// also for no elements), each signed with its index.
std::vector<Exchange> pieces_of(const Exchange& whole, std::size_t piece_bytes) {
  const std::int64_t per_piece = std::clamp<std::int64_t>(
      static_cast<std::int64_t>(piece_bytes / dtype_size(whole.dtype)), 1, INT_MAX);
  std::vector<Exchange> pieces;
  std::int64_t at = 0;
  do {
    Exchange p = whole;
    p.count = std::min(per_piece, whole.count - at);
    p.data = static_cast<char*>(whole.data) + at * static_cast<std::int64_t>(dtype_size(whole.dtype));
    p.signature = whole.signature ^ (0x9e3779b97f4a7c15ull * (pieces.size() + 1));
    pieces.push_back(p);
    at += p.count;
  } while (at < whole.count);
  return pieces;
}

// The hand-off operations run inline on the thread that found them ready —
// usually the progress thread, completing the exchange the operation
// waited for. A hand-off only queues the exchange, so it never blocks.
constexpr Device kHandOffDevice = Device::custom(63);

void add_hand_off_device(Engine& engine) {
  if (engine.has_device(kHandOffDevice)) return;
  try {
    engine.add_device(kHandOffDevice, std::make_unique<detail::InlineExecutor>());
  } catch (const std::invalid_argument&) {
    if (!engine.has_device(kHandOffDevice)) throw;  // another world() added it first
  }
}

// One asynchronous operation that hands `pieces` to the group once its
// variables are ready; numbers them first.
void push_exchanges(CommState& s, std::vector<Exchange> pieces, VarList reads, VarList writes,
                    const PushOptions& options, std::string_view name) {
  const std::uint64_t first = s.group->reserve(pieces.size());
  s.engine->push_async(
      [starter = ExchangeStarter(*s.group, first, std::move(pieces))](RunContext&, Completion done) mutable {
        starter.start(std::move(done));
      },
      reads, writes, {.priority = options.priority, .name = name, .device = kHandOffDevice});
}

}  // namespace

Communicator Communicator::world(Engine& engine, const CommOptions& options) {
  if (options.bucket_bytes == 0 || options.piece_bytes == 0) {
    throw std::invalid_argument("depengine::Communicator::world: bucket_bytes and piece_bytes must not be 0");
  }
  auto state = std::make_shared<CommState>();
  state->engine = &engine;
  state->piece_bytes = options.piece_bytes;
  state->group = detail::make_world_group(options);
  add_hand_off_device(engine);
  return Communicator(std::move(state));
}

Communicator detail::local_communicator(Engine& engine) {
  auto state = std::make_shared<CommState>();
  state->engine = &engine;
  state->piece_bytes = CommOptions{}.piece_bytes;
  state->group = detail::make_single_process_group("the KVStore's devices of this process");
  add_hand_off_device(engine);
  return Communicator(std::move(state));
}

Communicator::~Communicator() = default;

int Communicator::process_rank() const { return state_->group->rank(); }
int Communicator::process_count() const { return state_->group->size(); }
std::string Communicator::describe() const { return state_->group->describe(); }
CommStats Communicator::stats() const { return state_->group->stats(); }

// Inside the process, the ring of the chapter over the L local tensors,
// each cut into L chunks: in reduce-scatter step s tensor i adds chunk
// (i - 1 - s) of tensor i - 1 into its own, so that after L - 1 steps
// tensor i holds chunk i + 1 summed over the process; across processes each
// chunk is then reduced by MPI from the tensor that holds it; in allgather
// step s tensor i copies chunk (i - s) from tensor i - 1. Each chunk of each
// tensor has its own variable for the call, so the steps of different
// chunks run at once; a first and a last operation per tensor take its
// variable, ordering the call against the tensor's other operations.
void Communicator::allreduce(std::vector<Tensor> tensors, ReduceOp op, const PushOptions& options) {
  CommState& s = *state_;
  require_tensors("allreduce", *s.engine, tensors, "tensors", true);
  require_distinct("allreduce", {&tensors});
  Engine& engine = *s.engine;
  const int local = static_cast<int>(tensors.size());
  const int processes = s.group->size();
  const std::int64_t n = tensors[0].numel();
  const DType dtype = tensors[0].dtype();
  const double factor = op == ReduceOp::mean ? 1.0 / (static_cast<double>(local) * processes) : 1.0;
  const std::string_view name = name_or(options, "allreduce");

  std::lock_guard lock(s.push_mutex);
  const std::uint64_t call = s.calls++;
  auto pieces_for = [&](void* data, std::int64_t offset, std::int64_t count, int part) {
    return pieces_of(Exchange{.kind = Kind::allreduce,
                              .call = call,
                              .data = static_cast<char*>(data) + offset * static_cast<std::int64_t>(dtype_size(dtype)),
                              .count = count,
                              .dtype = dtype,
                              .signature = signature(Kind::allreduce, dtype, n, local, 0, op, part)},
                     s.piece_bytes);
  };

  if (local == 1) {
    const Tensor& x = tensors[0];
    if (processes > 1) push_exchanges(s, pieces_for(x.data(), 0, n, 0), {}, {x.var()}, options, name);
    if (factor != 1.0) {
      engine.push([dtype, p = x.data(), factor, n](RunContext&) { detail::host_math::scale(dtype, p, factor, 0, n); },
                  {}, {x.var()}, on_device_of(x, options, name));
    }
    return;
  }

  auto chunk_begin = [&](int c) { return static_cast<std::int64_t>(c) * n / local; };
  auto chunk_size = [&](int c) { return chunk_begin(c + 1) - chunk_begin(c); };
  std::vector<std::vector<Var>> chunk(static_cast<std::size_t>(local));
  for (auto& row : chunk) {
    for (int c = 0; c < local; ++c) row.push_back(engine.new_var("allreduce:chunk"));
  }
  // Takes tensor i's variable and its chunks' (the first and last step):
  // an empty operation, run inline by the hand-off device.
  auto take_tensor = [&](int i) {
    std::vector<Var> writes = chunk[static_cast<std::size_t>(i)];
    writes.push_back(tensors[static_cast<std::size_t>(i)].var());
    engine.push([](RunContext&) {}, {}, writes, {.priority = options.priority, .name = name, .device = kHandOffDevice});
  };
  auto step = [&](int i, int c, bool add) {
    if (chunk_size(c) == 0) return;
    const int prev = mod(i - 1, local);
    const Tensor& dst = tensors[static_cast<std::size_t>(i)];
    engine.push(
        [dtype, add, d = dst.data(), src = tensors[static_cast<std::size_t>(prev)].data(), offset = chunk_begin(c),
         count = chunk_size(c)](RunContext&) {
          if (add) detail::host_math::add(dtype, d, src, offset, count);
          else detail::host_math::copy(dtype, d, offset, src, offset, count);
        },
        {chunk[static_cast<std::size_t>(prev)][static_cast<std::size_t>(c)]},
        {chunk[static_cast<std::size_t>(i)][static_cast<std::size_t>(c)]}, on_device_of(dst, options, name));
  };

  for (int i = 0; i < local; ++i) take_tensor(i);
  for (int st = 0; st < local - 1; ++st) {
    for (int i = 0; i < local; ++i) step(i, mod(i - 1 - st, local), /*add=*/true);
  }
  for (int c = 0; c < local; ++c) {
    const int owner = mod(c - 1, local);
    const Tensor& t = tensors[static_cast<std::size_t>(owner)];
    const Var v = chunk[static_cast<std::size_t>(owner)][static_cast<std::size_t>(c)];
    if (processes > 1) push_exchanges(s, pieces_for(t.data(), chunk_begin(c), chunk_size(c), c), {}, {v}, options, name);
    if (factor != 1.0 && chunk_size(c) > 0) {
      engine.push([dtype, p = t.data(), factor, offset = chunk_begin(c), count = chunk_size(c)](
                      RunContext&) { detail::host_math::scale(dtype, p, factor, offset, count); },
                  {}, {v}, on_device_of(t, options, name));
    }
  }
  for (int st = 0; st < local - 1; ++st) {
    for (int i = 0; i < local; ++i) step(i, mod(i - st, local), /*add=*/false);
  }
  for (int i = 0; i < local; ++i) take_tensor(i);
  for (const auto& row : chunk) {
    for (Var v : row) engine.delete_helper_var(v);
  }
}

void Communicator::broadcast(std::vector<Tensor> tensors, int root_process, const PushOptions& options) {
  CommState& s = *state_;
  require_tensors("broadcast", *s.engine, tensors, "tensors", false);
  require_distinct("broadcast", {&tensors});
  const int processes = s.group->size();
  if (root_process < 0 || root_process >= processes) {
    fail("broadcast", "root process " + std::to_string(root_process) + " is not in [0, " +
                          std::to_string(processes) + ")");
  }
  const int local = static_cast<int>(tensors.size());
  const Tensor& source = tensors[0];
  const std::string_view name = name_or(options, "broadcast");

  std::lock_guard lock(s.push_mutex);
  const std::uint64_t call = s.calls++;
  if (processes > 1) {
    const Exchange e{.kind = Kind::broadcast,
                     .call = call,
                     .data = source.data(),
                     .count = source.numel(),
                     .dtype = source.dtype(),
                     .root = root_process,
                     .signature = signature(Kind::broadcast, source.dtype(), source.numel(), local, root_process,
                                            ReduceOp::sum, 0)};
    push_exchanges(s, pieces_of(e, s.piece_bytes), {}, {source.var()}, options, name);
  }
  for (int i = 1; i < local; ++i) {
    const Tensor& dst = tensors[static_cast<std::size_t>(i)];
    s.engine->push(
        [dtype = dst.dtype(), d = dst.data(), src = source.data(), n = dst.numel()](RunContext&) {
          detail::host_math::copy(dtype, d, 0, src, 0, n);
        },
        {source.var()}, {dst.var()}, on_device_of(dst, options, name));
  }
}

void Communicator::allgather(std::vector<Tensor> inputs, std::vector<Tensor> outputs, const PushOptions& options) {
  CommState& s = *state_;
  require_tensors("allgather", *s.engine, inputs, "inputs", false);
  require_tensors("allgather", *s.engine, outputs, "outputs", false);
  require_distinct("allgather", {&inputs, &outputs});
  const int local = static_cast<int>(inputs.size());
  const int processes = s.group->size();
  const std::int64_t n = inputs[0].numel();
  const std::int64_t ranks = static_cast<std::int64_t>(local) * processes;
  if (outputs.size() != inputs.size()) {
    fail("allgather", std::to_string(inputs.size()) + " inputs but " + std::to_string(outputs.size()) +
                          " outputs (one of each per local device)");
  }
  if (outputs[0].dtype() != inputs[0].dtype() || outputs[0].numel() != ranks * n) {
    fail("allgather", "each output must hold " + std::to_string(ranks) + " ranks x " + std::to_string(n) + " " +
                          std::string(dtype_name(inputs[0].dtype())) + " elements, got " + outputs[0].describe());
  }
  if (ranks * n > INT_MAX) fail("allgather", "the output has more elements than MPI counts (2^31 - 1)");
  const DType dtype = inputs[0].dtype();
  const Tensor& gathered = outputs[0];
  const std::string_view name = name_or(options, "allgather");

  std::lock_guard lock(s.push_mutex);
  const std::uint64_t call = s.calls++;
  // This process's inputs into its slots of output 0.
  std::vector<Var> reads;
  std::vector<const void*> sources;
  for (const Tensor& t : inputs) {
    reads.push_back(t.var());
    sources.push_back(t.data());
  }
  const std::int64_t base = static_cast<std::int64_t>(s.group->rank()) * local * n;
  s.engine->push(
      [dtype, sources = std::move(sources), d = gathered.data(), base, n](RunContext&) {
        for (std::size_t j = 0; j < sources.size(); ++j) {
          detail::host_math::copy(dtype, d, base + static_cast<std::int64_t>(j) * n, sources[j], 0, n);
        }
      },
      reads, {gathered.var()}, {.priority = options.priority, .name = name});
  if (processes > 1) {
    const Exchange e{.kind = Kind::allgather,
                     .call = call,
                     .data = gathered.data(),
                     .count = local * n,
                     .dtype = dtype,
                     .signature = signature(Kind::allgather, dtype, n, local, 0, ReduceOp::sum, 0)};
    push_exchanges(s, {e}, {}, {gathered.var()}, options, name);
  }
  for (int i = 1; i < local; ++i) {
    const Tensor& dst = outputs[static_cast<std::size_t>(i)];
    s.engine->push(
        [dtype, d = dst.data(), src = gathered.data(), total = ranks * n](RunContext&) {
          detail::host_math::copy(dtype, d, 0, src, 0, total);
        },
        {gathered.var()}, {dst.var()}, on_device_of(dst, options, name));
  }
}

void Communicator::reduce_scatter(std::vector<Tensor> inputs, std::vector<Tensor> outputs, ReduceOp op,
                                  const PushOptions& options) {
  CommState& s = *state_;
  require_tensors("reduce_scatter", *s.engine, inputs, "inputs", true);
  require_tensors("reduce_scatter", *s.engine, outputs, "outputs", true);
  require_distinct("reduce_scatter", {&inputs, &outputs});
  Engine& engine = *s.engine;
  const int local = static_cast<int>(inputs.size());
  const int processes = s.group->size();
  const std::int64_t ranks = static_cast<std::int64_t>(local) * processes;
  const std::int64_t n = outputs[0].numel();
  const DType dtype = inputs[0].dtype();
  if (outputs.size() != inputs.size()) {
    fail("reduce_scatter", std::to_string(inputs.size()) + " inputs but " + std::to_string(outputs.size()) +
                               " outputs (one of each per local device)");
  }
  if (inputs[0].numel() > INT_MAX) fail("reduce_scatter", "the inputs have more elements than MPI counts (2^31 - 1)");
  if (outputs[0].dtype() != dtype || inputs[0].numel() != ranks * n) {
    fail("reduce_scatter", "each input must hold " + std::to_string(ranks) + " ranks x " + std::to_string(n) +
                               " elements of the outputs' dtype, got " + inputs[0].describe() + " for outputs " +
                               outputs[0].describe());
  }
  const double factor = op == ReduceOp::mean ? 1.0 / static_cast<double>(ranks) : 1.0;
  const std::string_view name = name_or(options, "reduce_scatter");

  std::lock_guard lock(s.push_mutex);
  const std::uint64_t call = s.calls++;
  // The process's sum of its inputs, on the host.
  const Tensor local_sum = Tensor::empty(engine, {ranks * n}, dtype);
  std::vector<Var> reads;
  std::vector<const void*> sources;
  for (const Tensor& t : inputs) {
    reads.push_back(t.var());
    sources.push_back(t.data());
  }
  engine.push(
      [dtype, sources = std::move(sources), d = local_sum.data(), total = ranks * n](RunContext&) {
        detail::host_math::copy(dtype, d, 0, sources[0], 0, total);
        for (std::size_t j = 1; j < sources.size(); ++j) detail::host_math::add(dtype, d, sources[j], 0, total);
      },
      reads, {local_sum.var()}, {.priority = options.priority, .name = name});
  // The blocks of this process's ranks, reduced over every process.
  Tensor mine = local_sum;
  if (processes > 1) {
    mine = Tensor::empty(engine, {local * n}, dtype);
    const Exchange e{.kind = Kind::reduce_scatter,
                     .call = call,
                     .input = local_sum.data(),
                     .data = mine.data(),
                     .count = local * n,
                     .dtype = dtype,
                     .signature = signature(Kind::reduce_scatter, dtype, n, local, 0, op, 0)};
    push_exchanges(s, {e}, {local_sum.var()}, {mine.var()}, options, name);
  }
  for (int j = 0; j < local; ++j) {
    const Tensor& dst = outputs[static_cast<std::size_t>(j)];
    engine.push(
        [dtype, d = dst.data(), src = mine.data(), offset = j * n, n, factor](RunContext&) {
          detail::host_math::copy(dtype, d, 0, src, offset, n);
          if (factor != 1.0) detail::host_math::scale(dtype, d, factor, 0, n);
        },
        {mine.var()}, {dst.var()}, on_device_of(dst, options, name));
  }
}

void Communicator::barrier() {
  CommState& s = *state_;
  if (s.group->size() == 1) return;
  std::promise<void> waiter;
  std::future<void> reached = waiter.get_future();
  auto join = std::make_shared<detail::ExchangeJoin>(std::move(waiter), 1);
  {
    std::lock_guard lock(s.push_mutex);
    const Exchange e{.kind = Kind::barrier,
                     .call = s.calls++,
                     .signature = signature(Kind::barrier, DType::float32, 0, 0, 0, ReduceOp::sum, 0)};
    s.group->start(s.group->reserve(1), e, detail::ExchangeDone(std::move(join)));
  }
  reached.get();
}

}  // namespace depengine
