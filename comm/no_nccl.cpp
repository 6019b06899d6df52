// Built without NCCL: the GPUs of a process exchange through host copies.

#include "comm/local_nccl.h"

namespace depengine::detail {

std::shared_ptr<LocalNccl> make_local_nccl(int) { return nullptr; }

}  // namespace depengine::detail
