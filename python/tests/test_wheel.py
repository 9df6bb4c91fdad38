"""The wheel of scripts/build_wheel.sh as a user installs it: a manylinux wheel that carries its
native libraries (Arrow's included) under auditwheel's renamed files, installed with no compiler,
no -dev package and no network into a fresh environment that sees torch; there stoker imports
before and after torch, runs a loader over a dataset it writes and reads Parquet, beside the
pinned pyarrow, beside another version and without pyarrow.

The wheel is $STOKER_WHEEL (scripts/test.sh's python stage builds it), else built here (minutes:
the incremental build in build-python/ and auditwheel's copies)."""

import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

pyarrow = pytest.importorskip("pyarrow")  # writes the Parquet file
pq = pytest.importorskip("pyarrow.parquet")

ROOT = Path(__file__).resolve().parents[2]
# A pyarrow of another version than the Arrow the wheel carries (scripts/setup.sh installs it:
# 17.0.0 has no wheel for CPython 3.13 and later).
OTHER_PYARROW = "17.0.0" if sys.version_info < (3, 13) else "18.0.0"
# What the extension links besides glibc and the C++ runtime, carried renamed (lib<name>-<hash>);
# FFmpeg (but for Debian's libdav1d, its AV1 decoder) and libjpeg are linked in
# (scripts/build_ffmpeg.sh, scripts/build_libjpeg.sh).
CARRIED = ("libspng", "libhwy", "libxxhash", "libcurl", "libdav1d", "libarrow",
           "libparquet")
# What it still loads from the system: glibc's, the C++ runtime, and the libraries the manylinux
# policy lets a wheel assume (auditwheel carries none of them) that it links: zlib and expat.
SYSTEM = {"linux-vdso.so.1", "ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6", "libdl.so.2",
          "libpthread.so.0", "librt.so.1", "libresolv.so.2", "libstdc++.so.6", "libgcc_s.so.1",
          "libz.so.1", "libexpat.so.1"}


# The environment of the commands: no PYTHONPATH, which may name the source tree's package, and
# no LD_PRELOAD (scripts/test.sh preloads a library into the suite's processes, which ldd lists).
ENV = {name: value for name, value in os.environ.items()
       if name not in ("PYTHONPATH", "LD_PRELOAD")}


def run(*command, **kwargs):
    done = subprocess.run(command, capture_output=True, text=True, env=ENV, **kwargs)
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    if os.environ.get("STOKER_WHEEL"):
        return Path(os.environ["STOKER_WHEEL"])
    out = tmp_path_factory.mktemp("wheel")
    return Path(run("bash", str(ROOT / "scripts/build_wheel.sh"), str(out)).split()[-1])


def test_a_manylinux_wheel_whose_libraries_are_carried_renamed(wheel, tmp_path):
    # The tag auditwheel's repair gave after checking every library's symbol versions against it
    # (`auditwheel show` says the same, in half a minute).
    archive = zipfile.ZipFile(wheel)
    info = archive.read(next(n for n in archive.namelist() if n.endswith(".dist-info/WHEEL")))
    assert re.search(r"^Tag: cp3\d+-cp3\d+-manylinux_2_\d+_x86_64$", info.decode(), re.M), info
    assert re.search(r"-manylinux_2_\d+_x86_64\.whl$", wheel.name)
    carried = [Path(n).name for n in archive.namelist() if n.startswith("stoker.libs/")]
    for library in CARRIED:
        assert any(re.match(rf"{library}-[0-9a-f]{{8}}\.so", name) for name in carried), carried
    assert not any(name.startswith(("libtorch", "libc10", "libpython")) for name in carried)
    assert not any(name.startswith(("libav", "libsw", "libjpeg", "libX", "libglib"))
                   for name in carried)
    (extension,) = [n for n in archive.namelist() if re.fullmatch(r"stoker/_stoker.*\.so", n)]
    needed = run("readelf", "-d", archive.extract(extension, tmp_path))
    assert re.search(r"\[libarrow-[0-9a-f]{8}\.so\.\d+\]", needed), needed
    assert "[libarrow.so" not in needed and "[libjpeg.so" not in needed
    metadata = archive.read(next(n for n in archive.namelist() if n.endswith("/METADATA")))
    requires = [line for line in metadata.decode().splitlines()
                if line.startswith("Requires-Dist")]
    assert requires == ["Requires-Dist: numpy"]  # no pyarrow, no torch


# The pyarrow each environment sees: the project environment's, another version (beside the
# project environment, scripts/setup.sh), or none.
PYARROWS = [pyarrow.__version__, OTHER_PYARROW, None]


@pytest.fixture(scope="module", params=PYARROWS, ids=lambda version: f"pyarrow {version}")
def environment(request, wheel, tmp_path_factory):
    """A fresh virtual environment with the wheel installed offline (no build, no dependency
    fetched), seeing this interpreter's torch environment, but for its pyarrow, through a .pth
    file, and the pyarrow of `request.param`. Returns its Python and that version."""
    folder = tmp_path_factory.mktemp("environment")
    torch_site = Path(torch.__file__).resolve().parents[1]
    view = folder / "torch-site"
    view.mkdir()
    for entry in torch_site.iterdir():
        if not entry.name.startswith(("stoker", "pyarrow")):
            (view / entry.name).symlink_to(entry)
    if request.param == pyarrow.__version__:
        (view / "pyarrow").symlink_to(Path(pyarrow.__file__).parent)
    paths = [view]
    if request.param == OTHER_PYARROW:
        venv = run("bash", str(ROOT / "scripts/setup.sh"), "--venv-path").strip()
        paths.append(Path(venv, f"pyarrow-{OTHER_PYARROW}"))
        assert (paths[-1] / "pyarrow").is_dir(), f"no {paths[-1]}: run scripts/setup.sh"
    run(sys.executable, "-m", "venv", str(folder / "venv"))
    python = folder / "venv/bin/python"
    site = run(str(python), "-c", "import site; print(site.getsitepackages()[0])").strip()
    Path(site, "torch-site.pth").write_text("".join(f"{path}\n" for path in paths))
    run(str(python), "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", str(wheel))
    return python, request.param


def run_in(environment, code, cwd):
    return run(str(environment[0]), "-c", code, cwd=cwd)


@pytest.mark.parametrize("order", [("stoker", "torch"), ("torch", "stoker")])
def test_imports_in_either_order(environment, order, tmp_path):
    python, version = environment
    code = (f"import {', '.join(order)}, importlib.util\n"
            "print(stoker.__file__, importlib.util.find_spec('pyarrow') and\n"
            "      __import__('pyarrow').__version__)")
    path, found = run_in(environment, code, tmp_path).split()
    assert path.startswith(str(python.parents[1]))  # the wheel's stoker, not the source tree's
    assert found == str(version)


def test_the_system_gives_only_glibc_the_cxx_runtime_and_what_manylinux_assumes(environment,
                                                                              tmp_path):
    code = "import stoker._stoker as e; print(e.__file__)"
    listed = run("ldd", run_in(environment, code, tmp_path).strip())
    assert "not found" not in listed, listed
    system = {Path(line.split()[0]).name for line in listed.splitlines()
              if "stoker.libs/" not in line}
    assert system <= SYSTEM, sorted(system - SYSTEM)


def png(value):
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(np.full((6, 8, 3), value, np.uint8)).save(out, "PNG")
    return out.getvalue()


LOADER = """
import json, numpy as np, stoker, torch
from PIL import Image
from stoker import transforms as S
stoker.write_dataset("written", [(Image.fromarray(np.full((6, 8, 3), 10 * i, np.uint8)), i % 3)
                                 for i in range(10)], workers=0)
out = {}
for name, source, steps in (("written", "written", [S.PILToTensor()]),
                            ("parquet", stoker.Parquet("t.parquet"),
                             [S.Resize(6), S.CenterCrop(6), S.PILToTensor()])):
    loader = stoker.Loader(source, batch_size=4, shuffle=False, transforms=S.Compose(steps),
                           cache_dir="cache")
    batches = list(loader)
    images = torch.cat([images for images, _ in batches])
    out[name] = {"shape": list(images.shape), "labels": torch.cat([b[1] for b in batches]).tolist(),
                 "means": images.float().mean(dim=(1, 2, 3)).tolist()}
    del loader
print(json.dumps(out))
"""


def test_a_loader_over_a_written_dataset_and_over_parquet(environment, tmp_path):
    pa = pyarrow
    pq.write_table(pa.table({"image": [{"bytes": png(10 * i), "path": None} for i in range(10)],
                             "label": pa.array([i % 3 for i in range(10)], pa.int64())}),
                   tmp_path / "t.parquet", row_group_size=4)
    # With pyarrow, its own Arrow is loaded first and reads the file too.
    first = "import pyarrow.parquet as pq\nassert pq.read_table('t.parquet').num_rows == 10\n"
    out = json.loads(run_in(environment, (first if environment[1] else "") + LOADER, tmp_path))
    labels = [i % 3 for i in range(10)]
    means = [10.0 * i for i in range(10)]
    assert out["written"] == {"shape": [10, 3, 6, 8], "labels": labels, "means": means}
    assert out["parquet"] == {"shape": [10, 3, 6, 6], "labels": labels, "means": means}
