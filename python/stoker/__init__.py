"""stoker: keeps accelerators fed.

A sharded, checksummed dataset format and a multithreaded loader whose batches arrive as
torch tensors without a copy (DLPack). The native part links no LibTorch, so it works with
whatever PyTorch the process has.
"""

from stoker import transforms
from stoker._stoker import Error, __version__, dataset_format_version
from stoker.loader import Loader
from stoker.sources import ImageFolder, WebDataset
from stoker.tools import convert, inspect, push, verify
from stoker.bulk_write import IMAGE_SCHEMA, image_sample, write_dataset
from stoker.dataset_writer import DatasetWriter

__all__ = ["DatasetWriter", "Error", "IMAGE_SCHEMA", "ImageFolder", "Loader", "__version__",
           "convert", "dataset_format_version", "image_sample", "inspect", "push", "transforms",
           "verify", "WebDataset", "write_dataset"]
