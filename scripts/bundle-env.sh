# Sourced by the scripts that run programs packed by scripts/gpu-bundle.sh:
#
#   source scripts/bundle-env.sh
#   use_bundle BUNDLE_DIR   # sets $bin, and LD_LIBRARY_PATH for its programs

# Adds to LD_LIBRARY_PATH the folder of each library the programs in $1 miss,
# looking where CUDA installs put them (the toolkit, pip's nvidia-* wheels).
find_missing_libraries() {
  local lib dir
  for lib in $(ldd "$1"/* 2>/dev/null | awk '/=> not found/ { print $1 }' | sort -u); do
    dir=$(find /usr/local/cuda*/ /usr/lib /opt /usr/local/lib -name "$lib" 2>/dev/null | head -n 1 | xargs -r dirname)
    if [[ -n $dir ]]; then
      echo "   $lib from $dir"
      export LD_LIBRARY_PATH="$dir:$LD_LIBRARY_PATH"
    else
      echo "   $lib: not found on this machine"
    fi
  done
}

use_bundle() {
  bin=$1/bin
  export LD_LIBRARY_PATH="$1/lib:${LD_LIBRARY_PATH:-}"
  # The bundle's libstdc++ only where this machine's is older.
  if ldd "$bin"/* 2>&1 | grep -q "version .* not found"; then
    echo "   using the bundle's libstdc++"
    export LD_LIBRARY_PATH="$1/compat:$LD_LIBRARY_PATH"
  fi
  find_missing_libraries "$bin"
}
