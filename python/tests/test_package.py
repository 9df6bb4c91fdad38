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
