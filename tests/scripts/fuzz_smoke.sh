#!/usr/bin/env bash
# Runs each libFuzzer target on 30,000 inputs from a fixed seed (scripts/run-fuzz
# says why; skipped, and said so, without clang).
cd "$(dirname "$0")/../.."
if [[ ${SAN:-0} == 1 ]]; then echo "fuzzers already run under ASan+UBSan in the plain run"; exit 77; fi
if [[ ${SAN:-0} == tsan ]]; then echo "TSAN=1: the fuzzers are single-threaded (no race to find) and run under ASan+UBSan in the plain run"; exit 77; fi
if ! command -v clang++-14 >/dev/null && ! command -v clang++ >/dev/null; then echo "no clang++: fuzzers not run"; exit 77; fi
ls fuzz/*.cc >/dev/null 2>&1 || { echo "no fuzz targets yet"; exit 77; }
# -j: the worker target builds all of lib/ instrumented (build/fuzz/obj/); run-tests
# is not a recursive make, so no jobserver reaches here.
make -s -j"${JOBS:-$(nproc 2>/dev/null || echo 2)}" fuzz-smoke
