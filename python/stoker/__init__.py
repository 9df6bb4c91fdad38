"""stoker: keeps accelerators fed.

A sharded, checksummed dataset format and a multithreaded loader whose batches arrive as
torch tensors without a copy (DLPack). The native part links no LibTorch, so it works with
whatever PyTorch the process has.
"""

from stoker import transforms
from stoker._stoker import Error, __version__, dataset_format_version
from stoker.loader import Loader
from stoker.writer import DatasetWriter

__all__ = ["DatasetWriter", "Error", "Loader", "__version__", "dataset_format_version",
           "transforms"]
