"""torchrun's elastic restart (issue 64, 5; docs/DESIGN.md contracts 3 and 13): ranks that
checkpoint the loader's state_dict every few steps lose one of theirs mid-epoch; torchrun
(--max-restarts) restarts the group, or another torchrun goes on with another number of ranks,
from the last checkpoint (elastic_restart_run.py). What the ranks received before that
checkpoint and after it is every sample of the epoch exactly once: the records of a dataset,
and every token of two token files mixed and packed."""

import collections
import json
import math
import pathlib

import numpy as np
import pytest

from loader_datasets import write_classes
from token_files import documents, eos_file
from torchrun import torchrun

SCRIPT = pathlib.Path(__file__).with_name("elastic_restart_run.py")
RECORDS = 203  # write_classes': 13 steps of 2 ranks x 8
TOKENS = (150, 400)  # two files: 20 and 51 rows of 8, 9 steps of 2 ranks x 4
# Each kind's steps between checkpoints and the step of attempt 0 at which rank 1 dies.
EVERY, CRASH = {"classes": 3, "tokens": 2}, {"classes": 7, "tokens": 5}


def run(out, nproc, kind, data, first=0, restarts=0):
    """elastic_restart_run.py under torchrun, its attempts numbered from `first`."""
    return torchrun(nproc, SCRIPT, kind, out, EVERY[kind], CRASH[kind], first, *data,
                    options=("--max-restarts", str(restarts)), timeout=180)


def delivered(out):
    """What the run delivered for good: each attempt's batches before the step its successor
    started at (the checkpoint it loaded), all of the last attempt's; the attempts' starts
    and world sizes; how many batches were delivered after a checkpoint and lost with their
    attempt (the successor delivers them again)."""
    attempts = [json.loads((out / f"attempt-{a}.json").read_text())
                for a in range(len(list(out.glob("attempt-*.json"))))]
    kept, lost = [], 0
    for a in range(len(attempts)):
        end = attempts[a + 1]["start"] if a + 1 < len(attempts) else math.inf
        for log in sorted(out.glob(f"log-{a}-*.jsonl")):
            for entry in map(json.loads, log.read_text().splitlines()):
                kept += entry["samples"] if entry["step"] < end else []
                lost += entry["step"] >= end
    return kept, [(a["start"], a["world"]) for a in attempts], lost


def classes(tmp_path):
    """write_classes' dataset, and the check of what was delivered: each id once."""
    path = write_classes(tmp_path / "classes", RECORDS)

    def check(samples):
        assert collections.Counter(samples) == collections.Counter(range(RECORDS))
    return [path], check


def tokens(tmp_path):
    """Two token files of documents, and the check: each file's tokens, each once, in the rows
    delivered of it."""
    rng = np.random.default_rng(64)
    files = [(tmp_path / f"{k}.bin", eos_file(tmp_path / f"{k}.bin",
                                              documents(rng, n, "mixed", 8), rng))
             for k, n in enumerate(TOKENS)]

    def check(rows):
        for k, (_, want) in enumerate(files):
            got = [t for source, *row in rows if source == k for t in row]
            assert sorted(got) == sorted(want.tolist()), k
    return [path for path, _ in files], check


@pytest.mark.parametrize("kind, after", [("classes", 2), ("classes", 3), ("tokens", 2),
                                         ("tokens", 1), ("tokens", 3)])
def test_a_rank_dies_and_the_resumed_run_delivers_the_epoch_exactly_once(tmp_path, monkeypatch,
                                                                         kind, after):
    """2 ranks, rank 1 dies at CRASH; after == 2: torchrun restarts both (--max-restarts 1);
    else torchrun ends, and another runs `after` ranks from the checkpoint."""
    # torch 2.11's torchrun keeps its rendezvous store across restarts, and a restarted
    # init_process_group may read the dead ranks' addresses there (Gloo: "Connection refused",
    # or a hang): rank 0 serves a store of its own each attempt instead.
    monkeypatch.setenv("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1")
    data, check = {"classes": classes, "tokens": tokens}[kind](tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    if after == 2:
        finished = run(out, 2, kind, data, restarts=1)
    else:
        crashed = run(out, 2, kind, data)
        assert crashed.returncode != 0 and "exitcode  : 1" in crashed.stderr, \
            crashed.stderr[-3000:]
        finished = run(out, after, kind, data, first=1)
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    samples, attempts, lost = delivered(out)
    checkpoint = CRASH[kind] // EVERY[kind] * EVERY[kind]
    assert attempts == [(0, 2), (checkpoint, after)]
    assert lost > 0  # attempt 0 went on past its last checkpoint before rank 1 died
    check(samples)
    done = json.loads((out / "done-1.json").read_text())
    assert (done["epoch"], done["position"]) == (2, 0)
