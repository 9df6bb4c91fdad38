"""A ``webdataset.WebDataset`` of the common classification shape, read natively:

    webdataset.WebDataset(urls, shardshuffle=False).decode("pil").to_tuple("jpg", "cls")
        .map_tuple(transform, target_transform)

(``to_tuple``'s image key may list alternatives, "jpg;png"; ``map_tuple`` may be left out or
give one function), read as ``stoker.WebDataset(urls)`` with the transforms translated: the same
samples (the library's grouping by key, the image decoded to RGB as its "pil" decoder does, the
label the ``cls`` member's number) in the same order, the tars' and their members' (the
library's order with num_workers=0; its workers each take whole tars and interleave them).
Pipelines that shuffle (shards or samples), resample, select, rename, or add stages of their own
are left to the library (None)."""

import sys
from typing import Optional

from stoker._native_dataset import NativeDataset
from stoker.sources import WebDataset

# Stages that change nothing on one process reading a list of tars in order.
_PASSING = {"single_node_only", "split_by_node", "split_by_worker", "check_empty"}
_IMAGE_KEYS = {"jpg", "jpeg", "png", "webp"}


def _name(stage) -> str:
    """A stage's function name: a curried filter's (FilterFunction.f) or a plain function's."""
    function = getattr(stage, "f", stage)
    return getattr(function, "__name__", type(stage).__name__)


def _raising(kw: dict) -> bool:
    """True where a stage's handler is the library's default, which raises on a bad member
    (each of its modules defines its own reraise_exception)."""
    handler = kw.get("handler")
    return handler is None or (getattr(handler, "__name__", "") == "reraise_exception" and
                               getattr(handler, "__module__", "").startswith("webdataset."))


def _plain(stage, wds) -> bool:
    """True for a stage that reads the tars as they are: no shuffling, the library's default
    handlers (raise on a bad member), no file selection or renaming."""
    name = _name(stage)
    if name in _PASSING or isinstance(stage, wds.cache.StreamingOpen):
        return True
    kw = getattr(stage, "kw", {})
    raising = _raising(kw)
    if name == "_shuffle":
        return not stage.args[0]  # shardshuffle=False: a stage that keeps the order
    if name == "tar_file_expander":
        return raising and kw.get("select_files") is None and kw.get("rename_files") is None
    return name == "group_by_keys" and raising and set(kw) <= {"handler"}


def _pil_decoder(stage, wds) -> bool:
    """True for .decode("pil"): the library's image handler making RGB PIL images, and its
    basic handlers (cls as an int)."""
    if _name(stage) != "_map" or not stage.args or not _raising(stage.kw) or \
            not isinstance(stage.args[0], wds.autodecode.Decoder):
        return False
    decoder = stage.args[0]
    images = [h for h in decoder.handlers if isinstance(h, wds.autodecode.ImageHandler)]
    return (len(images) == 1 and images[0].imagespec in ("pil", "pilrgb") and
            not decoder.only and not decoder.partial and
            wds.autodecode.basichandlers in decoder.handlers)


def recognised_webdataset(dataset) -> Optional[NativeDataset]:
    """`dataset` as stoker.WebDataset with its transforms, or None (module docstring)."""
    wds = sys.modules.get("webdataset")
    if wds is None or not isinstance(dataset, wds.DataPipeline):
        return None
    stages = list(dataset.pipeline)
    if not stages or type(stages[0]) is not wds.shardlists.SimpleShardList:
        return None
    urls = list(stages[0].urls)
    rest = [stage for stage in stages[1:] if not _plain(stage, wds)]
    if len(rest) not in (2, 3) or not _pil_decoder(rest[0], wds) or \
            _name(rest[1]) != "_to_tuple" or rest[1].kw:
        return None
    keys = rest[1].args
    if len(keys) != 2 or not set(keys[0].split(";")) <= _IMAGE_KEYS or keys[1] != "cls":
        return None
    functions = (None, None)
    if len(rest) == 3:
        if _name(rest[2]) != "_map_tuple" or set(rest[2].kw) - {"handler"} or \
                not _raising(rest[2].kw):
            return None
        functions = (tuple(rest[2].args) + (None, None))[:2]
    transforms = {name: f for name, f in zip(("image", "label"), functions) if f is not None}
    return NativeDataset(WebDataset(urls), transforms or None, {"dataset": [
        "webdataset's WebDataset is read natively as stoker.WebDataset: the same samples, in "
        "its tars' order"]})
