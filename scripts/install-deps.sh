#!/usr/bin/env bash
# Installs the Debian packages depengine builds and tests with, if missing.
set -euo pipefail
# libopenmpi-dev openmpi-bin: the communicator's transport (comm/) and mpirun
# for its multi-process tests.
# libstarpu-dev: core_bench's StarPU peer (optional in CMake); without
# recommends it adds 37 packages, 13 MB to download, 61 MB installed (Debian 12),
# and no CUDA.
# python3-venv, python3-dev: the Python package's virtual environment and
# headers (scripts/test.sh builds it with pip; nanobind, scikit-build-core,
# NumPy and pytest come from PyPI).
packages=(cmake g++ make pkg-config libtbb-dev libboost-dev libgtest-dev libbenchmark-dev
          libopenblas-dev nlohmann-json3-dev libcli11-dev libxml2-dev python3 python3-venv
          python3-dev chromium libstarpu-dev libopenmpi-dev openmpi-bin)
if ! dpkg -s "${packages[@]}" >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}"
  # Optional: the handwritten-digits data set the MLP example trains on
  # (without it, the example generates its data).
  $sudo apt-get install -y -qq --no-install-recommends python3-sklearn || true
fi
