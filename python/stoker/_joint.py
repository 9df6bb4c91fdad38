"""A detection or segmentation sample's transforms as one native joint transform
(pipeline/joint_pipeline.h): torchvision's v2 transforms applied to (image, target), as the
references apply their presets. A detection sample: an encoded ``image``, ``boxes`` (float32
[N, 4], XYXY), ``labels`` (int64 [N]), and ``masks`` (the importers' stacked PNG) unless the
mapping names them; a segmentation sample: an encoded ``image`` and its ``mask`` (a PNG class
map, ``stoker convert masks``). They come out together: one flip draw moves all of them,
SanitizeBoundingBoxes drops an object's box, label and mask at once. Other fields (area,
iscrowd, ...) come as stored, as torchvision's v2 leaves a target's plain tensors. The steps from
the first one stoker cannot run natively on run in Python on the sample the native ones made
(stoker/_joint_python.py)."""

import math
from typing import Dict, List, Optional, Tuple

from stoker._float_pixels import unit_scale

# The stored fields a joint transform reads and makes.
IMAGE, BOXES, LABELS, MASKS, CLASS_MAP = "image", "boxes", "labels", "masks", "mask"
# The image's capacity (its largest side) where neither a DecodeImage nor the steps bound it.
_DEFAULT_MAX_SIZE = 1024
# Steps with nothing to do on the stored sample: type conversions, XYXY kept as stored.
_MARKERS = ("PILToTensor", "ToImage", "ToPureTensor")
_SUPPORTED = ("RandomShortestSize, RandomResize and ScaleJitter (bilinear, before ToImage), "
              "RandomHorizontalFlip, RandomIoUCrop, RandomPhotometricDistort and RandomZoomOut "
              "(before ToImage), the detection reference's FixedSizeCrop (constant padding) and "
              "the segmentation reference's PadIfSmaller (before ToImage), "
              "SanitizeBoundingBoxes (labels_getter='default'), "
              "ClampBoundingBoxes, ConvertBoundingBoxFormat('XYXY'), on a segmentation sample "
              "RandomCrop(size), ToDtype(torch.float32, scale=True) (or "
              "{image: float32, Mask: int64}), Normalize after it, PILToTensor, ToImage, "
              "ToPureTensor, and stoker.transforms.DecodeImage first (its max_size)")


def _is_v2(step) -> bool:
    return type(step).__module__.startswith("torchvision.transforms.v2")


# The references' own steps (references/detection/transforms.py, references/segmentation/
# transforms.py and v2_extras.py), not installed with torchvision: known by class name and
# attributes (one set of them or another). The detection reference's v1 presets (use_v2=False)
# use its own RandomHorizontalFlip (torch.rand(1) < p, v2's draw), RandomShortestSize and
# ScaleJitter (v2's arithmetic, masks by torch's nearest), PILToTensor and ToDtype (v1's
# convert_image_dtype), and the `ssd` and `ssdlite` presets its RandomPhotometricDistort (torch.rand(7)
# first, a ColorJitter's factor as each runs), RandomZoomOut and RandomIoUCrop (v2's draws; the
# image padded or cut alone, target["masks"] left as they are: kept, their own size and count;
# the boxes the crop leaves out dropped with their labels); the segmentation reference's v1
# presets its RandomResize (the size from
# random.randint(min_size, max_size), the PIL mask by PIL's NEAREST), RandomHorizontalFlip
# (random.random() < flip_prob), RandomCrop (padded right and bottom to the size, image 0, mask
# 255, then cut), PILToTensor (the mask int64), ToDtype and Normalize.
_REFERENCE_STEPS = {"FixedSizeCrop": [("crop_height", "crop_width", "fill", "padding_mode")],
                    "PadIfSmaller": [("size", "fill")],
                    "RandomHorizontalFlip": [("p",), ("flip_prob",)],
                    "RandomShortestSize": [("min_size", "max_size", "interpolation")],
                    "ScaleJitter": [("target_size", "scale_range", "interpolation")],
                    "RandomResize": [("min_size", "max_size")], "RandomCrop": [("size",)],
                    "PILToTensor": [()], "ToDtype": [("dtype", "scale")],
                    "Normalize": [("mean", "std")],
                    "RandomIoUCrop": [("min_scale", "max_scale", "min_aspect_ratio",
                                       "max_aspect_ratio", "options", "trials")],
                    "RandomZoomOut": [("fill", "side_range", "p")],
                    "RandomPhotometricDistort": [("_brightness", "_contrast", "_saturation",
                                                  "_hue", "p")]}


def _reference_step(step) -> bool:
    alternatives = _REFERENCE_STEPS.get(type(step).__name__, [])
    return any(all(hasattr(step, a) for a in attributes) for attributes in alternatives) and \
        not type(step).__module__.startswith("torchvision.")


# The segmentation reference's own v1 steps, which stoker runs on a (PIL image, PIL mask) pair;
# its PILToTensor makes the mask int64.
_SEGMENTATION_V1_STEPS = {"RandomResize", "RandomHorizontalFlip", "RandomCrop", "PILToTensor",
                          "ToDtype", "Normalize"}


def segmentation_v1_preset(steps: list) -> bool:
    """Whether `steps` (flattened) are the segmentation reference's own v1 preset, as its
    presets.py makes them (use_v2=False): its steps alone, PILToTensor among them."""
    names = [type(step).__name__ for step in steps]
    return "PILToTensor" in names and all(
        name in _SEGMENTATION_V1_STEPS and _reference_step(step)
        for name, step in zip(names, steps))


def _detection(schema: Dict[str, dict], mapping: dict) -> bool:
    return all(name in schema and name not in mapping for name in (BOXES, LABELS))


def _segmentation(schema: Dict[str, dict], mapping: dict) -> bool:
    return (BOXES not in schema and schema.get(CLASS_MAP, {}).get("dtype") == "bytes" and
            CLASS_MAP not in mapping)


def applies(steps: list, schema: Dict[str, dict], mapping: dict) -> bool:
    """True where the image's `steps` (flattened) are torchvision v2's (or the references' own)
    on a dataset with an encoded image and boxes and labels, or a class map, that the
    transforms keep (no transform of their own)."""
    return ((_detection(schema, mapping) or _segmentation(schema, mapping)) and
            schema.get(IMAGE, {}).get("dtype") == "bytes" and
            any(_is_v2(s) or _reference_step(s) for s in steps))


def _interpolation_name(mode) -> str:
    return str(getattr(mode, "value", mode)).lower()


def _resize_check(step, name: str, tensor: bool) -> None:
    if tensor:
        raise ValueError(f"{name} after ToImage/PILToTensor resizes a tensor; stoker resizes as "
                         "on PIL images (the references' backend='pil'): put ToImage after it")
    if _interpolation_name(step.interpolation) not in ("bilinear", "2"):
        raise ValueError(f"{name}(interpolation={step.interpolation}): stoker resizes with "
                         "BILINEAR")


def _fill_values(value, name: str, given, mask: bool) -> List[float]:
    """A fill as F.pad takes it (None: 0) as a list: one value or 3 from 0 to 255, a mask's one
    whole number; ValueError naming step `name` and its `given` fill else."""
    values = [0] if value is None else list(value) if isinstance(value, (list, tuple)) else [value]
    if len(values) not in (1, 3) or not all(0 <= v <= 255 for v in values) or \
            (mask and (len(values) != 1 or values[0] != int(values[0]))):
        raise ValueError(f"{name}(fill={given!r}): stoker fills images with one value or 3 from "
                         "0 to 255, masks with a whole number from 0 to 255")
    return [float(v) for v in values]


def _fills(fill: dict, name: str, given) -> tuple:
    """(the image's fill: one value or 3, the masks' and class map's) of a v2 fill dict
    ({type or "others": value}, as _setup_fill_arg keeps it), as F.pad fills a PIL image and a
    Mask: torchvision's own _get_fill picks each (a defaultdict's default is not "others": None,
    which F.pad takes as 0)."""
    import PIL.Image
    from torchvision import tv_tensors
    from torchvision.transforms.v2._utils import _get_fill
    image = _fill_values(_get_fill(fill, PIL.Image.Image), name, given, False)
    mask = _fill_values(_get_fill(fill, tv_tensors.Mask), name, given, True)
    return image, int(mask[0])


def _pil_only(name: str, tensor: bool) -> None:
    if tensor:
        raise ValueError(f"{name} after ToImage/PILToTensor changes a tensor; stoker runs it as "
                         "on PIL images (the references' backend='pil'): put ToImage after it")


def _may_run_in_python(step) -> bool:
    """Whether `step` may run in Python on (image, target): a callable, not stoker's own nor a
    torchvision v1 class (which takes an image alone)."""
    module = type(step).__module__
    v1 = module.startswith("torchvision.transforms") and not _is_v2(step)
    return callable(step) and not module.startswith("stoker.") and not v1


def _range(step, attribute: str) -> List[float]:
    return [float(v) for v in getattr(step, attribute)]


def _reference_segmentation_call(step, name: str, tensor: bool) -> Optional[list]:
    """The native joint operations of the segmentation reference's own v1 step `step` (its
    RandomResize or RandomCrop; None for another)."""
    if name == "RandomResize":
        _pil_only(name, tensor)
        return [{"op": "random_resize", "min_size": int(step.min_size),
                 "max_size": int(step.max_size) + 1, "masks": "pil"}]
    if name == "RandomCrop":
        _pil_only(name, tensor)
        size = int(step.size)
        return [{"op": "pad_if_smaller", "size": size, "fill": [0.0], "mask_fill": 255},
                {"op": "joint_random_crop", "size": size, "width": size, "fill": 0,
                 "mask_fill": 255, "pad_if_needed": False}]
    return None


def _reference_ssd_call(step, name: str, tensor: bool) -> Optional[dict]:
    """The native joint operation of the detection reference's own v1 SSD step `step` (its
    RandomIoUCrop, RandomZoomOut or RandomPhotometricDistort; None for another)."""
    if name == "RandomIoUCrop":
        return {**_iou_crop(step), "outside": "dropped", "masks": "kept"}
    if name not in ("RandomZoomOut", "RandomPhotometricDistort"):
        return None
    _pil_only(name, tensor)
    if name == "RandomZoomOut":  # a PIL image padded with int(fill[c])
        fill = _fill_values([int(v) for v in step.fill], name, step.fill, False)
        return {"op": "random_zoom_out", "fill": fill, "mask_fill": 0, "masks": "kept",
                "side_range": _range(step, "side_range"), "p": float(step.p)}
    return {"op": "random_photometric_distort", "p": float(step.p), "draws": "v1",
            **{a: _range(getattr(step, "_" + a), a)
               for a in ("brightness", "contrast", "saturation", "hue")}}


def _iou_crop(step) -> dict:
    return {"op": "random_iou_crop", "min_scale": float(step.min_scale),
            "max_scale": float(step.max_scale), "min_aspect_ratio": float(step.min_aspect_ratio),
            "max_aspect_ratio": float(step.max_aspect_ratio),
            "sampler_options": [float(o) for o in step.options], "trials": int(step.trials)}


def _joint_call(step, name: str, tensor: bool, segmentation: bool):
    """The native joint operation of v2 step `step` (None: nothing to do; a list: several),
    `tensor` if the image is a tensor there (after ToImage/PILToTensor); ValueError if none."""
    if _reference_step(step):
        calls = (_reference_segmentation_call if segmentation else _reference_ssd_call)(
            step, name, tensor)
        if calls is not None:
            return calls
    if name == "RandomShortestSize":
        _resize_check(step, name, tensor)
        return {"op": "random_shortest_size", "min_size": [float(s) for s in step.min_size],
                "max_size": int(step.max_size or 0)}
    if name == "RandomResize":
        _resize_check(step, name, tensor)
        return {"op": "random_resize", "min_size": int(step.min_size),
                "max_size": int(step.max_size)}
    if name == "RandomCrop" and segmentation:
        if step.padding is not None or step.padding_mode != "constant" or tensor:
            raise ValueError("RandomCrop: stoker crops a segmentation sample with no padding "
                             "but pad_if_needed's, constant fill, before ToImage")
        fill, mask_fill = _fills(step._fill, name, step.fill)
        if len(set(fill)) != 1:
            raise ValueError(f"RandomCrop(fill={step.fill!r}): stoker fills with one value")
        return {"op": "joint_random_crop", "size": int(step.size[0]),
                "width": int(step.size[1]), "fill": int(fill[0]), "mask_fill": mask_fill,
                "pad_if_needed": bool(step.pad_if_needed)}
    if name == "RandomIoUCrop" and not segmentation:
        return _iou_crop(step)
    if name == "RandomPhotometricDistort":
        _pil_only(name, tensor)
        return {"op": "random_photometric_distort", "p": float(step.p),
                **{a: _range(step, a) for a in ("brightness", "contrast", "saturation", "hue")}}
    if name == "RandomZoomOut":
        _pil_only(name, tensor)
        fill, mask_fill = _fills(step._fill, name, step.fill)
        return {"op": "random_zoom_out", "fill": fill, "mask_fill": mask_fill,
                "side_range": _range(step, "side_range"), "p": float(step.p)}
    if name == "ScaleJitter":
        _resize_check(step, name, tensor)
        return {"op": "scale_jitter", "target_size": _range(step, "target_size"),
                "scale_range": _range(step, "scale_range")}
    if name == "FixedSizeCrop" and not segmentation:
        _pil_only(name, tensor)
        if step.padding_mode != "constant" or isinstance(step.fill, dict):
            raise ValueError(f"FixedSizeCrop(fill={step.fill!r}, padding_mode="
                             f"{step.padding_mode!r}): stoker pads with a constant fill, one "
                             "value or 3")
        return {"op": "fixed_size_crop", "size": int(step.crop_height),
                "width": int(step.crop_width),
                "fill": _fill_values(step.fill, name, step.fill, False)}
    if name == "PadIfSmaller":
        _pil_only(name, tensor)
        fill, mask_fill = _fills(step.fill, name, step.fill)
        return {"op": "pad_if_smaller", "size": int(step.size), "fill": fill,
                "mask_fill": mask_fill}
    if name == "RandomHorizontalFlip":
        return {"op": "joint_horizontal_flip",
                "p": float(step.p if hasattr(step, "p") else step.flip_prob)}
    if name == "SanitizeBoundingBoxes" and not segmentation:
        if step.labels_getter != "default":
            raise ValueError(f"SanitizeBoundingBoxes(labels_getter={step.labels_getter!r}): "
                             "stoker drops the rows of 'labels' (labels_getter='default')")
        return {"op": "sanitize_bounding_boxes", "min_size": float(step.min_size),
                "min_area": float(step.min_area)}
    if name == "ClampBoundingBoxes" and not segmentation:
        # "auto" is the boxes' own mode, "soft" as stored; None leaves them as they are.
        # An older torchvision's (0.19's) has no clamping_mode: it clamps them.
        mode = getattr(step, "clamping_mode", "auto")
        return None if mode is None else {"op": "clamp_bounding_boxes"}
    if name == "ConvertBoundingBoxFormat" and not segmentation:
        form = getattr(step.format, "name", step.format)
        if form != "XYXY":
            raise ValueError(f"ConvertBoundingBoxFormat({form!r}): stoker's boxes are XYXY")
        return None
    raise ValueError(f"torchvision {name} is not supported on a "
                     f"{'segmentation' if segmentation else 'detection'} sample "
                     f"(supported: {_SUPPORTED})")


def output_bound(calls: List[dict]) -> Optional[int]:
    """The largest side the native joint `calls` can make whatever the stored image's size, or
    None where it depends on it. torchvision truncates each new side (int(side * r)), so a
    resize's bound is its largest target side times its largest scale, rounded up."""
    bound = None
    for call in calls:
        op = call["op"]
        if op in ("fixed_size_crop", "joint_random_crop"):  # exactly that size (padded)
            bound = max(call["size"], call["width"])
        elif op == "random_shortest_size":  # the long side within max_size, if given
            bound = call["max_size"] or None
        elif op == "scale_jitter":
            bound = math.ceil(max(call["target_size"]) * call["scale_range"][1])
        elif op == "random_resize":  # the short side chosen: the long one is the image's
            bound = None
        elif op == "random_zoom_out" and bound is not None:
            bound = math.ceil(bound * call["side_range"][1])
        elif op == "pad_if_smaller" and bound is not None:
            bound = max(bound, call["size"])
        # flips, RandomIoUCrop (inside the image), the photometric and box steps: no larger
    return bound


# The joint operations that move no pixel: masks kept as stored after them are the stored ones.
_PIXELS_IN_PLACE = ("random_photometric_distort", "joint_horizontal_flip",
                    "sanitize_bounding_boxes", "clamp_bounding_boxes")


def masks_bound(calls: List[dict], max_size: int) -> int:
    """The side of the masks' slots: 0 (the image's, max_size) unless an operation keeps them as
    stored (the detection reference's v1 SSD steps), then the stored image's bound: max_size
    over the zooms' largest side_range, which an image fits to be zoomed at every draw.
    ValueError where an operation before the keeping one moves the masks."""
    kept = [k for k, call in enumerate(calls) if call.get("masks") == "kept"]
    if not kept:
        return 0
    moving = [call["op"] for call in calls[:kept[0]] if call["op"] not in _PIXELS_IN_PLACE]
    if moving:
        raise ValueError(f"{calls[kept[0]]['op']} keeps the masks as stored (the detection "
                         f"reference's v1 step); stoker runs it before any step that moves "
                         f"them ({moving[0]})")
    growth = math.prod(call["side_range"][1] for call in calls
                       if call["op"] == "random_zoom_out")
    return max(1, math.floor(max_size / growth))


def _float32(dtype) -> bool:
    return str(dtype) == "torch.float32"


def _to_dtype(step) -> bool:
    """True if ToDtype `step` (scale=True) makes the class map int64 too: ToDtype(float32) or
    ToDtype({image type: float32, Mask: int64 or absent, "others": None}); ValueError else."""
    dtype = step.dtype
    if not isinstance(dtype, dict):
        if not _float32(dtype) or not step.scale:
            raise ValueError(f"ToDtype(dtype={dtype}, scale={step.scale}): stoker converts "
                             "images to torch.float32 with scale=True only")
        return False
    by_name = {getattr(k, "__name__", k): v for k, v in dtype.items()}
    image = by_name.get("Image", by_name.get("Tensor"))
    mask = by_name.get("Mask")
    if not _float32(image) or not step.scale or str(mask) not in ("None", "torch.int64") or \
            by_name.get("others") is not None:
        raise ValueError(f"ToDtype(dtype={dtype}, scale={step.scale}): stoker converts the "
                         "image to torch.float32 (scale=True) and the Mask to torch.int64")
    return mask is not None


class JointTail:
    """The steps of a joint transform that run in Python (stoker/_joint_python.py): ``steps``,
    ``why`` the first cannot run natively, ``outputs`` the fields the native steps make (image,
    then boxes, labels and masks, or the class map "mask"), ``image`` the image's type ("pil",
    "image": tv_tensors.Image, "tensor": a plain tensor), ``plain`` whether the target's
    tv_tensors became plain tensors (ToPureTensor)."""

    def __init__(self, steps: list, why: str, outputs: List[str], image: str, plain: bool):
        self.steps = steps
        self.why = why
        self.outputs = outputs
        self.image = image
        self.plain = plain

    @property
    def segmentation(self) -> bool:
        return CLASS_MAP in self.outputs


def specs(steps: list, schema: Dict[str, dict], mapping: dict, to_float,
          python: bool = False) -> Tuple[Dict[str, dict], Optional[JointTail]]:
    """({field: spec} of the joint transform of `steps`, the steps that run in Python after it
    or None): the image's spec holds the calls and {"joint": {boxes, labels, masks, class_map,
    max_size, float, mean, std, class_map_int64}}, the other fields' {"joint": "image"}.
    `to_float` checks a ConvertImageDtype (transforms._to_float). With `python`, the first step
    stoker cannot run natively (a callable: not stoker's own, nor torchvision v1's) and every
    step after it run in Python; ValueError naming the steps stoker cannot run, all at once."""
    segmentation = not _detection(schema, mapping)
    calls: List[dict] = []
    joint = {"max_size": None, "float": False, "unit_scale": "multiply", "mean": [], "std": [],
             "class_map_int64": False}
    image, plain = "pil", False  # the image's type as torchvision has it, a target made plain
    problems: List[str] = []
    tail = None
    for k, step in enumerate(steps):
        name = type(step).__name__
        tensor = image != "pil"
        try:
            if name == "DecodeImage" and type(step).__module__ == "stoker.transforms":
                if k != 0:
                    raise ValueError("DecodeImage sets the image's max_size: it comes first")
                joint["max_size"] = step.max_size
            elif name in ("ToDtype", "ConvertImageDtype"):
                if name == "ToDtype":
                    joint["class_map_int64"] = _to_dtype(step) or joint["class_map_int64"]
                else:
                    to_float(step)
                joint["float"] = True
                joint["unit_scale"] = unit_scale(step)
            elif name == "Normalize" and (_is_v2(step) or _reference_step(step)):
                if not joint["float"] or joint["mean"]:
                    raise ValueError("Normalize comes once, after ToDtype(float32)")
                joint["mean"], joint["std"] = list(step.mean), list(step.std)
            elif name in _MARKERS:
                if name == "ToImage":
                    image = "image"
                elif name == "PILToTensor" and image == "pil":
                    image = "tensor"
                    # The segmentation reference's own: the PIL mask an int64 tensor.
                    joint["class_map_int64"] = segmentation and _reference_step(step)
                elif name == "ToPureTensor":  # tv_tensors only: a PIL image stays one
                    image, plain = "tensor" if image == "image" else image, True
                continue
            elif not _is_v2(step) and not _reference_step(step):
                raise ValueError(f"{type(step).__module__}.{name} is not a torchvision v2 "
                                 "transform stoker runs on a detection sample")
            elif joint["mean"]:
                raise ValueError(f"{name} after Normalize: stoker normalises last")
            else:
                call = _joint_call(step, name, tensor or joint["float"], segmentation)
                calls += [] if call is None else call if isinstance(call, list) else [call]
        except ValueError as e:
            if python and not problems and _may_run_in_python(step):
                tail = JointTail(steps[k:], str(e), [], image, plain)
                problems += [f"stoker.transforms.{type(s).__name__} cannot follow a step that "
                             f"runs in Python ({name})" for s in steps[k:]
                             if type(s).__module__.startswith("stoker.")]
                break
            problems.append(str(e))
    kept = [CLASS_MAP] if segmentation else [BOXES, LABELS]
    # The masks as a joint output unless left out (None) or given a transform (RawBytes).
    if not segmentation and MASKS in schema and MASKS not in mapping:
        kept.append(MASKS)
    if problems:
        raise ValueError(f"field '{IMAGE}' (a {'segmentation' if segmentation else 'detection'}"
                         f" sample: {', '.join([IMAGE] + kept)}): {'; '.join(problems)}")
    for key, name in (("boxes", BOXES), ("labels", LABELS), ("masks", MASKS),
                      ("class_map", CLASS_MAP)):
        joint[key] = name if name in kept else None
    if joint["max_size"] is None:  # no DecodeImage: what the steps make, if they bound it
        joint["max_size"] = output_bound(calls) or _DEFAULT_MAX_SIZE
    joint["masks_max_size"] = masks_bound(calls, joint["max_size"])
    out = {IMAGE: {"name": IMAGE, "ops": calls, "joint": joint}}
    for name in kept:
        out[name] = {"name": name, "ops": [], "joint": IMAGE}
    if tail is not None:
        if joint["float"] and tail.image == "pil":
            tail.image = "image"  # a float image is a tensor
        tail.outputs = [IMAGE] + kept
    return out, tail
