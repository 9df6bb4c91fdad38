"""Fashion-MNIST for torchvision from Debian's files, without downloading.

Shared helper of the PyTorch baselines in bench/. Debian's `dataset-fashion-mnist` installs the
four original .gz files under /usr/share/datasets/fashion-mnist/. torchvision's FashionMNIST
(0.14) wants `<root>/FashionMNIST/raw/` to hold the *decompressed* idx files (download=False
never decompresses anything), so this module builds such a root once in a cache directory:

    <cache>/FashionMNIST/raw/train-images-idx3-ubyte.gz -> /usr/share/datasets/.../...gz
    <cache>/FashionMNIST/raw/train-images-idx3-ubyte        (decompressed, validated)
    ... (same for the other three files)

and constructs `torchvision.datasets.FashionMNIST(root=<cache>, download=False)` on it.

Cache directory: the `cache` argument, else $STOKER_DATA, else ~/.cache/stoker/torchvision.
Source directory: the `source` argument, else $STOKER_FASHION_MNIST_DIR, else
/usr/share/datasets/fashion-mnist. Decompression writes a temporary file and renames it, so an
interrupted or concurrent run never leaves a truncated file behind; each decompressed file is
checked against its idx header (the sizes must agree) before use.

Also provides `machine_info()`, `configure_threads()`, `warn_if_busy()`, `run_variants()`,
`emit()` and `CpuMeter`, used by both baseline scripts.
Python 3.11; needs only torch, torchvision (and numpy through them).
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import shutil
import struct
import sys
import tempfile
import time
from typing import Optional, Tuple

DEFAULT_SOURCE = "/usr/share/datasets/fashion-mnist"
FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
# Normalisation constants used by every baseline (mean, std of the training pixels in [0,1]).
MEAN = 0.2860
STD = 0.3530


class DatasetError(RuntimeError):
    """The Fashion-MNIST source files are missing or unusable."""


def source_dir(source: Optional[str] = None) -> str:
    return source or os.environ.get("STOKER_FASHION_MNIST_DIR") or DEFAULT_SOURCE


def cache_dir(cache: Optional[str] = None) -> str:
    if cache:
        return os.path.abspath(os.path.expanduser(cache))
    env = os.environ.get("STOKER_DATA")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    return os.path.join(os.path.expanduser("~"), ".cache", "stoker", "torchvision")


def _idx_expected_size(path: str) -> Optional[int]:
    """Size in bytes an idx file should have according to its header, None if not idx/uint8."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
            if len(head) != 4 or head[0] != 0 or head[1] != 0 or head[2] != 0x08:
                return None  # we only expect unsigned-byte idx files here
            ndim = head[3]
            if not 1 <= ndim <= 3:
                return None
            dims_raw = f.read(4 * ndim)
            if len(dims_raw) != 4 * ndim:
                return None
            dims = struct.unpack(">" + "I" * ndim, dims_raw)
    except OSError:
        return None
    n = 1
    for d in dims:
        n *= d
    return 4 + 4 * ndim + n


def _idx_valid(path: str) -> bool:
    expected = _idx_expected_size(path)
    return expected is not None and os.path.getsize(path) == expected


def prepare_root(cache: Optional[str] = None, source: Optional[str] = None,
                 quiet: bool = False) -> str:
    """Makes `<cache>/FashionMNIST/raw/` usable by torchvision; returns the root (<cache>).

    Idempotent and cheap after the first call. Raises DatasetError with a readable message if
    the Debian files are missing or corrupt, OSError if the cache is not writable.
    """
    src = source_dir(source)
    missing = [f + ".gz" for f in FILES if not os.path.isfile(os.path.join(src, f + ".gz"))]
    if missing:
        raise DatasetError(
            f"Fashion-MNIST not found: {src} lacks {', '.join(missing)}.\n"
            "Install Debian's package:  apt-get install dataset-fashion-mnist\n"
            "or point $STOKER_FASHION_MNIST_DIR at a directory holding the four .gz files."
        )
    root = cache_dir(cache)
    raw = os.path.join(root, "FashionMNIST", "raw")
    os.makedirs(raw, exist_ok=True)
    for name in FILES:
        gz_src = os.path.abspath(os.path.join(src, name + ".gz"))
        link = os.path.join(raw, name + ".gz")
        # A symlink to the original .gz, as if torchvision had downloaded it (replaced if stale).
        if os.path.islink(link) and os.readlink(link) != gz_src:
            os.unlink(link)
        if not os.path.lexists(link):
            try:
                os.symlink(gz_src, link)
            except FileExistsError:  # a concurrent run made it
                pass
        out = os.path.join(raw, name)
        if os.path.isfile(out) and _idx_valid(out):
            continue
        if not quiet:
            print(f"[fashion_mnist] decompressing {gz_src} -> {out}", file=sys.stderr)
        fd, tmp = tempfile.mkstemp(prefix="." + name + ".", dir=raw)
        try:
            with os.fdopen(fd, "wb") as dst, gzip.open(gz_src, "rb") as zin:
                shutil.copyfileobj(zin, dst, 1 << 20)
            if not _idx_valid(tmp):
                raise DatasetError(f"{gz_src} does not decompress to a valid uint8 idx file")
            os.chmod(tmp, 0o644)  # mkstemp makes 0600; the cache may be shared
            os.replace(tmp, out)
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            raise DatasetError(f"cannot decompress {gz_src}: {e}") from e
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return root


def fashion_mnist(train: bool = True, transform=None, cache: Optional[str] = None,
                  source: Optional[str] = None):
    """torchvision.datasets.FashionMNIST over the Debian files (never downloads)."""
    import torchvision

    root = prepare_root(cache, source)
    return torchvision.datasets.FashionMNIST(root=root, train=train, transform=transform,
                                             download=False)


def standard_transform():
    """ToTensor + Normalize((0.2860,), (0.3530,)): the classic per-sample PIL pipeline."""
    from torchvision import transforms

    return transforms.Compose([transforms.ToTensor(), transforms.Normalize((MEAN,), (STD,))])


def load_uint8(train: bool = True, cache: Optional[str] = None, source: Optional[str] = None
               ) -> Tuple["object", "object"]:
    """(images uint8 [N,28,28], labels int64 [N]) as torch tensors, parsed by torchvision."""
    ds = fashion_mnist(train=train, cache=cache, source=source)
    return ds.data, ds.targets


def add_common_args(p, variants) -> None:
    """Adds the options both baselines share: --variants, --seed, --cache, --json."""
    p.add_argument("--variants", default=",".join(variants),
                   help="comma-separated subset of: " + ", ".join(variants))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache", default=None,
                   help="torchvision root cache (default $STOKER_DATA or "
                        "~/.cache/stoker/torchvision)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def parse_variants(p, text: str, variants) -> list:
    """The variant names in `text` (comma-separated); exits through p.error on unknown ones."""
    names = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in names if v not in variants]
    if bad or not names:
        p.error(f"unknown variant(s) {bad}; choose from {', '.join(variants)}")
    return names


def dataloader_epoch(loader):
    """(epoch() -> (samples, checksum), cleanup()) for a DataLoader yielding (x, y) batches.

    The checksum touches one element of each batch so that no work can be skipped; cleanup()
    shuts persistent workers down now, not at interpreter exit."""
    def epoch():
        n, cs = 0, 0.0
        for x, y in loader:
            cs += float(x.reshape(-1)[-1]) + int(y[-1])
            n += x.shape[0]
        return n, cs

    def cleanup():
        it = getattr(loader, "_iterator", None)
        if it is not None and hasattr(it, "_shutdown_workers"):
            it._shutdown_workers()
        loader._iterator = None
    return epoch, cleanup


def configure_threads(threads: int) -> dict:
    """Call BEFORE importing torch. Pins OpenMP and OpenBLAS pools to `threads`.

    torch.set_num_threads() alone does not bound Debian's OpenBLAS (libopenblas0-pthread runs
    its own pool, 2 threads on a 2-core box), which would then compete with DataLoader workers.
    Variables the user set explicitly are kept. Returns the effective values for the report.
    """
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        if var in os.environ:
            if os.environ[var] != str(threads):
                print(f"[bench] note: keeping {var}={os.environ[var]} from the environment "
                      f"(--threads {threads})", file=sys.stderr)
        else:
            os.environ[var] = str(threads)
    return {v: os.environ[v] for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def loadavg() -> Optional[list]:
    """/proc/loadavg's 1, 5, 15-minute load averages (None where unavailable)."""
    try:
        with open("/proc/loadavg") as f:
            return [float(v) for v in f.read().split()[:3]]
    except (OSError, ValueError):
        return None


class CpuMeter:
    """How much CPU *other* processes used while a variant ran (Linux /proc; zeros elsewhere).

    other = all busy CPU time of the machine - this process - its live and reaped children
    (DataLoader workers are direct children). A busy neighbour (a parallel build) distorts
    every throughput number; the scripts report it per result instead of guessing.
    """

    def __init__(self) -> None:
        self._tck = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
        self._start = None

    @staticmethod
    def _stat_fields(pid) -> Optional[list]:
        try:
            with open(f"/proc/{pid}/stat") as f:
                s = f.read()
        except OSError:
            return None
        return s[s.rfind(")") + 2:].split()  # fields after "pid (comm) "; [0] is state

    def _own_ticks(self) -> int:
        me = os.getpid()
        f = self._stat_fields("self")
        if f is None:
            return 0
        total = sum(int(v) for v in f[11:15])  # utime stime cutime cstime
        try:
            pids = [d for d in os.listdir("/proc") if d.isdigit()]
        except OSError:
            pids = []
        for d in pids:
            c = self._stat_fields(d)
            if c is not None and len(c) > 12 and c[1] == str(me):
                total += int(c[11]) + int(c[12])
        return total

    @staticmethod
    def _system_ticks():
        try:
            with open("/proc/stat") as f:
                v = [int(x) for x in f.readline().split()[1:9]]
        except (OSError, ValueError):
            return None
        user, nice, system, _idle, _iowait, irq, softirq, steal = (v + [0] * 8)[:8]
        return user + nice + system + irq + softirq, steal

    def start(self) -> None:
        self._start = (self._system_ticks(), self._own_ticks())

    def stop(self, seconds: float) -> dict:
        sys_now, own_now = self._system_ticks(), self._own_ticks()
        if self._start is None or self._start[0] is None or sys_now is None:
            return {"other_cpu_s": 0.0, "other_cpu_frac": 0.0, "steal_s": 0.0}
        (busy0, steal0), own0 = self._start
        busy1, steal1 = sys_now
        other = max(0.0, ((busy1 - busy0) - (own_now - own0)) / self._tck)
        try:
            nproc = len(os.sched_getaffinity(0))
        except AttributeError:
            nproc = os.cpu_count() or 1
        frac = other / (seconds * nproc) if seconds > 0 else 0.0
        return {"other_cpu_s": round(other, 3), "other_cpu_frac": round(frac, 4),
                "steal_s": round((steal1 - steal0) / self._tck, 3)}


def warn_if_busy(quiet: bool = False, probe_s: float = 0.5) -> dict:
    """Samples how busy the other processes keep the CPUs for `probe_s` seconds before the
    benchmark starts; warns on stderr above 10% (a parallel build halves every number here).
    Returns {"loadavg": [...], "other_cpu_frac": f} for the report."""
    meter = CpuMeter()
    meter.start()
    time.sleep(probe_s)
    frac = meter.stop(probe_s)["other_cpu_frac"]
    if frac > 0.10 and not quiet:
        print(f"[bench] warning: other processes are using {100 * frac:.0f}% of the CPUs: "
              "results will be low and noisy", file=sys.stderr)
    return {"loadavg": loadavg(), "other_cpu_frac": frac}


def warn_if_disturbed(result: dict, threshold: float = 0.05) -> None:
    """Warns on stderr when other processes took more than `threshold` of the CPUs."""
    frac = result.get("other_cpu_frac", 0.0)
    if frac > threshold:
        print(f"[bench] warning: {result['name']}: other processes used {100 * frac:.0f}% of "
              "the CPUs while it ran; its numbers are low", file=sys.stderr)


def run_variants(args, run_one) -> list:
    """run_one(name) for each of args.variant_list, in order: progress on stderr (unless
    --json) and a warning for each run that other processes disturbed. Returns the results."""
    results = []
    for name in args.variant_list:
        if not args.json:
            print(f"running {name} ...", file=sys.stderr, flush=True)
        results.append(run_one(name))
        warn_if_disturbed(results[-1])
    return results


def machine_info(env: dict, at_start: dict, extra: Optional[dict] = None) -> dict:
    """The machine and library versions, the thread settings `env` from configure_threads(),
    the warn_if_busy() probe `at_start`, and `extra`."""
    import numpy
    import torch
    import torchvision

    try:
        nproc = len(os.sched_getaffinity(0))
    except AttributeError:
        nproc = os.cpu_count() or 1
    info = {
        "nproc": nproc,
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "numpy": numpy.__version__,
        "torch_threads": torch.get_num_threads(),
        "cuda_available": bool(torch.cuda.is_available()),
        "loadavg_end": loadavg(),
        "omp_num_threads": env["OMP_NUM_THREADS"],
        "openblas_num_threads": env["OPENBLAS_NUM_THREADS"],
        "at_start": at_start,
    }
    if extra:
        info.update(extra)
    return info


def emit(out: dict, as_json: bool, print_table) -> None:
    """`out` as one JSON object on stdout with --json, else print_table()."""
    if as_json:
        json.dump(out, sys.stdout)
        sys.stdout.write("\n")
    else:
        print_table()


if __name__ == "__main__":
    # `python3 bench/fashion_mnist_torchvision.py [CACHE]`: prepare the cache and print sizes.
    try:
        r = prepare_root(sys.argv[1] if len(sys.argv) > 1 else None)
        tr = fashion_mnist(True, cache=r)
        te = fashion_mnist(False, cache=r)
    except DatasetError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    print(f"root={r} train={len(tr)} test={len(te)}")
