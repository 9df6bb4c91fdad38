#!/usr/bin/env bash
# Runs stoker's GPU tests and benchmarks after scripts/gpu/build.sh, every output into one
# folder ($OUT, else build-gpu/out): at most a few files per phase, named PHASE.log/.json/.png.
#
# Usage: bash scripts/gpu/run.sh [--dry-run] PHASE...
#   env     the machine: GPU, driver, cores, Python, PyTorch, what build.sh built (video or
#           not), and that `import stoker, torch` and `import torch, stoker` both exit 0
#   tests   pytest python/tests (the CUDA-marked tests run where CUDA is) and, when the C++
#           project was built, its ctest suites
#   cuda    the CUDA tests alone: test_cuda.py and test_cuda_epoch_protocol.py (a minute)
#   data    the ImageNet-shaped JPEG set (bench/make_image_set.py from the packed photos,
#           $STOKER_GPU_IMAGES a class, default 2000: 20,000 train images) and its stoker
#           dataset; the feed and train phases make it first when it is missing
#   feed50  bench/gpu_feed.py on ResNet-50: every feeder at 2, 4, 8 and 16 cores (issue 24);
#           STOKER_GPU_FEEDERS picks feeders, STOKER_GPU_SECONDS, STOKER_GPU_STEPS and
#           STOKER_GPU_WARMUP shorten each row (gpu_feed.py's --seconds, --steps, --warmup-steps)
#   feed18  the same on ResNet-18
#   compile torch.compile on the model: the bound and stoker at the most cores, ResNet-50 and
#           ResNet-18, beside the plain bound
#   copy    the loader alone, stoker on the device against on the host (what the copy adds),
#           and workers="auto" against fixed workers
#   sanitize  compute-sanitizer's memcheck and racecheck over 21 batches (at most one epoch)
#           of stoker.Loader(device="cuda") (issue 24; the dry run runs the script plainly)
#   train   `stoker train --device cuda --model resnet18 --amp bf16` at 4, 8 and 16 cores
#           (issue 25), each run's report.json as train-N-cores.json
#   exact   the C++ suites that compare with torchvision, PIL and timm (ctest -L: the
#           operations', resampling's and decoding's executables; their references run with
#           MKL's dispatch pinned and as on an Intel CPU) on this machine's CPU, its vector
#           extensions printed first (issue 66: exact on every CPU); needs build.sh cpp
#   tokens  bench/token_peers.py (issue 64's target, no GPU used): stoker against litdata's
#           TokensLoader (pack.sh's peers/litdata wheels) and `memcpy`, one core each, from a
#           1 GB token file and from 10 mixed, $STOKER_GPU_ROUNDS rounds (default 3) of
#           $STOKER_GPU_SECONDS each; tokens.json and tokens-10.json; then stoker's first epoch
#           against its second (bench/token_throughput.py: what first touching the pages costs)
# --dry-run: the same commands on the CPU at toy sizes (device cpu, a tiny model, 20 images a
# class, a few steps), to check the scripts on a machine without a GPU.
# Each phase prints its time; the exit status is the first failure's (every phase runs).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${STOKER_GPU_BUILD:-$root/build-gpu}
out=${OUT:-$build/out}
dry=0
if [ "${1:-}" = --dry-run ]; then
  dry=1
  shift
fi
[ $# -gt 0 ] || set -- env tests feed50
if [ ! -f "$build/env.sh" ]; then
  echo "run.sh: $build/env.sh missing: run scripts/gpu/build.sh first" >&2
  exit 2
fi
# shellcheck source=/dev/null
source "$build/env.sh"
mkdir -p "$out"
pack=${STOKER_GPU_PACK:-$root/.gpu-pack}
cores=$(nproc)
device=cuda
per_class=${STOKER_GPU_IMAGES:-2000}
if [ $dry = 1 ]; then
  device=cpu
  per_class=20
fi
data=$build/data-$per_class
status=0

# The core counts of the benchmarks: 2, 4, 8, 16, as far as this machine has them.
core_list() {
  local list="" c
  for c in "$@"; do [ "$c" -le "$cores" ] && list+="${list:+,}$c"; done
  echo "${list:-$cores}"
}

phase_env() {
  nvidia-smi 2>&1 || echo "(no nvidia-smi)"
  echo "cores: $cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2))"
  free -g | head -2
  "$PYTHON" - <<'PY'
import sys, torch, torchvision, stoker
print("python", sys.version.split()[0], sys.executable)
print("torch", torch.__version__, "cuda", torch.version.cuda, "available",
      torch.cuda.is_available(), "cudnn", torch.backends.cudnn.version())
print("torchvision", torchvision.__version__, "| stoker", stoker.__version__, stoker.__file__,
      "| video", "built" if stoker._stoker.with_video else "off (no FFmpeg in the build)")
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("gpu", p.name, f"{p.total_memory / 2**30:.1f} GiB", p.multi_processor_count, "SMs")
print("nccl", torch.distributed.is_nccl_available() if torch.distributed.is_available() else "-")
PY
  [ -x "$STOKER_CLI" ] && "$STOKER_CLI" --version
  grep -h "stoker: LibTorch" "$STOKER_GPU_BUILD/cpp/CMakeFiles/CMakeConfigureLog.yaml" 2>/dev/null
  # Each import order by itself (issue 66: `import stoker, torch` once aborted in free()).
  local order rc=0 code
  for order in "stoker, torch" "torch, stoker"; do
    code=0
    "$PYTHON" -c "import $order" || code=$?
    echo "import $order: exit $code"
    [ "$code" = 0 ] || rc=1
  done
  return $rc
}

phase_tests() {
  local rc=0
  (cd "$root/python/tests" && "$PYTHON" -m pytest -q -p no:cacheprovider \
    --junitxml="$out/tests-python.xml" .) || rc=$?
  if [ -x "$STOKER_CLI" ]; then  # the C++ project was built (build.sh cpp)
    ctest --test-dir "$build/cpp" -j "$cores" --output-on-failure --timeout 600 \
      --output-junit "$out/tests-cpp.xml" || rc=$?
  fi
  return $rc
}

phase_cuda() {
  (cd "$root/python/tests" && "$PYTHON" -m pytest -q -p no:cacheprovider \
    --junitxml="$out/cuda-python.xml" test_cuda.py test_cuda_epoch_protocol.py)
}

phase_data() {
  [ -f "$data/.done" ] && { echo "data: $data already made"; return 0; }
  rm -rf "$data"
  "$PYTHON" "$root/bench/make_image_set.py" "$data/images" --per-class "$per_class" \
    --val-per-class 20 --photos "$pack/photos" --workers "$cores" || return
  "$PYTHON" -c 'import sys, stoker
print(stoker.convert("imagefolder", sys.argv[1], sys.argv[2], progress=False))' \
    "$data/images/train" "$data/dataset" || return
  du -sh "$data/images" "$data/dataset"
  touch "$data/.done"
}

feed() {  # feed NAME ARGS...: bench/gpu_feed.py into $out/NAME.json (and .png, .svg)
  local name=$1
  shift
  [ -f "$data/.done" ] || phase_data || return
  local args=(--images "$data/images/train" --dataset "$data/dataset" --device "$device"
    --seconds "${STOKER_GPU_SECONDS:-10}" --steps "${STOKER_GPU_STEPS:-100}"
    --warmup-steps "${STOKER_GPU_WARMUP:-15}")
  [ -n "${STOKER_GPU_FEEDERS:-}" ] && args+=(--feeders "$STOKER_GPU_FEEDERS")
  [ $dry = 1 ] && args+=(--dry-run)
  "$PYTHON" -c 'import matplotlib' 2>/dev/null && args+=(--plot "$out/$name")  # else no figure
  "$PYTHON" "$root/bench/gpu_feed.py" "${args[@]}" --out "$out/$name.json" "$@"
}

phase_feed50() { feed feed50 --models resnet50 --cores "$(core_list 2 4 8 16)"; }
phase_feed18() { feed feed18 --models resnet18 --cores "$(core_list 2 4 8 16)"; }
phase_compile() {
  feed compile --models resnet50,resnet18 --feeders bound --cores "$(core_list 16)" --compile
}
phase_copy() {
  feed copy --models none --feeders stoker,stoker_host,stoker_auto --cores "$(core_list 4 16)" \
    --steps 200
}

phase_sanitize() {
  [ -f "$data/.done" ] || phase_data || return
  local script='import sys, stoker
T = stoker.transforms
pipeline = T.Compose([T.RandomResizedCrop(224), T.Normalize((0.485, 0.456, 0.406),
                                                            (0.229, 0.224, 0.225))])
loader = stoker.Loader(sys.argv[1], batch_size=64, workers=4, device=sys.argv[2],
                       transforms={"image": pipeline})
total = 0.0
for i, (images, labels) in enumerate(loader):  # an image dataset: [image, label], as ImageFolder
    total += float(images.double().sum())
    if i == 20:
        break
print("sanitize:", i + 1, "batches, checksum", total)'
  if [ $dry = 1 ]; then
    "$PYTHON" -c "$script" "$data/dataset" cpu
    return
  fi
  local sanitizer tool rc=0
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck; do
    echo "== sanitize: $tool"
    timeout 240 "$sanitizer" --tool "$tool" --error-exitcode 3 "$PYTHON" -c "$script" \
      "$data/dataset" cuda || rc=$?
  done
  return $rc
}

phase_exact() {
  [ -x "$STOKER_CLI" ] || { echo "exact: $STOKER_CLI missing (build.sh cpp)"; return 2; }
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(grep -m1 '^flags' \
    /proc/cpuinfo | grep -o -w -E 'avx2|avx512f|avx512bw|avx512_vnni|amx_tile' | tr '\n' ' ')"
  ldd "$build/cpp/src/stoker/image/image_test" | grep -E 'jpeg|spng|hwy' || true  # which ones load
  ctest --test-dir "$build/cpp" -j "$cores" -L 'operations_test|image_resample_test|image_test' \
    --no-tests=error --output-on-failure --timeout 600 --output-junit "$out/exact.xml"
}

phase_tokens() {
  local peers=$build/peers data=$build/tokens mb=1024 rc=0
  local args=(--loaders stoker,litdata --rounds "${STOKER_GPU_ROUNDS:-3}"
    --seconds "${STOKER_GPU_SECONDS:-10}")
  [ $dry = 1 ] && { mb=16; data=$build/tokens-dry; args+=(--seq-len 256); }
  if [ ! -x "$peers/litdata/bin/python" ]; then  # litdata's environment: this Python's + its wheels
    mkdir -p "$peers/litdata/bin"
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --target "$peers/litdata/site" \
      "$pack"/peers/litdata/*.whl || return
    printf '#!/bin/sh\nPYTHONPATH=%s${PYTHONPATH:+:$PYTHONPATH} exec %s "$@"\n' \
      "$peers/litdata/site" "$PYTHON" >"$peers/litdata/bin/python"
    chmod +x "$peers/litdata/bin/python"
  fi
  STOKER_PEERS=$peers "$PYTHON" "$root/bench/token_peers.py" "$data" --mb $mb "${args[@]}" \
    --json "$out/tokens.json" || rc=$?
  STOKER_PEERS=$peers "$PYTHON" "$root/bench/token_peers.py" "$data" --mb $mb --sources 10 \
    "${args[@]}" --json "$out/tokens-10.json" || rc=$?
  # stoker's first epoch (a new process: the file's pages first touched) against its second
  local epochs=(--mb $mb --workers 0 --rounds "${STOKER_GPU_ROUNDS:-3}")
  [ $dry = 1 ] && epochs+=(--seq-len 256)
  "$PYTHON" "$root/bench/token_throughput.py" "$data" "${epochs[@]}" || rc=$?
  return $rc
}

phase_train() {
  [ -f "$data/.done" ] || phase_data || return
  [ -x "$STOKER_CLI" ] || { echo "train: $STOKER_CLI missing (build.sh cpp)"; return 2; }
  local rc=0 c steps=200 size=224 batch=256 amp=bf16
  rm -rf "$build"/train-*
  [ $dry = 1 ] && { steps=3; size=64; batch=8; }
  for c in $(core_list 4 8 16 | tr , ' '); do
    echo "== train: $c cores"
    taskset -c "0-$((c - 1))" "$STOKER_CLI" train --data "$data/dataset" --device "$device" \
      --model resnet18 --image-size "$size" --amp "$amp" --batch "$batch" --workers "$c" \
      --optimizer sgd --lr 0.1 --momentum 0.9 --weight-decay 1e-4 \
      --max-steps "$steps" --no-eval --report "$build/train-$c" || rc=$?
    cp "$build/train-$c/report.json" "$out/train-$c-cores.json" || rc=$?
  done
  return $rc
}

for phase in "$@"; do
  if ! declare -F "phase_$phase" >/dev/null; then
    echo "run.sh: unknown phase '$phase' (env tests cuda data feed50 feed18 compile copy" \
      "sanitize train exact tokens)" >&2
    status=${status/#0/2}
    continue
  fi
  start=$SECONDS
  echo "== $phase$([ $dry = 1 ] && echo ' (dry run)')"
  "phase_$phase" 2>&1 | tee "$out/$phase.log"
  rc=${PIPESTATUS[0]}
  echo "== $phase: exit $rc, $((SECONDS - start)) s"
  [ "$status" = 0 ] && status=$rc
done
exit "$status"
