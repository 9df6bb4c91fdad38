"""The extension needs no shared library by a name another library of the process may already
answer to: libjpeg is linked in (scripts/build_libjpeg.sh, its symbols hidden), so a library
named `libjpeg.so.62` loaded before stoker does not stand in for it. torchvision 0.19 carries
one (an older libjpeg without jpeg_crop_scanline): a source build that needed `libjpeg.so.62`
could not be imported after it. Here the impostor is a library of that name that defines none
of libjpeg's functions."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import stoker

IMPOSTOR_NAME = "libjpeg.so.62"

# Loads the impostor, then stoker, and decodes a JPEG through it, equal to PIL's decode.
SCRIPT = """
import ctypes, os, sys
ctypes.CDLL(sys.argv[1])
import numpy as np, stoker
from PIL import Image
from stoker import transforms as S
os.makedirs("folder/a")
pixels = np.random.default_rng(0).integers(0, 256, (12, 16, 3), np.uint8)
Image.fromarray(pixels).save("folder/a/x.jpg", quality=90)
loader = stoker.Loader(stoker.ImageFolder("folder"), batch_size=1, transforms=S.PILToTensor(),
                       cache_dir="cache")
images, _ = next(iter(loader))
assert (images[0].permute(1, 2, 0).numpy() == np.asarray(Image.open("folder/a/x.jpg"))).all()
print("decoded")
"""


@pytest.fixture(scope="module")
def impostor(tmp_path_factory):
    compiler = shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler to make the impostor library")
    folder = tmp_path_factory.mktemp("impostor")
    (folder / "impostor.c").write_text("int stoker_test_impostor = 1;\n")
    library = folder / "libjpeg-impostor.so"
    subprocess.run([compiler, "-shared", "-fPIC", f"-Wl,-soname,{IMPOSTOR_NAME}", "-o",
                    str(library), str(folder / "impostor.c")], check=True)
    return library


def test_the_extension_needs_no_libjpeg_by_name():
    needed = subprocess.run(["readelf", "-d", stoker._stoker.__file__], capture_output=True,
                            text=True, check=True).stdout
    assert "NEEDED" in needed
    assert "[libjpeg" not in needed, needed


def test_a_libjpeg_loaded_first_does_not_stand_in_for_stokers(impostor, tmp_path):
    package = Path(stoker.__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(impostor)], cwd=tmp_path,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(package)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["decoded"]
