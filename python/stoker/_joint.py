"""A detection sample's transforms as one native joint transform (pipeline/joint_pipeline.h):
torchvision's v2 transforms applied to (image, target), as the detection references apply their
presets, where the dataset has an encoded ``image``, ``boxes`` (float32 [N, 4], XYXY) and
``labels`` (int64 [N]), and ``masks`` (the importers' stacked PNG) unless the mapping names
them. The image, boxes,
labels and masks come out together: one flip draw moves all of them, SanitizeBoundingBoxes drops
an object's box, label and mask at once. Other fields (area, iscrowd, ...) come as stored, as
torchvision's v2 leaves a target's plain tensors."""

from typing import Dict, List, Optional

# The stored fields a joint transform reads and makes.
IMAGE, BOXES, LABELS, MASKS = "image", "boxes", "labels", "masks"
_DEFAULT_MAX_SIZE = 1024
# Steps with nothing to do on the stored sample: type conversions, XYXY kept as stored.
_MARKERS = ("PILToTensor", "ToImage", "ToPureTensor")
_SUPPORTED = ("RandomShortestSize (bilinear, before ToImage), RandomHorizontalFlip, "
              "SanitizeBoundingBoxes (labels_getter='default'), ClampBoundingBoxes, "
              "ConvertBoundingBoxFormat('XYXY'), ToDtype(torch.float32, scale=True), "
              "PILToTensor, ToImage, ToPureTensor, and stoker.transforms.DecodeImage first "
              "(its max_size)")


def _is_v2(step) -> bool:
    return type(step).__module__.startswith("torchvision.transforms.v2")


def applies(steps: list, schema: Dict[str, dict], mapping: dict) -> bool:
    """True where the image's `steps` (flattened) are torchvision v2's on a dataset with an
    encoded image, boxes and labels that the transforms keep (no transform of their own)."""
    kept = all(name in schema and name not in mapping for name in (BOXES, LABELS))
    return (kept and schema.get(IMAGE, {}).get("dtype") == "bytes" and
            any(_is_v2(step) for step in steps))


def _interpolation_name(mode) -> str:
    return str(getattr(mode, "value", mode)).lower()


def _joint_call(step, name: str, tensor: bool) -> Optional[dict]:
    """The native joint operation of v2 step `step` (None: nothing to do), `tensor` if the image
    is a tensor there (after ToImage/PILToTensor); ValueError if none."""
    if name == "RandomShortestSize":
        if tensor:
            raise ValueError("RandomShortestSize after ToImage/PILToTensor resizes a tensor; "
                             "stoker resizes as on PIL images (the reference's backend='pil'): "
                             "put ToImage after it")
        if _interpolation_name(step.interpolation) not in ("bilinear", "2"):
            raise ValueError(f"RandomShortestSize(interpolation={step.interpolation}): stoker "
                             "resizes with BILINEAR")
        return {"op": "random_shortest_size", "min_size": [float(s) for s in step.min_size],
                "max_size": int(step.max_size or 0)}
    if name == "RandomHorizontalFlip":
        return {"op": "joint_horizontal_flip", "p": float(step.p)}
    if name == "SanitizeBoundingBoxes":
        if step.labels_getter != "default":
            raise ValueError(f"SanitizeBoundingBoxes(labels_getter={step.labels_getter!r}): "
                             "stoker drops the rows of 'labels' (labels_getter='default')")
        return {"op": "sanitize_bounding_boxes", "min_size": float(step.min_size),
                "min_area": float(step.min_area)}
    if name == "ClampBoundingBoxes":
        # "auto" is the boxes' own mode, "soft" as stored; None leaves them as they are.
        return None if step.clamping_mode is None else {"op": "clamp_bounding_boxes"}
    if name == "ConvertBoundingBoxFormat":
        form = getattr(step.format, "name", step.format)
        if form != "XYXY":
            raise ValueError(f"ConvertBoundingBoxFormat({form!r}): stoker's boxes are XYXY")
        return None
    raise ValueError(f"torchvision {name} is not supported on a detection sample "
                     f"(supported: {_SUPPORTED})")


def specs(steps: list, schema: Dict[str, dict], mapping: dict, to_float) -> Dict[str, dict]:
    """{field: spec} of the joint transform of `steps`: the image's spec holds the calls and
    {"joint": {boxes, labels, masks, max_size, float}}, the other fields' {"joint": "image"}.
    `to_float` checks a ToDtype/ConvertImageDtype (transforms._to_float). ValueError naming the
    steps stoker cannot run, all at once."""
    calls: List[dict] = []
    max_size, made_float, tensor, problems = _DEFAULT_MAX_SIZE, False, False, []
    for k, step in enumerate(steps):
        name = type(step).__name__
        try:
            if name == "DecodeImage" and type(step).__module__ == "stoker.transforms":
                if k != 0:
                    raise ValueError("DecodeImage sets the image's max_size: it comes first")
                max_size = step.max_size
            elif name in ("ToDtype", "ConvertImageDtype"):
                to_float(step)
                made_float = True
            elif name in _MARKERS:
                tensor = tensor or name != "ToPureTensor"
                continue
            elif not _is_v2(step):
                raise ValueError(f"{type(step).__module__}.{name} changes the image alone; on "
                                 "a detection sample stoker runs torchvision.transforms.v2's")
            else:
                call = _joint_call(step, name, tensor or made_float)
                if call is not None:
                    calls.append(call)
        except ValueError as e:
            problems.append(str(e))
    if problems:
        raise ValueError(f"field '{IMAGE}' (a detection sample: {IMAGE}, {BOXES}, {LABELS}"
                         f"{', ' + MASKS if MASKS in schema else ''}): {'; '.join(problems)}")
    # The masks as a joint output unless left out (None) or given a transform (RawBytes).
    masks = MASKS if MASKS in schema and MASKS not in mapping else None
    joint = {BOXES: BOXES, LABELS: LABELS, MASKS: masks, "max_size": max_size,
             "float": made_float}
    out = {IMAGE: {"name": IMAGE, "ops": calls, "joint": joint}}
    for name in (BOXES, LABELS, masks):
        if name is not None:
            out[name] = {"name": name, "ops": [], "joint": IMAGE}
    return out
