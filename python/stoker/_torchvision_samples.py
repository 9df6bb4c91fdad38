"""A torchvision classification dataset read natively (ImageFolder, CIFAR, the MNIST family):
its samples as its own ``__getitem__`` gives them, where a user's code takes samples (a
collate_fn, batch_size=None)."""

from stoker._python_steps import to_pil


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
