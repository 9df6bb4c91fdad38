"""Paths as the native calls take them."""
import os

from . import _stoker


def native_path(path):
    """`path` (str, bytes or os.PathLike) as bytes; ValueError in one line for one holding a NUL
    byte, which the native side would cut short there (shown up to it, a URL's secrets left
    out)."""
    encoded = os.fsencode(path)
    at = encoded.find(b"\0")
    if at >= 0:
        shown = _stoker.shown_location(encoded[:at])
        raise ValueError(f"path {shown!r}: a NUL byte follows (byte {at}); no file name holds one")
    return encoded
