#!/usr/bin/env python3
"""Kills stoker at random moments and checks that nothing of the user's is lost.

Subjects, each run as a real child process and interrupted at a random moment with a random
pattern of signals (SIGINT, SIGTERM, SIGKILL; single, double and triple; for train also SIGHUP
and SIGPIPE, sent or from a real closed pipe, `train | head -1`):

  train    `stoker train --checkpoint-dir C --resume` on a small dataset, killed again and
           again, then run to its end: its final loss must equal a straight run's exactly.
  convert  `stoker convert idx ... --out O`: O is absent or a complete dataset; converting
           again works.
  dotdot   convert with --out L/hop/../O, hop a link elsewhere: the dataset appears where the
           kernel resolves the path (beside hop's target) or not at all, never beside the link;
           a user's folder named O.partial-* there is kept.
  collide  `stoker train` with two outputs naming one file (two flags, or a flag naming a file
           of the checkpoint directory or the report): refused in one line before any work,
           the file there before unchanged.
  foreign  another shard of the same size copied in place over one that `train --verify
           always` reads: one line naming the shard, never a run that ends "fine".
  writer   a Python script writing a dataset with stoker.DatasetWriter (with --python, the
           interpreter that has the package): the same checks as convert.

With nginx (python/tests/servers.py) serving the sharded dataset on loopback, also:

  remote   `stoker verify URL` through tests/fault_proxy.py serving a random fault (a stall of
           60 s, a 0.5 MB/s trickle, a reset, a 503 burst, a corrupt byte), its URL carrying a
           password and a presigned signature, interrupted at a random moment (or, but for the
           stall, left alone): an interrupt ends it within 10 s (a stalled transfer included),
           a run left alone ends with 0 or one line naming the URL, no output holds the
           password or signature, and a clean run over the same cache then verifies with no
           .part left.
  shared   three `stoker verify URL` at once on one cache of the floor's budget (two shards),
           one of them interrupted: the others take turns and succeed; a clean run then
           verifies.

After every kill: the inputs are byte for byte unchanged (SHA-256), no process died of a crash
signal or failed with an error, the current checkpoint (if any) is complete and the next run
loads it, and once the next run has ended no temporary of stoker's remains (*.tmp-<pid>,
*.partial-*, .partial-step-*). Prints one line per kill with --verbose, and at the end the
counts by subject and signal pattern and "N passed, M failed" (campaigns whose checks passed).
--kills counts every run interrupted or checked.

  fault_harness.py --stoker build/stoker --kills 200 [--python build-python/venv/bin/python]
"""

import argparse
import collections
import gzip
import hashlib
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "python", "tests"))
import servers  # noqa: E402  (the loopback nginx fixture)
PROXY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                     "fault_proxy.py")
PASSWORD, SIGNATURE = "pw-5ecret", "s1gnature-5ecret"
# A proxy's faults, each as the script's one rule (shards only: the manifest is read first).
REMOTE_FAULTS = {
    "stall": {"path": ".stk", "stall_after": 1000, "stall_s": 60, "times": 1000},
    "trickle": None,  # the whole script: rate_mb_s
    "reset": {"path": ".stk", "reset_after": 3000, "times": 3},
    "503": {"path": ".stk", "status": 503, "times": 5},
    "corrupt": {"path": ".stk", "corrupt_at": 2000, "times": 1},
}

PATTERNS = [
    ("SIGINT",), ("SIGTERM",), ("SIGKILL",), ("SIGINT", "SIGINT"),
    ("SIGINT", "SIGINT", "SIGINT"), ("SIGTERM", "SIGTERM"), ("SIGINT", "SIGKILL"),
]
# A run stops on a lost terminal or reader as on SIGTERM.
TRAIN_PATTERNS = PATTERNS + [("SIGHUP",), ("SIGPIPE",), ("SIGPIPE", "SIGPIPE", "SIGPIPE"),
                             ("SIGHUP", "SIGINT"), ("PIPE",)]
# Exit statuses a kill may end with: done, stopped on request, killed by the signal sent.
ACCEPTED = {0, 130, 128 + signal.SIGINT, 128 + signal.SIGTERM, 128 + signal.SIGKILL}
USERS_FOLDER = "ds.partial-mybackup"
TRAIN_ARGS = ["--epochs", "3", "--batch", "32", "--workers", "1", "--threads", "1", "--seed", "5"]


def write_idx(path, records, seed):
    """An IDX image/label pair of `records` 28x28 images of 10 classes (uncompressed)."""
    rng = random.Random(seed)
    labels = bytes(rng.randrange(10) for _ in range(records))
    noise = rng.randbytes(records * 784)
    images = bytearray(noise)
    for i, label in enumerate(labels):  # a bright band per class: learnable
        start = i * 784 + label * 56
        images[start:start + 56] = b"\xf0" * 56
    with open(path + "-images", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, records, 28, 28))
        f.write(images)
    with open(path + "-labels", "wb") as f:
        f.write(struct.pack(">II", 0x801, records))
        f.write(labels)


def digest_tree(root):
    """{relative path: sha256} of every file under root."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return out


def leftovers(root):
    """Temporaries of stoker's under root: AtomicFile's, staging and partial checkpoints."""
    found = []
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            if name == USERS_FOLDER:
                continue  # the user's, named like a staging directory (subject dotdot)
            if ".tmp-" in name or ".partial-" in name or name.startswith(".partial-step-"):
                found.append(os.path.join(dirpath, name))
    return found


class Harness:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.work = tempfile.mkdtemp(prefix="stoker-faults-", dir=args.work)
        self.counts = collections.Counter()
        self.failures = []
        self.kills = 0
        self.runs = 0  # runs checked without a kill

    def stoker(self, *argv, check=True):
        r = subprocess.run([self.args.stoker, *argv], capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError(f"stoker {' '.join(argv)} failed ({r.returncode}): {r.stderr}")
        return r

    def setup(self):
        src = os.path.join(self.work, "src")
        os.makedirs(src)
        write_idx(os.path.join(src, "train"), 6000, 1)
        write_idx(os.path.join(src, "test"), 1000, 2)
        write_idx(os.path.join(src, "big"), 60000, 3)
        self.data = os.path.join(self.work, "data")
        for split in ("train", "test"):
            self.stoker("convert", "idx", "--images", f"{src}/{split}-images", "--labels",
                        f"{src}/{split}-labels", "--out", f"{self.data}/{split}")
        self.src = src
        # Shards of equal size (all but the last) for the foreign-shard subject.
        self.sharded = os.path.join(self.work, "sharded")
        self.stoker("convert", "idx", "--images", f"{src}/train-images", "--labels",
                    f"{src}/train-labels", "--out", self.sharded, "--shard-mb", "1")
        self.inputs = {"data": digest_tree(self.data), "src": digest_tree(src)}
        straight = os.path.join(self.work, "straight.jsonl")
        self.stoker("train", "--data", self.data, *TRAIN_ARGS, "--log", straight)
        self.straight_loss = self.final_loss(straight)

    @staticmethod
    def final_loss(log):
        records = [json.loads(line) for line in open(log)]
        epochs = [r for r in records if r["record"] == "epoch"]
        return (epochs[-1]["epoch"], epochs[-1]["train_loss"]) if epochs else None

    def kill(self, argv, delay, pattern, env=None):
        """Starts argv, sends `pattern` after `delay` seconds; returns (status, stderr). The
        pattern ("PIPE",) instead closes the read end of its stdout after the first line."""
        if pattern == ("PIPE",):
            return self.close_pipe(argv, env)
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             env=env)
        time.sleep(delay)
        for i, name in enumerate(pattern):
            if p.poll() is not None:
                break
            if i:
                time.sleep(self.rng.uniform(0, 0.05))
            try:
                p.send_signal(getattr(signal, name))
            except ProcessLookupError:
                break
        try:
            _, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
            return "hang", err
        self.kills += 1
        status = p.returncode if p.returncode >= 0 else 128 - p.returncode
        return status, err

    def close_pipe(self, argv, env):
        """`argv | head -1`: its stdout's reader goes after one line; returns (status, stderr)."""
        err_path = os.path.join(self.work, "pipe.err")
        with open(err_path, "w") as err_file:
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err_file, env=env)
            p.stdout.readline()
            p.stdout.close()
            try:
                p.wait(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                return "hang", ""
        self.kills += 1
        status = p.returncode if p.returncode >= 0 else 128 - p.returncode
        return status, open(err_path).read()

    def check(self, what, ok, detail=""):
        if not ok:
            self.failures.append(f"{what}: {detail}")
        return ok

    def inputs_unchanged(self, what):
        return (self.check(what, digest_tree(self.data) == self.inputs["data"],
                           "the training data changed")
                and self.check(what, digest_tree(self.src) == self.inputs["src"],
                               "the source files changed"))

    def train_campaign(self, kills):
        ckpt = os.path.join(self.work, "ckpt")
        log = os.path.join(self.work, "train.jsonl")
        shutil.rmtree(ckpt, ignore_errors=True)
        if os.path.exists(log):
            os.remove(log)
        argv = [self.args.stoker, "train", "--data", self.data, *TRAIN_ARGS, "--checkpoint-dir",
                ckpt, "--resume", "--log", log]
        ok = True
        for _ in range(kills):
            pattern = self.rng.choice(TRAIN_PATTERNS)
            records = self.log_lines(log)
            status, err = self.kill(argv, self.rng.uniform(0.0, self.args.train_seconds), pattern)
            what = f"train {'+'.join(pattern)}"
            self.counts[("train", "+".join(pattern))] += 1
            # SIGHUP or SIGPIPE before the process installed its handlers (while it starts):
            # nothing had begun, so nothing is lost; once it logs its run, it must stop cleanly.
            early = (status in (128 + signal.SIGHUP, 128 + signal.SIGPIPE)
                     and self.log_lines(log) == records)
            passed = (self.check(what, status in ACCEPTED or early, f"exit {status}: {err.strip()}")
                      and self.inputs_unchanged(what) and self.checkpoint_complete(what, ckpt))
            ok = ok and passed
            self.say(what, status, passed)
        r = subprocess.run(argv, capture_output=True, text=True)
        ok = self.check("train resumed to the end", r.returncode == 0, r.stderr) and ok
        final = self.final_loss(log) if r.returncode == 0 else None
        ok = self.check("train resumed to the end", final == self.straight_loss,
                        f"final (epoch, loss) {final}, a straight run's {self.straight_loss}") and ok
        ok = self.check("train resumed to the end", not leftovers(self.work),
                        f"left behind: {leftovers(self.work)}") and ok
        return ok

    @staticmethod
    def log_lines(log):
        return sum(1 for _ in open(log, "rb")) if os.path.exists(log) else 0

    def checkpoint_complete(self, what, ckpt):
        latest = os.path.join(ckpt, "LATEST")
        if not os.path.exists(latest):
            return True  # killed before the first checkpoint: nothing to lose yet
        sub = os.path.join(ckpt, open(latest).read().strip())
        complete = all(os.path.isfile(os.path.join(sub, f))
                       for f in ("meta.json", "model.pt", "optimizer.pt", "rng.pt"))
        return self.check(what, complete, f"LATEST names {sub}, which is not complete")

    def output_campaign(self, subject, argv, out, env=None, seconds=1.0):
        pattern = self.rng.choice(PATTERNS)
        shutil.rmtree(out, ignore_errors=True)
        status, err = self.kill(argv, self.rng.uniform(0.0, seconds), pattern, env)
        what = f"{subject} {'+'.join(pattern)}"
        self.counts[(subject, "+".join(pattern))] += 1
        # Python reports an interrupt during its clean-up (a second SIGINT) as an uncaught
        # KeyboardInterrupt, exit 1: an interrupt, not a failure, if nothing is lost.
        interrupted = status == 1 and err.rstrip().endswith("KeyboardInterrupt")
        passed = self.check(what, status in ACCEPTED or interrupted,
                            f"exit {status}: {err.strip()}")
        passed = self.inputs_unchanged(what) and passed
        if os.path.exists(out):  # complete, or not there at all
            passed = self.check(what, self.stoker("verify", out, check=False).returncode == 0,
                                f"{out} exists but does not verify") and passed
            shutil.rmtree(out)
        again = subprocess.run(argv, capture_output=True, text=True, env=env)
        passed = self.check(what, again.returncode == 0, f"the next run failed: {again.stderr}") and passed
        passed = self.check(what, not leftovers(self.work),
                            f"left behind after the next run: {leftovers(self.work)}") and passed
        shutil.rmtree(out, ignore_errors=True)
        self.say(what, status, passed)
        return passed

    def collide_campaign(self):
        """Two outputs of one run naming one file: refused before any work, nothing changed."""
        base = os.path.join(self.work, "collide")
        shutil.rmtree(base, ignore_errors=True)
        ck, report, f = (os.path.join(base, n) for n in ("ck", "report", "out.file"))
        os.makedirs(ck)
        os.makedirs(report)
        targets = {"--log": f, "--trace": f, "--save-model": f}
        cases = [(a, b, f) for a in targets for b in targets if a != b]
        cases += [(a, "--checkpoint-dir", os.path.join(ck, "LATEST")) for a in targets]
        cases += [(a, "--report", os.path.join(report, n)) for a in targets
                  for n in ("index.html", "report.json")]
        first, second, path = self.rng.choice(cases)
        with open(path, "w") as out:
            out.write("the user's\n")
        argv = ["train", "--data", self.data, *TRAIN_ARGS, first, path]
        argv += [second, ck if second == "--checkpoint-dir" else
                 report if second == "--report" else path]
        self.runs += 1
        r = self.stoker(*argv, check=False)
        what = f"collide {first} {second}"
        self.counts[("collide", f"{first} {second}")] += 1
        lines = r.stderr.strip().split("\n")
        passed = (self.check(what, r.returncode == 1 and len(lines) == 1 and first in r.stderr
                             and second in r.stderr, f"exit {r.returncode}: {r.stderr.strip()}")
                  and self.check(what, open(path).read() == "the user's\n",
                                 f"{path} was overwritten")
                  and self.check(what, os.listdir(ck) == [] or path.startswith(ck),
                                 f"the run wrote into {ck}: {os.listdir(ck)}"))
        self.say(what, r.returncode, passed)
        return passed

    def dotdot_campaign(self):
        """convert --out L/hop/../O with hop a link elsewhere, killed at random."""
        base = os.path.join(self.work, "dotdot")
        shutil.rmtree(base, ignore_errors=True)
        os.makedirs(os.path.join(base, "lx"))
        os.makedirs(os.path.join(base, "elsewhere", "dl"))
        os.symlink(os.path.join(base, "elsewhere", "dl"), os.path.join(base, "lx", "dl"))
        mine = os.path.join(base, "elsewhere", USERS_FOLDER)
        os.makedirs(mine)
        with open(os.path.join(mine, "notes.txt"), "w") as f:
            f.write("mine")
        argv = [self.args.stoker, "convert", "idx", "--images", f"{self.src}/big-images",
                "--labels", f"{self.src}/big-labels", "--out",
                os.path.join(base, "lx", "dl", "..", "ds")]
        passed = self.output_campaign("dotdot", argv, os.path.join(base, "elsewhere", "ds"))
        passed = self.check("dotdot", not os.path.exists(os.path.join(base, "lx", "ds")),
                            "the dataset was written beside the link") and passed
        passed = self.check("dotdot", os.path.exists(os.path.join(mine, "notes.txt")),
                            f"{mine} was removed") and passed
        shutil.rmtree(base, ignore_errors=True)
        return passed

    def foreign_campaign(self):
        """Another shard copied in place over one a `--verify always` run reads."""
        data = os.path.join(self.work, "foreign")
        shutil.rmtree(data, ignore_errors=True)
        shutil.copytree(self.sharded, data)
        shards = sorted(n for n in os.listdir(data) if n.endswith(".stk"))[:-1]  # equal sizes
        victim, other = self.rng.sample(shards, 2)
        p = subprocess.Popen([self.args.stoker, "train", "--data", data, *TRAIN_ARGS[2:],
                              "--epochs", "1000", "--verify", "always"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(self.rng.uniform(0.5, self.args.train_seconds + 0.5))
        with open(os.path.join(data, other), "rb") as f:
            foreign = f.read()
        with open(os.path.join(data, victim), "r+b") as f:  # in place, no truncation
            f.write(foreign)
        try:
            _, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        self.runs += 1
        what = "foreign shard"
        self.counts[("foreign", "in place")] += 1
        passed = self.check(what, p.returncode == 1 and err.count("\n") == 1
                            and os.path.join(data, victim) in err and "internal" not in err,
                            f"exit {p.returncode}: {err.strip()}")
        shutil.rmtree(data, ignore_errors=True)
        self.say(what, p.returncode, passed)
        return passed

    def start_server(self):
        """nginx serving the sharded dataset as ROOT/ds; None where nginx is missing."""
        root = os.path.join(self.work, "root")
        os.makedirs(root)
        shutil.copytree(self.sharded, os.path.join(root, "ds"))
        try:
            self.server = servers.start_nginx(root, os.path.join(self.work, "nginx"))
        except servers.Missing as e:
            print(f"no remote subjects: {e}")
            return None
        sizes = sorted((os.path.getsize(os.path.join(self.sharded, n))
                        for n in os.listdir(self.sharded) if n.endswith(".stk")), reverse=True)
        self.floor_gb = (sizes[0] + sizes[1]) / 1e9
        return self.server

    def proxy(self, fault):
        """A fault proxy in front of nginx serving `fault`: (its Popen, "host:port")."""
        script = ({"rate_mb_s": 0.5} if fault == "trickle"
                  else {"faults": [REMOTE_FAULTS[fault]]})
        path = os.path.join(self.work, "fault-script.json")
        with open(path, "w") as f:
            json.dump(script, f)
        upstream = self.server.url.split("://", 1)[1]
        p = subprocess.Popen([sys.executable, PROXY, "--upstream", upstream, "--script", path],
                             stdout=subprocess.PIPE, text=True)
        return p, p.stdout.readline().split()[1]

    def clean_verify(self, what, cache):
        """A run with no fault over `cache` verifies; no .part is left."""
        r = self.stoker("verify", f"{self.server.url}/ds", "--cache-dir", cache, check=False)
        parts = [os.path.join(d, n) for d, _, names in os.walk(cache) for n in names
                 if n.endswith(".part")]
        return (self.check(what, r.returncode == 0, f"the clean run failed: {r.stderr.strip()}")
                and self.check(what, not parts, f"left behind: {parts}"))

    def remote_campaign(self):
        fault = self.rng.choice(sorted(REMOTE_FAULTS))
        # Left alone, a stalled run would take its 30 s low-speed limit per attempt.
        pattern = self.rng.choice(PATTERNS + ([("none",)] if fault != "stall" else []))
        cache = os.path.join(self.work, "cache-remote")
        shutil.rmtree(cache, ignore_errors=True)
        proxy, address = self.proxy(fault)
        url = f"http://user:{PASSWORD}@{address}/ds?X-Amz-Signature={SIGNATURE}"
        argv = [self.args.stoker, "verify", url, "--cache-dir", cache]
        env = dict(os.environ, STOKER_RETRY_SECONDS="3")
        what = f"remote {fault} {'+'.join(pattern)}"
        self.counts[("remote", f"{fault} {'+'.join(pattern)}")] += 1
        try:
            if pattern == ("none",):
                self.runs += 1
                start = time.monotonic()
                r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=200)
                status, err = r.returncode, r.stdout + r.stderr
                passed = self.check(what, status == 0 or (status == 1 and err.count("\n") == 1
                                                          and f"{address}/ds" in err),
                                    f"exit {status}: {err.strip()}")
            else:
                start = time.monotonic()
                delay = self.rng.uniform(0.0, 1.5)
                status, err = self.kill(argv, delay, pattern, env)
                took = time.monotonic() - start - delay
                passed = self.check(what, status in ACCEPTED or (status == 1 and
                                                                  err.count("\n") == 1),
                                    f"exit {status}: {err.strip()}")
                passed = self.check(what, took < 10 or status == 0,
                                    f"ended {took:.1f} s after the interrupt") and passed
            passed = self.check(what, PASSWORD not in err and SIGNATURE not in err,
                                f"a secret shows: {err.strip()}") and passed
            passed = self.check(what, "internal" not in err and "Traceback" not in err,
                                err.strip()) and passed
        finally:
            proxy.terminate()
            proxy.wait()
        passed = self.clean_verify(what, cache) and passed
        self.say(what, status, passed)
        return passed

    def shared_campaign(self):
        pattern = self.rng.choice(PATTERNS)
        cache = os.path.join(self.work, "cache-shared")
        shutil.rmtree(cache, ignore_errors=True)
        argv = [self.args.stoker, "verify", f"{self.server.url}/ds", "--cache-dir", cache,
                "--cache-gb", repr(self.floor_gb)]
        peers = [subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True) for _ in range(2)]
        status, err = self.kill(argv, self.rng.uniform(0.0, 1.0), pattern)
        what = f"shared {'+'.join(pattern)}"
        self.counts[("shared", "+".join(pattern))] += 1
        passed = self.check(what, status in ACCEPTED, f"exit {status}: {err.strip()}")
        for peer in peers:
            try:
                _, peer_err = peer.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                peer.kill()
                _, peer_err = peer.communicate()
            passed = self.check(what, peer.returncode == 0,
                                f"a peer: exit {peer.returncode}: {peer_err.strip()}") and passed
        passed = self.clean_verify(what, cache) and passed
        self.say(what, status, passed)
        return passed

    def say(self, what, status, passed):
        if self.args.verbose:
            print(f"{'ok  ' if passed else 'FAIL'} {what}: exit {status}", flush=True)

    def run(self):
        self.setup()
        convert_argv = [self.args.stoker, "convert", "idx", "--images", f"{self.src}/big-images",
                        "--labels", f"{self.src}/big-labels", "--out",
                        os.path.join(self.work, "converted")]
        writer_script = os.path.join(self.work, "write.py")
        with open(writer_script, "w") as f:
            f.write("import numpy as np, stoker, sys\n"
                    "with stoker.DatasetWriter(sys.argv[1], {'image': ('uint8', (1, 28, 28)), "
                    "'label': 'int64'}) as w:\n"
                    "    for i in range(40000):\n"
                    "        w.append({'image': np.full((1, 28, 28), i % 256, np.uint8), "
                    "'label': i % 10})\n")
        passed = failed = 0
        subjects = (["train", "convert", "dotdot", "collide", "foreign"]
                    + (["writer"] if self.args.python else [])
                    + (["remote", "shared"] if self.start_server() else []))
        subjects = [s for s in subjects if not self.args.only or s in self.args.only]
        while self.kills + self.runs < self.args.kills:
            subject = self.rng.choice(subjects)
            before = len(self.failures)
            if subject == "train":
                self.train_campaign(self.rng.randint(1, 4))
            elif subject == "convert":
                self.output_campaign("convert", convert_argv, convert_argv[-1])
            elif subject == "dotdot":
                self.dotdot_campaign()
            elif subject == "collide":
                self.collide_campaign()
            elif subject == "foreign":
                self.foreign_campaign()
            elif subject == "remote":
                self.remote_campaign()
            elif subject == "shared":
                self.shared_campaign()
            else:
                out = os.path.join(self.work, "written")
                self.output_campaign("writer", [self.args.python, writer_script, out], out,
                                     seconds=3.0)
            if len(self.failures) == before:
                passed += 1
            else:
                failed += 1
        print(f"{self.kills} kills and {self.runs} checked runs in {passed + failed} campaigns:")
        for (subject, pattern), n in sorted(self.counts.items()):
            print(f"  {subject:8} {pattern:24} {n}")
        for failure in self.failures:
            print(f"FAILED {failure}")
        print(f"{passed} passed, {failed} failed")
        if getattr(self, "server", None):
            self.server.stop()
        if not self.args.keep:
            shutil.rmtree(self.work, ignore_errors=True)
        return failed == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stoker", required=True, help="the stoker binary")
    parser.add_argument("--python", help="a Python with the stoker package (the writer subject)")
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--train-seconds", type=float, default=2.0,
                        help="kill a training run within this many seconds of its start")
    parser.add_argument("--work", help="where to make the working directory")
    parser.add_argument("--keep", action="store_true", help="keep the working directory")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--only", nargs="+", help="run these subjects only")
    sys.exit(0 if Harness(parser.parse_args()).run() else 1)


if __name__ == "__main__":
    main()
