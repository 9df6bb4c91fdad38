"""What a source yields made into what stoker.DatasetWriter takes (stoker.write_dataset): each
value stored as the writer's types (numpy arrays of uint8, int64 or float32, ints, floats,
bytes; PIL images as uint8 [C, H, W]), an image record's fields from its encoded image, and
the schema inferred from a first sample."""

import collections.abc
import sys

import numpy as np

from stoker import _stoker

# The fields of an image dataset's records (store/image_record.h), in the writer's form.
IMAGE_SCHEMA = [(name, dtype, tuple(shape)) for name, dtype, shape in
                _stoker.image_record_fields()]


def _pil_array(image):
    """A PIL image as a uint8 [C, H, W] array."""
    if image.mode not in ("L", "RGB"):
        if image.mode in ("I", "I;16", "F"):
            raise ValueError(f"a PIL image of mode {image.mode}: convert it to L or RGB in the "
                             "dataset's transform")
        image = image.convert("L" if image.mode == "1" else "RGB")
    width, height = image.size
    # tobytes() then frombuffer() takes 2/3 of numpy.asarray(image)'s time (read-only array).
    pixels = np.frombuffer(image.tobytes(), np.uint8)
    if image.mode == "L":
        return pixels.reshape(1, height, width)
    return np.ascontiguousarray(pixels.reshape(height, width, 3).transpose(2, 0, 1))


def _canonical(array):
    """`array` with a dtype stoker stores: uint8, int64 and float32 as they are; bool as uint8,
    other integers as int64, other floats as float32."""
    if array.dtype in (np.uint8, np.int64, np.float32):
        return array
    if array.dtype == np.bool_:
        return array.astype(np.uint8)
    if array.dtype.kind in "iu":
        return array.astype(np.int64)
    if array.dtype.kind == "f":
        return array.astype(np.float32)
    raise ValueError(f"a {array.dtype} array cannot be stored (uint8, int64, float32 or bytes)")


def _value(value):
    """One value as the writer takes it."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bool, np.bool_, int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    pil = sys.modules.get("PIL.Image")
    if pil is not None and isinstance(value, pil.Image):
        return _pil_array(value)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if value is None:
        raise ValueError("None cannot be stored")
    array = np.asarray(value)
    if array.ndim == 0:
        return _value(array.item())
    return _canonical(array)


class Preparer:
    """Turns what a source yields into the writer's samples, each with the statistics of its
    encoded image (or None). Shared by the workers."""

    def __init__(self, field_names, transform, check_images):
        self.field_names = tuple(field_names)
        self.transform = transform
        self.image_record = False  # set once the schema is known
        self.check_images = check_images

    def __call__(self, raw, index):
        if self.transform is not None:
            raw = self.transform(raw)
        if isinstance(raw, collections.abc.Mapping):
            items = raw.items()
        elif isinstance(raw, (tuple, list)):
            if len(raw) != len(self.field_names):
                raise ValueError(f"sample {index} is a {type(raw).__name__} of {len(raw)} "
                                 f"values; field_names names {len(self.field_names)}: "
                                 f"{', '.join(self.field_names)}")
            items = zip(self.field_names, raw)
        else:
            items = [(self.field_names[0], raw)]
        sample = {}
        for name, value in items:
            try:
                sample[name] = _value(value)
            except ValueError as e:
                raise ValueError(f"sample {index}, field '{name}': {e}") from None
        return self.add_image_fields(sample, index) if self.image_record else (sample, None)

    def add_image_fields(self, sample, index):
        """`sample` with the image record's fields of its encoded image, unless it has them,
        and with check_images the image's statistics (else None: the writer keeps none)."""
        image = sample.get("image")
        has_fields = "height" in sample
        if not isinstance(image, (bytes, bytearray, memoryview)) or (
                has_fields and not self.check_images):
            return sample, None
        try:
            info = _stoker.image_info(image, check=self.check_images)
        except _stoker.Error as e:
            raise _stoker.Error(f"sample {index}, field 'image': {e}") from None
        if not has_fields:
            sample.update(height=info["height"], width=info["width"], original_size=len(image),
                          original_checksum=info["checksum"])
        return sample, info.get("statistics")


def infer_schema(sample, field_names):
    """The schema of `sample` (prepared), and whether it makes an image dataset."""
    image, label = sample.get("image"), sample.get("label")
    if isinstance(image, (bytes, bytearray, memoryview)) and isinstance(label, int):
        names = {name for name, _, _ in IMAGE_SCHEMA}
        extra = [(name, value) for name, value in sample.items() if name not in names]
        return IMAGE_SCHEMA + [_infer_field(name, value) for name, value in extra], True
    return [_infer_field(name, value) for name, value in sample.items()], False


def _infer_field(name, value):
    """(name, dtype, shape) of field `name` of the first sample; ValueError naming it where an
    array holds no element (a fixed field's dimensions are each 1 or more)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return name, "bytes", ()
    if isinstance(value, int):
        return name, "int64", ()
    if isinstance(value, float):
        return name, "float32", ()
    if 0 in value.shape:
        raise ValueError(f"sample 0, field {name!r}: an array of shape {tuple(value.shape)} "
                         f"holds no element (each dimension of a field is 1 or more)")
    return name, value.dtype.name, value.shape


def is_image_schema(fields):
    return all(field in fields for field in IMAGE_SCHEMA)
