#!/usr/bin/env python3
"""Packed tokens/s from token files, stoker against its peers (issue 64's target), in one run,
rounds alternating: stoker.Tokens, Grain, litdata's TokensLoader, Megatron-LM's GPTDataset
and torchtitan's Hugging Face text path, each driven as its own docs drive it (the drivers,
bench/peers/tokens_NAME.py, say how), and stoker again on Megatron's .bin/.idx; then
`memcpy` of the batches' bytes (bench/token_throughput.py). Each loader runs in a new process
(bench/peers/token_worker.py) in its peer's environment (bench/peers/setup.sh), on one core:
no worker processes, one thread for PyTorch; it reads batches of int64 input_ids and labels
[--batch, --seq-len] for --seconds or to its epoch's end. A round's loaders run in an order
turned by one each round, after every file they read is read once (cached whole). Reported:
medians over rounds of tokens/s (wall clock) and of tokens per CPU second of the loader's
process, its open (for Megatron: its index building) and first batch, and stoker's ratio to
each, round by round. --sources N: N files mixed with equal
weights, each by its peer's own mixing (stoker.Mixture, Grain's IterDataset.mix, litdata's
CombinedStreamingDataset, Megatron's BlendedDataset, torchtitan's interleaving).

  .venv/bin/python bench/token_peers.py DIR [--mb 1024] [--seq-len 2048] [--batch 8]
      [--rounds 5] [--seconds 10] [--sources 1] [--doc-tokens 1024] [--loaders a,b]
      [--json OUT]
DIR: the token files (uint16, documents of --doc-tokens tokens on average, each ended by
GPT-2's end of text) and the peers' own storage of them (DIR/peers), kept between runs. A peer
whose environment is missing is reported as not installed.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import token_throughput

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "peers", "token_worker.py")
PEERS_DIR = os.environ.get("STOKER_PEERS", os.path.join(
    os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "stoker", "peers"))
# name: (driver, environment under PEERS_DIR or None for this Python's, what it reads)
LOADERS = {
    "stoker": ("stoker", None, "the nanoGPT .bin files"),
    "grain": ("grain", "grain", "the .bin files"),
    "litdata": ("litdata", "litdata", "its chunks, made by its optimize"),
    "megatron": ("megatron", "megatron", "its .bin/.idx, made by its builder"),
    "torchtitan": ("torchtitan", "torchtitan", "Parquet text (tokenized as read)"),
    "stoker_megatron": ("stoker", None, "Megatron's .bin/.idx, in place"),
}


def read_whole(places):
    """Drops each file of `places` (files, and folders whole) from the page cache and reads it
    back, so that a round's loaders find their data cached, and cached alike, whatever the
    cache held before. A round measures a new process's first epoch, which otherwise reads from
    the disk what the cache lost, and a file the cache holds in small pages maps slower than
    one read back in large ones (BENCHMARKS.md, "The page cache")."""
    buffer = bytearray(16 << 20)
    files = []
    for place in places:
        if os.path.isdir(place):
            files += [os.path.join(root, name) for root, _, names in os.walk(place)
                      for name in names]
        else:
            files.append(place)
    for path in files:
        with open(path, "rb") as f:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
            while f.readinto(buffer):
                pass


def python_of(environment):
    """The Python of a peer's environment, or (None, why it is not there)."""
    if environment is None:
        return sys.executable, None
    python = os.path.join(PEERS_DIR, environment, "bin", "python")
    failed = os.path.join(PEERS_DIR, environment + ".failed")
    if os.path.exists(failed):
        with open(failed) as f:
            return None, "not installed: " + f.read().strip()
    if not os.path.exists(python):
        return None, f"not installed (bash bench/peers/setup.sh {environment})"
    return python, None


def worker(python, driver, args) -> dict:
    """token_worker.py's JSON object, or {"error": its one line}."""
    run = subprocess.run([python, WORKER, driver] + [str(a) for a in args],
                         capture_output=True, text=True)
    if run.returncode:
        lines = [line for line in run.stderr.splitlines() if line.startswith(driver + " ")]
        return {"error": (lines or run.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(run.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--mb", type=int, default=1024)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--sources", type=int, default=1)
    parser.add_argument("--doc-tokens", type=int, default=1024)
    parser.add_argument("--loaders", default=",".join(LOADERS))
    parser.add_argument("--json", help="also write every run's figures to this file")
    args = parser.parse_args()
    names = args.loaders.split(",")
    unknown = [n for n in names if n not in LOADERS]
    if unknown or "stoker" not in names:
        parser.error(f"--loaders: {','.join(unknown) or 'stoker missing'} "
                     f"(of {','.join(LOADERS)}; stoker among them)")
    load = os.getloadavg()
    paths = token_throughput.token_files(args.dir, args.mb, args.sources, args.doc_tokens)
    store = os.path.join(args.dir, "peers")
    errors, prepared = {}, {}
    for name in names:
        driver, environment, _ = LOADERS[name]
        python, why = python_of(environment)
        if why:
            errors[name] = why
            continue
        if name == "stoker_megatron":  # Megatron's files, below
            continue
        result = worker(python, driver, ["prepare", store] + paths)
        if "error" in result:
            errors[name] = result["error"]
        else:
            prepared[name] = result
    if "stoker_megatron" in names and "megatron" not in prepared:
        errors["stoker_megatron"] = "needs Megatron's files: " + errors.get(
            "megatron", "megatron is not among --loaders")
    running = [n for n in names if n not in errors]
    runs = {name: [] for name in running}
    memcpy = []
    # What the running loaders read: the token files and each peer's own storage of them.
    reads = paths + [place for name in running for place in
                     (prepared.get(name, {}).get("files") or [])]
    for round_ in range(args.rounds):
        read_whole(reads)
        turned = running[round_ % len(running):] + running[:round_ % len(running)]
        for name in turned:
            driver, environment, _ = LOADERS[name]
            reads = prepared["megatron"]["files"] if name == "stoker_megatron" else paths
            result = worker(python_of(environment)[0], driver, [
                "run", store, args.seq_len, args.batch, round_, args.seconds] + reads)
            if "error" in result:
                errors[name] = result["error"]
            runs[name].append(result)
        memcpy.append(token_throughput.memcpy_bytes_per_s(paths[0], args.seq_len, args.batch)
                      / token_throughput.BATCH_BYTES_PER_TOKEN)
    load += os.getloadavg()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "load": load, "runs": runs, "errors": errors,
                       "prepared": prepared, "memcpy_tokens_per_s": memcpy}, f, indent=1)
    if "stoker" in errors:
        sys.exit(f"token_peers: stoker failed: {errors['stoker']}")
    report(args, names, runs, errors, prepared, memcpy, load)


def report(args, names, runs, errors, prepared, memcpy, load):
    """The table: medians, stoker's ratios round by round, the target's two ratios."""
    print(f"{args.mb} MB of uint16 tokens in {args.sources} file(s), documents of "
          f"{args.doc_tokens} tokens on average, seq_len {args.seq_len}, batch {args.batch}, "
          f"{args.rounds} rounds of at most {args.seconds:g} s a loader (medians); load "
          f"average {load[0]:.1f} before, {load[3]:.1f} after")
    rate, cpu_rate = {}, {}
    for name in names:
        what = f"{name:15s} ({LOADERS[name][2]})"
        if name in errors:
            print(f"  {what}: {errors[name]}")
            continue
        got = runs[name]
        rate[name] = [r["tokens"] / r["seconds"] for r in got]
        cpu_rate[name] = [r["tokens"] / max(r["cpu_s"], 1e-9) for r in got]
        print(f"  {what}: {statistics.median(rate[name]) / 1e6:9.2f} M tokens/s, "
              f"{statistics.median(cpu_rate[name]) / 1e6:9.2f} M per CPU s; open "
              f"{statistics.median(r['open_s'] for r in got):.3f} s, first batch "
              f"{statistics.median(r['first_batch_s'] for r in got):.3f} s, "
              f"{statistics.median(r['tokens'] for r in got) / 1e6:.1f} M tokens read")
    print("  how each ran:")
    for name in names:
        if name in prepared:
            print(f"    {name}: {prepared[name]['what']}")
    floor = statistics.median(memcpy)
    print(f"  memcpy of the batches' bytes: {floor / 1e6:9.2f} M tokens/s "
          f"({floor * token_throughput.BATCH_BYTES_PER_TOKEN / 1e9:.1f} GB/s)")
    stoker = rate["stoker"]
    peers = [n for n in rate if not n.startswith("stoker")]
    for name in peers:
        ratios = [s / p for s, p in zip(stoker, rate[name])]
        per_cpu = [s / p for s, p in zip(cpu_rate["stoker"], cpu_rate[name])]
        print(f"  stoker / {name}: " + ", ".join(f"{r:.1f}x" for r in ratios)
              + f" (median {statistics.median(ratios):.1f}x; per CPU second "
              f"{statistics.median(per_cpu):.1f}x)")
    print(f"  stoker / memcpy: {statistics.median(stoker) / floor:.2f} (target >= 0.5)")
    if peers:
        fastest = max(peers, key=lambda n: statistics.median(rate[n]))
        ratio = statistics.median(stoker) / statistics.median(rate[fastest])
        per_cpu = (statistics.median(cpu_rate["stoker"])
                   / max(statistics.median(cpu_rate[n]) for n in peers))
        print(f"  stoker / the fastest peer ({fastest}): {ratio:.1f}x, per CPU second "
              f"{per_cpu:.1f}x (target >= 10x)")


if __name__ == "__main__":
    started = time.time()
    main()
    print(f"  ({time.time() - started:.0f} s in all)")
