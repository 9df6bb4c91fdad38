"""The mark of the tests that read Parquet or Arrow files: skipped, with the reason, where
pyarrow (which writes their files) is missing or the extension was built without Parquet
(cmake/StokerParquet.cmake: a source build beside a pyarrow other than the pinned one, where
every Parquet and Arrow source refuses in one line), as video's are (video_build.py)."""
import importlib.util

import pytest

from stoker import _stoker

if importlib.util.find_spec("pyarrow") is None:
    MISSING = "pyarrow is not installed"
elif not _stoker.with_parquet:
    MISSING = ("stoker was built without Parquet (STOKER_WITH_PARQUET: built from source beside "
               "a pyarrow other than the pinned one, INSTALL.md)")
else:
    MISSING = ""

needs_parquet = pytest.mark.skipif(bool(MISSING), reason=MISSING)
