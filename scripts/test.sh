#!/usr/bin/env bash
# Installs what is missing, builds depengine and runs its whole test suite:
# the C++ tests (ctest), then the Python package's (pytest).
#   scripts/test.sh [BUILD_DIR] [extra cmake options...]
#
# The Python part builds the package the way users do, `pip install .` from
# the repository root, into a virtual environment in BUILD_DIR/venv, with
# scikit-build-core's build folder kept in BUILD_DIR/python so that a rerun
# recompiles only what changed (hence --no-build-isolation, with the pinned
# build requirements of pyproject.toml installed into the environment). It
# builds without CUDA, to keep the run short. It is skipped when a
# DEPENGINE_SANITIZE option is passed (the sanitizer passes of .ci/run): an
# extension built with a sanitizer does not load into a plain python.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
python3 scripts/check-layers.py  # includes point down the floors (docs/architecture.md)
build=${1:-build}
shift || true
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 900

sanitized=0
for option in "$@"; do
  if [[ "$option" =~ ^-DDEPENGINE_SANITIZE(:[A-Z]+)?=.+ ]]; then sanitized=1; fi
done
if [ "$sanitized" -eq 1 ]; then
  echo "scripts/test.sh: sanitizer build, Python tests skipped"
  exit 0
fi
venv="$build/venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
build_requires=$("$venv/bin/python" - <<'PY'
import re
text = open("pyproject.toml").read()
block = re.search(r"^requires\s*=\s*\[(.*?)\]", text, re.S | re.M).group(1)
print(" ".join(re.findall(r'"([^"]+)"', block)))
PY
)
# shellcheck disable=SC2086
"$venv/bin/python" -m pip install -q $build_requires
"$venv/bin/python" -m pip install -q --no-build-isolation --config-settings=build-dir="$build/python" \
  --config-settings=cmake.define.DEPENGINE_WITH_CUDA=OFF ".[test]"
# pytest exits with 5 when it collects no tests: that is a failure here too.
"$venv/bin/python" -m pytest -q -o cache_dir="$build/pytest-cache" python/tests
