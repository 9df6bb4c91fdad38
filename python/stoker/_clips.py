"""torchvision's transforms of a video after stoker.transforms.DecodeClip, folded into its
native call: the steps that v2 applies to a uint8 ``tv_tensors.Video`` [T, C, H, W] with one
draw for the whole clip, which decode_clip does in the same order with the same draws
(src/stoker/pipeline/ops/decode_clip.cc):

    Resize(size) (bilinear, antialiased: v2's uint8 kernel), then RandomCrop(size) or
    CenterCrop(size), or RandomResizedCrop(size, scale, ratio) without a Resize, then
    RandomHorizontalFlip(p), then ToDtype(float32, scale=True) or ConvertImageDtype(float32),
    then Normalize(mean, std)

each at most once, any of them left out, and UniformTemporalSubsample(n) anywhere among them
(it picks frames; the others change each frame alike). A step out of that order, of other
parameters (a crop's padding, a Resize without antialias, one in float32) or of another kind
ends the fold: it and the steps after it (and the float steps before it, so that they see
torch's values) run in Python on the native clip tensor where Python steps are allowed, else
it is a ValueError naming it."""
from typing import List

from stoker._float_pixels import unit_scale

_ORDER = ["Resize", "Crop", "RandomHorizontalFlip", "ToFloat", "Normalize"]
# The steps that draw: once per Video in v2, once per clip in DecodeClip(draws="clip").
_DRAWN = ("RandomCrop", "RandomResizedCrop", "RandomHorizontalFlip")


def _kind(step) -> str:
    name = type(step).__name__
    if name in ("RandomCrop", "CenterCrop", "RandomResizedCrop"):
        return "Crop"
    if name in ("ToDtype", "ConvertImageDtype"):
        return "ToFloat"
    return name


def _sizes(value) -> List[int]:
    """A size as torchvision takes it (int, [s], (h, w)) as decode_clip's list."""
    if isinstance(value, int):
        return [value]
    return [int(v) for v in value]


def _check_kernel(field: str, step) -> None:
    mode = getattr(getattr(step, "interpolation", None), "value", "bilinear")
    if mode != "bilinear" or getattr(step, "antialias", True) is not True:
        raise ValueError(f"field '{field}': {step!r}: stoker resizes clips with torchvision's "
                         "antialiased bilinear kernel only (interpolation bilinear, "
                         "antialias=True)")


def _resize(field: str, step, call: dict) -> None:
    _check_kernel(field, step)
    if getattr(step, "max_size", None) is not None:
        raise ValueError(f"field '{field}': {step!r}: max_size is not supported for clips")
    call["resize"] = _sizes(step.size)


def _crop(field: str, step, call: dict) -> None:
    if type(step).__name__ == "RandomResizedCrop":
        _check_kernel(field, step)
        if call["resize"]:
            raise ValueError(f"field '{field}': {step!r}: a clip's RandomResizedCrop resizes "
                             "its box itself: no Resize before it")
        call.update(crop=_sizes(step.size), crop_mode="resized",
                    scale=[float(v) for v in step.scale], ratio=[float(v) for v in step.ratio])
        return
    if type(step).__name__ == "RandomCrop":
        padding = getattr(step, "padding", None)
        if (padding is not None and any(padding)) or getattr(step, "pad_if_needed", False):
            raise ValueError(f"field '{field}': {step!r}: a clip's RandomCrop pads nothing "
                             "(no padding, pad_if_needed=False)")
    call["crop"] = _sizes(step.size)
    call["crop_mode"] = "random" if type(step).__name__ == "RandomCrop" else "center"


def _to_float(field: str, step, call: dict) -> None:
    dtype = step.dtype
    if isinstance(dtype, dict):  # v2's ToDtype({Video: float32, ...})
        dtype = next(iter(dtype.values()), None)
    scaled = getattr(step, "scale", True)  # ConvertImageDtype always scales
    if str(dtype) != "torch.float32" or not scaled:
        raise ValueError(f"field '{field}': {step!r}: clips become float32 scaled to [0, 1] "
                         "only (ToDtype(torch.float32, scale=True))")
    call["dtype"] = "float32"
    call["unit_scale"] = unit_scale(step)


def _normalize(field: str, step, call: dict) -> None:
    if call["dtype"] != "float32":
        raise ValueError(f"field '{field}': Normalize needs ToDtype(torch.float32, scale=True) "
                         "before it")
    mean, std = [float(v) for v in step.mean], [float(v) for v in step.std]
    if len(mean) == 1:
        mean, std = mean * 3, std * 3 if len(std) == 1 else std
    call["mean"], call["std"] = mean, std


_FOLD = {"Resize": _resize, "Crop": _crop, "ToFloat": _to_float, "Normalize": _normalize,
         "RandomHorizontalFlip": lambda field, step, call: call.update(flip=float(step.p))}


def varies(call: dict) -> bool:
    """True if the clips of native `call` (decode_clip's, or clip_frame_indices') vary in size
    per sample: regular timestamps' (their number), or clips of their frames' own size."""
    if call["op"] not in ("decode_clip", "clip_frame_indices"):
        return False
    own_size = call["op"] == "decode_clip" and not call["crop"] and len(call["resize"]) != 2
    return call["sampler"] == "regular_timestamps" or own_size


def clip_call(field: str, call: dict, steps: list, allow_python: bool = False) -> tuple:
    """DecodeClip's native `call` with `steps` (the field's steps after it) folded in, and the
    steps left to Python (from the first that does not fold: its ValueError's message says why;
    with `allow_python` False, that ValueError)."""
    folded, done = dict(call), -1
    for at_step, step in enumerate(steps):
        before = dict(folded)
        try:
            done = _fold(field, step, folded, done)
        except ValueError as e:
            if not allow_python:
                raise
            return before, steps[at_step:], str(e)
    return folded, [], None


def _fold(field: str, step, call: dict, done: int) -> int:
    """Folds `step` into `call` after the step of _ORDER index `done`; the index it takes."""
    if type(step).__name__ == "UniformTemporalSubsample":
        if call["subsample"]:
            raise ValueError(f"field '{field}': {step!r}: the clip is subsampled already")
        call["subsample"] = int(step.num_samples)
        return done
    kind = _kind(step)
    if kind not in _ORDER:
        raise ValueError(f"field '{field}': {step!r} cannot follow DecodeClip; its clips "
                         f"take {', '.join(_ORDER)} (in that order)")
    at = _ORDER.index(kind)
    if at <= done:
        raise ValueError(f"field '{field}': {step!r} comes after {_ORDER[done]}; DecodeClip's "
                         f"steps go in torchvision's order {' + '.join(_ORDER)}, each once")
    if call.get("draws") == "clip" and type(step).__name__ in _DRAWN:
        raise ValueError(f"field '{field}': {step!r} draws once for all the clips of the "
                         "Video, and DecodeClip(draws=\"clip\") each clip's own: give "
                         "DecodeClip the crop and flip")
    if kind in ("Resize", "Crop") and call[kind.lower()]:
        raise ValueError(f"field '{field}': DecodeClip sets its {kind.lower()} and {step!r} "
                         "another")
    _FOLD[kind](field, step, call)
    return at
