"""Whether this stoker decodes video: its extension holds the video layer where the build found
FFmpeg's libraries (cmake/StokerVideo.cmake, INSTALL.md). Without it every video entry point
(stoker.VideoFolder, the DecodeClip and ClipFrameIndices transforms) raises one RuntimeError
saying so, instead of failing somewhere inside."""
from stoker import _stoker

BUILT = _stoker.with_video
# The video layer's decoding classes (the registry's decode_clip and clip_frame_indices), which a
# build without it lacks.
CLASSES = ("ClipFrameIndices", "DecodeClip")


def missing(what: str) -> str:
    """The one line that says `what` needs the video layer this build lacks."""
    return ("stoker was built without video (FFmpeg's libraries were not found at build time): "
            f"{what} needs it; install them and build stoker again (INSTALL.md)")


def require(what: str) -> None:
    """RuntimeError(missing(what)) where the extension has no video layer."""
    if not BUILT:
        raise RuntimeError(missing(what))


def unavailable(name: str, module: str) -> type:
    """A stand-in for the decoding class `name` of `module` in a build without video: it exists
    (imports and ``__all__`` are the same in every build) and constructing it raises."""
    def __init__(self, *args, **kwargs):
        require(f"{module}.{name}")

    return type(name, (), {"__init__": __init__, "__module__": module, "__doc__": missing(
        f"{module}.{name}") + ". Constructing it raises RuntimeError."})
