"""A torchvision classification dataset read natively (ImageFolder, CIFAR, the MNIST family):
its samples as its own ``__getitem__`` makes them. The steps of its transform (and
target_transform) that stoker cannot translate run in Python as they run there, given what
torchvision gives them and giving back anything, which the loader collates as DataLoader does;
and where a user's code takes samples (a collate_fn, batch_size=None), each is the dataset's
own."""

from typing import Optional

from stoker._python_steps import FieldSteps, to_pil
from stoker.transforms import _flatten, converts_to_tensor


class ClassificationForm:
    """A native sample (image, label) as the torchvision dataset's ``__getitem__`` gives it:
    the image a PIL image where the dataset has no transform (`pil_image`; else as its
    transform made it), the label a Python int where it has no target_transform (`int_label`;
    else what that gave)."""

    def __init__(self, pil_image: bool, int_label: bool):
        self._pil_image = pil_image
        self._int_label = int_label

    def __call__(self, sample) -> tuple:
        image, label = sample
        if self._pil_image and hasattr(image, "numpy"):  # a copy off the loader's buffers
            image = to_pil(image.clone())
        if self._int_label and hasattr(label, "item"):
            label = int(label)
        return image, label


def classification_form(dataset) -> ClassificationForm:
    """The form of torchvision dataset `dataset`'s samples (its transform and
    target_transform)."""
    return ClassificationForm(dataset.transform is None, dataset.target_transform is None)


def step_inputs(transforms, python: dict, python_input: Optional[str]) -> dict:
    """{field: what its Python steps get, "pil" or "tensor"} for the fields of `python` (the
    plan's {field: its Python steps}, the end of the field's steps in `transforms`):
    `python_input` where given, else a PIL image where no native step before them made a
    tensor of it (torchvision's transform would give them one), else the tensor made."""
    mapping = transforms if isinstance(transforms, dict) else {"image": transforms}
    inputs = {}
    for field, steps in python.items():
        originals = _flatten(mapping[field])
        before = originals[:len(originals) - len(steps)]
        inputs[field] = python_input or ("tensor" if converts_to_tensor(before) else "pil")
    return inputs


class TorchvisionSteps(FieldSteps):
    """A field's Python steps on a torchvision dataset read natively, run as its transform (or
    target_transform) runs in its ``__getitem__``: given what torchvision gives them there, the
    image a PIL image (`python_input` "pil") or the tensor the native steps made ("tensor"),
    the label a Python int, and giving back anything (a tensor, a list of views, a numpy array,
    a dict, a float, a str): the field's batch is the list of what they gave, which the loader
    collates as DataLoader does (default_collate, or the user's collate_fn)."""

    def __init__(self, torch, steps: list, field: str, python_input: str):
        super().__init__(torch, steps, field, python_input)
        self.outputs = {field: "list"}

    def run(self, torch, numpy, values: tuple, seed: int, where: tuple, on_step=None) -> tuple:
        """(what the steps gave for the sample values[0], any object), as FieldSteps.run
        calls them; SampleError if a step raises."""
        x = values[0]
        generator = torch.Generator().manual_seed(seed) if any(self.generator) else None
        if x.dim() == 0:
            x = x.item()
        elif self.pil and x.dtype == torch.uint8 and x.dim() == 3:
            x = to_pil(x.clone())  # its own pixels: the steps may give it back
        return (self.through(x, 0, generator, where, on_step),)
