"""A rank of an elastic run under torchrun (test_elastic_restart.py): one epoch of a loader,
the ranks in step through an all-reduce a batch (as DDP's), the loader's state_dict saved
every few steps to OUT/checkpoint.json and loaded on start, so that torchrun's restart (or
another torchrun, on another number of ranks) goes on from it. Each rank logs what every batch
gave it to OUT/log-<attempt>-<rank>.jsonl; OUT/attempt-<attempt>.json holds the step the
attempt started at. On attempt 0, rank 1 dies at step CRASH (os._exit: no word, no cleanup).

Arguments: KIND ("classes": DATA is write_classes' dataset, a sample told by its id;
"tokens": DATA are two token files mixed, packed best_fit, a sample told by its source and its
tokens), OUT, EVERY (steps between checkpoints), CRASH, FIRST (the attempt number of this
torchrun's first start; torchrun's restarts count on from it), DATA..."""

import json
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import stoker
from token_files import EOS

PAD = 3


def loader_of(kind, data):
    """The loader every attempt makes: its last batches padded ("valid" tells the padding)."""
    if kind == "tokens":
        parts = [stoker.Tokens(p, seq_len=8, packing="best_fit", eos_id=EOS, pad_id=PAD)
                 for p in data]
        # Weights in proportion to the rows: each epoch holds every row of both, once.
        data = stoker.Mixture(parts, weights=[len(p) for p in parts])
    else:
        data = data[0]
    return stoker.Loader(data, batch_size=4 if kind == "tokens" else 8, shuffle=True, seed=5,
                         workers=1, last_batch="pad", batch_format="dict")


def samples(kind, batch):
    """The identities of the batch's samples, padding left out."""
    valid = batch["valid"].tolist()
    if kind == "classes":
        return [i for i, ok in zip(batch["id"].tolist(), valid) if ok]
    return [[int(source)] + ids[segments > 0].tolist() for source, ids, segments, ok in
            zip(batch["source"], batch["input_ids"], batch["segment_ids"], valid) if ok]


def write(path, value):
    """`value` as JSON at `path`, atomically (a crash leaves the old file or the new one)."""
    with open(f"{path}.tmp", "w") as f:
        json.dump(value, f)
    os.replace(f"{path}.tmp", path)


def main(kind, out, every, crash, first, *data):
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))  # a hang guard
    rank, world = dist.get_rank(), dist.get_world_size()
    attempt = int(first) + int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    loader, step = loader_of(kind, data), 0
    if os.path.exists(f"{out}/checkpoint.json"):
        with open(f"{out}/checkpoint.json") as f:
            checkpoint = json.load(f)
        loader.load_state_dict(checkpoint["loader"])
        step = checkpoint["step"]
    if rank == 0:
        write(f"{out}/attempt-{attempt}.json", {"start": step, "world": world})
    loader.set_epoch(1)  # the checkpoint's epoch: its position is kept
    log = os.open(f"{out}/log-{attempt}-{rank}.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                  0o644)
    for batch in loader:
        if attempt == 0 and rank == 1 and step == int(crash):
            os._exit(1)
        os.write(log, (json.dumps({"step": step, "samples": samples(kind, batch)}) + "\n")
                 .encode())
        dist.all_reduce(torch.ones(1))  # the training step's gradients
        step += 1
        if step % int(every) == 0:
            states = [None] * world
            dist.all_gather_object(states, loader.state_dict())
            assert all(s == states[0] for s in states), states  # one global position
            if rank == 0:
                write(f"{out}/checkpoint.json", {"loader": states[0], "step": step})
            dist.barrier()
    if rank == 0:
        write(f"{out}/done-{attempt}.json", loader.state_dict())
    dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:])
