// The world of a build without MPI (DEPENGINE_WITH_MPI=OFF, or AUTO without
// Open MPI installed).

#include "comm/process_group.h"

namespace depengine::detail {

std::shared_ptr<ProcessGroup> make_world_group(const CommOptions&) {
  return make_single_process_group("depengine was built without MPI");
}

}  // namespace depengine::detail
