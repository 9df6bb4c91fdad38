"""Scripts run under torchrun by the distributed tests and the examples' tests."""

import subprocess
import sys


def torchrun(nproc, script, *args, timeout=300, options=()):
    """The finished torchrun (output captured) of `script` (a path) on `nproc` processes with
    `args`, torchrun's own `options` (e.g. ("--max-restarts", "1")) before them: torchrun's own
    module, run by this interpreter (the one with stoker installed); torch 1.13's launcher needs
    --redirects/--tee on Python 3.11; `--` ends torchrun's options, so that none of the
    script's is taken for one of torchrun's (docs/DISTRIBUTED.md, "torchrun notes")."""
    return subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
         str(nproc), "--redirects", "1", "--tee", "1", *options, "--", str(script),
         *map(str, args)],
        capture_output=True, text=True, timeout=timeout)


def torchrun_text(tmp_path, nproc, text, *args, timeout=300):
    """torchrun() of a script given as text (written to tmp_path/script.py)."""
    (tmp_path / "script.py").write_text(text)
    return torchrun(nproc, tmp_path / "script.py", *args, timeout=timeout)
