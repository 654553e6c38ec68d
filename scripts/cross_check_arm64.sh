#!/usr/bin/env bash
# Cross-compiles the SIMD kernels and their tests (src/embed/simd_kernels*.cc) and the int8
# vector scan and its tests (src/index/int8_vectors*.cc) for AArch64 and runs them under qemu
# user-mode emulation, which checks the NEON versions against the scalar reference on an x86
# machine: once on an emulated CPU with the dot-product extension (-cpu max: the SDOT int8 kernel
# must give the scalar int8 kernel's floats bit for bit, the SDOT scan its sums) and once without
# it (cortex-a53: the neon family runs the widening-multiply int8 kernel and scan, which must give
# the same). The widening-multiply versions are checked on both CPUs. Correctness only: emulated
# timings say nothing about real ARM hardware.
#
# Needs aarch64-linux-gnu-g++ and its libraries (Debian: g++-aarch64-linux-gnu),
# qemu-aarch64-static (qemu-user-static) and GoogleTest's sources (googletest, in
# /usr/src/googletest). Installs nothing: when one is missing it says so, prints "skipped" and
# exits 0. Builds in $ENGRAM_ARM64_DIR (default: a directory under $TMPDIR or /tmp), building
# GoogleTest there once. Not part of scripts/test.sh (a few minutes of emulation).
set -euo pipefail
cd "$(dirname "$0")/.."

cxx=${AARCH64_CXX:-aarch64-linux-gnu-g++}
qemu=${QEMU_AARCH64:-qemu-aarch64-static}
sysroot=${AARCH64_SYSROOT:-/usr/aarch64-linux-gnu}
gtest=${GTEST_SOURCE_DIR:-/usr/src/googletest/googletest}
out=${ENGRAM_ARM64_DIR:-${TMPDIR:-/tmp}/engram-arm64-check}

skip() {
  echo "cross_check_arm64: skipped: $1"
  exit 0
}
command -v "$cxx" >/dev/null 2>&1 || skip "no $cxx (apt-get install g++-aarch64-linux-gnu)"
command -v "$qemu" >/dev/null 2>&1 || skip "no $qemu (apt-get install qemu-user-static)"
[ -d "$sysroot/lib" ] || skip "no AArch64 libraries in $sysroot"
[ -f "$gtest/src/gtest-all.cc" ] || skip "no GoogleTest sources in $gtest (apt-get install googletest)"

mkdir -p "$out"
# The project's warnings, as errors (CI builds with -DENGRAM_WERROR=ON).
flags=(-std=c++20 -O2 -pthread -Wall -Wextra -Wno-missing-field-initializers -Werror -include utility)

if [ ! -f "$out/libgtest.a" ]; then
  echo "cross_check_arm64: building GoogleTest for AArch64 in $out"
  "$cxx" -std=c++20 -O2 -pthread -I"$gtest/include" -I"$gtest" -c "$gtest/src/gtest-all.cc" \
    -o "$out/gtest-all.o"
  "$cxx" -std=c++20 -O2 -pthread -I"$gtest/include" -c "$gtest/src/gtest_main.cc" \
    -o "$out/gtest_main.o"
  ar rcs "$out/libgtest.a" "$out/gtest-all.o" "$out/gtest_main.o"
fi

echo "cross_check_arm64: building simd_kernels_test for AArch64"
"$cxx" "${flags[@]}" -Isrc -I"$gtest/include" src/embed/simd_kernels.cc \
  src/embed/simd_kernels_test.cc src/common/kernel_family.cc src/common/status.cc \
  "$out/libgtest.a" -o "$out/simd_kernels_test"
echo "cross_check_arm64: building int8_vectors_test for AArch64"
"$cxx" "${flags[@]}" -Isrc -I"$gtest/include" src/index/int8_vectors.cc \
  src/index/int8_vectors_test.cc src/common/kernel_family.cc src/common/status.cc \
  "$out/libgtest.a" -o "$out/int8_vectors_test"

# Runs test binary $2 on emulated CPU $1, its output in $out/$2-$1.log; fails the script when a
# test fails.
run_binary() {
  local cpu=$1 binary=$2 log="$out/$2-$1.log"
  echo "cross_check_arm64: running $binary under $qemu -cpu $cpu"
  if ! env -u ENGRAM_KERNELS "$qemu" -cpu "$cpu" -L "$sysroot" "$out/$binary" >"$log" 2>&1; then
    cat "$log"
    echo "cross_check_arm64: FAILED: $binary on -cpu $cpu (log: $log)"
    exit 1
  fi
  grep -E '^\[  (PASSED|SKIPPED) +\] [0-9]+ tests?[.,]' "$log" || true
}

# Counts the passed tests in $out/$1.log whose names match $2.
passed() {
  grep -cE "^\[       OK \] $2" "$out/$1.log" || true
}

# Runs the tests on one emulated CPU; $2 is "dotprod" when the SDOT versions must run, "none"
# when they must not (so that a detection bug cannot pass as a skipped test).
run() {
  local cpu=$1 expect=$2
  run_binary "$cpu" simd_kernels_test
  run_binary "$cpu" int8_vectors_test
  local ran_neon ran_dot ran_mull ran_scan
  ran_neon=$(passed "simd_kernels_test-$cpu" 'Isa/SimdKernelsTest\..*/Neon ')
  ran_dot=$(passed "simd_kernels_test-$cpu" 'Isa/Int8KernelsTest\..*/NeonDot ')
  ran_mull=$(passed "simd_kernels_test-$cpu" 'Isa/Int8KernelsTest\..*/NeonMull ')
  ran_scan=$(passed "int8_vectors_test-$cpu" 'Int8VectorsTest\.')
  if [ "$ran_neon" -eq 0 ] || [ "$ran_mull" -eq 0 ]; then
    echo "cross_check_arm64: FAILED: the NEON float32 or widening int8 tests did not run on -cpu $cpu"
    exit 1
  fi
  if grep -q '^\[  SKIPPED \] Int8VectorsTest\.NeonScan' "$out/int8_vectors_test-$cpu.log"; then
    echo "cross_check_arm64: FAILED: the NEON scan test was skipped on -cpu $cpu"
    exit 1
  fi
  if [ "$expect" = dotprod ] && [ "$ran_dot" -eq 0 ]; then
    echo "cross_check_arm64: FAILED: the dot-product int8 tests did not run on -cpu $cpu"
    exit 1
  fi
  if [ "$expect" = none ] && [ "$ran_dot" -ne 0 ]; then
    echo "cross_check_arm64: FAILED: the dot-product kernel ran on -cpu $cpu, which lacks it"
    exit 1
  fi
  echo "cross_check_arm64: -cpu $cpu: $ran_neon NEON float32, $ran_dot NEON dot-product," \
    "$ran_mull NEON widening int8 and $ran_scan int8 scan tests passed"
}

run max dotprod
run cortex-a53 none
echo "cross_check_arm64: passed"
