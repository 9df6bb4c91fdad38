"""A dataset as the native loader takes it, whichever object the user gave (_datasets.py)."""

from dataclasses import dataclass, field
from typing import Any


@dataclass
class NativeDataset:
    """A dataset as the native loader takes it: `source` (a path or a stoker source),
    `transforms` ({field: transform} or one for "image"), `notes` for loader.plan. A source of
    None: a dataset stoker recognises but reads by its own __getitem__, the notes saying why."""

    source: Any
    transforms: Any = None
    notes: dict = field(default_factory=dict)
    subset: Any = None  # a Subset's indices into the source, or None
    batch_format: Any = None  # the fields a sample is made from, where `form` makes it
    form: Any = None  # a native sample (a tuple of batch_format's fields) as the dataset's own
    # Whether batches are default_collate's of form's samples; False where the native batch is
    # that already, and form gives the samples a collate_fn or batch_size=None takes.
    collated: bool = True
    # Whether the transforms are a torchvision dataset's, whose Python steps run as in its
    # __getitem__ (_torchvision_samples.TorchvisionSteps).
    torchvision_steps: bool = False
