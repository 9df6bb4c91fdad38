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
