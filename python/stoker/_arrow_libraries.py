"""Arrow's C++ libraries, which the extension links to read Parquet (cmake/StokerParquet.cmake),
are pyarrow's: imported first (stoker/__init__.py), this module loads them from the installed
pyarrow, wherever it is, so that the extension's needs are met by the libraries already loaded.
pyarrow itself is not imported. An extension built without Parquet needs none of them."""

import ctypes
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
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    return True


if not _load():
    # An extension built without Parquet (-DSTOKER_WITH_PARQUET=OFF) needs no pyarrow.
    try:
        importlib.import_module("stoker._stoker")
    except ImportError as error:
        if "libarrow" in str(error) or "libparquet" in str(error):
            raise ImportError(f"stoker needs pyarrow {PYARROW} (Arrow's C++ libraries read "
                              f"Parquet): pip install pyarrow=={PYARROW}") from None
        raise
