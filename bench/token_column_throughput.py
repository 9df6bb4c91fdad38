#!/usr/bin/env python3
"""A Parquet and an Arrow input_ids column (stoker.Tokens(path, column="input_ids")) against
the same tokens as a nanoGPT .bin: the first open's time (the Parquet column decoded into the
cache; the Arrow one, uncompressed, read in place), a later open's (nothing decoded), and
tokens/s of an epoch of each, rounds alternating, each in a new process.

  .venv/bin/python bench/token_column_throughput.py DIR [--tokens 40000000] [--seq-len 2048]
      [--batch 8] [--rounds 3]
DIR: where train.parquet (documents of 200 to 2000 tokens, GPT-2's vocabulary, list<int32> as
Hugging Face's datasets stores input_ids), train.arrow (the same table as save_to_disk writes
it: an IPC stream, record batches of 1,000 rows), train.bin (uint16) and train.npy (int32, the
Arrow column's type, mapped) are written, kept between runs.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")

RUN = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import stoker
path, seq_len, batch, epoch = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
stoker.Loader(stoker.Tokens(sys.argv[6], seq_len=seq_len))  # a process's first loader's setup
start = time.perf_counter()
loader = stoker.Loader(stoker.Tokens(path, seq_len=seq_len), batch_size=batch, seed=0)
opened = time.perf_counter() - start
tokens = 0
start = time.perf_counter()
if epoch:
    for b in loader:
        tokens += b["input_ids"].numel()
print(json.dumps({"open_s": opened, "tokens_per_s": tokens / (time.perf_counter() - start)}))
"""


def make_files(folder: str, total: int):
    import pyarrow as pa
    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq
    names = ("train.parquet", "train.arrow", "train.bin", "train.npy")
    paths = tuple(os.path.join(folder, n) for n in names)
    parquet, arrow, binary, npy = paths
    if all(os.path.exists(p) for p in paths):
        return paths
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 50257, total, dtype=np.int32)
    cuts = np.cumsum(rng.integers(200, 2001, total // 200))
    cuts = cuts[cuts < total]
    offsets = pa.array(np.concatenate([[0], cuts, [total]]).astype(np.int32))
    column = pa.ListArray.from_arrays(offsets, pa.array(tokens))
    table = pa.table({"input_ids": column})
    pq.write_table(table, parquet, row_group_size=1000)
    with ipc.new_stream(arrow, table.schema) as out:
        out.write_table(table, max_chunksize=1000)
    tokens.astype(np.uint16).tofile(binary)
    np.save(npy, tokens)
    return paths


def run(path: str, args, epoch: bool, cache: str) -> dict:
    """`path` opened (after a first loader, on the .bin: its setup not counted), and read for an
    epoch where asked, in a new process."""
    env = dict(os.environ, STOKER_CACHE=cache)
    warm = os.path.join(args.dir, "train.bin")
    out = subprocess.run([sys.executable, "-c", RUN, HERE, path, str(args.seq_len),
                          str(args.batch), "1" if epoch else "0", warm],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--tokens", type=int, default=40_000_000)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    parquet, arrow, binary, npy = make_files(args.dir, args.tokens)
    cache = os.path.join(args.dir, "cache")
    print(f"{parquet}: {os.path.getsize(parquet) / 1e6:.0f} MB, {arrow}: "
          f"{os.path.getsize(arrow) / 1e6:.0f} MB, {args.tokens} tokens")
    first, later, arrow_first, bin_open, column, arrow_epoch, flat, wide = ([] for _ in range(8))
    for _ in range(args.rounds):
        shutil.rmtree(cache, ignore_errors=True)
        first.append(run(parquet, args, False, cache)["open_s"])
        later.append(run(parquet, args, False, cache)["open_s"])
        arrow_first.append(run(arrow, args, False, cache)["open_s"])
        bin_open.append(run(binary, args, False, cache)["open_s"])
        column.append(run(parquet, args, True, cache)["tokens_per_s"])
        arrow_epoch.append(run(arrow, args, True, cache)["tokens_per_s"])
        flat.append(run(binary, args, True, cache)["tokens_per_s"])
        wide.append(run(npy, args, True, cache)["tokens_per_s"])
    median = statistics.median
    print(f"first open: Parquet (decode) {median(first):.2f} s, Arrow (in place) "
          f"{median(arrow_first) * 1e3:.1f} ms; later Parquet open: {median(later) * 1e3:.1f} ms "
          f"(the .bin's: {median(bin_open) * 1e3:.1f} ms)")
    print(f"epoch tokens/s: Parquet column {median(column) / 1e6:.1f} M, Arrow column "
          f"{median(arrow_epoch) / 1e6:.1f} M, .bin {median(flat) / 1e6:.1f} M, int32 .npy "
          f"{median(wide) / 1e6:.1f} M; ratios to the .bin: Parquet "
          f"{median(c / f for c, f in zip(column, flat)):.2f}, Arrow "
          f"{median(a / f for a, f in zip(arrow_epoch, flat)):.2f}; Arrow to the int32 .npy: "
          f"{median(a / w for a, w in zip(arrow_epoch, wide)):.2f}")


if __name__ == "__main__":
    main()
