#!/usr/bin/env python3
"""Where the memory of the side-by-side benchmark's 1-core runs goes (docs/BENCHMARKS.md,
"Against every peer"): torch alone, the DataLoader + PIL peer in-process, stoker's Loader at
prefetch 1, 2, 4 and its default (--prefetch), and with --ffcv FFCV's Loader (in its own
environment), uint8 and float32 (--dtypes), each one epoch of run.py's training work in a fresh
process pinned to one core, one after another.

Each row: the peak resident set (the kernel's VmHWM), its peaks split into anonymous memory
(what the process allocated) and file-backed pages (shared libraries, and the store when the
loader maps it — stoker's shards, FFCV's .beton —: pages of the page cache that a peer reading
files with read() holds too, only not in its own RSS), sampled every 20 ms; and the resident
set after `import torch`, after the peer's import, at the first and the last batch, with the
part of it that is the mapped store at the last. With --step-ms the consumer holds each batch
that long, as a training step would, so that a loader that prefetches gets ahead of it.

Run it with a Python that has stoker and torchvision, e.g. the stoker peer's environment
(bench/peers/setup.sh):

    ~/.cache/stoker/peers/stoker/bin/python bench/peers/memory_profile.py IMAGES [--json FILE]
        [--dtypes uint8,float32] [--prefetch 1,2,4,default] [--step-ms 0] [--ffcv]

IMAGES: an ImageFolder, as run.py's. The stores go where run.py keeps them (--work).
"""
import argparse
import importlib
import json
import os
import subprocess
import sys
import threading
import time
import types

import work

MIB = 1 << 20
STATUS_KEYS = ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem")
HERE = os.path.dirname(os.path.abspath(__file__))


def rows(dtypes, prefetches, ffcv):
    """[(row name, peer (None: torch alone), dtype, prefetch)] in the order they run;
    `prefetches`: stoker's Loader's, None for its default; `ffcv`: FFCV's rows too."""
    out = [("torch alone (import torch)", None, None, None)]
    for dtype in dtypes:
        out.append((f"DataLoader + PIL, {dtype}", "torchvision_pil", dtype, None))
        if ffcv:
            out.append((f"FFCV .beton, {dtype}", "ffcv", dtype, None))
        for prefetch in prefetches:
            depth = "default" if prefetch is None else prefetch
            out.append((f"stoker, prefetch {depth}, {dtype}", "stoker", dtype, prefetch))
    return out


def status(pid="self"):
    """{key: bytes} of STATUS_KEYS from /proc/PID/status."""
    values = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in STATUS_KEYS:
                values[key] = int(value.split()[0]) * 1024
    return values


def mapped_store_bytes():
    """Resident bytes of this process's mappings of a store: stoker's shards (*.stk), FFCV's
    .beton (os_cache=True maps it whole)."""
    total, store = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5:  # a mapping's first line
                store = fields[-1].endswith((".stk", ".beton"))
            elif store and fields[0] == "Rss:":
                total += int(fields[1]) * 1024
    return total


def snapshot():
    return dict(status(), store=mapped_store_bytes())


def child(peer_name, dtype, prefetch, store, step_s):
    """One row, in this process: its snapshots and the epoch's result, as one JSON line. The
    consumer holds each batch `step_s` seconds before it asks for the next, as a training step
    would."""
    import peer_worker
    snapshots = {"python": snapshot()}
    import torch
    torch.set_num_threads(1)
    snapshots["import torch"] = snapshot()
    result = None
    if peer_name:
        peer = importlib.import_module("peer_" + peer_name)
        snapshots["import peer"] = snapshot()

        def batches(store, cores, dtype, seed):
            if peer_name == "stoker":
                it = peer.train_batches(store, cores, dtype, seed, fast=False, prefetch=prefetch)
            else:
                it = peer.batches(store, cores, dtype, seed)
            for i, batch in enumerate(it):
                snapshots["first batch" if i == 0 else "last batch"] = snapshot()
                yield batch
                time.sleep(step_s)
        result = peer_worker.run(types.SimpleNamespace(batches=batches), store, 1, dtype, 0)
    snapshots["end"] = snapshot()
    print(json.dumps({"snapshots": snapshots, "result": result}))


def measure(row, stores, step_ms):
    """Runs `row` in a fresh process pinned to core 0; its report with the sampled peaks."""
    _, peer, dtype, prefetch = row
    import run  # the parent's only (see prepare_stores)
    # FFCV runs in its own environment; the other rows in this Python, which has stoker and
    # torchvision (main checks), as a fresh machine without run.py's environments has.
    python = run.python_of(peer) if peer == "ffcv" else sys.executable
    command = ["taskset", "-c", "0", python, os.path.abspath(__file__), "--child",
               peer or "", dtype or "", "" if prefetch is None else str(prefetch),
               stores.get(peer, ""), str(step_ms / 1000)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=HERE)
    peaks = {"RssAnon": 0, "RssFile": 0}

    def watch():
        while process.poll() is None:
            try:
                now = status(process.pid)
            except (OSError, KeyError):
                break
            for key in peaks:
                peaks[key] = max(peaks[key], now.get(key, 0))
            time.sleep(0.02)
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    out, err = process.communicate()
    watcher.join()
    if process.returncode != 0:
        lines = [line for line in err.splitlines() if line.strip()]
        raise SystemExit(f"memory_profile: {row[0]}: "
                         f"{lines[-1] if lines else f'exit status {process.returncode}'}")
    report = json.loads(out.strip().splitlines()[-1])
    report["peak"] = {"rss": report["snapshots"]["end"]["VmHWM"],
                      "anon": peaks["RssAnon"], "file": peaks["RssFile"]}
    return report


def table(results):
    head = ["row", "peak RSS", "peak anon", "peak file-backed", "after import torch",
            "after peer import", "at first batch", "at last batch", "of which the mapped store"]
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for name, r in results.items():
        s = r["snapshots"]

        def mb(snap, key="VmRSS"):
            return f"{s[snap][key] / MIB:,.0f}" if snap in s else "-"
        cells = [name] + [f"{r['peak'][k] / MIB:,.0f}" for k in ("rss", "anon", "file")] + [
            mb("import torch"), mb("import peer"), mb("first batch"), mb("last batch"),
            mb("last batch", "store")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\nMB = MiB; peaks over the whole run, the rest resident sets.\n"


def prepare_stores(images, work_dir, peers):
    """{peer: store} of `peers`, made as run.py makes them where it has not yet (FFCV's in its
    own environment: run.py's)."""
    import run  # the parent's only: it imports PIL, which would count in every row
    stores = {}
    for peer in peers:
        if peer == "ffcv":
            store = run.store_path(work_dir, peer, None)
            if not os.path.exists(store):
                raise SystemExit(f"memory_profile: {store}: no FFCV store; bench/peers/run.py "
                                 "--peers ffcv makes it")
            stores[peer] = store
            continue
        store = run.store_path(work_dir, peer, None)
        if not os.path.exists(store):
            print(f"prepare {peer}", file=sys.stderr)
            module = importlib.import_module("peer_" + peer)
            module.prepare(images, work.image_files(images), store)
        stores[peer] = store
    return stores


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("images")
    p.add_argument("--work", help="where the stores are (default: run.py's --work)")
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--dtypes", default=",".join(work.DTYPES))
    p.add_argument("--prefetch", default="1,2,4,default", help="stoker's rows")
    p.add_argument("--ffcv", action="store_true",
                   help="FFCV's rows too, run with its environment's Python (run.py's store)")
    p.add_argument("--step-ms", type=float, default=0,
                   help="each batch held this long before the next is asked for (a training "
                   "step; 0: none, as run.py's)")
    a = p.parse_args(argv)
    dtypes = a.dtypes.split(",")
    if not set(dtypes) <= set(work.DTYPES):
        p.error(f"--dtypes {a.dtypes}: of {', '.join(work.DTYPES)}")
    if a.step_ms < 0:
        p.error(f"--step-ms {a.step_ms:g}: must be at least 0")
    try:
        prefetches = [None if x == "default" else int(x) for x in a.prefetch.split(",")]
    except ValueError:
        p.error(f"--prefetch {a.prefetch}: numbers or 'default', comma-separated")
    if not os.path.isdir(a.images):
        p.error(f"{a.images}: not a directory")
    try:
        import stoker  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as e:
        p.error(f"{e}: run it with a Python that has stoker and torchvision "
                "(the stoker peer's environment of bench/peers/setup.sh)")
    import run  # see prepare_stores
    work_dir = a.work or os.path.join(os.path.dirname(run.PEERS_DIR), "peers-work")
    peers = ["torchvision_pil", "stoker"] + (["ffcv"] if a.ffcv else [])
    if a.ffcv and run.not_installed("ffcv"):
        p.error(f"--ffcv: {run.not_installed('ffcv')}")
    stores = prepare_stores(os.path.abspath(a.images), work_dir, peers)
    results = {}
    for row in rows(dtypes, prefetches, a.ffcv):
        print(f"memory: {row[0]}", file=sys.stderr)
        results[row[0]] = measure(row, stores, a.step_ms)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    print(table(results))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        peer, dtype, prefetch, store, step_s = sys.argv[2:7]
        child(peer or None, dtype or None, int(prefetch) if prefetch else None, store or None,
              float(step_s))
    else:
        main()
