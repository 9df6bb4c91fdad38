"""Per-field transforms for stoker.Loader, named and composed like torchvision's.

They run in the loader's native worker threads, not in Python: each field's pipeline is
translated into native operations, in the order of their roles:

* a source, for an encoded-image field (JPEG/PNG bytes): ``RandomResizedCrop(size)`` or
  ``Resize(n)`` + ``CenterCrop(size)``, PIL's antialiased ``interpolation`` (bilinear, bicubic;
  timm's "random" on the crop); a ``RandomHorizontalFlip`` right after the crop is fused into it;
  a fixed uint8 field (``[C, H, W]``) is its own source;
* image operations on uint8 (``ColorJitter``, ``RandomGrayscale``, the flips, ... every class
  built from the native description, ``stoker ops``);
* ``ToTensor()`` and/or ``Normalize(mean, std)`` (float32 ``(x / 255 - mean) / std``); without
  them the field stays uint8 (``PILToTensor``'s values, to normalise on the device);
* float operations (``RandomErasing``).

torchvision's own classes (transforms v1 and v2, ``Compose`` of them) and timm's (its crop,
``MaybeToTensor``, its ``RandAugment`` as its config string, its ``RandomErasing``) translate
through one table (``_TRANSLATIONS``), with the same checks; ``ToDtype(torch.float32,
scale=True)`` and ``ConvertImageDtype(torch.float)`` are ``ToTensor``; ``PILToTensor``,
``ToImage`` and ``ToPureTensor`` keep the pixels but start torchvision's tensor backend: a step
whose native operation equals the other backend's pixels (its "backend") runs in Python
(_split); a crop or Resize there resamples as torch does the tensor. A pipeline stoker
cannot run raises one ValueError naming every step it cannot run. Parameters are checked by
the native registry: a wrong one raises the CLI's one-line message.

Pixels are torchvision's with PIL (decode, resize) byte for byte in uint8, to float rounding in
float32. ``dct_scaling=True`` on the crops is the opt-in fast mode: JPEGs decoded at 1/2 or 1/4
scale where the crop still covers the output (pixels slightly different). Random steps draw
from each sample's own stream of (seed, epoch, index): the same for any number of workers, not
the same draws as torchvision's. On a detection dataset, v2 transforms move the whole sample.
"""

from __future__ import annotations

import copy
import inspect
import math
import re
import warnings
from typing import Dict, List, Optional, Sequence

from stoker import _clips, _joint, _python_steps, _stoker, _video
from stoker._float_pixels import unit_scale
from stoker._tokenize import Tokenize

__all__ = ["Compose", "ToTensor", "PILToTensor", "Normalize", "RandomResizedCrop", "Resize",
           "CenterCrop", "RawBytes", "DecodeImage", "Tokenize"]

# The native operations by name (pipeline/op_registry.h): their parameters' bounds are read from
# here, and the pixel and float operations' classes are built from it (below).
_OPERATIONS = {op["name"]: op for op in _stoker.operations()}


def _param(op: str, name: str) -> dict:
    return next(p for p in _OPERATIONS[op]["params"] if p["name"] == name)


class _Wrong(ValueError):
    """A transform given a value no transform takes (a size of 0, a scale that is no pair of
    numbers): refused, never left to Python, where it would fail on every sample."""


def _output_size(name: str, size, op: str) -> tuple:
    """(height, width) from an int (a square) or an (h, w) pair, each within native `op`'s
    size."""
    pair = size
    if isinstance(size, Sequence) and not isinstance(size, str):
        if len(size) not in (1, 2):
            raise _Wrong(f"{name}: size must be an int or (h, w), not {tuple(size)}")
        pair = (size[0], size[-1])
    else:
        pair = (size, size)
    largest = _param(op, "size")["max"]
    for side in pair:
        if isinstance(side, bool) or not isinstance(side, int) or not 1 <= side <= largest:
            raise _Wrong(f"{name}: size must be a positive int or (h, w) of them up to "
                         f"{largest}, not {size!r}")
    return pair


def _pair(name: str, what: str, value) -> tuple:
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise _Wrong(f"{name}: {what} must be a pair of numbers, not {value!r}") from None
    return low, high


def _floats(name: str, what: str, value) -> List[float]:
    values = [value] if isinstance(value, (int, float)) else list(value)
    try:
        return [float(v) for v in values]
    except (TypeError, ValueError):
        raise _Wrong(f"{name}: {what} must be numbers, not {value!r}") from None


class Compose:
    """Transforms applied in order, as torchvision.transforms.Compose."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __repr__(self):
        return f"Compose({self.transforms!r})"


class ToTensor:
    """uint8 to float32 in [0, 1]: ``unit_scale="divide"`` x / 255, as torchvision's ToTensor
    (and v1's ConvertImageDtype); ``"multiply"`` x * float32(1 / 255), as v2's
    ToDtype(float32, scale=True) (and v2's ConvertImageDtype). Half of the 256 values differ by
    an ulp between the two; stoker gives the one asked for, bit for bit."""

    def __init__(self, unit_scale: str = "divide"):
        if unit_scale not in ("divide", "multiply"):
            raise ValueError(f"ToTensor: unit_scale must be 'divide' or 'multiply', not "
                             f"{unit_scale!r}")
        self.unit_scale = unit_scale

    def __repr__(self):
        return "ToTensor()" if self.unit_scale == "divide" else \
            f"ToTensor(unit_scale={self.unit_scale!r})"


class PILToTensor:
    """uint8 kept as uint8 (a no-op marker, as torchvision's PILToTensor)."""

    def __repr__(self):
        return "PILToTensor()"


class Normalize:
    """float32 (x / 255 - mean[c]) / std[c] from uint8, one value or one per channel."""

    def __init__(self, mean, std):
        self.mean = _floats("Normalize", "mean", mean)
        self.std = _floats("Normalize", "std", std)

    def __repr__(self):
        return f"Normalize(mean={self.mean}, std={self.std})"


def _interpolation(name: str, op: str, mode) -> str:
    """The native interpolation of `mode`: a name ("bilinear", "bicubic"; "random" where `op`
    takes it), torchvision's InterpolationMode, PIL's number (2, 3), or timm's tuple of
    bilinear and bicubic (its "random")."""
    if isinstance(mode, (tuple, list)):
        modes = {_interpolation(name, op, m) for m in mode}
        mode = "random" if modes == {"bilinear", "bicubic"} else modes.pop() if len(modes) == 1 \
            else mode
    mode = getattr(mode, "value", mode)
    mode = {0: "nearest", 2: "bilinear", 3: "bicubic"}.get(mode, mode) \
        if not isinstance(mode, bool) else mode
    choices = _param(op, "interpolation")["choices"]
    if mode not in choices:
        raise ValueError(f"{name}: interpolation must be {' or '.join(choices)} (PIL's "
                         f"antialiased filters), not {mode!r}")
    return mode


def _resize_backend(name: str, backend) -> str:
    """Whose resize a source's pixels are: "pil" (torchvision's of a PIL image) or "tensor"
    (torchvision v2's of a uint8 tensor: torch's antialiased uint8 kernels)."""
    choices = _param("center_crop", "backend")["choices"]
    if backend not in choices:
        raise _Wrong(f"{name}: backend must be {' or '.join(choices)}, not {backend!r}")
    return backend


class RandomResizedCrop:
    """torchvision's RandomResizedCrop of an encoded image, PIL's antialiased bilinear or
    bicubic filter (or "random": either per sample, timm's); ``backend="tensor"``: torchvision
    v2's resize of a uint8 tensor instead (torch's uint8 kernels), ``"tensor_float"``: its
    resize of a tensor in float32 (v1's), as torch 2.11 adds the taps (``"tensor_float_fused"``:
    as torch 2.4 does).

    ``dct_scaling=True`` (the fast mode) lets JPEGs decode at 1/2 or 1/4 scale when the crop
    still covers the output: faster, pixels slightly different from a full decode
    (docs/BENCHMARKS.md).
    """

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation="bilinear", dct_scaling=False, backend="pil"):
        self.size = _output_size("RandomResizedCrop", size, "random_resized_crop")
        self.scale = _pair("RandomResizedCrop", "scale", scale)
        self.ratio = _pair("RandomResizedCrop", "ratio", ratio)
        self.interpolation = _interpolation("RandomResizedCrop", "random_resized_crop",
                                            interpolation)
        self.dct_scaling = bool(dct_scaling)
        self.backend = _resize_backend("RandomResizedCrop", backend)

    def __repr__(self):
        return (f"RandomResizedCrop({self.size}, scale={self.scale}, ratio={self.ratio}, "
                f"interpolation={self.interpolation!r}, backend={self.backend!r})")


class Resize:
    """The shorter side resized to ``size`` (PIL's antialiased bilinear or bicubic), or the
    longer to ``max_size`` where it would pass it (torchvision's rule); then CenterCrop, which
    pads with zeros where the resized image is smaller. Alone (last), each image keeps its
    resized size, uint8 [3, H, W], held as the loader's ``variable`` option says; H and W at
    most ``capacity`` (None: max_size, else 4 x size), which sizes the loader's buffers.
    ``backend``: as RandomResizedCrop's."""

    def __init__(self, size, interpolation="bilinear", max_size=None, dct_scaling=False,
                 capacity=None, backend="pil"):
        if isinstance(size, Sequence) and len(size) == 1:
            size = size[0]
        largest = _param("center_crop", "resize")["max"]
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= largest:
            # (h, w) has no native form (Python runs it); anything else no transform takes.
            wrong = not isinstance(size, Sequence) or len(size) != 2
            raise (_Wrong if wrong else ValueError)(
                f"Resize: size must be one positive int (the shorter side) up to {largest}, "
                f"not {size!r}")
        self.size = size
        self.interpolation = _interpolation("Resize", "center_crop", interpolation)
        if max_size is not None and (isinstance(max_size, bool) or not isinstance(max_size, int)
                                     or not size < max_size <= largest):
            raise _Wrong(f"Resize: max_size must be an int above size ({size}) up to "
                         f"{largest}, not {max_size!r}")
        self.max_size = max_size
        self.dct_scaling = bool(dct_scaling)
        self.capacity = None if capacity is None else _cap("Resize", "resize", "capacity",
                                                           capacity)
        self.backend = _resize_backend("Resize", backend)

    def __repr__(self):
        return (f"Resize({self.size}, interpolation={self.interpolation!r}, "
                f"max_size={self.max_size!r}, backend={self.backend!r})")


class CenterCrop:
    """The central crop of size (h, w), or an int for a square (after Resize)."""

    def __init__(self, size):
        self.size = _output_size("CenterCrop", size, "center_crop")

    def __repr__(self):
        return f"CenterCrop({self.size})"


def _cap(name: str, op: str, param: str, value) -> int:
    largest = _param(op, param)["max"]
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= largest:
        raise ValueError(f"{name}: {param} must be an int from 1 to {largest:g}, not {value!r}")
    return value


class RawBytes:
    """A bytes field as stored: a uint8 tensor [N] per sample (a caption, encoded bytes), N at
    most ``max_length``, which sizes the loader's buffers; a longer value is an error naming
    the record (or skipped, on_error="skip"). A batch holds the field as the loader's
    ``variable`` option says (a list of tensors, or padded)."""

    def __init__(self, max_length=4096):
        self.max_length = _cap("RawBytes", "raw_bytes", "max_length", max_length)

    def __repr__(self):
        return f"RawBytes(max_length={self.max_length})"


class DecodeImage:
    """An encoded image (JPEG or PNG) decoded at its own size: uint8 [3, H, W], PIL's RGB
    pixels (torchvision's ``decode_image``/``PILToTensor`` of the file), no resize; H and W at
    most ``max_size`` (it sizes the loader's buffers), a larger image is an error naming the
    record. A batch holds the field as the loader's ``variable`` option says. First in a joint
    transform (a detection or segmentation sample), ``max_size`` bounds what the steps make: the
    stored image may be larger where they shrink it; without one, a step that bounds the output
    (RandomShortestSize's max_size, ScaleJitter, FixedSizeCrop, RandomCrop) sizes the buffers,
    else 1024."""

    def __init__(self, max_size=1024):
        self.max_size = _cap("DecodeImage", "decode_image", "max_size", max_size)

    def __repr__(self):
        return f"DecodeImage(max_size={self.max_size})"


class _NativeOperation:
    """A native pixel operation (uint8 image in place: a colour change, a flip) or float
    operation (float image in place, after Normalize: RandomErasing), its parameters checked by
    the registry as the CLI's --augment checks them; subclasses are built by _native_class."""

    _op = ""  # the native operation's name
    __signature__ = inspect.Signature()

    def __init__(self, *args, **kwargs):
        names = list(self.__signature__.parameters)
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__} takes at most {len(names)} positional "
                            f"arguments ({len(args)} given)")
        given = dict(zip(names, args))
        for key, value in kwargs.items():
            if key in given:
                raise TypeError(f"{type(self).__name__} got multiple values for '{key}'")
            given[key] = value
        for key, value in given.items():  # a combinator's operations, as their calls
            if isinstance(value, (list, tuple)) and value and \
                    all(isinstance(v, _NativeOperation) for v in value):
                given[key] = [v.native() for v in value]
        self.params = _stoker.check_operation(self._op, given)
        for key, value in self.params.items():
            setattr(self, key, value)

    def native(self) -> dict:
        """The loader's call of the operation."""
        return {"op": self._op, **self.params}

    def __repr__(self):
        args = ", ".join(f"{key}={value!r}" for key, value in self.params.items())
        return f"{type(self).__name__}({args})"


def _native_class(op: dict) -> type:
    """The class of native operation `op` (its description): the parameters in order,
    positional or keyword, with their defaults."""
    params = [inspect.Parameter(p["name"], inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                default=p["default"]) for p in op["params"]]
    doc = "\n".join([op["doc"] + ".", ""] + [f"{p['name']}: {p['doc']}" for p in op["params"]])
    return type(op["python_class"], (_NativeOperation,),
                {"_op": op["name"], "_role": op["role"], "_input": op["input"],
                 "_output": op["output"], "__doc__": doc, "__module__": __name__,
                 "__signature__": inspect.Signature(params)})


# A class for each operation that changes an image as it is (the registry's types): uint8
# images (torchvision's pixel steps) and float32 ones (after Normalize).
_NATIVE_CLASSES = {op["python_class"]: _native_class(op) for op in _OPERATIONS.values()
                   if op["input"] == op["output"] and op["input"]["layout"] == "image"}
globals().update(_NATIVE_CLASSES)
__all__ += sorted(_NATIVE_CLASSES)
# A class for each operation that decodes a field into samples other than images (the
# registry's types: video clips, DecodeClip); alone in its field's transforms.
_DECODING_CLASSES = {op["python_class"]: _native_class(op) for op in _OPERATIONS.values()
                     if op["role"] == "source" and op["python_class"]
                     and op["output"]["layout"] != "image"}
globals().update(_DECODING_CLASSES)
__all__ += sorted(_DECODING_CLASSES)
# Without video (stoker/_video.py) its decoding classes are stand-ins that refuse in one line.
_MISSING_VIDEO = {name: _video.unavailable(name, __name__) for name in _video.CLASSES
                  if name not in _DECODING_CLASSES}
globals().update(_MISSING_VIDEO)
__all__ += sorted(_MISSING_VIDEO)
_PIXEL_NAMES = sorted(name for name, cls in _NATIVE_CLASSES.items()
                      if cls._input["dtype"] == "uint8")
_FLOAT_NAMES = sorted(name for name, cls in _NATIVE_CLASSES.items()
                      if cls._input["dtype"] == "float32")

_SUPPORTED = ", ".join(["Compose", "ToTensor", "PILToTensor", "Normalize", "RandomResizedCrop",
                        "Resize", "CenterCrop", "RawBytes", "DecodeImage",
                        *sorted(_NATIVE_CLASSES), *sorted(_DECODING_CLASSES)])


def _jitter_amount(name: str, bounds, center: float) -> float:
    """stoker's amount a of torchvision ColorJitter's `bounds` of a factor: None (off) is 0,
    [max(0, center - a), center + a] is a (hue: center 0, unclipped); ValueError otherwise."""
    if bounds is None:
        return 0.0
    low, high = (float(b) for b in bounds)
    amount = round(high - center, 12)  # torchvision stored 1 + a: 1.4 - 1 is 0.3999...
    expected = max(0.0, center - amount) if center else -amount
    if amount < 0 or not math.isclose(low, expected, rel_tol=0, abs_tol=1e-9):
        what = "[-a, a]" if name == "hue" else "[max(0, 1 - a), 1 + a]"
        raise ValueError(f"torchvision ColorJitter {name}=({low:g}, {high:g}): stoker draws "
                         f"{name} from {what} only; give {name} as one number a")
    return amount


def _color_jitter(t):
    """stoker's ColorJitter of torchvision's `t` (transforms' or v2's)."""
    return _NATIVE_CLASSES["ColorJitter"](
        brightness=_jitter_amount("brightness", t.brightness, 1.0),
        contrast=_jitter_amount("contrast", t.contrast, 1.0),
        saturation=_jitter_amount("saturation", t.saturation, 1.0),
        hue=_jitter_amount("hue", t.hue, 0.0))


def _random_erasing(t):
    """stoker's RandomErasing of torchvision's `t`: v2 keeps value as a list (None for
    "random"), v1 as given ("random", a number or a tuple)."""
    value = t.value
    if value is None or value == "random":
        return _NATIVE_CLASSES["RandomErasing"](t.p, t.scale, t.ratio, fill="random")
    return _NATIVE_CLASSES["RandomErasing"](t.p, t.scale, t.ratio, value=value)


def _float32(dtype) -> bool:
    return str(dtype) == "torch.float32"  # torch.float is torch.float32; torch not imported


def _to_float(t):
    """ToDtype(float32, scale=True) and ConvertImageDtype(float32): ToTensor."""
    if type(t).__name__ == "ConvertImageDtype":
        if not _float32(t.dtype):
            raise ValueError(f"torchvision ConvertImageDtype({t.dtype}): stoker converts "
                             "images to torch.float32 (torch.float) only")
    elif not _float32(t.dtype) or not t.scale:
        raise ValueError(f"torchvision ToDtype(dtype={t.dtype}, scale={t.scale}): stoker "
                         "converts images to torch.float32 with scale=True only")
    return ToTensor(unit_scale(t))


def _resize(t):
    return Resize(t.size, interpolation=t.interpolation, max_size=getattr(t, "max_size", None))


def _normalize(t):
    if getattr(t, "inplace", False):
        raise ValueError("torchvision Normalize(inplace=True) is not supported")
    return Normalize(t.mean, t.std)


def _image_classification(t):
    """torchvision's weights' eval preset (``weights.transforms()``): resize, center crop,
    float, normalize."""
    if getattr(t, "antialias", True) is False:
        raise ValueError("torchvision ImageClassification(antialias=False): stoker resizes "
                         "with PIL's antialiased filters only")
    return Compose([Resize(t.resize_size, interpolation=t.interpolation),
                    CenterCrop(t.crop_size), ToTensor(), Normalize(t.mean, t.std)])


def _pixel_steps(t) -> list:
    """The native pixel operations of torchvision combinator `t`'s steps (``t.transforms``)."""
    steps = [_stoker_transform(step) for step in t.transforms]
    for step in steps:
        if getattr(step, "_role", None) != "pixel":
            raise _Unknown(f"torchvision {type(t).__name__} runs natively around image "
                           f"operations only ({', '.join(_PIXEL_NAMES)}), not "
                           f"{type(step).__name__}")
    return steps


def _crop_size(step):
    """The size a native pixel step crops to (random_crop's), None for one that keeps the
    image's, "?" for a combinator holding a crop."""
    if step._op == "random_crop":
        return tuple(step.params["size"])
    return "?" if "random_crop" in str(step.params.get("ops", "")) else None


def _random_apply(t):
    """RandomApply(steps, p): one step whose native operation has its own probability p is
    that operation with p times it (independent draws); other image operations run in the native
    RandomApply. A crop inside it (not applied, the image keeps its size) runs in Python."""
    steps = _pixel_steps(t)
    if any(_crop_size(step) is not None for step in steps):
        raise _Unknown("torchvision RandomApply of a crop (not applied, the image keeps its "
                       "size) runs in Python")
    params = steps[0].params if len(steps) == 1 else {}
    if "p" in params:
        return type(steps[0])(**dict(params, p=params["p"] * float(t.p)))
    return _NATIVE_CLASSES["RandomApply"](ops=steps, p=float(t.p))


def _random_choice(t):
    """RandomChoice(steps, p) of image operations: the native RandomChoice, same weights; of
    decoding crops of one size (RandomResizedCrops, Resize + CenterCrop): _SourceChoice."""
    weights = [] if t.p is None else [float(w) for w in t.p]
    options = [_option_steps(option) for option in t.transforms]
    sources = [_source_call(steps) for steps in options]
    if options and all(source is not None and not rest for source, rest in sources):
        calls = [call for call, _ in sources]
        sizes = {(call["size"], call["width"]) for call in calls}
        if len(sizes) == 1:
            return _SourceChoice(calls, weights)
        raise _Unknown(f"torchvision RandomChoice of crops of {len(sizes)} sizes makes samples "
                       "of varying size natively")
    steps = _pixel_steps(t)
    sizes = {_crop_size(step) for step in steps}
    if len(sizes) > 1 or "?" in sizes:
        raise _Unknown("torchvision RandomChoice of steps that make images of other sizes runs "
                       "in Python")
    return _NATIVE_CLASSES["RandomChoice"](ops=steps, p=weights)


def _option_steps(option) -> list:
    """The stoker steps of one option of a torchvision combinator (a transform or a Compose)."""
    steps = []
    for original in _flatten(option):
        t = _stoker_transform(original)
        steps += [step for step in _flatten(t) if not isinstance(step, PILToTensor)] \
            if t is not None else []
    return steps


class _SourceChoice:
    """torchvision's RandomChoice of decoding crops of one size: the native
    random_source_choice of their calls, with the weights p (empty: equal), checked by the
    registry."""

    def __init__(self, calls: List[dict], weights: List[float]):
        self.params = _stoker.check_operation("random_source_choice",
                                              {"ops": calls, "p": weights})

    @classmethod
    def of_text(cls, ops: str, weights: List[float]) -> "_SourceChoice":
        """The choice of the calls written as the registry writes them (its params' "ops")."""
        choice = cls.__new__(cls)
        choice.params = _stoker.check_operation("random_source_choice", {"ops": ops, "p": weights})
        return choice

    def native(self) -> dict:
        return {"op": "random_source_choice", **self.params}

    def __repr__(self):
        return f"RandomChoice({self.params['ops']}, p={self.params['p']})"


# The steps that decode and resample: their pixels are one backend's by their "backend".
_RESAMPLING = (RandomResizedCrop, Resize, _SourceChoice)


def _random_crop(t):
    """stoker's RandomCrop of torchvision's `t`: v1's padding as given (1, 2 or 4 values), v2's
    as [left, right, top, bottom]. v2 pads once where v1 pads again for pad_if_needed, which
    differs for reflect and symmetric padding on both (pad_once)."""
    padding = [0] if t.padding is None else \
        [t.padding] if isinstance(t.padding, int) else list(t.padding)
    v2 = ".v2" in type(t).__module__
    if v2:
        left, right, top, bottom = padding * 4 if len(padding) == 1 else padding
        padding = [left, top, right, bottom]
    fill = t.fill
    if isinstance(fill, dict):
        raise _Unknown(f"torchvision RandomCrop with fill {fill!r} per type runs in Python")
    return _NATIVE_CLASSES["RandomCrop"](
        size=list(t.size), padding=padding, pad_if_needed=bool(t.pad_if_needed), pad_once=v2,
        fill=[fill] if isinstance(fill, (int, float)) else list(fill),
        padding_mode=t.padding_mode)


def _same_parameters(cls: type):
    """The translation of a torchvision class into native class `cls` whose parameters are
    the torchvision object's attributes of the same names (RandomInvert's p, RandomPosterize's
    bits and p, ...)."""
    names = list(cls.__signature__.parameters)

    def native_value(value):
        # An enum (InterpolationMode.NEAREST) by its value; a fill of None is the default's.
        return getattr(value, "value", value)

    return lambda t: cls(**{n: native_value(getattr(t, n)) for n in names
                            if getattr(t, n, None) is not None})


# torchvision's classes (transforms v1 and v2, the same names) and timm's, by class name, and
# their stoker step: None for a step with nothing to do (ToImage, ToPureTensor: the image is a
# uint8 tensor already). Every native class whose python_class is a torchvision name and whose
# parameters are its attributes translates without a line here (_same_parameters).
_TRANSLATIONS = {
    "ToImage": lambda t: None,
    "ToPureTensor": lambda t: None,
    "PILToTensor": lambda t: PILToTensor(),
    "ToTensor": lambda t: ToTensor(),
    "ToDtype": _to_float,
    "ConvertImageDtype": _to_float,
    "Normalize": _normalize,
    "RandomResizedCrop": lambda t: RandomResizedCrop(t.size, t.scale, t.ratio,
                                                     interpolation=t.interpolation),
    "Resize": _resize,
    "CenterCrop": lambda t: CenterCrop(t.size),
    "ColorJitter": _color_jitter,
    "RandomErasing": _random_erasing,
    "ImageClassification": _image_classification,
    "RandomApply": _random_apply,
    "RandomChoice": _random_choice,
    "RandomCrop": _random_crop,
}
for _name, _cls in _NATIVE_CLASSES.items():
    _TRANSLATIONS.setdefault(_name, _same_parameters(_cls))


def _policy(name: str):
    """The augmentation policy `name` of torchvision (or RandomAutocontrast), transforms v1's or
    v2's: v2's with version="v2" (its Solarize threshold, 255 times linspace(1, 0)), AugMix's and
    RandomAutocontrast's with kernels="v2" (their tensor kernels, which round otherwise); v2's
    fill per input type runs in Python."""
    native = _TRANSLATIONS[name]
    v2_param = "kernels" if name in ("AugMix", "RandomAutocontrast") else "version"

    def translate(t):
        if ".v2" not in type(t).__module__:
            return native(t)
        if isinstance(getattr(t, "fill", None), dict):
            raise _Unknown(f"torchvision v2 {name} with a fill per type ({t.fill!r}) runs in "
                           "Python")
        ours = native(t)
        return type(ours)(**{**ours.params, v2_param: "v2"})
    return translate


for _name in ("TrivialAugmentWide", "RandAugment", "AutoAugment", "AugMix", "RandomAutocontrast"):
    _TRANSLATIONS[_name] = _policy(_name)


def _timm_rand_augment(t):
    """stoker's TimmRandAugment of timm's RandAugment `t` (rand_augment_transform's): its
    config string rebuilt from the operations it holds, which must share their parameters and
    be one of timm's lists; anything else runs in Python."""
    first = _timm_shared_op("RandAugment", t.ops)
    from timm.data import auto_augment as timm_aa
    names = [op.name for op in t.ops]

    def is_weighted(weighted: dict) -> bool:
        weights = [w / sum(weighted.values()) for w in weighted.values()]
        return names == list(weighted) and all(math.isclose(a, b, rel_tol=1e-12)
                                               for a, b in zip(t.choice_weights, weights))

    if t.choice_weights is not None:
        sections = [section for section, weighted in (("tweights", timm_aa._RAND_WEIGHTED_0),
                                                      ("t3aw", timm_aa._RAND_WEIGHTED_3A))
                    if is_weighted(weighted)]
        if not sections:
            raise _Unknown("timm RandAugment with weights other than tweights' or t3aw's runs "
                           "in Python")
    elif names == timm_aa._RAND_3A:
        sections = ["t3a"]
    elif names in (timm_aa._RAND_TRANSFORMS, timm_aa._RAND_INCREASING_TRANSFORMS):
        sections = ["inc1" if names == timm_aa._RAND_INCREASING_TRANSFORMS else "inc0"]
    else:
        raise _Unknown(f"timm RandAugment of the operations {names} runs in Python (native: "
                       "its standard, increasing, tweights, 3a and 3aw lists)")
    m, p, mstd, mmax = first.magnitude, first.prob, first.magnitude_std, first.magnitude_max
    if isinstance(m, bool) or not isinstance(m, int) or m < 0 or not 0 <= p or mstd < 0 or \
            mmax not in (None, 0) and (isinstance(mmax, bool) or not isinstance(mmax, int)
                                       or mmax < 0):
        raise _Unknown(f"timm RandAugment(m={m!r}, p={p!r}, mstd={mstd!r}, mmax={mmax!r}) "
                       "runs in Python (native: whole m and mmax, p and mstd at least 0)")
    sections += [f"m{m}", f"n{int(t.num_layers)}", f"p{_timm_number(p)}"]
    if mstd:
        sections.append("mstd1000" if math.isinf(mstd) else f"mstd{_timm_number(mstd)}")
    if mmax:
        sections.append(f"mmax{mmax}")
    return _NATIVE_CLASSES["TimmRandAugment"](
        config="-".join(["rand"] + sections),
        **_timm_op_settings("RandAugment", "timm_rand_augment", first))


def _timm_number(x) -> str:
    """`x` as a timm config writes it and reads it back exactly: digits and a point, never
    an exponent (whose "-" would split the string)."""
    import numpy
    return numpy.format_float_positional(float(x), trim="-")


def _timm_shared_op(name: str, ops):
    """The first of timm's AugmentOps `ops` (of its RandAugment or AugMix `name`), which must
    share their parameters: stoker's operation takes one set."""
    ops = list(ops)
    first = ops[0] if ops else None
    shared = ("prob", "magnitude", "magnitude_std", "magnitude_max", "kwargs", "hparams")
    if first is None or any(getattr(op, a) != getattr(first, a) for op in ops for a in shared):
        raise _Unknown(f"timm {name} runs natively with one probability, magnitude and "
                       "hparams for all its operations only")
    return first


def _timm_op_settings(name: str, op: str, first) -> dict:
    """The interpolation, fill and translate_pct of native operation `op` from timm's
    AugmentOp `first` (its hparams)."""
    fill = first.kwargs.get("fillcolor")
    if not isinstance(fill, (tuple, list)):
        raise _Unknown(f"timm {name} with img_mean {fill!r} runs in Python (native: one "
                       "value per channel)")
    return dict(interpolation=_interpolation(f"timm {name}", op, first.kwargs.get("resample")),
                fill=list(fill), translate_pct=first.hparams.get("translate_pct", 0.45))


def _timm_augmix(t):
    """stoker's TimmAugMix of timm's AugMixAugment `t` (augment_and_mix_transform's): its
    config string rebuilt from what it holds; other operations or a magnitude bound run in
    Python."""
    first = _timm_shared_op("AugMix", t.ops)
    from timm.data import auto_augment as timm_aa
    names = [op.name for op in t.ops]
    if names != timm_aa._AUGMIX_TRANSFORMS:
        raise _Unknown(f"timm AugMix of the operations {names} runs in Python (native: its "
                       "own list)")
    m, mstd, alpha = first.magnitude, first.magnitude_std, t.alpha
    mmax = first.magnitude_max
    if first.prob != 1.0 or mmax or isinstance(m, bool) or not isinstance(m, int) or m < 0 or \
            mstd < 0 or not 0.001 <= alpha <= 1000 or not 1 <= t.width <= 64 or t.depth > 64:
        raise _Unknown(f"timm AugMix(m={m!r}, mstd={mstd!r}, mmax={mmax!r}, alpha={alpha!r}, "
                       f"width={t.width!r}, depth={t.depth!r}) runs in Python (native: whole m, "
                       "no mmax, alpha in [0.001, 1000], width 1 to 64, depth up to 64)")
    sections = [f"m{m}", f"w{int(t.width)}", f"d{max(int(t.depth), 0)}",
                f"a{_timm_number(alpha)}", f"b{int(bool(t.blended))}"]
    if not math.isinf(mstd):
        sections.append(f"mstd{_timm_number(mstd)}")
    return _NATIVE_CLASSES["TimmAugMix"](config="-".join(["augmix"] + sections),
                                         **_timm_op_settings("AugMix", "timm_augmix", first))


def _timm_aspect(log_aspect: float) -> float:
    """The aspect ratio whose math.log is timm's stored `log_aspect` exactly (exp may be an
    ulp off), so that the native draw's logarithm is timm's."""
    aspect = math.exp(log_aspect)
    for candidate in (aspect, math.nextafter(aspect, 0), math.nextafter(aspect, math.inf)):
        if math.log(candidate) == log_aspect:
            return candidate
    return aspect


def _timm_random_erasing(t):
    """stoker's TimmRandomErasing of timm's RandomErasing `t`, a per-sample step: num_splits
    (the clean first part of a batch) acts on a batch [N, C, H, W] only, and timm's call on
    one image [C, H, W] erases as without it, so it is left out."""
    low, high = t.log_aspect_ratio
    return _NATIVE_CLASSES["TimmRandomErasing"](
        probability=t.probability, min_area=t.min_area, max_area=t.max_area,
        min_aspect=_timm_aspect(low), max_aspect=_timm_aspect(high), mode=t.mode or "const",
        min_count=t.min_count, max_count=t.max_count)


# timm's (timm.data): its crop with "random" interpolation, its tensor steps, its RandAugment,
# AugMix and RandomErasing. Its other classes run in Python.
_TIMM_TRANSLATIONS = {
    "RandAugment": _timm_rand_augment,
    "AugMixAugment": _timm_augmix,
    "RandomErasing": _timm_random_erasing,
    "RandomResizedCropAndInterpolation": lambda t: RandomResizedCrop(
        t.size, t.scale, t.ratio, interpolation=t.interpolation),
    "MaybeToTensor": lambda t: ToTensor(),
    "MaybePILToTensor": lambda t: PILToTensor(),
}


def _from_torchvision(t):
    """stoker's equivalent of torchvision's (or timm's) transform `t`, or None for a step with
    nothing to do; ValueError if there is none."""
    name = type(t).__name__
    timm = type(t).__module__.startswith("timm.")
    table = _TIMM_TRANSLATIONS if timm else _TRANSLATIONS
    if name not in table:
        raise _Unknown(f"{'timm' if timm else 'torchvision'} transform {name} is not supported "
                       "by stoker.Loader")
    try:
        return table[name](t)
    except (AttributeError, TypeError) as e:  # a class of that name but another shape
        raise _Unknown(f"{type(t).__module__}.{name} is not the transform stoker translates: "
                       f"{e}") from None


class _Unknown(ValueError):
    """A transform class stoker has no equivalent of (the message then lists what it has)."""


class _BackendMismatch(ValueError):
    """A transform stoker translates, but to the pixels of torchvision's other backend."""


def _stoker_transform(t):
    if isinstance(t, _STOKER_CLASSES):
        return t
    if type(t).__module__.startswith(("torchvision.transforms", "timm.data")):
        return _from_torchvision(t)
    raise _Unknown(f"{type(t).__name__} is not a transform stoker.Loader runs")


_STOKER_CLASSES = (Compose, ToTensor, PILToTensor, Normalize, RandomResizedCrop, Resize,
                   CenterCrop, RawBytes, DecodeImage, _NativeOperation)


def _is_compose(transform) -> bool:
    """stoker's Compose, torchvision's, or another of that name holding a list of steps (the
    detection reference's own, which runs them in turn on (image, target))."""
    return isinstance(transform, Compose) or (
        type(transform).__name__ == "Compose" and
        (type(transform).__module__.startswith("torchvision.transforms") or
         isinstance(getattr(transform, "transforms", None), list)))


def _flatten(transform) -> list:
    """The steps of `transform`, Compose nests (stoker's and torchvision's) flattened, and so
    is an object that only holds one in ``.transforms`` (torchvision's reference presets,
    ClassificationPresetTrain/Eval, passed whole as its train.py does)."""
    if _is_compose(transform):
        return [step for inner in transform.transforms for step in _flatten(inner)]
    if _is_compose(getattr(transform, "transforms", None)) and callable(transform):
        return _flatten(transform.transforms)
    return [transform]


# The torchvision (and timm) steps after which the image is a tensor: the steps after them run
# on torchvision's tensor backend, those before on its PIL backend.
_TO_TENSOR = {"PILToTensor", "ToImage", "ToTensor", "ConvertImageDtype", "MaybeToTensor",
              "MaybePILToTensor"}
_BACKEND_WORDS = {"pil": "a PIL image", "tensor": "a uint8 tensor"}


def converts_to_tensor(steps: list) -> bool:
    """Whether one of `steps` (torchvision's, timm's or stoker's) makes a tensor of a PIL
    image: in torchvision the steps after it get tensors."""
    return any(type(step).__name__ in _TO_TENSOR or isinstance(step, (ToTensor, PILToTensor))
               for step in steps)


def _backends(step) -> set:
    """The torchvision backends native pixel operation `step` equals ({"pil"}, {"tensor"}, both,
    or none: a combinator of operations of each), from the registry's "backend" (a call's own
    "backend" parameter where the operation has one: color_jitter)."""
    text = str(step.params.get("ops", ""))
    calls = [(step._op, step.params.get("backend"))] + [
        (name, backend or None) for name, backend in
        re.findall(r"(?<=[\[;])([a-z][a-z0-9_]*)(?:[^;\]]*?backend=([a-z]+))?", text)]
    backends = {"pil", "tensor"}
    for name, backend in calls:
        backend = backend or _OPERATIONS[name]["backend"]
        backends &= {"pil", "tensor"} if backend == "both" else {backend}
    return backends


def _on_backend(step, backend: str):
    """`step` called for torchvision's `backend` where it is an operation with a "backend"
    parameter (color_jitter, the policies) or a combinator of some; `step` as it is otherwise
    (a resampling source: _resize_on_tensor). _BackendMismatch for a policy on a tensor that
    its tensor kernels do not take (bicubic, a fill outside 0..255)."""
    if isinstance(step, _RESAMPLING):
        return step
    params = getattr(step, "params", {})
    if "backend" in params:
        if backend == "tensor" and params.get("interpolation") == "bicubic":  # a policy's
            raise _BackendMismatch(f"{type(step).__name__} bicubic on a uint8 tensor: stoker's "
                                   "tensor kernels sample nearest or bilinear")
        if backend == "tensor" and any(not 0 <= v <= 255 for v in params.get("fill") or []):
            raise _BackendMismatch(f"{type(step).__name__} on a uint8 tensor with fill "
                                   f"{params['fill']}: stoker's tensor kernels fill from 0 to 255")
        return type(step)(**dict(params, backend=backend))
    if "backend=" in str(params.get("ops", "")):
        return type(step)(**dict(params, ops=re.sub(r"backend=[a-z]+", f"backend={backend}",
                                                    params["ops"])))
    return step


def _backend_mismatch(original, step, backend: str) -> Optional[str]:
    """Why torchvision's `original`, translated as `step`, cannot run natively on torchvision's
    `backend` where it stands (None if it can): stoker's pixels are the other backend's."""
    if getattr(step, "_role", None) != "pixel" or backend in _backends(step):
        return None
    kernels = {"pil": "PIL", "tensor": "tensor"}.get("".join(_backends(step)),
                                                     "both backends' mixed")
    return (f"{type(original).__name__} on {_BACKEND_WORDS[backend]}: stoker's equals "
            f"torchvision's {kernels} kernels")


def _tensor_backend(original, step) -> tuple:
    """(stoker's backend for torchvision's resampling `original` (translated as `step`) after
    the image became a tensor, or None, and why not): "tensor" where torchvision resizes the
    uint8 tensor with torch's antialiased uint8 kernels (v2 where _v2_resizes_uint8) and
    stoker's uint8 kernel gives this torch's pixels, "tensor_float" or "tensor_float_fused"
    where it resizes it in float32 (v1, and v2 elsewhere) and stoker's float kernel, adding the
    taps in that order, gives this torch's pixels (_torch_kernel)."""
    if getattr(original, "antialias", True) in (False, None):  # None: False on a tensor
        return None, "antialias=False, torch's resize without antialiasing"
    modes = {call.group(1) for call in re.finditer(r"interpolation='?(\w+)", repr(step))}
    if ".v2" in type(original).__module__ and all(_v2_resizes_uint8(mode) for mode in modes):
        if all(_torch_kernel(mode, "uint8") for mode in modes):
            return "tensor", None
        return None, "this torch resizes a uint8 tensor otherwise than stoker"
    backends = {_torch_kernel(mode, "float32") for mode in modes}
    if len(backends) == 1 and None not in backends:
        return backends.pop(), None
    return None, "this torch resizes a tensor in float32 otherwise than stoker"


def _v2_resizes_uint8(mode: str) -> bool:
    """Whether torchvision v2 resizes a uint8 tensor with torch's uint8 kernel in `mode` on
    this CPU, as torchvision itself decides (bicubic always; bilinear on AVX2, and on AVX-512
    from torchvision 0.20 on: 0.19 resizes in float32 there)."""
    import torch
    from torchvision.transforms.v2 import InterpolationMode
    from torchvision.transforms.v2.functional import _geometry
    decides = getattr(_geometry, "_do_native_uint8_resize_on_cpu", None)
    if decides is not None:
        return decides(InterpolationMode(mode))
    return mode == "bicubic" or torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")


_KERNEL_CHECKED: Dict[tuple, Optional[str]] = {}
# stoker's backends for torch's float32 resize, by how the taps are added: torch 2.11's wheel,
# torch 2.4's.
_FLOAT_BACKENDS = ("tensor_float", "tensor_float_fused")


def _torch_kernel(mode: str, dtype: str) -> Optional[str]:
    """stoker's backend whose antialiased resize of a tensor of `dtype` gives this torch's values
    for `mode` on a few random images, down and up, with few taps and many: "tensor" for
    "uint8" (torch's uint8 kernels), "tensor_float" or "tensor_float_fused" for "float32"
    (before rounding; as torch 2.11 or torch 2.4 adds the taps), or None (torch's kernels
    change between releases, and the order of its float sums depends on how it was built):
    checked once a process."""
    if (mode, dtype) not in _KERNEL_CHECKED:
        import numpy
        import torch
        backends = ["tensor"] if dtype == "uint8" else list(_FLOAT_BACKENDS)
        rng = numpy.random.default_rng(47)
        if mode not in ("bilinear", "bicubic"):
            backends = []
        for (h, w), (out_h, out_w) in (((37, 29), (20, 23)), ((13, 17), (40, 31)),
                                       ((97, 64), (30, 44)), ((200, 9), (17, 50))):
            if not backends:
                break
            pixels = rng.integers(0, 256, (h, w, 3), dtype=numpy.uint8)
            tensor = torch.from_numpy(pixels).permute(2, 0, 1)[None]
            if dtype == "uint8":  # torch's [3, H, W], as torchvision v2 resizes a uint8 image
                theirs = torch.nn.functional.interpolate(
                    tensor, size=(out_h, out_w), mode=mode, antialias=True,
                    align_corners=False)[0].numpy()
                ours = {"tensor": numpy.frombuffer(
                    _stoker.torch_uint8_resize(pixels, out_h, out_w, mode),
                    dtype=numpy.uint8).reshape(3, out_h, out_w)}
            else:  # [H, W, 3]
                theirs = torch.nn.functional.interpolate(
                    tensor.float(), size=(out_h, out_w), mode=mode, antialias=True,
                    align_corners=False)[0].permute(1, 2, 0).numpy()
                ours = {backend: numpy.frombuffer(
                    _stoker.torch_float_resize(pixels, out_h, out_w, mode, backend),
                    dtype=numpy.float32).reshape(out_h, out_w, 3) for backend in backends}
            backends = [b for b in backends if numpy.array_equal(ours[b], theirs)]
        _KERNEL_CHECKED[mode, dtype] = backends[0] if backends else None
    return _KERNEL_CHECKED[mode, dtype]


def _resamples(step) -> bool:
    """Whether `step` is a resampling source, or a Compose holding one (weights.transforms()'s)."""
    return isinstance(step, _RESAMPLING) or (
        isinstance(step, Compose) and any(isinstance(s, _RESAMPLING) for s in step.transforms))


def _resize_on_tensor(step, backend: str):
    """Resampling source `step` (or a Compose's) with torchvision's tensor `backend` ("tensor",
    "tensor_float", "tensor_float_fused")."""
    if isinstance(step, Compose):
        return Compose([_resize_on_tensor(s, backend) if isinstance(s, _RESAMPLING) else s
                        for s in step.transforms])
    if isinstance(step, _SourceChoice):
        return _SourceChoice.of_text(
            step.params["ops"].replace("backend=pil", f"backend={backend}"), step.params["p"])
    step = copy.copy(step)
    step.backend = backend
    return step


def _source_deviation(original, reason: str) -> str:
    """The deviation of a resampling source after the image became a tensor that torchvision
    resizes otherwise than stoker can: stoker decodes and crops in one pass, and keeps it native
    (the recipes' presets crop there) rather than leave the whole pipeline to Python on the
    decoded image."""
    return (f"{type(original).__name__} on a uint8 tensor runs natively with PIL's resampling, "
            f"not torchvision's tensor resize ({reason}; pixels differ slightly; put it before "
            f"ToImage/PILToTensor for torchvision's own)")


class _NotInPython(ValueError):
    """A step that would have to run in Python cannot (one of stoker.transforms' own classes,
    or not callable)."""


def _split(field: str, originals: list, python: Optional[list], native: int) -> tuple:
    """The stoker transforms of the first `native` steps of `originals` that run natively (the
    markers PILToTensor, ToImage and ToPureTensor, which leave a uint8 image as it is, left out
    wherever they stand), why the first step that does not cannot (None if all do or it is the
    step `native`), and the deviations to tell (a source after the image became a tensor). With
    `python` a list, that step and every step after it go there, to run in Python (_NotInPython
    where one cannot); without, a ValueError names every step stoker cannot run, all at once.

    A torchvision step runs on PIL images until the first step of _TO_TENSOR (torchvision's PIL
    backend), on tensors after it: a pixel step whose native operation equals the other
    backend's pixels runs in Python, as one stoker cannot translate. stoker.transforms' own
    classes are taken as written."""
    steps: List = []
    why = None
    deviations: List[str] = []
    problems: List[ValueError] = []
    backend = "pil"
    for number, original in enumerate(originals):
        if python or (python is not None and number >= native):
            if isinstance(original, _STOKER_CLASSES) or not callable(original):
                after = f"follow a step that runs in Python " \
                    f"({_python_steps.step_name(python[0])})" if python else "run in Python"
                name = type(original).__name__
                what, hint = (f"stoker.transforms.{name}", f"use torchvision's {name} there") \
                    if isinstance(original, _STOKER_CLASSES) else (repr(original), "not callable")
                raise _NotInPython(f"field '{field}': {what} cannot {after}; {hint}")
            python.append(original)
            continue
        if converts_to_tensor([original]):
            backend = "tensor"  # from this step on (a conversion, no pixels of its own to check)
        try:
            t = _stoker_transform(original)
            if t is not original:
                t = _on_backend(t, backend)
                mismatch = _backend_mismatch(original, t, backend)
                if mismatch:
                    raise _BackendMismatch(mismatch)
                if backend == "tensor" and _resamples(t):
                    tensor, why_not = _tensor_backend(original, t)
                    if tensor is not None:
                        t = _resize_on_tensor(t, tensor)
                    elif not deviations:
                        deviations.append(_source_deviation(original, why_not))
        except ValueError as e:
            if python is None or not callable(original) or isinstance(e, _Wrong):
                problems.append(e)
            else:
                python.append(original)
                why = str(e)
            continue
        for step in _flatten(t) if t is not None else []:
            if not isinstance(step, PILToTensor):
                steps.append(step)
    if not problems:
        return steps, why, deviations
    text = "; ".join(str(p) for p in problems)
    if len(problems) > 1:
        text = f"field '{field}': {len(problems)} steps stoker.Loader cannot run: {text}"
    if any(isinstance(p, _Unknown) for p in problems):
        text += (f"; supported: {_SUPPORTED}, and torchvision's ToImage, ToDtype(float32, "
                 "scale=True), ConvertImageDtype(float32), ToPureTensor (stoker.transforms, or "
                 "torchvision.transforms' own)")
    raise ValueError(text)


def _native_steps(steps: list, role: str) -> tuple:
    """The native calls of the operations of `role` that start `steps`, and the steps after."""
    n = 0
    while n < len(steps) and getattr(steps[n], "_role", None) == role:
        n += 1
    return [step.native() for step in steps[:n]], steps[n:]


def _tensor_tail(field: str, steps: list, channels: Optional[int] = None) -> list:
    """The native calls of the steps after the pixel operations: none (uint8 as is), or
    ToTensor and/or Normalize (normalize) followed by float operations. `channels`: the
    image's, where known (a stored array's): a Normalize of another number of means is a
    ValueError (torchvision v2's broadcasts them, the native one keeps the image's channels)."""
    names = [type(s).__name__ for s in steps]
    if not names:
        return []
    made_float = 2 if names[:2] == ["ToTensor", "Normalize"] else \
        1 if names[:1] in (["ToTensor"], ["Normalize"]) else 0
    floats, rest = _native_steps(steps[made_float:], "float")
    if made_float and not rest:
        last = steps[made_float - 1]
        mean, std = (last.mean, last.std) if isinstance(last, Normalize) else ([0.0], [1.0])
        unit = steps[0].unit_scale if isinstance(steps[0], ToTensor) else "divide"
        if channels is not None and len(mean) not in (1, channels):
            raise ValueError(f"field '{field}': Normalize has {len(mean)} means for images of "
                             f"{channels} channel{'s' * (channels != 1)}: the native one takes "
                             f"1 or {channels} (torchvision v2's broadcasts them)")
        return [{"op": "normalize", "mean": mean, "std": std, "unit_scale": unit}, *floats]
    raise ValueError(f"field '{field}': after the crop, stoker supports nothing or ToTensor "
                     f"and/or Normalize, then {', '.join(_FLOAT_NAMES)}; not "
                     f"{' + '.join(names)} ({', '.join(_PIXEL_NAMES)} come right after the crop)")


def _size_call(size: tuple) -> dict:
    """The crops' size parameters of (height, width): width 0 for a square."""
    return {"size": size[0], "width": 0 if size[0] == size[1] else size[1]}


def _source_call(steps: list) -> tuple:
    """The native call of the decoding crop that starts `steps` (RandomResizedCrop, with a
    RandomHorizontalFlip right after it fused into it; Resize + CenterCrop; a RandomChoice of
    them) and the steps after it; (None, steps) where they start with none."""
    names = [type(s).__name__ for s in steps]
    if names[:1] == ["RandomResizedCrop"]:
        crop = steps[0]
        flip = 0.0
        rest = steps[1:]
        if rest and type(rest[0]).__name__ == "RandomHorizontalFlip":
            flip = rest[0].p  # fused into the crop's resize
            rest = rest[1:]
        return {"op": "random_resized_crop", **_size_call(crop.size), "scale": list(crop.scale),
                "ratio": list(crop.ratio), "flip": flip, "interpolation": crop.interpolation,
                "backend": crop.backend, "dct_scaling": crop.dct_scaling}, rest
    if names[:2] == ["Resize", "CenterCrop"]:
        return {"op": "center_crop", **_size_call(steps[1].size), "resize": steps[0].size,
                "max_size": steps[0].max_size or 0, "interpolation": steps[0].interpolation,
                "backend": steps[0].backend, "dct_scaling": steps[0].dct_scaling}, steps[2:]
    if names[:1] == ["_SourceChoice"]:
        return steps[0].native(), steps[1:]
    return None, steps


def _encoded_spec(field: str, steps: list) -> dict:
    """The native spec of an encoded-image field's native `steps`; none: each image decoded at
    its own size (DecodeImage()), as a dataset without a transform gives its images."""
    steps = steps or [DecodeImage()]
    names = [type(s).__name__ for s in steps]
    if names[:1] in (["RawBytes"], ["DecodeImage"]):
        if len(steps) > 1:
            raise ValueError(f"field '{field}': {names[0]} makes samples of varying size; no "
                             f"native step may follow it, not {' + '.join(names[1:])}")
        if isinstance(steps[0], RawBytes):
            return {"name": field, "ops": [{"op": "raw_bytes", "max_length": steps[0].max_length}]}
        return {"name": field, "ops": [{"op": "decode_image", "max_size": steps[0].max_size}]}
    source, rest = _source_call(steps)
    if source is None and names == ["Resize"]:
        resize = steps[0]
        if resize.dct_scaling:
            raise ValueError(f"field '{field}': Resize alone (images of their own size) has no "
                             "dct_scaling")
        return {"name": field, "ops": [{"op": "resize", "size": resize.size,
                                        "max_size": resize.max_size or 0,
                                        "capacity": resize.capacity or 0,
                                        "interpolation": resize.interpolation,
                                        "backend": resize.backend}]}
    if source is None and names[:1] == ["Resize"]:
        raise ValueError(f"field '{field}': Resize without CenterCrop makes samples of varying "
                         f"size; no native step may follow it, not {' + '.join(names[1:])}")
    if source is None:
        raise ValueError(
            f"field '{field}' holds encoded images of varying size: its transforms must start "
            f"with RandomResizedCrop or Resize + CenterCrop (or be Resize alone, images of "
            f"their resized size, or DecodeImage), then optionally "
            f"{' or '.join(_PIXEL_NAMES)}, then ToTensor and/or Normalize, then optionally "
            f"{' or '.join(_FLOAT_NAMES)}; got {' + '.join(names) or 'nothing'}")
    pixels, rest = _native_steps(rest, "pixel")
    return {"name": field, "ops": [source, *pixels, *_tensor_tail(field, rest)]}


def _fixed_spec(field: str, dtype: str, steps: list, shape=None) -> dict:
    names = [type(s).__name__ for s in steps]
    if not names:
        return {"name": field, "ops": []}
    if dtype != "uint8":
        raise ValueError(f"field '{field}' ({dtype}) is copied as stored; transforms apply to "
                         f"uint8 and encoded-image fields, not {' + '.join(names)}")
    if any(isinstance(s, (RandomResizedCrop, Resize, CenterCrop, _SourceChoice)) for s in steps):
        raise ValueError(f"field '{field}' is a fixed-size uint8 array: stoker supports "
                         f"{', '.join(_PIXEL_NAMES)}, ToTensor and/or Normalize and "
                         f"{', '.join(_FLOAT_NAMES)} on it, not {' + '.join(names)} (crops "
                         f"need an encoded-image field)")
    pixels, rest = _native_steps(steps, "pixel")
    channels = None if shape is None else shape[0] if len(shape) == 3 else 1
    return {"name": field, "ops": pixels + _tensor_tail(field, rest, channels)}


def call_text(call: dict) -> str:
    """A native operation's call as plans show it: ``random_resized_crop(size=224, ...)``."""
    return f"{call['op']}({', '.join(f'{k}={v!r}' for k, v in call.items() if k != 'op')})"


class FieldPlan:
    """How the loader makes a batch's fields: ``specs``, the native calls of each field;
    ``python``, {field: [steps]} of the fields with steps that run in Python after them
    (stoker/_python_steps.py); ``notes``, {field: [sentence]}: why a field's steps from one on
    run in Python, and where a native step deviates from torchvision (a source after ToImage);
    ``joint``, the steps of a joint transform that run in Python on the whole sample after it
    (a _joint.JointTail, its steps in ``python`` under "image"), or None."""

    def __init__(self, specs: List[dict], python: Dict[str, list],
                 notes: Optional[Dict[str, list]] = None, joint=None):
        self.specs = specs
        self.python = python
        self.notes = notes or {}
        self.joint = joint

    def python_fields(self) -> set:
        """The fields whose values the Python steps make (their type and shape theirs)."""
        return set(self.python) | set(self.joint.outputs if self.joint else ())

    def describe(self) -> Dict[str, list]:
        """{field: [(step, "native" or "python"), ...]}: every field's steps and where each
        runs, native operations as their calls (``random_resized_crop(size=224, ...)``)."""
        out = {}
        for spec in self.specs:
            rows = [(call_text(call), "native") for call in spec["ops"]]
            rows += [(_python_steps.step_name(step), "python")
                     for step in self.python.get(spec["name"], [])]
            out[spec["name"]] = rows
        return out


def joint_outputs(mapping: dict, schema: List[dict]) -> set:
    """The stored fields that a torchvision v2 joint transform of `mapping`'s image makes with
    it (stoker/_joint.py: boxes, labels, masks, the class map), as plan_fields will read
    `mapping`; empty where none applies."""
    by_name = {f["name"]: f for f in schema}
    image = mapping.get(_joint.IMAGE)
    if image is None or not _joint.applies(_flatten(image), by_name, mapping):
        return set()
    made = (_joint.BOXES, _joint.LABELS, _joint.MASKS, _joint.CLASS_MAP)
    return {name for name in made if name in by_name and name not in mapping}


def plan_fields(transforms, schema: List[dict], allow_python: bool = True) -> FieldPlan:
    """The loader's plan for `transforms` over a dataset of `schema`.

    `transforms` is None, a mapping {field: transform or None} (None leaves the field out),
    or one transform (a Compose) for the field "image". torchvision v2 transforms of the image
    of a dataset with boxes and labels, or a class map "mask", apply to the whole sample
    (stoker/_joint.py). Fields without a transform are copied as stored, but bytes fields
    other than "image", which come only where a transform (RawBytes) names them; the "image"
    field must have one (or be left out with None) that starts natively with a crop. With
    `allow_python`, steps stoker cannot run natively run in Python after the native ones (on
    the whole sample after a joint transform's); without, they are a ValueError naming them
    all.
    """
    by_name: Dict[str, dict] = {f["name"]: f for f in schema}
    if transforms is None:
        mapping: Dict[str, object] = {}
    elif isinstance(transforms, dict):
        mapping = dict(transforms)
    else:
        if "image" not in by_name:
            raise ValueError("a single transform applies to the field 'image', which this "
                             f"dataset lacks (fields: {', '.join(by_name)}); pass a mapping "
                             "{field: transform}")
        mapping = {"image": transforms}
    # A decoding operation may make a field of its own, reading the stored field it names
    # (ClipFrameIndices the video's).
    made = [name for name, t in mapping.items() if name not in by_name and t is not None
            and isinstance((_flatten(t) or [None])[0], tuple(_DECODING_CLASSES.values()))]
    for name in mapping:
        if name not in by_name and name not in made:
            raise ValueError(f"transforms name the field '{name}', which the dataset lacks "
                             f"(fields: {', '.join(by_name)})")
    joint: Dict[str, dict] = {}
    tail = None
    image = mapping.get(_joint.IMAGE)
    if image is not None and _joint.applies(_flatten(image), by_name, mapping):
        joint, tail = _joint.specs(_flatten(image), by_name, mapping, _to_float, allow_python)
    specs = []
    python: Dict[str, list] = {} if tail is None else {_joint.IMAGE: tail.steps}
    notes: Dict[str, list] = {} if tail is None else {_joint.IMAGE: [
        f"{type(tail.steps[0]).__name__} and the steps after it run in Python on the whole "
        f"sample ({', '.join(tail.outputs)}): {tail.why}"]}
    for field in schema:
        name = field["name"]
        if name in joint:
            specs.append(joint[name])
            continue
        if name in mapping and mapping[name] is None:
            continue
        if name not in mapping and field["dtype"] == "bytes" and name != _joint.IMAGE:
            continue  # a bytes field comes where a transform (RawBytes) names it
        originals = _flatten(mapping[name]) if name in mapping else []
        spec, in_python, why, deviations = _field_plan(name, field["dtype"], originals,
                                                       allow_python, field.get("shape"))
        specs.append(spec)
        for deviation in deviations:
            warnings.warn(f"field '{name}': {deviation}", UserWarning, stacklevel=3)
        if in_python:
            python[name] = in_python
            deviations.append(f"{type(in_python[0]).__name__} and the steps after it run in "
                              f"Python: {why}")
        if deviations:
            notes[name] = deviations
    for name in made:
        specs.append(_field_plan(name, "bytes", _flatten(mapping[name]), allow_python)[0])
    if not specs:
        raise ValueError("the transforms leave no field in the batch")
    return FieldPlan(specs, python, notes, tail)


def _field_plan(field: str, dtype: str, originals: list, allow_python: bool,
                shape=None) -> tuple:
    """(native spec, Python steps or None, why they run in Python, deviations) of a field's
    steps `originals`. With `allow_python`, the longest start of them that the native plan can
    order runs natively and the rest in Python (a crop inside RandomApply, a step before the
    crop, a pixel step after Normalize): nothing natively, an encoded image is decoded at its
    own size (DecodeImage's default) for the Python steps. The native plan's error where no
    start of them can run so (a step of stoker.transforms' own left to Python). `shape`: the
    stored field's, where it has one."""
    if originals and isinstance(originals[0], tuple(_DECODING_CLASSES.values())):
        # A clip's steps fold into its decoding call (stoker/_clips.py); the rest in Python.
        call, rest, why = _clips.clip_call(field, originals[0].native(), originals[1:],
                                           allow_python)
        return {"name": field, "ops": [call]}, rest or None, why, []
    if originals and isinstance(originals[0], Tokenize):
        # The caption's bytes natively, the tokenizer (and any steps after it) in Python.
        if dtype != "bytes":
            raise ValueError(f"field '{field}': Tokenize takes a bytes field, not {dtype}")
        size = _cap("Tokenize", "raw_bytes", "max_length", originals[0].max_bytes)
        return {"name": field, "ops": [{"op": "raw_bytes", "max_length": size}]}, originals, \
            "Tokenize runs its tokenizer in Python", []
    first_error = None
    for native in range(len(originals), -1, -1) if allow_python else [len(originals)]:
        python: Optional[list] = [] if allow_python else None
        try:
            steps, why, deviations = _split(field, originals, python, native)
        except _NotInPython:
            if first_error is None:
                raise
            break
        try:
            if dtype != "bytes":
                spec = _fixed_spec(field, dtype, steps, shape)
            elif steps or not python:
                spec = _encoded_spec(field, steps)
            else:
                spec = {"name": field, "ops": [{"op": "decode_image",
                                                "max_size": DecodeImage().max_size}]}
        except ValueError as e:
            first_error = first_error or (e, python, why)
            continue
        if first_error is not None:
            why = f"the native plan cannot order the steps ({first_error[0]})"
        if python and dtype == "bytes" and not steps:
            why += (f"; the image is decoded at its own size for them, up to DecodeImage's "
                    f"max_size={DecodeImage().max_size} (give DecodeImage(max_size) first for "
                    "larger images)")
        return spec, python, why, deviations
    error, python, why = first_error
    if not python:
        raise error
    raise ValueError(f"{error}; the steps from {_python_steps.step_name(python[0])} on would run "
                     f"in Python, after the native ones ({why})") from None


def reads_bytes(transform) -> bool:
    """Whether `transform` (a field's) starts by reading the field's bytes as they are
    (RawBytes, Tokenize)."""
    steps = _flatten(transform) if transform is not None else []
    return bool(steps) and isinstance(steps[0], (RawBytes, Tokenize))


def captions_with(transforms, option: str) -> list:
    """The fields of `transforms` (a mapping) whose Tokenize has `option` (its attribute:
    "return_attention_mask", "packed") set."""
    if not isinstance(transforms, dict):
        return []
    firsts = {name: (_flatten(t) or [None])[0] for name, t in transforms.items() if t is not None}
    return [name for name, first in firsts.items()
            if isinstance(first, Tokenize) and getattr(first, option)]


def is_variable(spec: dict, schema: List[dict] = ()) -> bool:
    """True if the field of `spec` varies in size per sample: RawBytes, DecodeImage, Resize
    alone, clips that vary (_clips.varies), or a stored variable-length field of `schema` (its
    shape names its first dimension: ["N", 4])."""
    if "joint" in spec:  # a detection sample's field (stoker/_joint.py)
        return True
    if spec["ops"]:
        return spec["ops"][0]["op"] in ("raw_bytes", "decode_image", "resize") or \
            _clips.varies(spec["ops"][0])
    stored = next((f for f in schema if f["name"] == spec["name"]), None)
    return stored is not None and bool(stored["shape"]) and isinstance(stored["shape"][0], str)


def varies_in_rows_only(spec: dict, schema: List[dict] = ()) -> bool:
    """True if the variable field of `spec` varies in its first dimension only: RawBytes, a
    stored variable-length field as stored, a detection sample's boxes and labels (not images,
    masks or class maps, whose height and width vary)."""
    if "joint" in spec:
        return spec["joint"] == _joint.IMAGE and spec["name"] in (_joint.BOXES, _joint.LABELS)
    if spec["ops"]:
        return spec["ops"][0]["op"] == "raw_bytes"
    return is_variable(spec, schema)


def field_specs(transforms, schema: List[dict]) -> List[dict]:
    """The native field specs of `transforms` over `schema`, every step native (plan_fields
    without Python steps)."""
    return plan_fields(transforms, schema, allow_python=False).specs


def defer_normalization(specs: List[dict]) -> tuple:
    """`specs` with every ToTensor/Normalize left to the consumer: (specs whose fields the
    workers deliver as uint8, {field: (mean, std, unit_scale)} to apply after the copy to the
    device)."""
    native, deferred = [], {}
    for spec in specs:
        ops = spec["ops"]
        if ops and ops[-1]["op"] == "normalize":
            call = ops[-1]
            deferred[spec["name"]] = (call["mean"], call["std"], call.get("unit_scale", "divide"))
            spec = dict(spec, ops=ops[:-1])
        native.append(spec)
    return native, deferred
