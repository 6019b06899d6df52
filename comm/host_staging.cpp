#include "comm/host_staging.h"

#include "depengine/ops.h"

namespace depengine::detail {

HostStaging::HostStaging(std::vector<Tensor>& tensors, std::size_t read, bool written, bool every_device) {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    Tensor& t = tensors[i];
    const DeviceKind kind = t.device().kind;
    if (kind == DeviceKind::cpu || (kind != DeviceKind::cuda && !every_device)) continue;
    Tensor stand_in = i < read ? t.copy_to(Device::cpu()) : Tensor::empty(t.engine(), t.shape(), t.dtype());
    if (written) written_.emplace_back(t, stand_in);
    t = std::move(stand_in);
  }
}

void HostStaging::copy_back() const {
  for (const auto& [tensor, stand_in] : written_) ops::copy(stand_in, tensor);
}

}  // namespace depengine::detail
