#pragma once
// The engines the contract tests run on: the threaded engine, the same
// beside busy neighbours (the process's verdict pinned, PinnedNeighbours:
// the ops a frontend's pushes make ready are held for it,
// engine/held_ops.h), and the naive engine, the reference.
//
//   class Semantics : public EngineSetupTest {};
//   INSTANTIATE_TEST_SUITE_P(Engines, Semantics, kEngineSetups, engine_setup_name);
//   TEST_P(Semantics, X) { Engine engine({.kind = kind()}); ... }

#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include <depengine/engine.h>

#include "tests/support/pinned_neighbours.h"

struct EngineSetup {
  depengine::EngineKind kind;
  bool busy_neighbours;
  const char* name;
};

inline const auto kEngineSetups =
    ::testing::Values(EngineSetup{depengine::EngineKind::Threaded, false, "Threaded"},
                      EngineSetup{depengine::EngineKind::Threaded, true, "ThreadedBesideBusyNeighbours"},
                      EngineSetup{depengine::EngineKind::Naive, false, "Naive"});

inline std::string engine_setup_name(const ::testing::TestParamInfo<EngineSetup>& info) { return info.param.name; }
inline void PrintTo(const EngineSetup& setup, std::ostream* os) { *os << setup.name; }

class EngineSetupTest : public ::testing::TestWithParam<EngineSetup> {
 protected:
  depengine::EngineKind kind() const { return GetParam().kind; }

 private:
  const PinnedNeighboursIf neighbours_{GetParam().busy_neighbours};
};
