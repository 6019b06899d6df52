// The dist KVStore types in a build without MPI: a world of one process,
// where they run as "local".

#include <stdexcept>

#include "comm/kv_backend.h"

namespace depengine::detail {

std::shared_ptr<KVBackend> make_dist_backend(Engine& engine, std::string type, bool,
                                             const KVStoreOptions& options) {
  if (options.servers > 0 || options.shards > 1) {
    throw std::invalid_argument("depengine::KVStore::create: dedicated servers or several shards need several processes, and "
                                "depengine was built without MPI");
  }
  return make_local_backend(engine, std::move(type), false, {.updater = options.updater, .sgd = {}});
}

}  // namespace depengine::detail
