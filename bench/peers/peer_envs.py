"""Where bench/peers/setup.sh puts each peer's environment, and whether it is there: the
Python to run a peer with, or the one line that says why it cannot run."""
import os
import sys

PEERS_DIR = os.environ.get("STOKER_PEERS", os.path.join(
    os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "stoker", "peers"))


def env_python(env):
    """The Python of environment `env` under PEERS_DIR (None: the project's, running this)."""
    return sys.executable if env is None else os.path.join(PEERS_DIR, env, "bin", "python")


def env_missing(env):
    """The one-line reason environment `env` cannot run (its setup failed or never ran), or
    None (also for None, the project's)."""
    if env is None:
        return None
    failed = os.path.join(PEERS_DIR, env + ".failed")
    if os.path.exists(failed):
        with open(failed) as f:
            return "not installed: " + f.read().strip()
    if not os.path.exists(os.path.join(PEERS_DIR, env, "peer-stamp")):
        return f"not installed (bash bench/peers/setup.sh {env})"
    return None
