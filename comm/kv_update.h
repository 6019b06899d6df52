#pragma once
// KVUpdate: what runs where a value is stored when merged pushes arrive —
// the user's updater, the built-in SGD, or neither (the merged value
// replaces the stored one).

#include <optional>

#include "depengine/kvstore.h"

namespace depengine::detail {

struct KVUpdate {
  KVUpdater updater;
  std::optional<SGDOptimizer> sgd;

  bool replaces() const { return !updater && !sgd; }
  /// Pushes the update of `stored` by `merged` (same device); `state` is
  /// the value's optimizer state (SGD's momentum), created here when needed.
  /// With neither an updater nor SGD, copies merged into stored.
  void apply(int key, const Tensor& merged, Tensor& stored, Tensor& state) const;
};

}  // namespace depengine::detail
