"""Runs one loader of the token benchmark (bench/token_peers.py) in a new process, inside its
peer's environment: a driver module of this folder, tokens_NAME.py, which has

  prepare(paths, store)                     the peer's own storage of the token files, made once
                                            under `store`: its files of each, or None where it
                                            reads them in place
  open_batches(paths, store, seq_len, batch, seed)
                                            an iterable of (input_ids, labels), int64 tensors
                                            [batch, seq_len], shuffled as the peer shuffles,
                                            one core (no worker processes: each driver says)

One JSON object on stdout; a failure is one line on stderr and exit status 1.

  token_worker.py NAME prepare STORE PATH...     {prepare_s, files, what}: what, the driver's
                                                 WHAT: the peer's version and how it is driven
  token_worker.py NAME run STORE SEQ_LEN BATCH SEED SECONDS PATH...
      {open_s, first_batch_s, tokens, seconds, cpu_s}: the loader opened (open_s), then its
      batches until SECONDS have passed or they end; first_batch_s from the open's start,
      tokens those of input_ids, cpu_s the process's CPU time over the batches.
"""
import importlib
import json
import os
import sys
import time


def run(driver, store, seq_len, batch, seed, seconds, paths) -> dict:
    start = time.perf_counter()
    batches = driver.open_batches(paths, store, seq_len, batch, seed)
    opened = time.perf_counter()
    tokens, first, cpu = 0, None, time.process_time()
    for index, (input_ids, labels) in enumerate(batches):
        if index == 0:
            checked(index, input_ids, labels, seq_len)
        tokens += input_ids.numel()
        now = time.perf_counter()
        first = now if first is None else first
        if now - opened >= seconds:
            break
    end = time.perf_counter()
    if tokens:
        checked(index, input_ids, labels, seq_len)  # the last batch, as the first
    return {"open_s": opened - start, "first_batch_s": (first or end) - start, "tokens": tokens,
            "seconds": end - opened, "cpu_s": time.process_time() - cpu}


def checked(index, input_ids, labels, seq_len):
    """RuntimeError naming the batch unless its input_ids and labels are int64 [B, seq_len]
    alike. The first batch and the last are checked, not every one: the check on every batch
    was a tenth of stoker's time (BENCHMARKS.md, "Token files"); tokens are counted in each."""
    if (input_ids.dtype != labels.dtype or str(input_ids.dtype) != "torch.int64"
            or input_ids.shape != labels.shape or input_ids.shape[1] != seq_len):
        raise RuntimeError(f"batch {index}: input_ids {input_ids.dtype} "
                           f"{tuple(input_ids.shape)}, labels {labels.dtype} "
                           f"{tuple(labels.shape)}, expected int64 [B, {seq_len}] both")


def main():
    name, command, store = sys.argv[1:4]
    for threads in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(threads, "1")
    import torch
    torch.set_num_threads(1)
    driver = importlib.import_module(f"tokens_{name}")
    try:
        if command == "prepare":
            start = time.perf_counter()
            files = driver.prepare(sys.argv[4:], store)
            result = {"prepare_s": time.perf_counter() - start, "files": files,
                      "what": driver.WHAT}
        else:
            seq_len, batch, seed = (int(a) for a in sys.argv[4:7])
            result = run(driver, store, seq_len, batch, seed, float(sys.argv[7]), sys.argv[8:])
    except Exception as error:  # noqa: BLE001 -- one line for the table, whatever the peer raised
        print(f"{name} {command}: {type(error).__name__}: {str(error).splitlines()[0][:300]}"
              if str(error) else f"{name} {command}: {type(error).__name__}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
