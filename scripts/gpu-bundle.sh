#!/usr/bin/env bash
# Builds the GPU check's programs on a machine with the CUDA toolkit (a GPU is
# not needed) and packs them into one folder, with the shared libraries they
# load that a bare CUDA machine lacks (oneTBB, OpenBLAS, Google Benchmark, the
# CUDA runtime). For a GPU machine that has the driver and cuBLAS but cannot
# install depengine's other dependencies:
#
#   scripts/gpu-bundle.sh [ARCH] [BUNDLE_DIR]   (defaults: 90, build-gpu-bundle)
#   ... copy BUNDLE_DIR to the GPU machine, then there:
#   scripts/gpu-check.sh --prebuilt BUNDLE_DIR
#   scripts/cores-check.sh --prebuilt BUNDLE_DIR   (the CPU tables on its cores)
#
# cuBLAS and NCCL are left out (hundreds of MB): gpu-check.sh finds the GPU
# machine's own. comm_mpi_tests needs the machine's mpirun (Open MPI).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
arch=${1:-90}
bundle=${2:-$root/build-gpu-bundle}
build=$root/build-gpu
programs=(device_cuda_tests device_cuda_bench tensor_tests mlp_train core_bench metg depbench depbench_scenario_tests
  comm_tests comm_nccl_tests comm_mpi_tests kvstore_tests)

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DDEPENGINE_WITH_CUDA=ON -DDEPENGINE_BENCH_STARPU=OFF \
  "-DCMAKE_CUDA_ARCHITECTURES=$arch" >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${programs[@]}"

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/compat"
for program in "${programs[@]}"; do
  path=$(find "$build" -type f -name "$program" -perm -u+x | head -n 1)
  strip -o "$bundle/bin/$program" "$path"
done

# The C library and the driver come with the GPU machine; cuBLAS is found
# there. libstdc++ and libgcc_s go to compat/, used only where the machine's
# own are older than the ones built against.
for lib in $(ldd "$bundle"/bin/* | awk '$3 ~ /^\// { print $3 }' | sort -u); do
  name=$(basename "$lib")
  case $name in
    libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux*) ;;
    libcuda.so* | libcublas* | libnccl*) ;;
    libstdc++.so* | libgcc_s.so*) cp -L "$lib" "$bundle/compat/$name" ;;
    *) cp -L "$lib" "$bundle/lib/$name" ;;
  esac
done
du -sh "$bundle"
