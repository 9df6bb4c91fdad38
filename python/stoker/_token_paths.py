"""What a ``stoker.Tokens`` path names, checked in Python before the native source opens it:
one path, not a list; a folder or glob only of Parquet or Arrow files (the native source reads
those as one; a raw token file is one per Tokens, several mixed with stoker.Mixture); and a
headerless token file that is plainly something else (text or JSON, a zip such as an .npz, a
.npy renamed, an llm.c shard) refused in one line naming it and what it looks like, instead of
its bytes read as token ids."""

import glob
import os

_TABLES = (".parquet", ".arrow")  # what the native source reads from a folder or glob
_TEXT = (".txt", ".json", ".jsonl", ".csv")
_MIX = "mix several with stoker.Mixture([stoker.Tokens(p, ...) for p in paths])"
_LLMC_MAGIC = {20240520: "uint16", 20240801: "uint32"}  # llm.c's GPT-2 and LLaMA-3 shards
_LLMC_HEADER = 1024  # bytes: 256 int32


def one_path(path) -> str:
    """`path` as a str; ValueError in one line where it is several (a list) or none."""
    if isinstance(path, (str, bytes, os.PathLike)):
        return os.fsdecode(path)
    raise ValueError(f"Tokens: path {path!r} must be one token file (or a folder or glob of "
                     f"Parquet or Arrow files): {_MIX}")


def check_token_path(path: str) -> None:
    """ValueError in one line naming `path` where it is a folder or glob that is not of Parquet
    or Arrow files, or a headerless token file that is plainly not one; other paths (missing
    files, URLs, .npy, Megatron-LM's, tables) are the native source's to read or refuse."""
    if "://" in path or path.endswith(_TABLES):
        return
    if os.path.isdir(path):
        _check_folder(path)
    elif not os.path.exists(path):
        matches = sorted(glob.glob(path)) if any(c in path for c in "*?[") else []
        if matches:
            raise ValueError(f"{path}: a pattern of {len(matches)} files ({matches[0]}, ...); "
                             f"Tokens reads a glob as one only of Parquet or Arrow files (ending "
                             f".parquet or .arrow), a raw token file one per Tokens: {_MIX}")
    elif not path.endswith((".npy", ".idx")) and not _megatron_data(path):
        _check_raw(path)


def _check_folder(path: str) -> None:
    names = os.listdir(path)
    if any(name.endswith(_TABLES) for name in names):
        return
    raw = [name for name in names if name.endswith(".bin")]
    if raw:
        raise ValueError(f"{path}: a folder of {len(raw)} .bin files; Tokens reads a raw token "
                         f"file by its own path (a folder only of Parquet or Arrow files): {_MIX}")
    raise ValueError(f"{path}: a folder that holds no token file (Tokens reads a folder's "
                     f"*.parquet or *.arrow files; name a .bin, .npy or Megatron-LM .idx by its "
                     f"own path)")


def _megatron_data(path: str) -> bool:
    """Whether `path` is a Megatron-LM dataset's .bin (its .idx beside it)."""
    return path.endswith(".bin") and os.path.isfile(path[:-4] + ".idx")


def _check_raw(path: str) -> None:
    """ValueError naming `path` and what it looks like where a headerless token file is plainly
    text, a zip, a .npy or an llm.c shard."""
    extension = os.path.splitext(path)[1].lower()
    if extension in _TEXT:
        raise ValueError(f"{path}: a {extension} file (text), not token ids: tokenize it and "
                         f"write the ids (np.array(ids, np.uint16).tofile('train.bin'))")
    try:
        with open(path, "rb") as f:
            head = f.read(12)
    except OSError:
        return  # the native source says why it cannot be read
    if head.startswith(b"\x93NUMPY"):
        raise ValueError(f"{path}: a .npy file (numpy's header), not headerless token ids: "
                         f"rename it to .npy")
    if head.startswith(b"PK\x03\x04"):
        raise ValueError(f"{path}: a zip archive (an .npz?), not token ids: save the array "
                         f"with np.save as a .npy")
    dtype = _LLMC_MAGIC.get(int.from_bytes(head[:4], "little")) if len(head) == 12 else None
    # An llm.c shard's header: the magic, a version, its token count, which with the header
    # makes the file's size (so a token file starting with those two ids is not taken for one).
    if dtype and os.path.getsize(path) == _LLMC_HEADER + int.from_bytes(head[8:12], "little") * (
            2 if dtype == "uint16" else 4):
        raise ValueError(f"{path}: an llm.c shard (a {_LLMC_HEADER}-byte header, magic "
                         f"{int.from_bytes(head[:4], 'little')}), which Tokens does not read: "
                         f"save its tokens as a .npy (np.fromfile(path, np.{dtype}, "
                         f"offset={_LLMC_HEADER}))")
