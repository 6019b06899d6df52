// Communicator: checks a collective's tensors at push, then pushes it as
// engine operations — the local steps on the tensors' devices, and one
// asynchronous operation per exchange between processes, which hands the
// exchange to the process group once its inputs are ready.

#include "depengine/comm.h"

#include <depengine/executor.h>
#include <depengine/ops.h>

#include <algorithm>
#include <climits>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "comm/host_math.h"
#include "comm/host_staging.h"
#include "comm/inline_executor.h"
#include "comm/local_nccl.h"
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
  bool stage_every_device = false;  // HostStaging for every non-CPU tensor (host_staged_world)
  std::shared_ptr<LocalNccl> nccl;  // null without NCCL, or GPUs for it
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

// FNV-1a over what every process must agree on for one exchange. `ranks`:
// the ranks of the whole group where the call's shapes fix it (allgather,
// reduce_scatter), else 0: processes may differ in their local tensor counts.
std::uint64_t signature(Kind kind, DType dtype, std::int64_t count, std::int64_t ranks, int root, ReduceOp op,
                        int part) {
  std::uint64_t h = 14695981039346656037ull;
  for (std::uint64_t v : {std::uint64_t(kind), std::uint64_t(dtype), std::uint64_t(count), std::uint64_t(ranks),
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
    if (kind != DeviceKind::cpu && kind != DeviceKind::emulated && kind != DeviceKind::cuda) {
      fail(op, t.describe() + ": the communicator handles CPU, emulated-device and CUDA tensors");
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

// Host tensors of at most this many bytes (of any size, with one CPU
// worker) are allreduced in one operation: the ring's 2L(L - 1) chunk steps
// would cost more in hand-offs than their parallelism gains (on the CPU,
// the workers are the only parallelism). The operation gives the ring's
// bits, so that results never depend on the choice.
constexpr std::int64_t kOneOperationBytes = std::int64_t{64} << 10;

// Where chunk c of n elements cut into `chunks` begins: the ring's cut, which
// the one-operation sums must follow to give the ring's bits.
std::int64_t chunk_begin(std::int64_t c, std::int64_t n, std::int64_t chunks) { return c * n / chunks; }

// The ring's sums of the L tensors' n elements, in one pass and bit for bit
// the ring's: chunk c (the ring's cut) added up in the ring's order, from
// tensor c on around the ring, into `into` (a host buffer), or with `into`
// null into tensor c itself, scaled by `factor` and copied into the others.
void ring_order_sums(DType dtype, const std::vector<void*>& tensors, std::int64_t n, void* into, double factor) {
  const auto local = static_cast<std::int64_t>(tensors.size());
  for (std::int64_t c = 0; c < local; ++c) {
    const std::int64_t begin = chunk_begin(c, n, local), count = chunk_begin(c + 1, n, local) - begin;
    auto nth = [&](std::int64_t k) { return tensors[static_cast<std::size_t>((c + k) % local)]; };
    void* sum = into ? into : nth(0);
    if (into) detail::host_math::copy(dtype, into, begin, nth(0), begin, count);
    for (std::int64_t k = 1; k < local; ++k) detail::host_math::add(dtype, sum, nth(k), begin, count);
    if (into) continue;
    if (factor != 1.0) detail::host_math::scale(dtype, sum, factor, begin, count);
    for (std::int64_t k = 1; k < local; ++k) detail::host_math::copy(dtype, nth(k), begin, sum, begin, count);
  }
}

// The `part` of the extra exchanges a call makes besides its data's.
constexpr int kRankCountPart = 1 << 20;

// The ranks of every process for one call, for the collectives whose layout
// depends on them (allgather, reduce_scatter): an int32 per process, this
// process's entry set to `local`, then gathered from every process.
Tensor push_process_counts(CommState& s, std::uint64_t call, int local, const PushOptions& options,
                           std::string_view name) {
  Tensor counts = Tensor::empty(*s.engine, {s.group->size()}, DType::int32);
  s.engine->push([p = static_cast<std::int32_t*>(counts.data()), rank = s.group->rank(),
                  local](RunContext&) { p[rank] = local; },
                 {}, {counts.var()}, {.priority = options.priority, .name = name});
  const Exchange e{.kind = Kind::allgather,
                   .call = call,
                   .data = counts.data(),
                   .count = 1,
                   .dtype = DType::int32,
                   .signature = signature(Kind::allgather, DType::int32, 1, 0, 0, ReduceOp::sum, kRankCountPart)};
  push_exchanges(s, {e}, {}, {counts.var()}, options, name);
  return counts;
}

// What the first op of an allgather or a reduce_scatter reads: the inputs,
// and with several processes the ranks of each (push_process_counts).
struct LayoutInputs {
  std::vector<Var> reads;
  std::vector<const void*> sources;
  Tensor counts;  // empty for one process

  const std::int32_t* counts_data() const {
    return counts.defined() ? static_cast<const std::int32_t*>(counts.data()) : nullptr;
  }
};

LayoutInputs push_layout_inputs(CommState& s, std::uint64_t call, const std::vector<Tensor>& inputs,
                                const PushOptions& options, std::string_view name) {
  LayoutInputs in;
  for (const Tensor& t : inputs) {
    in.reads.push_back(t.var());
    in.sources.push_back(t.data());
  }
  if (s.group->size() > 1) {
    in.counts = push_process_counts(s, call, static_cast<int>(inputs.size()), options, name);
    in.reads.push_back(in.counts.var());
  }
  return in;
}

// Where this process's ranks begin among the `ranks` of the group, from the
// gathered counts; throws (failing the call's operation on every process
// alike, as the counts are the same everywhere) when the shapes the call was
// given assumed another total.
std::int64_t first_rank_of(const std::int32_t* counts, int processes, int rank, std::int64_t ranks,
                           const char* op) {
  std::int64_t before = 0, total = 0;
  std::string each;
  for (int q = 0; q < processes; ++q) {
    if (q < rank) before += counts[q];
    total += counts[q];
    each += (q ? " + " : "") + std::to_string(counts[q]);
  }
  if (ranks != 0 && total != ranks) {  // 0: ranks of no elements, nothing to place
    throw std::runtime_error(std::string("depengine::Communicator::") + op + ": the tensors' shapes are for " +
                             std::to_string(ranks) + " ranks, but the processes gave " + each + " = " +
                             std::to_string(total) + " local tensors");
  }
  return before;
}

// The number of ranks a call's shapes give, where this process holds
// `local` of them and `total` elements hold `per_rank` elements per rank:
// fixed at `local` in a process of its own; across processes any whole
// multiple of at least `local` (the processes' counts are gathered and
// checked before the data goes).
std::int64_t ranks_of_shapes(const char* op, const CommState& s, int local, std::int64_t total,
                             std::int64_t per_rank, const std::string& what) {
  if (s.group->size() == 1) {
    if (total != local * per_rank) fail(op, what + " must hold " + std::to_string(local) + " ranks x " +
                                                std::to_string(per_rank) + " elements");
    return local;
  }
  if (per_rank == 0) {
    if (total != 0) fail(op, what + " must be empty when a rank has no elements");
    return 0;
  }
  if (total % per_rank != 0 || total / per_rank < local) {
    fail(op, what + " must hold a whole number of ranks (at least this process's " + std::to_string(local) +
                 ") x " + std::to_string(per_rank) + " elements");
  }
  return total / per_rank;
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
  if (options.nccl) state->nccl = detail::make_local_nccl(2);
  add_hand_off_device(engine);
  return Communicator(std::move(state));
}

Communicator detail::host_staged_world(Engine& engine, const CommOptions& options) {
  CommOptions staged = options;
  staged.nccl = false;
  Communicator comm = Communicator::world(engine, staged);
  comm.state_->stage_every_device = true;
  return comm;
}

Communicator detail::nccl_world(Engine& engine) {
  Communicator comm = Communicator::world(engine, {.nccl = false});
  comm.state_->nccl = detail::make_local_nccl(1);
  return comm;
}

Communicator detail::local_communicator(Engine& engine) {
  auto state = std::make_shared<CommState>();
  state->engine = &engine;
  state->piece_bytes = CommOptions{}.piece_bytes;
  state->group = detail::make_single_process_group("the KVStore's devices of this process");
  state->nccl = detail::make_local_nccl(2);
  add_hand_off_device(engine);
  return Communicator(std::move(state));
}

Communicator::~Communicator() = default;

int Communicator::process_rank() const { return state_->group->rank(); }
int Communicator::process_count() const { return state_->group->size(); }
std::string Communicator::describe() const {
  return state_->group->describe() + (state_->nccl ? "; NCCL between this process's GPUs" : "");
}
CommStats Communicator::stats() const { return state_->group->stats(); }

namespace {

// Whether NCCL runs a call on these tensors.
bool by_nccl(const CommState& s, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  return s.nccl && s.nccl->takes(inputs, outputs);
}

// Pushes a call of a process of its own to NCCL when NCCL takes it (across
// processes, broadcast, allgather and reduce_scatter keep to the host path).
bool pushed_to_nccl(CommState& s, detail::NcclCollective kind, ReduceOp op, const std::vector<Tensor>& inputs,
                    const std::vector<Tensor>& outputs, const PushOptions& options, std::string_view name) {
  if (s.group->size() > 1 || !by_nccl(s, inputs, outputs)) return false;
  s.nccl->push(*s.engine, kind, op, inputs, outputs, {.priority = options.priority, .name = name_or(options, name)});
  return true;
}

// Inside the process, the ring of the chapter over the L local tensors,
// each cut into L chunks: in reduce-scatter step s tensor i adds chunk
// (i - 1 - s) of tensor i - 1 into its own, so that after L - 1 steps
// tensor i holds chunk i + 1 summed over the process; across processes each
// chunk is then reduced by MPI from the tensor that holds it; in allgather
// step s tensor i copies chunk (i - s) from tensor i - 1. Each chunk of each
// tensor has its own variable for the call, so the steps of different
// chunks run at once; a first and a last operation per tensor take its
// variable, ordering the call against the tensor's other operations.
//
// Pushed under the push mutex. `ranks_here`: the ranks this process holds,
// which a mean divides by (more than the tensors when NCCL summed the GPUs'
// tensors into the one given here).
void push_ring_allreduce(CommState& s, std::vector<Tensor> tensors, ReduceOp op, const PushOptions& options,
                         int ranks_here) {
  Engine& engine = *s.engine;
  const int local = static_cast<int>(tensors.size());
  const bool across = s.group->size() > 1;
  const std::int64_t n = tensors[0].numel();
  const DType dtype = tensors[0].dtype();
  const bool mean = op == ReduceOp::mean;
  const std::string_view name = name_or(options, "allreduce");
  const detail::HostStaging staging(tensors, tensors.size(), /*written=*/true, s.stage_every_device);

  const std::uint64_t call = s.calls++;
  // Across processes a mean divides by every process's tensor count: the
  // counts travel summed beside the data, as one more element.
  Tensor total_ranks;
  if (across && mean) total_ranks = Tensor::full(engine, {1}, ranks_here, dtype);
  // Every process exchanges the whole sum of its tensors in the same pieces,
  // whatever its number of local tensors, so processes may differ in it.
  auto exchange_whole = [&](const Tensor& sum) {
    std::vector<Exchange> pieces =
        pieces_of(Exchange{.kind = Kind::allreduce,
                           .call = call,
                           .data = sum.data(),
                           .count = n,
                           .dtype = dtype,
                           .signature = signature(Kind::allreduce, dtype, n, 0, 0, op, 0)},
                  s.piece_bytes);
    std::vector<Var> writes = {sum.var()};
    if (mean) {
      pieces.push_back({.kind = Kind::allreduce,
                        .call = call,
                        .data = total_ranks.data(),
                        .count = 1,
                        .dtype = dtype,
                        .signature = signature(Kind::allreduce, dtype, 1, 0, 0, op, kRankCountPart)});
      writes.push_back(total_ranks.var());
    }
    push_exchanges(s, std::move(pieces), {}, writes, options, name);
  };
  // Divides elements [offset, offset + count) of `t` by the number of ranks;
  // `into`: the variable that stands for them.
  auto divide = [&](const Tensor& t, std::int64_t offset, std::int64_t count, Var into) {
    if (!mean || count == 0) return;
    const double fixed = 1.0 / ranks_here;
    std::vector<Var> reads;
    if (across) reads.push_back(total_ranks.var());
    const void* total = across ? total_ranks.data() : nullptr;
    engine.push(
        [dtype, p = t.data(), offset, count, fixed, total](RunContext&) {
          const double factor = total ? 1.0 / detail::host_math::element(dtype, total, 0) : fixed;
          detail::host_math::scale(dtype, p, factor, offset, count);
        },
        reads, {into}, on_device_of(t, options, name));
  };

  if (local == 1) {
    const Tensor& x = tensors[0];
    if (across) exchange_whole(x);
    divide(x, 0, n, x.var());
    return staging.copy_back();
  }

  const bool on_host = std::all_of(tensors.begin(), tensors.end(), [](const Tensor& t) { return t.device().is_cpu(); });
  const bool small = n * static_cast<std::int64_t>(dtype_size(dtype)) <= kOneOperationBytes;
  if (on_host && (small || engine.cpu_threads() == 1)) {
    // One operation computes the ring's sums and copies them into every
    // tensor; across processes it computes them into a host buffer that
    // goes to the other processes, and one more copies it back.
    std::vector<Var> vars;
    std::vector<void*> data;
    for (const Tensor& t : tensors) {
      vars.push_back(t.var());
      data.push_back(t.data());
    }
    const PushOptions on_cpu{.priority = options.priority, .name = name};
    if (!across) {
      engine.push(
          [dtype, data, n, factor = mean ? 1.0 / ranks_here : 1.0](RunContext&) {
            ring_order_sums(dtype, data, n, nullptr, factor);
          },
          {}, vars, on_cpu);
      return staging.copy_back();
    }
    const Tensor sum = Tensor::empty(engine, {n}, dtype);
    engine.push([dtype, data, d = sum.data(), n](RunContext&) { ring_order_sums(dtype, data, n, d, 1.0); }, vars,
                {sum.var()}, on_cpu);
    exchange_whole(sum);
    divide(sum, 0, n, sum.var());
    engine.push(
        [dtype, data, src = sum.data(), n](RunContext&) {
          for (void* d : data) detail::host_math::copy(dtype, d, 0, src, 0, n);
        },
        {sum.var()}, vars, on_cpu);
    return staging.copy_back();
  }

  auto begin_of = [&](int c) { return chunk_begin(c, n, local); };
  auto chunk_size = [&](int c) { return begin_of(c + 1) - begin_of(c); };
  auto owner_of = [&](int c) { return mod(c - 1, local); };
  std::vector<std::vector<Var>> chunk(static_cast<std::size_t>(local));
  for (auto& row : chunk) {
    for (int c = 0; c < local; ++c) row.push_back(engine.new_var("allreduce:chunk"));
  }
  auto reduced_chunk = [&](int c) {
    return chunk[static_cast<std::size_t>(owner_of(c))][static_cast<std::size_t>(c)];
  };
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
        [dtype, add, d = dst.data(), src = tensors[static_cast<std::size_t>(prev)].data(), offset = begin_of(c),
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
  if (across) {
    // The process's sum, chunk by chunk from the tensors that hold them,
    // into one host buffer that goes to the other processes; back after.
    const Tensor sum = Tensor::empty(engine, {n}, dtype);
    std::vector<Var> reads;
    std::vector<const void*> sources;
    for (int c = 0; c < local; ++c) {
      reads.push_back(reduced_chunk(c));
      sources.push_back(tensors[static_cast<std::size_t>(owner_of(c))].data());
    }
    engine.push(
        [dtype, sources = std::move(sources), d = sum.data(), n, local](RunContext&) {
          for (int c = 0; c < local; ++c) {
            const std::int64_t begin = chunk_begin(c, n, local);
            detail::host_math::copy(dtype, d, begin, sources[static_cast<std::size_t>(c)], begin,
                                    chunk_begin(c + 1, n, local) - begin);
          }
        },
        reads, {sum.var()}, {.priority = options.priority, .name = name});
    exchange_whole(sum);
    for (int c = 0; c < local; ++c) {
      const Tensor& t = tensors[static_cast<std::size_t>(owner_of(c))];
      engine.push([dtype, d = t.data(), src = sum.data(), offset = begin_of(c), count = chunk_size(c)](
                      RunContext&) { detail::host_math::copy(dtype, d, offset, src, offset, count); },
                  {sum.var()}, {reduced_chunk(c)}, on_device_of(t, options, name));
    }
  }
  for (int c = 0; c < local; ++c) {
    divide(tensors[static_cast<std::size_t>(owner_of(c))], begin_of(c), chunk_size(c), reduced_chunk(c));
  }
  for (int st = 0; st < local - 1; ++st) {
    for (int i = 0; i < local; ++i) step(i, mod(i - st, local), /*add=*/false);
  }
  for (int i = 0; i < local; ++i) take_tensor(i);
  for (const auto& row : chunk) {
    for (Var v : row) engine.delete_helper_var(v);
  }
  staging.copy_back();
}

}  // namespace

void Communicator::allreduce(std::vector<Tensor> tensors, ReduceOp op, const PushOptions& options) {
  CommState& s = *state_;
  require_tensors("allreduce", *s.engine, tensors, "tensors", true);
  require_distinct("allreduce", {&tensors});
  const bool nccl = by_nccl(s, tensors, tensors);
  const PushOptions named{.priority = options.priority, .name = name_or(options, "allreduce")};
  if (nccl && s.group->size() == 1) {
    return s.nccl->push(*s.engine, detail::NcclCollective::allreduce, op, tensors, tensors, named);
  }
  const int local = static_cast<int>(tensors.size());
  std::lock_guard lock(s.push_mutex);
  if (!nccl) return push_ring_allreduce(s, std::move(tensors), op, options, local);
  // NCCL sums the process's GPUs; the sum goes to the other processes from
  // a host copy, and its result back into every GPU.
  s.nccl->push(*s.engine, detail::NcclCollective::allreduce, ReduceOp::sum, tensors, tensors, named);
  const Tensor sum = tensors[0].copy_to(Device::cpu());
  push_ring_allreduce(s, {sum}, op, options, local);
  for (const Tensor& t : tensors) ops::copy(sum, t);
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
  if (pushed_to_nccl(s, detail::NcclCollective::broadcast, ReduceOp::sum, tensors, tensors, options, "broadcast")) {
    return;
  }
  const int local = static_cast<int>(tensors.size());
  const detail::HostStaging staging(tensors, 1, /*written=*/true, s.stage_every_device);
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
                     .signature = signature(Kind::broadcast, source.dtype(), source.numel(), 0, root_process,
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
  staging.copy_back();
}

void Communicator::allgather(std::vector<Tensor> inputs, std::vector<Tensor> outputs, const PushOptions& options) {
  CommState& s = *state_;
  require_tensors("allgather", *s.engine, inputs, "inputs", false);
  require_tensors("allgather", *s.engine, outputs, "outputs", false);
  require_distinct("allgather", {&inputs, &outputs});
  const int local = static_cast<int>(inputs.size());
  const int processes = s.group->size();
  const std::int64_t n = inputs[0].numel();
  if (outputs.size() != inputs.size()) {
    fail("allgather", std::to_string(inputs.size()) + " inputs but " + std::to_string(outputs.size()) +
                          " outputs (one of each per local device)");
  }
  if (outputs[0].dtype() != inputs[0].dtype()) {
    fail("allgather", "the outputs must have the inputs' dtype, got " + outputs[0].describe() + " for inputs " +
                          inputs[0].describe());
  }
  const std::int64_t total = outputs[0].numel();
  const std::int64_t ranks = ranks_of_shapes("allgather", s, local, total, n, "each output (" + outputs[0].describe() + ")");
  if (total > INT_MAX) fail("allgather", "the output has more elements than MPI counts (2^31 - 1)");
  if (pushed_to_nccl(s, detail::NcclCollective::allgather, ReduceOp::sum, inputs, outputs, options, "allgather")) {
    return;
  }
  const DType dtype = inputs[0].dtype();
  const detail::HostStaging staged_inputs(inputs, inputs.size(), /*written=*/false, s.stage_every_device);
  const detail::HostStaging staged_outputs(outputs, 0, /*written=*/true, s.stage_every_device);
  const Tensor& gathered = outputs[0];
  const std::string_view name = name_or(options, "allgather");

  std::lock_guard lock(s.push_mutex);
  const std::uint64_t call = s.calls++;
  // This process's inputs into its slots of output 0, which begin after the
  // ranks of the processes before it.
  LayoutInputs in = push_layout_inputs(s, call, inputs, options, name);
  s.engine->push(
      [dtype, sources = std::move(in.sources), d = gathered.data(), n, ranks, processes, rank = s.group->rank(),
       counts = in.counts_data()](RunContext&) {
        const std::int64_t first = counts ? first_rank_of(counts, processes, rank, ranks, "allgather") : 0;
        for (std::size_t j = 0; j < sources.size(); ++j) {
          detail::host_math::copy(dtype, d, (first + static_cast<std::int64_t>(j)) * n, sources[j], 0, n);
        }
      },
      in.reads, {gathered.var()}, {.priority = options.priority, .name = name});
  if (processes > 1) {
    const Exchange e{.kind = Kind::allgather,
                     .call = call,
                     .data = gathered.data(),
                     .count = n,
                     .process_counts = in.counts_data(),
                     .dtype = dtype,
                     .signature = signature(Kind::allgather, dtype, n, ranks, 0, ReduceOp::sum, 0)};
    push_exchanges(s, {e}, {in.counts.var()}, {gathered.var()}, options, name);
  }
  for (int i = 1; i < local; ++i) {
    const Tensor& dst = outputs[static_cast<std::size_t>(i)];
    s.engine->push(
        [dtype, d = dst.data(), src = gathered.data(), total](RunContext&) {
          detail::host_math::copy(dtype, d, 0, src, 0, total);
        },
        {gathered.var()}, {dst.var()}, on_device_of(dst, options, name));
  }
  staged_outputs.copy_back();
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
  const std::int64_t n = outputs[0].numel();
  const DType dtype = inputs[0].dtype();
  if (outputs.size() != inputs.size()) {
    fail("reduce_scatter", std::to_string(inputs.size()) + " inputs but " + std::to_string(outputs.size()) +
                               " outputs (one of each per local device)");
  }
  if (outputs[0].dtype() != dtype) {
    fail("reduce_scatter", "the outputs must have the inputs' dtype, got " + outputs[0].describe() +
                               " for inputs " + inputs[0].describe());
  }
  const std::int64_t total = inputs[0].numel();
  if (total > INT_MAX) fail("reduce_scatter", "the inputs have more elements than MPI counts (2^31 - 1)");
  const std::int64_t ranks = ranks_of_shapes("reduce_scatter", s, local, total, n,
                                             "each input (" + inputs[0].describe() + ", for outputs " +
                                                 outputs[0].describe() + ")");
  if (pushed_to_nccl(s, detail::NcclCollective::reduce_scatter, op, inputs, outputs, options, "reduce_scatter")) {
    return;
  }
  const std::string_view name = name_or(options, "reduce_scatter");
  const detail::HostStaging staged_inputs(inputs, inputs.size(), /*written=*/false, s.stage_every_device);
  const detail::HostStaging staged_outputs(outputs, 0, /*written=*/true, s.stage_every_device);

  std::lock_guard lock(s.push_mutex);
  const std::uint64_t call = s.calls++;
  LayoutInputs in = push_layout_inputs(s, call, inputs, options, name);
  // The process's sum of its inputs, on the host (checked against the
  // gathered counts first: the exchange trusts them).
  const Tensor local_sum = Tensor::empty(engine, {total}, dtype);
  engine.push(
      [dtype, sources = std::move(in.sources), d = local_sum.data(), total, ranks, processes, rank = s.group->rank(),
       counts = in.counts_data()](RunContext&) {
        if (counts) first_rank_of(counts, processes, rank, ranks, "reduce_scatter");
        detail::host_math::copy(dtype, d, 0, sources[0], 0, total);
        for (std::size_t j = 1; j < sources.size(); ++j) detail::host_math::add(dtype, d, sources[j], 0, total);
      },
      in.reads, {local_sum.var()}, {.priority = options.priority, .name = name});
  // The blocks of this process's ranks, reduced over every process.
  Tensor mine = local_sum;
  if (processes > 1) {
    mine = Tensor::empty(engine, {local * n}, dtype);
    const Exchange e{.kind = Kind::reduce_scatter,
                     .call = call,
                     .input = local_sum.data(),
                     .data = mine.data(),
                     .count = n,
                     .process_counts = in.counts_data(),
                     .dtype = dtype,
                     .signature = signature(Kind::reduce_scatter, dtype, n, ranks, 0, op, 0)};
    push_exchanges(s, {e}, {local_sum.var(), in.counts.var()}, {mine.var()}, options, name);
  }
  const double factor = op == ReduceOp::mean ? 1.0 / static_cast<double>(ranks) : 1.0;
  for (int j = 0; j < local; ++j) {
    const Tensor& dst = outputs[static_cast<std::size_t>(j)];
    engine.push(
        [dtype, d = dst.data(), src = mine.data(), offset = j * n, n, factor](RunContext&) {
          detail::host_math::copy(dtype, d, 0, src, offset, n);
          if (factor != 1.0) detail::host_math::scale(dtype, d, factor, 0, n);
        },
        {mine.var()}, {dst.var()}, on_device_of(dst, options, name));
  }
  staged_outputs.copy_back();
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
