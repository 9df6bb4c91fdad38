"""The `stoker` command-line binary of the build, for tests that run it."""
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def stoker_cli():
    """$STOKER_CLI, else $STOKER_BUILD_DIR/stoker (build/); the test skipped where it is not
    built."""
    path = os.environ.get("STOKER_CLI") or os.path.join(
        ROOT, os.environ.get("STOKER_BUILD_DIR", "build"), "stoker")
    if not os.access(path, os.X_OK):
        pytest.skip(f"{path}: no stoker binary (cmake --build build --target stoker)")
    return path
