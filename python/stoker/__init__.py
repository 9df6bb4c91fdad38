"""stoker: keeps accelerators fed.

A sharded, checksummed dataset format and a multithreaded loader whose batches arrive as
torch tensors without a copy (DLPack). The native part links no LibTorch, so it works with
whatever PyTorch the process has.
"""

from stoker import _arrow_libraries  # noqa: F401  (before the extension, which links them)
from stoker import transforms
from stoker import _sample_values, _stoker
from stoker._stoker import Error
from stoker.loader import Loader
from stoker._python_steps import SampleError
from stoker.masks import decode_masks
from stoker.settings import Batches, Feed, Order, Storage
from stoker.sources import (Arrow, Dataset, ImageFolder, Mixture, Parquet, Tokens, VideoFolder,
                            WebDataset)
from stoker.tools import convert, inspect, push, verify
from stoker.bulk_write import image_sample, write_dataset
from stoker.dataset_writer import DatasetWriter

__version__ = _stoker.__version__
"""stoker's version, as ``stoker --version`` prints it."""

dataset_format_version = _stoker.dataset_format_version
"""The newest dataset format version (docs/FORMAT.md) this stoker reads and writes."""

IMAGE_SCHEMA = _sample_values.IMAGE_SCHEMA
"""An image dataset's fields, (name, dtype, shape), as ``stoker convert imagefolder`` writes
them: the encoded image, its label, height, width, and the original file's size and checksum."""

__all__ = ["Arrow", "Batches", "Dataset", "DatasetWriter", "Error", "Feed", "IMAGE_SCHEMA", "ImageFolder",
           "Loader", "Mixture", "Order", "Parquet", "SampleError", "Storage",
           "__version__", "convert", "dataset_format_version", "decode_masks", "image_sample",
           "inspect", "push", "Tokens", "transforms", "verify", "VideoFolder", "WebDataset",
           "write_dataset"]
