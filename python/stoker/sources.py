"""The datasets stoker reads natively, as dataset objects a DataLoader would take: each carries
its transforms (as torchvision's datasets do) and answers ``len()``, ``classes``,
``class_to_idx`` and ``samples`` where the data has them. ``stoker.Dataset(path)`` is a dataset
``stoker convert`` wrote (or any path: a folder of datasets, tars, Parquet files or an image
folder, detected); the others read data in place, without ``stoker convert``, each a source
the native loader opens (``_stoker.sources()``, access/source_registry.h):
``stoker.Loader(stoker.ImageFolder(root, transform=recipe))``,
``stoker.Loader(stoker.WebDataset("data-{000..009}.tar"))``,
``stoker.Loader(stoker.Parquet(path))``, ``stoker.Loader(stoker.Arrow(path))``,
``stoker.Loader(stoker.Tokens("train.bin"))``,
``stoker.Loader(stoker.VideoFolder(root, transforms={"video": stoker.transforms.DecodeClip()}))``."""

import math
import numbers
import os

import numpy as np

from stoker import _stoker, _video
from stoker._dataset_view import LoaderDataset
from stoker._paths import native_path
from stoker._token_paths import check_token_path, one_path


def _paths(kind: str, paths) -> list:
    """`paths` (one path or URL, or a list) as a list of str; ValueError naming `kind` for none,
    or a name holding a newline (the native spec's separator)."""
    names = [paths] if isinstance(paths, (str, bytes, os.PathLike)) else list(paths)
    listed = [os.fsdecode(p) for p in names]
    if not listed or any("\n" in p for p in listed):
        raise ValueError(f"{kind}: {paths!r} names no file, or a name holds a newline")
    return listed


class _Source:
    """What the sources share: their transforms ({field: transform}, or one for "image") and
    the dataset's length, classes and samples, read when first asked for (opened with the
    default cache where remote)."""

    source = "auto"
    transforms = None
    _view = None
    boolean_fields = ()  # uint8 fields of 0 and 1 the loader delivers as bool
    batch_cu_seqlens = False  # cu_seqlens delivered flattened over the batch (_cu_seqlens.py)
    # The _params() that change only what a sample carries (its fields, their checks), not
    # which records or tokens make it: a resume may change them, not the others (_shaping()).
    output_params = ()

    def _params(self) -> dict:
        """The source's own parameters (``_stoker.sources()`` names them)."""
        return {}

    def _shaping(self):
        """The parameters that decide which records or tokens make each sample, as JSON
        values: a state_dict keeps them and resumes only into a source of the same
        (_state_shaping.py)."""
        return {k: v for k, v in self._params().items() if k not in self.output_params}

    def _path(self) -> str:
        raise NotImplementedError

    def _location(self) -> str:
        """The location the native source opens (_path()'s)."""
        return native_path(self._path())

    def open(self, global_batch=None, **options):
        """The native loader over this source (``_stoker.LoaderCore``); `options` its cache
        settings and shuffle_window (`global_batch`: a Mixture's)."""
        return _stoker.LoaderCore(self._location(), source=self.source,
                                  source_params=self._params(), **options)

    def view(self) -> LoaderDataset:
        if self._view is None:
            core = self.open()
            self._view = LoaderDataset(_stoker.shown_location(native_path(self._path())),
                                       len(core), core.schema, core.class_names, core.samples)
        return self._view

    def __len__(self):
        return len(self.view())

    @property
    def classes(self) -> list:
        return self.view().classes

    @property
    def class_to_idx(self) -> dict:
        return self.view().class_to_idx

    @property
    def samples(self) -> list:
        return self.view().samples

    @property
    def fields(self) -> list:
        return self.view().fields


class Dataset(_Source):
    """A dataset ``stoker convert`` (or stoker.write_dataset) wrote, by path or ``s3://`` /
    ``http(s)://`` URL; any other path is read as ``stoker.Loader`` detects it (a folder of
    datasets, WebDataset tars, Parquet files, an image folder). ``transforms``: {field:
    transform} or one transform for the "image" field (stoker's, torchvision's or timm's)."""

    def __init__(self, path, transforms=None):
        self.path = os.fsdecode(path)
        self.transforms = transforms

    def _path(self) -> str:
        return self.path

    def __repr__(self):
        return f"stoker.Dataset({self.path!r})"


class ImageFolder(_Source):
    """``root`` in torchvision's ImageFolder layout (a folder per class), read in place: the
    same ``classes``, ``class_to_idx`` and ``samples`` as ``torchvision.datasets.ImageFolder
    (root)``, each file's bytes as the image (JPEG and PNG), its listing cached in the cache
    folder and listed again when a folder in it changes. ``root`` may be an ``http(s)://``
    folder its server lists (an index page) or an ``s3://bucket/prefix/`` folder: the same
    samples, the files downloaded into the cache folder ahead of the loader (listed at every
    open). ``transform`` and ``target_transform`` as torchvision's: on the image, and on the
    class index."""

    source = "imagefolder"

    def __init__(self, root, transform=None, target_transform=None):
        self.root = os.fsdecode(root)
        self.transform = transform
        self.target_transform = target_transform
        transforms = {} if transform is None else {"image": transform}
        if target_transform is not None:
            transforms["label"] = target_transform
        self.transforms = transforms or None

    def _path(self) -> str:
        return self.root

    def __repr__(self):
        return f"stoker.ImageFolder({self.root!r})"


class VideoFolder(_Source):
    """``root`` in the layout of torchvision's Kinetics, UCF101 and HMDB51 video datasets (a
    folder per class), read in place: torchvision's ``classes``, ``class_to_idx`` and
    ``samples`` (``find_classes``, ``make_dataset``), each sample a record ``{"video": the
    file's bytes, "label": its class index}`` (int64); ``transforms={"video":
    stoker.transforms.DecodeClip(...)}`` makes clips. ``extensions``: the endings that make a
    file a sample, in lower case (Kinetics' ``("avi", "mp4")``; UCF101's ``("avi",)``). The
    listing is cached. ``root`` may be an ``http(s)://`` folder URL or an ``s3://`` prefix:
    each record then a reference to its video, whose header and clips' GOPs ``DecodeClip``
    reads by ranged GETs (``RawBytes`` gives the whole file), through the cache. A file that
    cannot be read is a bad record naming it (the loader's ``on_error``).

    ``frames_per_clip``, ``step_between_clips``, ``frame_rate`` (local folders): torchvision's
    ``VideoClips`` arguments: every clip of every video is a sample, video by video, so
    ``len()`` counts clips and sample i is torchvision's clip i, each video indexed once at
    open; decode with ``DecodeClip(sampler="video_clips", ...)``.

    ``clips_per_video`` K (not with ``frames_per_clip``): K samples of each video, clip k its
    sample of part k, so a shuffle mixes every video's clips as torchvision's video reference's
    ``RandomClipSampler`` does; ``DecodeClip``'s samplers (``num_clips=1``) take clip k of the
    K they would take (``sampler="uniform_clips"``: ``UniformClipSampler``'s).
    docs/DATA.md#video-clips says more."""

    source = "videofolder"

    def __init__(self, root, transforms=None, extensions=("avi", "mp4"), frames_per_clip=None,
                 step_between_clips=1, frame_rate=None, clips_per_video=1):
        _video.require("stoker.VideoFolder")
        self.root = os.fsdecode(root)
        self.transforms = transforms
        self.extensions = (extensions,) if isinstance(extensions, str) else tuple(extensions)
        if not self.extensions or any(not e or e != "".join(e.split())
                                      for e in self.extensions):
            raise ValueError(f"VideoFolder: extensions {extensions!r}: give one or more, none "
                             f"empty or holding a space")
        self.frames_per_clip = _count("frames_per_clip", frames_per_clip, none=True)
        self.step_between_clips = _count("step_between_clips", step_between_clips)
        if frame_rate is not None and (isinstance(frame_rate, bool) or not isinstance(
                frame_rate, numbers.Real) or not 0 < frame_rate < float("inf")):
            raise ValueError(f"VideoFolder: frame_rate {frame_rate!r} must be a number above 0 "
                             f"(None: each video's own)")
        self.frame_rate = frame_rate
        if self.frames_per_clip is None and (step_between_clips != 1 or frame_rate is not None):
            raise ValueError("VideoFolder: step_between_clips and frame_rate enumerate clips: "
                             "give frames_per_clip too")
        self.clips_per_video = _count("clips_per_video", clips_per_video)
        if self.frames_per_clip is not None and self.clips_per_video != 1:
            raise ValueError("VideoFolder: clips_per_video samples each video K times; "
                             "frames_per_clip already gives every clip: give one of them")

    def _path(self) -> str:
        return self.root

    def _params(self) -> dict:
        params = {"extensions": " ".join(self.extensions)}
        if self.frames_per_clip is not None:
            params.update(frames_per_clip=self.frames_per_clip,
                          step_between_clips=self.step_between_clips,
                          frame_rate=float(self.frame_rate or 0))
        if self.clips_per_video != 1:
            params.update(clips_per_video=self.clips_per_video)
        return params

    def __repr__(self):
        clips = "" if self.frames_per_clip is None else (
            f", frames_per_clip={self.frames_per_clip}, step_between_clips="
            f"{self.step_between_clips}, frame_rate={self.frame_rate!r}")
        if self.clips_per_video != 1:
            clips += f", clips_per_video={self.clips_per_video}"
        return f"stoker.VideoFolder({self.root!r}, extensions={self.extensions!r}{clips})"


def _count(name: str, value, none: bool = False):
    """`value` as a count of at least 1 (or None where `none`); ValueError naming `name`."""
    if value is None and none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"VideoFolder: {name} {value!r} must be an integer at least 1"
                         + (" (None: a sample per video)" if none else ""))
    return int(value)


class WebDataset(_Source):
    """WebDataset tars read in place: ``urls`` a ``.tar`` file, a folder of them, a brace
    pattern (``"data-{000000..000999}.tar"``, as ``braceexpand`` expands it) or a list of
    these; local paths or ``http(s)://`` and ``s3://`` URLs (an ``s3://bucket/prefix/`` folder
    or an ``http(s)://`` folder its server lists too), remote tars downloaded whole into the cache folder when first needed. Samples are
    grouped by key as the ``webdataset`` library groups them; each sample's
    ``jpg``/``jpeg``/``png``/``webp`` member is the image, its ``cls`` member the label (where
    no sample has one: ``label``, ``class`` or ``txt``), and every other member a field named
    by its extension: a ``.npy`` member's an array of its header's dtype and shape, the others
    bytes as stored (read with ``RawBytes``; a video's with ``DecodeClip``: tars where no
    sample has an image hold the label and those fields alone). Each tar's index (member offsets, checksums and
    .npy headers) is built on first open and kept in the cache folder (a remote tar's keyed by
    its URL, size and ETag), so later runs seek directly and a tar changed since is caught.
    ``label``: the member read as the label ("auto": as above), or None for none (the records'
    label is -1: image-text pairs, whose ``txt`` is a caption). A member whose ``transforms``
    read its bytes (RawBytes, Tokenize: a caption) is read even where some sample lacks it,
    which is then a bad record naming its tar and sample."""

    source = "webdataset"
    output_params = ("label", "fields")

    def __init__(self, urls, transforms=None, label="auto"):
        self.transforms = transforms
        self.urls = _paths("WebDataset", urls)
        if label is not None and (not isinstance(label, str) or not label or
                                  label != "".join(label.split()) or label == "none"):
            raise ValueError(f"WebDataset: label must be 'auto', a member's name or None, not "
                             f"{label!r}")
        self.label = label

    def _path(self) -> str:
        return "\n".join(self.urls)

    def _params(self) -> dict:
        from stoker.transforms import reads_bytes
        named = self.transforms if isinstance(self.transforms, dict) else {}
        fields = [name for name, t in named.items() if reads_bytes(t) and name not in
                  ("image", "label") and name == "".join(name.split())]
        return {"label": "none" if self.label is None else
                "" if self.label == "auto" else self.label, "fields": " ".join(fields)}

    def __repr__(self):
        label = "" if self.label == "auto" else f", label={self.label!r}"
        return f"stoker.WebDataset({self.urls!r}{label})"


class Parquet(_Source):
    """Parquet files read in place, row group by row group: a file, a folder's ``*.parquet``
    files, a glob pattern (``"data/train-*.parquet"``), in name order, or a list of these; or
    ``http(s)://`` and ``s3://`` URLs (a URL, a brace pattern, an ``s3://bucket/prefix/``
    folder or an ``http(s)://`` folder its server lists), each file downloaded whole into the
    cache folder when the loader opens. ``image`` names a binary column, or a struct with a binary ``bytes`` field (Hugging Face datasets' Image feature);
    ``label`` an integer column (Spark's layout: ``image="jpg", label="cls"``). ``video`` names
    a column of encoded videos (binary, or a struct's ``bytes``) read instead of the image: each
    sample's ``video`` field is its bytes, for ``stoker.transforms.DecodeClip``; where a
    struct's bytes are null, the file at its ``path`` (Hugging Face's Video of files), read as
    an image's path is (a relative one in the Parquet file's folder, local files only). Only
    those columns are read; the class names are Hugging Face's ClassLabel names where the files
    have them."""

    source = "parquet"
    output_params = ("image_column", "label_column", "video_column")

    def __init__(self, paths, image="image", label="label", transforms=None, video=None):
        self.transforms = transforms
        self.paths = _paths("Parquet", paths)
        self.image = image
        self.label = label
        if video is not None and (not isinstance(video, str) or not video):
            raise ValueError(f"video must name a column, not {video!r}")
        self.video = video

    def _path(self) -> str:
        return "\n".join(self.paths)

    def _params(self) -> dict:
        return {"image_column": self.image, "label_column": self.label,
                "video_column": self.video or ""}

    def __repr__(self):
        read = f"video={self.video!r}" if self.video else f"image={self.image!r}"
        return f"stoker.Parquet({self.paths!r}, {read}, label={self.label!r})"


class Arrow(_Source):
    """Arrow IPC files read in place, record batch by record batch: Hugging Face datasets' cache
    files (``dataset.cache_files``, ``save_to_disk``'s ``data-*.arrow``: the stream format) or
    Arrow's file format; a file, a folder's ``*.arrow`` files, a glob pattern, in name order, or
    a list of these; local files. ``image`` and ``label`` name the columns as
    ``stoker.Parquet``'s do, a row's image read as there (its bytes, or the file at its path
    where they are null: a relative path in ``relative_to``, by default the Arrow file's folder).
    ``pil_decode``: "none" (stoker's decode), or "rgb" / "own" to make a bad record of an image
    Hugging Face's ``Image(mode="RGB")`` / ``Image()`` decodes otherwise (an EXIF orientation;
    for "own", also a mode other than RGB). ``stoker.Loader`` reads a ``datasets.Dataset`` of
    such files natively through it (``loader.plan`` says so)."""

    source = "arrow"
    output_params = ("image_column", "label_column", "relative_to", "pil_decode")

    def __init__(self, paths, image="image", label="label", relative_to="", pil_decode="none",
                 transforms=None):
        self.transforms = transforms
        self.paths = _paths("Arrow", paths)
        self.image = image
        self.label = label
        self.relative_to = os.fsdecode(relative_to)
        self.pil_decode = pil_decode

    def _path(self) -> str:
        return "\n".join(self.paths)

    def _params(self) -> dict:
        return {"image_column": self.image, "label_column": self.label,
                "relative_to": self.relative_to, "pil_decode": self.pil_decode}

    def __repr__(self):
        return f"stoker.Arrow({self.paths!r}, image={self.image!r}, label={self.label!r})"


class Tokens(_Source):
    """A flat array of token ids read in place, as language-model samples: nanoGPT's ``.bin`` (raw
    little-endian ``dtype`` tokens, no header: ``"uint16"`` or ``np.uint16``, ``"uint32"`` above
    65,535 ids), a 1-D ``.npy`` of integers, Megatron-LM's indexed dataset (``PREFIX.bin`` with
    ``PREFIX.idx``, named by either file or the prefix), or Parquet or Arrow files (a file, folder
    or glob; Hugging Face's ``to_parquet``, ``save_to_disk``) whose ``column`` lists a document's
    token ids a row (uncompressed Arrow read as is, others copied once into the cache). Concatenate
    and split, as nanoGPT's ``get_batch``: sample ``i`` is ``input_ids`` = tokens ``[i*L, (i+1)*L)``
    and ``labels`` = tokens ``[i*L+1, (i+1)*L+1)``, int64 ``[L]`` for ``L = seq_len`` (1024 by
    default), ``(tokens - 1) // L`` samples, each token but the tail in one sample's input_ids per
    epoch. Local files; an id below 0, from 2^63 or from ``vocab_size`` fails its batch.

    Document boundaries (docs/DATA.md#token-files): a document ends after each ``eos_id``
    token, or where a Megatron-LM ``.idx`` or a table's rows say; a sample's segments are its
    runs of one document. ``return_position_ids``: ``position_ids`` int64 ``[L]``, 0 at each
    segment's start. ``return_cu_seqlens``: ``cu_seqlens`` int64 ``[segments + 1]`` per sample,
    a variable field; ``"batch"``: the batch's rows flattened, int32 ``[segments + 1]`` with
    ``max_seqlen`` (an int), as FlashAttention's varlen kernels and torch's ``varlen_attn`` take
    them. ``mask_boundary_labels``: ``labels`` -100 where the label is the next document's first
    token. ``return_document_mask``: ``document_mask`` bool ``[L, L]``, True at ``[q, k]``
    where ``k <= q`` in one segment (causal within each document: SDPA's ``attn_mask``).

    ``packing="first_fit"`` or ``"best_fit"`` (Grain's): whole documents in padded rows of ``L``
    instead, ``packing_bins`` rows open at a time, a document over ``L`` cut into pieces. A row:
    ``input_ids`` (``pad_id`` on padding), ``labels`` (-100 at each document's end and on
    padding), ``position_ids`` and ``segment_ids`` (k on its k-th piece, 0 on padding), int64
    ``[L]``; ``cu_seqlens`` ends with the padding as a segment; ``return_attention_mask``:
    ``attention_mask`` int64 ``[L]``, 1 on tokens, 0 on padding (Hugging Face's). Each token is
    in one row; the rows, made at open, are the same every epoch. ``prompt_end_id``: a
    document's tokens up to its first such token are its prompt, and ``labels`` are -100 where
    they predict them. A bad id or a field without boundaries is refused in one line."""

    source = "tokens"
    output_params = ("return_position_ids", "return_cu_seqlens", "mask_boundary_labels",
                     "return_document_mask", "pad_id", "prompt_end_id",
                     "return_attention_mask", "vocab_size")

    def __init__(self, path, seq_len=1024, dtype="uint16", eos_id=None,
                 return_position_ids=False, return_cu_seqlens=False,
                 mask_boundary_labels=False, return_document_mask=False, packing="none",
                 packing_bins=64, pad_id=None, prompt_end_id=None, return_attention_mask=False,
                 vocab_size=None, column="input_ids", transforms=None):
        self.path = one_path(path)
        self.column = str(column)
        if not _integer(seq_len):
            raise ValueError(f"Tokens({self.path!r}): seq_len {seq_len!r} is not an integer "
                             f"(tokens per sample)")
        self.seq_len = int(seq_len)
        self.dtype = _raw_token_dtype(self.path, dtype)
        self.eos_id = self._token_id("eos_id", eos_id)
        self.return_position_ids = bool(return_position_ids)
        if return_cu_seqlens not in (False, True, "batch"):
            raise ValueError(f"Tokens({self.path!r}): return_cu_seqlens must be False, True "
                             f"(each sample's) or 'batch', not {return_cu_seqlens!r}")
        self.return_cu_seqlens = return_cu_seqlens
        self.mask_boundary_labels = bool(mask_boundary_labels)
        self.return_document_mask = bool(return_document_mask)
        self.packing = packing
        if not _integer(packing_bins):
            raise ValueError(f"Tokens({self.path!r}): packing_bins {packing_bins!r} is not an "
                             f"integer")
        self.packing_bins = int(packing_bins)
        if pad_id is not None and packing == "none":
            raise ValueError(f"Tokens({self.path!r}): pad_id {pad_id!r} given, but packing is "
                             f"'none' (first_fit or best_fit pad their rows)")
        self.pad_id = self._token_id("pad_id", 0 if pad_id is None else pad_id)
        self.prompt_end_id = self._token_id("prompt_end_id", prompt_end_id)
        self.return_attention_mask = bool(return_attention_mask)
        if vocab_size is not None and (not _integer(vocab_size) or vocab_size < 1):
            raise ValueError(f"Tokens({self.path!r}): vocab_size {vocab_size!r} is not a "
                             f"vocabulary's size (an integer from 1)")
        self.vocab_size = None if vocab_size is None else int(vocab_size)
        self.transforms = transforms

    def _token_id(self, name, value):
        """`value` as a token id (None: none); ValueError naming `name` otherwise."""
        if value is not None and (not _integer(value) or value < 0):
            raise ValueError(f"Tokens({self.path!r}): {name} {value!r} is not a token id "
                             f"(an integer from 0)")
        return None if value is None else int(value)

    @property
    def boolean_fields(self):
        return ("document_mask",) if self.return_document_mask else ()

    @property
    def batch_cu_seqlens(self):
        return self.return_cu_seqlens == "batch"

    def _path(self) -> str:
        return self.path

    def _location(self) -> str:
        check_token_path(self.path)
        return super()._location()

    def _params(self) -> dict:
        return {"seq_len": self.seq_len, "dtype": self.dtype,
                "eos_id": -1 if self.eos_id is None else self.eos_id,
                "return_position_ids": self.return_position_ids,
                "return_cu_seqlens": bool(self.return_cu_seqlens),
                "mask_boundary_labels": self.mask_boundary_labels,
                "return_document_mask": self.return_document_mask, "packing": self.packing,
                "packing_bins": self.packing_bins, "pad_id": self.pad_id,
                "prompt_end_id": -1 if self.prompt_end_id is None else self.prompt_end_id,
                "return_attention_mask": self.return_attention_mask,
                "vocab_size": -1 if self.vocab_size is None else self.vocab_size,
                "column": self.column}

    def _shaping(self) -> dict:
        shaping = super()._shaping()
        if self.packing == "none":  # fixed windows, whatever the documents and bins
            del shaping["eos_id"], shaping["packing_bins"]
        return shaping

    def __repr__(self):
        boundaries = "".join(f", {name}={getattr(self, name)!r}" for name in (
            "eos_id", "return_position_ids", "return_cu_seqlens", "mask_boundary_labels",
            "return_document_mask", "packing", "packing_bins", "pad_id", "prompt_end_id",
            "return_attention_mask", "vocab_size")
            if getattr(self, name) not in (None, False, "none")
            and (self.packing != "none" or name not in ("packing_bins", "pad_id")))
        column = f", column={self.column!r}" if self.column != "input_ids" else ""
        return (f"stoker.Tokens({self.path!r}, seq_len={self.seq_len}, dtype={self.dtype!r}"
                f"{boundaries}{column})")


def _integer(value) -> bool:
    """Whether `value` is an integer: an int or numpy's, not a bool (nor a float)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


# A headerless token file's types: little-endian unsigned ids, as the native source names them.
_RAW_TOKEN_DTYPES = {"uint16": np.dtype("<u2"), "uint32": np.dtype("<u4")}


def _raw_token_dtype(path: str, dtype) -> str:
    """`dtype` ("uint16", "uint32", or numpy's spelling of either: np.uint16, np.dtype("<u4"),
    "<u2") as the native source names it; ValueError in one line naming `path` otherwise."""
    if isinstance(dtype, str) and dtype in _RAW_TOKEN_DTYPES:
        return dtype
    try:
        parsed = np.dtype(dtype)
    except (TypeError, ValueError):
        parsed = None
    for name, little_endian in _RAW_TOKEN_DTYPES.items():
        if parsed is not None and parsed == little_endian:
            return name
    raise ValueError(f"Tokens({path!r}): dtype {dtype!r} is not uint16 or uint32 (a headerless "
                     f"file's little-endian unsigned token ids; np.uint16 and '<u2' say it too)")


class Mixture(_Source):
    """Several sources read as one dataset, mixed by weight: each epoch holds exactly each
    source's share of ``samples_per_epoch`` samples (by default until the first source is spent;
    ``until="all"``: until every one is, the others cycling), interleaved by the seed; each
    source goes through its own epochs, in its own shuffled order, so every sample of a source
    comes once before any comes twice (docs/DESIGN.md contract 13). ``sources``: paths or
    sources (``stoker.ImageFolder``, ``stoker.Parquet``, ...); ``weights``: one positive number
    each (normalised; equal by default). Sources of the same fields without transforms of
    their own take ``transforms``, the mixture's, for all; sources of different fields, or with
    their own transforms, are read each with its own (docs/DATA.md#mixing-sources): a batch is
    a dict of every field collated over the samples that have it, in batch order. Either way
    the batch's ``source`` is each sample's source, its index in ``sources`` (int64). The
    state_dict records the mixture: a state resumes only into the same one.

    ``schedule``: ``[(at, weights), ...]``, the weights from ``at`` on (``weights`` before the
    first), ``at`` increasing; each piece of an epoch between changes holds exactly its share
    (docs/DATA.md#mixing-sources). ``schedule_in="samples"``: ``at`` counts the run's samples
    (epoch × samples per epoch + position); ``"steps"``: the loader's steps, step ``S`` the
    sample ``S × batch_size × world_size`` (its global batch, known when the loader opens).
    ``share_of="tokens"``: the weights are shares of tokens (token sources: each weight over
    the source's mean tokens per sample). ``loader.stats()`` has each source's samples
    delivered, ``source_samples`` (and ``source_tokens``)."""

    source = "mixture"

    def __init__(self, sources, weights=None, samples_per_epoch=None, until="first",
                 transforms=None, schedule=None, schedule_in="samples", share_of="samples"):
        self.sources = [as_source(s) for s in sources]
        if len(self.sources) < 2 or any(isinstance(s, Mixture) for s in self.sources):
            raise ValueError("Mixture: give two or more sources, none of them a Mixture")
        for i, part in enumerate(self.sources):
            if part.transforms and transforms is not None:
                raise ValueError(f"Mixture: source {i} ({part!r}) has transforms, and so has "
                                 f"the Mixture: give each source its own, or the Mixture all")
        forms = sorted({repr(s.return_cu_seqlens) for s in self.sources
                        if getattr(s, "return_cu_seqlens", False)})
        if len(forms) > 1:  # a batch holds the field in one form
            raise ValueError(f"Mixture: the sources give cu_seqlens as {' and '.join(forms)} "
                             f"(return_cu_seqlens): give them one form")
        self.weights = [1.0] * len(self.sources) if weights is None else _weights(weights)
        self.samples_per_epoch = samples_per_epoch
        self.until = until
        self.transforms = transforms
        if schedule_in not in ("samples", "steps"):
            raise ValueError(f"Mixture: schedule_in {schedule_in!r} must be 'samples' or "
                             f"'steps'")
        self.schedule = []
        for i, change in enumerate(schedule or ()):
            self.schedule.append(_change(self, i, change,
                                         self.schedule[-1][0] if self.schedule else 0))
        self.schedule_in = schedule_in
        self.share_of = share_of

    @property
    def boolean_fields(self):
        return self.sources[0].boolean_fields  # read as one: the sources have the same fields

    @property
    def batch_cu_seqlens(self):
        return any(s.batch_cu_seqlens for s in self.sources)

    def view(self):
        """loader.dataset's view of the mixture: read source by source, every source's
        records and fields (_mixed_fields.mixed_view)."""
        from stoker._mixed_fields import mixed_view, reads_per_source

        if self._view is None and reads_per_source(self, {}):
            self._view = mixed_view([s.view() for s in self.sources])
        return super().view()

    def _path(self) -> str:
        return " + ".join(s._path() for s in self.sources)

    def _params(self, global_batch=1) -> dict:
        """The "mixture" order's parameters; a schedule in steps is in samples of
        `global_batch` (the loader's batch_size × world_size; 1 for a view, which deals
        nothing)."""
        per = global_batch if self.schedule_in == "steps" else 1
        return {"weights": self.weights, "samples_per_epoch": self.samples_per_epoch or 0,
                "until": self.until, "change_at": [float(at * per) for at, _ in self.schedule],
                "later_weights": [float(w) for _, weights in self.schedule for w in weights],
                "share_of": self.share_of}

    def _shaping(self) -> list:
        return [s._shaping() for s in self.sources]  # the mixture's own: the loader's order

    def open(self, global_batch=1, **options):
        parts = [(s._location(), s.source, s._params()) for s in self.sources]
        return _stoker.LoaderCore(parts, mixture=self._params(global_batch), **options)

    def __repr__(self):
        schedule = "" if not self.schedule else \
            f", schedule={self.schedule!r}, schedule_in={self.schedule_in!r}"
        share = "" if self.share_of == "samples" else f", share_of={self.share_of!r}"
        return f"stoker.Mixture({self.sources!r}, weights={self.weights!r}{schedule}{share})"


def _weights(weights) -> list:
    """`weights` (real numbers: ints of any size, numpy's, 0-d tensors; or a 1-D array or
    tensor) as floats, which the native order checks (one per source, finite and above 0);
    ValueError in one line naming them where they are not real numbers."""
    try:
        given = list(weights)
        if not any(isinstance(w, (bool, np.bool_, str, bytes)) for w in given):
            return [float(w) for w in given]
    except (TypeError, ValueError, OverflowError):
        pass
    raise ValueError(f"Mixture: weights {weights!r} must be real numbers above 0, one per "
                     f"source")


def _change(mixture: Mixture, i: int, change, before: int) -> tuple:
    """schedule[i] as (at, weights); ValueError naming it where it is not an integer at after
    `before` (the change before it, or 0) and a weight above 0 per source."""
    try:
        at, weights = change
        weights = [float(w) for w in weights]
    except (TypeError, ValueError):
        weights = None
    if weights is None or isinstance(at, bool) or not isinstance(at, numbers.Integral) or \
            len(weights) != len(mixture.sources):
        raise ValueError(f"Mixture: schedule[{i}] must be (at, weights): an integer and "
                         f"{len(mixture.sources)} weights, one per source, not {change!r}")
    if at <= before:
        raise ValueError(f"Mixture: schedule[{i}]'s at {at} must come after "
                         f"{f'schedule[{i - 1}] ({before})' if i else 'the start (0)'}")
    if not all(math.isfinite(w) and w > 0 for w in weights):
        raise ValueError(f"Mixture: schedule[{i}]'s weights {weights} must be finite numbers "
                         f"above 0")
    return int(at), weights


def as_source(path) -> _Source:
    """A source object as it is; a path as ``stoker.Dataset(path)`` (its kind detected)."""
    return path if isinstance(path, _Source) else Dataset(path)
