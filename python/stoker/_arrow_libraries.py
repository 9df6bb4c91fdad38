"""Arrow's C++ libraries, which the extension links to read Parquet (cmake/StokerParquet.cmake).
Imported first (stoker/__init__.py), this module imports the extension. The wheel of
scripts/build_wheel.sh carries its own copies (auditwheel's renamed libarrow-*.so, beside any
pyarrow or none); a build from source links the pinned pyarrow's, which this module then loads
from the installed pyarrow, wherever it is, when the extension does not find them itself.
pyarrow itself is not imported. An extension built without Parquet needs none of them."""

import ctypes
import importlib
import importlib.util
import os

PYARROW = "26.0.1"  # the pyarrow the extension is built against


def _load() -> bool:
    """Loads pyarrow's libarrow and libparquet of PYARROW's version; False where they are not
    installed."""
    major, minor = (int(part) for part in PYARROW.split(".")[:2])
    spec = importlib.util.find_spec("pyarrow")
    folder = spec.submodule_search_locations[0] if spec and spec.submodule_search_locations else ""
    paths = [os.path.join(folder, f"lib{name}.so.{major * 100 + minor}")
             for name in ("arrow", "parquet")]
    if not folder or not all(os.path.exists(path) for path in paths):
        return False
    for path in paths:
        ctypes.CDLL(path)  # RTLD_LOCAL: its exported OpenSSL must not shadow the system's
    return True


def _missing_arrow(error: ImportError) -> bool:
    return "libarrow" in str(error) or "libparquet" in str(error)


try:
    importlib.import_module("stoker._stoker")
except ImportError as error:
    if not _missing_arrow(error):
        raise
    if not _load():
        raise ImportError(f"stoker needs pyarrow {PYARROW} (Arrow's C++ libraries read "
                          f"Parquet): pip install pyarrow=={PYARROW}") from None
    importlib.import_module("stoker._stoker")
