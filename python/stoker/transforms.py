"""Per-field transforms for stoker.Loader, named and composed like torchvision's.

They run in the loader's native worker threads, not in Python: each field's pipeline is
translated into one of the loader's native field transforms. The pipelines it knows:

* a fixed uint8 field (e.g. Fashion-MNIST's ``image``, ``[1, 28, 28]``):
  ``ToTensor()`` (float32 in [0, 1]), ``Normalize(mean, std)`` (float32
  ``(x / 255 - mean) / std``: like torchvision's ``ToTensor`` then ``Normalize``), or both;
  no transform copies it as stored;
* an encoded-image field (JPEG/PNG bytes, as ``stoker convert imagefolder`` stores them):
  ``RandomResizedCrop(size)`` optionally followed by ``RandomHorizontalFlip()`` (training), or
  ``Resize(n)`` then ``CenterCrop(size)`` (evaluation); then ``ToTensor()`` and/or
  ``Normalize(mean, std)`` for float32 ``[3, size, size]``, or nothing for uint8 as resized
  (``PILToTensor``'s values, to normalise on the device);
* any other fixed field: copied as stored.

Colour operations go right after the crop (or first, on a fixed uint8 image), before
``ToTensor``/``Normalize``: ``ColorJitter(brightness, contrast, saturation, hue)``,
``RandomGrayscale(p)`` and whatever else the native library has, torchvision's to the pixel.
Their classes are built from the native operations' description (``stoker._stoker.operations()``,
the same that ``stoker ops`` lists), which also gives the bounds checked here: a wrong parameter
raises the same one-line ValueError as the CLI's ``--augment``.

Anything else raises one ValueError naming every step stoker cannot run (and what is
supported). torchvision's own classes of the same names (and a ``torchvision.transforms.Compose``
of them) are accepted too and translated, with the same checks, ``ColorJitter`` and
``RandomGrayscale`` of transforms and transforms.v2 included, and so are the dtype steps of
torchvision's reference presets: ``ToDtype(torch.float32, scale=True)`` (v2) and
``ConvertImageDtype(torch.float)`` (v1) are ``ToTensor`` (other dtypes, or ``scale=False``, are
refused), while ``PILToTensor``, ``ToImage`` and ``ToPureTensor`` only say the image is a uint8
tensor and may stand anywhere (a ColorJitter range stoker cannot draw, such as ``brightness=(0.5, 0.8)``, raises a
one-line ValueError). Pixels are torchvision's (PIL's decode and antialiased bilinear resize)
up to float rounding (uint8 byte for byte). The fast mode is opt-in: ``dct_scaling=True`` on
stoker's ``RandomResizedCrop`` and ``Resize`` (the CLI's ``--dct-scaling``) decodes JPEGs at
1/2 or 1/4 scale when the crop still covers the output: faster, pixels slightly different.
Random crops, flips and colour changes draw from each sample's own stream of (seed, epoch,
index): the same for any number of workers, not the same draws as torchvision's.
"""

from __future__ import annotations

import inspect
import math
from typing import Dict, List, Sequence

from stoker import _stoker

__all__ = ["Compose", "ToTensor", "PILToTensor", "Normalize", "RandomResizedCrop",
           "RandomHorizontalFlip", "Resize", "CenterCrop"]

# The native operations by name (pipeline/op_registry.h): their parameters' bounds are read from
# here, and the pixel operations' classes are built from it (below).
_OPERATIONS = {op["name"]: op for op in _stoker.operations()}


def _param(op: str, name: str) -> dict:
    return next(p for p in _OPERATIONS[op]["params"] if p["name"] == name)


def _square_size(name: str, size, op: str) -> int:
    """An output side from an int or an (h, w) pair with h == w, within native `op`'s size."""
    if isinstance(size, Sequence) and not isinstance(size, str):
        if len(size) == 1:
            size = size[0]
        elif len(size) == 2 and size[0] == size[1]:
            size = size[0]
        else:
            raise ValueError(f"{name}: size {tuple(size)} is not square; stoker makes square "
                             "outputs (an int, or (n, n))")
    largest = _param(op, "size")["max"]
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= largest:
        raise ValueError(f"{name}: size must be a positive int up to {largest}, not {size!r}")
    return size


def _pair(name: str, what: str, value) -> tuple:
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: {what} must be a pair of numbers, not {value!r}") from None
    return low, high


def _floats(name: str, what: str, value) -> List[float]:
    values = [value] if isinstance(value, (int, float)) else list(value)
    try:
        return [float(v) for v in values]
    except (TypeError, ValueError):
        raise ValueError(f"{name}: {what} must be numbers, not {value!r}") from None


class Compose:
    """Transforms applied in order, as torchvision.transforms.Compose."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __repr__(self):
        return f"Compose({self.transforms!r})"


class ToTensor:
    """uint8 to float32 in [0, 1] (x / 255), as torchvision's ToTensor."""

    def __repr__(self):
        return "ToTensor()"


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


class RandomResizedCrop:
    """torchvision's RandomResizedCrop (bilinear, antialiased) of an encoded image.

    ``dct_scaling=True`` (the fast mode) lets JPEGs decode at 1/2 or 1/4 scale when the crop
    still covers the output: faster, pixels slightly different from a full decode
    (docs/BENCHMARKS.md).
    """

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), dct_scaling=False):
        self.size = _square_size("RandomResizedCrop", size, "random_resized_crop")
        self.scale = _pair("RandomResizedCrop", "scale", scale)
        self.ratio = _pair("RandomResizedCrop", "ratio", ratio)
        self.dct_scaling = bool(dct_scaling)

    def __repr__(self):
        return f"RandomResizedCrop({self.size}, scale={self.scale}, ratio={self.ratio})"


class RandomHorizontalFlip:
    """Flips with probability p (after RandomResizedCrop)."""

    def __init__(self, p=0.5):
        p = float(p)
        bounds = _param("random_resized_crop", "flip")
        if not bounds["min"] <= p <= bounds["max"]:
            raise ValueError(f"RandomHorizontalFlip: p must be in [{bounds['min']:g}, "
                             f"{bounds['max']:g}], not {p}")
        self.p = p

    def __repr__(self):
        return f"RandomHorizontalFlip(p={self.p})"


class Resize:
    """The shorter side resized to ``size`` (bilinear, antialiased); then CenterCrop."""

    def __init__(self, size, dct_scaling=False):
        if isinstance(size, Sequence) and len(size) == 1:
            size = size[0]
        largest = _param("center_crop", "resize")["max"]
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= largest:
            raise ValueError(f"Resize: size must be one positive int (the shorter side) up to "
                             f"{largest}, not {size!r}")
        self.size = size
        self.dct_scaling = bool(dct_scaling)

    def __repr__(self):
        return f"Resize({self.size})"


class CenterCrop:
    """The central size × size crop (after Resize)."""

    def __init__(self, size):
        self.size = _square_size("CenterCrop", size, "center_crop")

    def __repr__(self):
        return f"CenterCrop({self.size})"


class _PixelOperation:
    """A native pixel operation (a colour change of a uint8 image), its parameters checked by
    the registry as the CLI's --augment checks them; subclasses are built by _pixel_class."""

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
        self.params = _stoker.check_operation(self._op, given)
        for key, value in self.params.items():
            setattr(self, key, value)

    def native(self) -> dict:
        """The loader's call of the operation."""
        return {"op": self._op, **self.params}

    def __repr__(self):
        args = ", ".join(f"{key}={value!r}" for key, value in self.params.items())
        return f"{type(self).__name__}({args})"


def _pixel_class(op: dict) -> type:
    """The class of native pixel operation `op` (its description): the parameters in order,
    positional or keyword, with their defaults."""
    params = [inspect.Parameter(p["name"], inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                default=p["default"]) for p in op["params"]]
    doc = "\n".join([op["doc"] + ".", ""] + [f"{p['name']}: {p['doc']}" for p in op["params"]])
    return type(op["python_class"], (_PixelOperation,),
                {"_op": op["name"], "__doc__": doc, "__module__": __name__,
                 "__signature__": inspect.Signature(params)})


_PIXEL_CLASSES = {op["python_class"]: _pixel_class(op) for op in _OPERATIONS.values()
                  if op["role"] == "pixel"}
globals().update(_PIXEL_CLASSES)
__all__ += sorted(_PIXEL_CLASSES)

_SUPPORTED = ", ".join(["Compose", "ToTensor", "PILToTensor", "Normalize", "RandomResizedCrop",
                        "RandomHorizontalFlip", "Resize", "CenterCrop", *sorted(_PIXEL_CLASSES)])


def _interpolation_is_bilinear(t) -> bool:
    mode = getattr(t, "interpolation", None)
    return mode is None or getattr(mode, "value", mode) in ("bilinear", 2)


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
    return _PIXEL_CLASSES["ColorJitter"](
        brightness=_jitter_amount("brightness", t.brightness, 1.0),
        contrast=_jitter_amount("contrast", t.contrast, 1.0),
        saturation=_jitter_amount("saturation", t.saturation, 1.0),
        hue=_jitter_amount("hue", t.hue, 0.0))


def _float32(dtype) -> bool:
    return str(dtype) == "torch.float32"  # torch.float is torch.float32; torch not imported


def _from_torchvision(t):
    """stoker's equivalent of torchvision transform `t`, or None for a step with nothing to do
    (ToImage, ToPureTensor: the image is a uint8 tensor already); ValueError if there is
    none."""
    name = type(t).__name__
    if name in ("RandomResizedCrop", "Resize") and not _interpolation_is_bilinear(t):
        raise ValueError(f"torchvision {name} with interpolation {t.interpolation}: stoker "
                         "resizes bilinearly (antialiased, as PIL) only")
    if name == "Resize" and getattr(t, "max_size", None) is not None:
        raise ValueError("torchvision Resize with max_size is not supported")
    if name == "Normalize" and getattr(t, "inplace", False):
        raise ValueError("torchvision Normalize(inplace=True) is not supported")
    if name in ("ToImage", "ToPureTensor"):
        return None
    if name == "ToDtype":
        if not _float32(t.dtype) or not t.scale:
            raise ValueError(f"torchvision ToDtype(dtype={t.dtype}, scale={t.scale}): stoker "
                             "converts images to torch.float32 with scale=True only")
        return ToTensor()
    if name == "ConvertImageDtype":
        if not _float32(t.dtype):
            raise ValueError(f"torchvision ConvertImageDtype({t.dtype}): stoker converts "
                             "images to torch.float32 (torch.float) only")
        return ToTensor()
    if name == "ToTensor":
        return ToTensor()
    if name == "PILToTensor":
        return PILToTensor()
    if name == "Normalize":
        return Normalize(t.mean, t.std)
    if name == "RandomResizedCrop":
        return RandomResizedCrop(t.size, t.scale, t.ratio)
    if name == "RandomHorizontalFlip":
        return RandomHorizontalFlip(t.p)
    if name == "Resize":
        return Resize(t.size)
    if name == "CenterCrop":
        return CenterCrop(t.size)
    if name == "ColorJitter":
        return _color_jitter(t)
    if name == "RandomGrayscale":
        return _PIXEL_CLASSES["RandomGrayscale"](t.p)
    raise _Unknown(f"torchvision transform {name} is not supported by stoker.Loader")


class _Unknown(ValueError):
    """A transform class stoker has no equivalent of (the message then lists what it has)."""


def _stoker_transform(t):
    if isinstance(t, (Compose, ToTensor, PILToTensor, Normalize, RandomResizedCrop,
                      RandomHorizontalFlip, Resize, CenterCrop, _PixelOperation)):
        return t
    if type(t).__module__.startswith("torchvision.transforms"):
        return _from_torchvision(t)
    raise _Unknown(f"{type(t).__name__} is not a transform stoker.Loader runs")


def _collect(transform, steps: list, problems: list) -> None:
    """Appends to `steps` the stoker transforms of `transform` (Compose nests flattened; the
    markers PILToTensor, ToImage and ToPureTensor, which leave a uint8 image as it is, left
    out wherever they stand), and to `problems` (ValueError, ...) for each step it cannot
    run."""
    if isinstance(transform, Compose) or (
            type(transform).__name__ == "Compose" and
            type(transform).__module__.startswith("torchvision.transforms")):
        for inner in transform.transforms:
            _collect(inner, steps, problems)
        return
    try:
        t = _stoker_transform(transform)
    except ValueError as e:
        problems.append(e)
        return
    if t is not None and not isinstance(t, PILToTensor):
        steps.append(t)


def _steps(field: str, transform) -> list:
    """The flat list of stoker transforms in `transform`; a ValueError naming every step
    stoker cannot run, all at once."""
    steps: List = []
    problems: List[ValueError] = []
    _collect(transform, steps, problems)
    if not problems:
        return steps
    text = "; ".join(str(p) for p in problems)
    if len(problems) > 1:
        text = f"field '{field}': {len(problems)} steps stoker.Loader cannot run: {text}"
    if any(isinstance(p, _Unknown) for p in problems):
        text += (f"; supported: {_SUPPORTED}, and torchvision's ToImage, ToDtype(float32, "
                 "scale=True), ConvertImageDtype(float32), ToPureTensor (stoker.transforms, or "
                 "torchvision.transforms' own)")
    raise ValueError(text)


def _pixel_steps(steps: list) -> tuple:
    """The native calls of the pixel operations that start `steps`, and the steps after them."""
    n = 0
    while n < len(steps) and isinstance(steps[n], _PixelOperation):
        n += 1
    return [step.native() for step in steps[:n]], steps[n:]


def _tensor_tail(field: str, steps: list) -> list:
    """The native calls of the output steps after the pixels: none (uint8 as is) or normalize."""
    names = [type(s).__name__ for s in steps]
    if not names:
        return []
    if names == ["ToTensor"]:
        return [{"op": "normalize", "mean": [0.0], "std": [1.0]}]
    if names in (["Normalize"], ["ToTensor", "Normalize"]):
        return [{"op": "normalize", "mean": steps[-1].mean, "std": steps[-1].std}]
    raise ValueError(f"field '{field}': after the crop, stoker supports nothing, ToTensor, "
                     f"Normalize or ToTensor + Normalize, not {' + '.join(names)} "
                     f"({', '.join(sorted(_PIXEL_CLASSES))} come right after the crop)")


def _encoded_image_spec(field: str, steps: list) -> dict:
    names = [type(s).__name__ for s in steps]
    if names[:1] == ["RandomResizedCrop"]:
        crop = steps[0]
        flip = 0.0
        rest = steps[1:]
        if rest and isinstance(rest[0], RandomHorizontalFlip):
            flip = rest[0].p
            rest = rest[1:]
        source = {"op": "random_resized_crop", "size": crop.size, "scale": list(crop.scale),
                  "ratio": list(crop.ratio), "flip": flip, "dct_scaling": crop.dct_scaling}
    elif names[:2] == ["Resize", "CenterCrop"]:
        source = {"op": "center_crop", "size": steps[1].size, "resize": steps[0].size,
                  "dct_scaling": steps[0].dct_scaling}
        rest = steps[2:]
    else:
        raise ValueError(
            f"field '{field}' holds encoded images of varying size: its transforms must start "
            f"with RandomResizedCrop [+ RandomHorizontalFlip] or Resize + CenterCrop, then "
            f"optionally {' or '.join(sorted(_PIXEL_CLASSES))}, then ToTensor and/or Normalize; "
            f"got {' + '.join(names) or 'nothing'}")
    pixels, rest = _pixel_steps(rest)
    return {"name": field, "ops": [source, *pixels, *_tensor_tail(field, rest)]}


def _fixed_spec(field: str, dtype: str, steps: list) -> dict:
    names = [type(s).__name__ for s in steps]
    if not names:
        return {"name": field, "ops": []}
    if dtype != "uint8":
        raise ValueError(f"field '{field}' ({dtype}) is copied as stored; transforms apply to "
                         f"uint8 and encoded-image fields, not {' + '.join(names)}")
    if any(isinstance(s, (RandomResizedCrop, RandomHorizontalFlip, Resize, CenterCrop))
           for s in steps):
        raise ValueError(f"field '{field}' is a fixed-size uint8 array: stoker supports "
                         f"ToTensor and/or Normalize on it, not {' + '.join(names)} (crops and "
                         f"flips need an encoded-image field)")
    pixels, rest = _pixel_steps(steps)
    return {"name": field, "ops": pixels + _tensor_tail(field, rest)}


def field_specs(transforms, schema: List[dict]) -> List[dict]:
    """The loader's native field specs for `transforms` over a dataset of `schema`.

    `transforms` is None, a mapping {field: transform or None} (None leaves the field out),
    or one transform (a Compose) for the field "image". Fields without a transform are
    copied as stored; an encoded-image field must have one (or be left out with None).
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
    for name in mapping:
        if name not in by_name:
            raise ValueError(f"transforms name the field '{name}', which the dataset lacks "
                             f"(fields: {', '.join(by_name)})")
    specs = []
    for field in schema:
        name = field["name"]
        if name in mapping and mapping[name] is None:
            continue
        steps = _steps(name, mapping[name]) if name in mapping else []
        if field["dtype"] == "bytes":
            specs.append(_encoded_image_spec(name, steps))
        else:
            specs.append(_fixed_spec(name, field["dtype"], steps))
    if not specs:
        raise ValueError("the transforms leave no field in the batch")
    return specs


def defer_normalization(specs: List[dict]) -> tuple:
    """`specs` with every ToTensor/Normalize left to the consumer: (specs whose fields the
    workers deliver as uint8, {field: (mean, std)} to apply after the copy to the device)."""
    native, deferred = [], {}
    for spec in specs:
        ops = spec["ops"]
        if ops and ops[-1]["op"] == "normalize":
            deferred[spec["name"]] = (ops[-1]["mean"], ops[-1]["std"])
            spec = dict(spec, ops=ops[:-1])
        native.append(spec)
    return native, deferred
