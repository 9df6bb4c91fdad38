"""bench/token_peers.py, the token benchmark against Grain, litdata, Megatron-LM and torchtitan,
at a tiny size without the peers' environments (as CI has them): stoker is measured through
the same worker the peers run in, reading its whole epoch, and each peer is named with why it
did not run instead of failing. No timing is asserted. The token files it writes end each
document with GPT-2's end of text."""
import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench")


def run_bench(tmp_path, *extra):
    env = dict(os.environ, STOKER_PEERS=str(tmp_path / "no-peers"))
    return subprocess.run([sys.executable, os.path.join(BENCH, "token_peers.py"),
                           str(tmp_path / "data"), "--mb", "1", "--seq-len", "64", "--batch",
                           "4", "--rounds", "2", "--seconds", "60", "--json",
                           str(tmp_path / "out.json"), *extra],
                          env=env, capture_output=True, text=True, timeout=600)


def test_stoker_is_measured_and_each_missing_peer_named(tmp_path):
    run = run_bench(tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads((tmp_path / "out.json").read_text())
    samples = (2**19 - 1) // 64  # 1 MB of uint16 tokens cut to seq_len 64 (labels one further)
    for one in out["runs"]["stoker"]:
        assert one["tokens"] == samples * 64  # the whole epoch, the last batch short
        assert one["seconds"] > 0 and one["open_s"] >= 0 and one["first_batch_s"] > 0
    for peer in ("grain", "litdata", "megatron", "torchtitan"):
        assert out["errors"][peer].startswith("not installed"), out["errors"]
        assert f"{peer} " in run.stdout and out["errors"][peer] in run.stdout
    assert out["errors"]["stoker_megatron"].startswith("needs Megatron's files")
    assert len(out["memcpy_tokens_per_s"]) == 2 and min(out["memcpy_tokens_per_s"]) > 0
    assert "stoker / memcpy" in run.stdout and "fastest peer" not in run.stdout


def test_mixed_sources_are_measured_too(tmp_path):
    run = run_bench(tmp_path, "--sources", "3", "--loaders", "stoker,grain")
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads((tmp_path / "out.json").read_text())
    files = sorted((tmp_path / "data").glob("docs1024-1-*of3.bin"))
    assert len(files) == 3
    # stoker.Mixture, until every file is spent: each file's samples once at least.
    per_file = sum((f.stat().st_size // 2 - 1) // 64 for f in files)
    assert all(one["tokens"] >= per_file * 64 for one in out["runs"]["stoker"])
    assert set(out["errors"]) == {"grain"}


def test_a_failing_loader_is_one_line(tmp_path):
    run = subprocess.run([sys.executable, os.path.join(BENCH, "peers", "token_worker.py"),
                          "stoker", "run", str(tmp_path), "64", "4", "0", "1",
                          str(tmp_path / "missing.bin")], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 1 and run.stdout == ""
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith("stoker run: ") and "missing.bin" in line


def test_the_token_files_are_documents_ended_by_gpt2_end_of_text(tmp_path):
    sys.path.insert(0, BENCH)
    try:
        import token_throughput
    finally:
        sys.path.pop(0)
    (path,) = token_throughput.token_files(str(tmp_path), 1, 1, doc_tokens=100)
    tokens = np.fromfile(path, dtype=np.uint16)
    ends = np.flatnonzero(tokens == token_throughput.EOS_ID) + 1
    lengths = np.diff(np.concatenate([[0], ends]))
    assert ends[-1] == len(tokens) == 2**19
    assert lengths.min() >= 1 and lengths.max() <= 199
    assert 90 < lengths.mean() < 110


def worker_of(tmp_path, batches: str):
    """token_worker.py run over a driver whose batches are `batches` (an expression of torch)."""
    (tmp_path / "tokens_given.py").write_text(
        "import torch\n"
        "def open_batches(paths, store, seq_len, batch, seed):\n"
        f"    return iter({batches})\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    return subprocess.run([sys.executable, os.path.join(BENCH, "peers", "token_worker.py"),
                           "given", "run", str(tmp_path), "64", "4", "0", "60"], env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_first_and_last_batches_are_checked_and_every_batch_counted(tmp_path):
    good = "(torch.zeros(4, 64, dtype=torch.int64), torch.zeros(4, 64, dtype=torch.int64))"
    short = "(torch.zeros(3, 64, dtype=torch.int64), torch.zeros(3, 64, dtype=torch.int64))"
    run = worker_of(tmp_path, f"[{good}, {good}, {short}]")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["tokens"] == (4 + 4 + 3) * 64  # a short last batch counts
    for bad, what in (
            ("(torch.zeros(4, 64, dtype=torch.int32), torch.zeros(4, 64, dtype=torch.int32))",
             "input_ids torch.int32"),
            ("(torch.zeros(4, 64, dtype=torch.int64), torch.zeros(4, 64, dtype=torch.int32))",
             "labels torch.int32"),
            ("(torch.zeros(4, 64, dtype=torch.int64), torch.zeros(4, 65, dtype=torch.int64))",
             "labels torch.int64 (4, 65)"),
            ("(torch.zeros(4, 32, dtype=torch.int64), torch.zeros(4, 32, dtype=torch.int64))",
             "input_ids torch.int64 (4, 32)")):
        for batches, index in ((f"[{bad}, {good}]", 0), (f"[{good}, {good}, {bad}]", 2)):
            run = worker_of(tmp_path, batches)
            assert run.returncode == 1 and run.stdout == ""
            (line,) = run.stderr.strip().splitlines()
            assert line.startswith(f"given run: RuntimeError: batch {index}: ") and what in line
