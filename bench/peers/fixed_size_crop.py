"""The detection reference's own FixedSizeCrop (its transforms.py, which torchvision does not
ship) as a torchvision v2 transform, for the lsj work (detection.py)."""
import torch
from torchvision import tv_tensors
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as F

try:
    from torchvision.transforms.v2 import query_size
except ImportError:  # torchvision before 0.20 keeps it private
    from torchvision.transforms.v2._utils import query_size


class FixedSizeCrop(v2.Transform):
    """Where the image is larger than (crop_height, crop_width), a crop at (top, left) = (the
    excess height, the excess width) x one uniform draw; then padding at the right and bottom
    to that size, the image with `fill`, masks with 0. Boxes move with it (v2's crop clamps
    them; the tail's SanitizeBoundingBoxes drops those left empty, as the reference's crop
    does)."""

    def __init__(self, size, fill=0, padding_mode="constant"):
        super().__init__()
        self.crop_height, self.crop_width = size
        self.fill, self.padding_mode = fill, padding_mode

    def make_params(self, flat_inputs):
        height, width = query_size(flat_inputs)
        h, w = min(height, self.crop_height), min(width, self.crop_width)
        top = left = 0
        if (h, w) != (height, width):
            r = torch.rand(1)
            top = int(max(height - self.crop_height, 0) * r)
            left = int(max(width - self.crop_width, 0) * r)
        return dict(top=top, left=left, height=h, width=w, crop=(h, w) != (height, width),
                    padding=[0, 0, self.crop_width - w, self.crop_height - h])

    def transform(self, inpt, params):
        if params["crop"]:
            inpt = self._call_kernel(F.crop, inpt, params["top"], params["left"],
                                     params["height"], params["width"])
        if any(params["padding"]):
            fill = 0 if isinstance(inpt, tv_tensors.Mask) else self.fill
            inpt = self._call_kernel(F.pad, inpt, padding=params["padding"], fill=fill,
                                     padding_mode=self.padding_mode)
        return inpt

    # torchvision before 0.21 calls them by these names.
    _get_params, _transform = make_params, transform
