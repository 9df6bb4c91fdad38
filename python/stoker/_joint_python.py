"""The Python steps after a joint transform (stoker/_joint.py): the steps from the first one
stoker cannot run natively on a detection or segmentation sample (a torchvision v2 class it does
not translate, a reference's or a user's callable taking (image, target)) run here, in the
iterating thread, on each sample the native steps made, as torchvision has it at that point:
called as ``step(image, target)`` (the references' convention, v2's), `image` a PIL image where
the pipeline is still PIL (before ToImage/PILToTensor, uint8), a tv_tensors.Image after ToImage
(or after ToDtype: float32), a plain tensor after PILToTensor; `target` a detection sample's
{"boxes": tv_tensors.BoundingBoxes (XYXY, canvas_size the image's), "labels", "masks":
tv_tensors.Mask} (the masks where the joint transform makes them), a segmentation sample's
tv_tensors.Mask class map; plain tensors after ToPureTensor. Each step's output, (image,
target), is the next one's input; the last one's goes back into the batch: a PIL image as uint8
[C, H, W], every value a plain tensor, as a list of tensors or padded with its NAME_sizes
(``variable``).

Random draws, errors and skips as _python_steps.PythonSteps: torch's, Python's and numpy's
generators seeded per sample by sample_seed(seed, epoch, rank, position, slot) (the same batches
for any number of native workers, again after a resume); an exception, or an output that is not
(image, target) of tensors, is one stoker.Error naming the field 'image', the sample and the
step; on_error="skip" drops the sample from every field of its batch."""

from __future__ import annotations

import time
from typing import Dict, List

from stoker import _stoker
from stoker._joint import BOXES, CLASS_MAP, IMAGE, LABELS, MASKS, JointTail
from stoker._python_steps import (SampleError, SerialEpoch, _Seeded, call_step, from_pil,
                                  is_pil, kept_samples, sample_message, sample_seed, step_name,
                                  to_pil)


def _padded(torch, values: list):
    """One tensor [batch, largest sample...] with zeros around each sample, and its sizes,
    int64 [batch, rank]: the native "padded" form."""
    if not values:
        return torch.empty(0), torch.empty((0, 0), dtype=torch.int64)
    sizes = torch.tensor([list(v.shape) for v in values], dtype=torch.int64)
    largest = sizes.max(dim=0).values.tolist() if values[0].dim() else []
    out = torch.zeros([len(values), *largest], dtype=values[0].dtype)
    for k, v in enumerate(values):
        out[(k, *(slice(0, n) for n in v.shape))] = v
    return out, sizes


class JointSteps:
    """A JointTail's steps ready to run on native batches (dicts whose joint fields are lists
    of tensors, or padded with NAME_sizes, as `forms` {field: "list" or "padded"} says)."""

    workers = 0  # they run in the iterating thread

    def __init__(self, torch, tail: JointTail, seed: int, rank: int, on_error: str,
                 forms: Dict[str, str]):
        import numpy
        from torchvision import tv_tensors
        self._torch, self._numpy, self._tv_tensors = torch, numpy, tv_tensors
        self._tail = tail
        self._forms = forms  # {field: "list" or "padded"}
        self._seed, self._rank = seed, rank  # of sample_seed
        self._skip = on_error == "skip"
        self._step_seconds = [0.0] * len(tail.steps)
        self.seconds = 0.0
        self.skipped = 0

    def __bool__(self):
        return True

    def stats(self) -> dict:
        return {"python_seconds": self.seconds, "python_skipped": self.skipped,
                "python_step_seconds": {IMAGE: [(step_name(step), seconds) for step, seconds
                                                in zip(self._tail.steps, self._step_seconds)]}}

    def epoch(self, native_epoch, epoch: int, core, rewind=None):
        """The iteration of `native_epoch` through these steps."""
        return SerialEpoch(native_epoch, self, epoch, core)

    def close(self) -> None:
        pass

    def _value(self, batch: dict, field: str, slot: int):
        """Sample `slot`'s tensor of `field`, without its padding."""
        value = batch[field]
        if self._forms.get(field) != "padded":
            return value[slot]
        return value[(slot, *(slice(0, n) for n in batch[field + "_sizes"][slot].tolist()))]

    def _sample(self, batch: dict, slot: int) -> tuple:
        """(image, target) of sample `slot`, as torchvision has them where the tail starts."""
        tv = self._tv_tensors
        image = self._value(batch, IMAGE, slot)
        height, width = image.shape[-2:]
        if self._tail.image == "pil":
            image = to_pil(image)
        elif self._tail.image == "image":
            image = tv.Image(image)
        plain = self._tail.plain
        if self._tail.segmentation:
            mask = self._value(batch, CLASS_MAP, slot)
            return image, mask if plain else tv.Mask(mask)
        boxes = self._value(batch, BOXES, slot)
        target = {BOXES: boxes if plain else tv.BoundingBoxes(
            boxes, format="XYXY", canvas_size=(int(height), int(width))),
            LABELS: self._value(batch, LABELS, slot)}
        if MASKS in self._tail.outputs:
            masks = self._value(batch, MASKS, slot)
            target[MASKS] = masks if plain else tv.Mask(masks)
        return image, target

    def _outputs(self, made, where: tuple) -> Dict[str, object]:
        """{field: plain tensor} of the steps' last output `made`; SampleError if it is not
        (image, target) holding them."""
        torch = self._torch
        image, target = made
        if is_pil(image):
            image = from_pil(torch, self._numpy, image)
        values = {IMAGE: image}
        for field in self._tail.outputs[1:]:
            values[field] = target if self._tail.segmentation else \
                target.get(field) if isinstance(target, dict) else None
        wrong = [field for field, value in values.items() if not isinstance(value, torch.Tensor)]
        if wrong:
            want = "(image, mask)" if self._tail.segmentation else \
                f"(image, {{{', '.join(self._tail.outputs[1:])}}})"
            raise SampleError(sample_message(
                *where, f"the Python steps gave no tensor for {', '.join(wrong)}: they must "
                f"give {want} of tensors (last step "
                f"{step_name(self._tail.steps[-1])})"))
        return {field: value.as_subclass(torch.Tensor) for field, value in values.items()}

    def _run(self, sample: tuple, where: tuple) -> Dict[str, object]:
        for number, step in enumerate(self._tail.steps):
            sample = call_step(step, tuple(sample), {}, where, self._step_seconds, number)
            if not (isinstance(sample, (tuple, list)) and len(sample) == 2):
                raise SampleError(sample_message(*where, f"{step_name(step)} gave a "
                                                 f"{type(sample).__name__}, not (image, target)"))
        return self._outputs(sample, where)

    def apply(self, batch: dict, epoch: int, index: int, position: int) -> dict:
        """`batch` with the joint fields made by the steps from each sample (batch `index` of
        this iteration of `epoch`, the loader at global `position` after it); samples that
        failed dropped from every field under on_error="skip"."""
        start = time.perf_counter()
        size = len(batch[IMAGE])
        made: List[Dict[str, object]] = []
        try:
            with _Seeded(self._torch, self._numpy) as generators:
                for slot in range(size):
                    generators.seed(sample_seed(self._seed, epoch, self._rank, position, slot))
                    try:
                        made.append(self._run(self._sample(batch, slot),
                                              (IMAGE, slot, index, epoch)))
                    except SampleError:
                        if not self._skip:
                            raise
                        made.append(None)
            out = self._batch(batch, made, index, epoch)
        except SampleError as e:
            raise _stoker.Error(str(e)) from None
        self.skipped += sum(m is None for m in made)
        self.seconds += time.perf_counter() - start
        return out

    def _batch(self, batch: dict, made: list, index: int, epoch: int) -> dict:
        keep = [slot for slot, m in enumerate(made) if m is not None]
        outputs = set(self._tail.outputs)
        out = {}
        for field, value in batch.items():
            stem = field[:-len("_sizes")] if field.endswith("_sizes") else None
            if stem in outputs:
                continue  # made with its field
            if field not in outputs:
                out[field] = value if len(keep) == len(made) else kept_samples(value, keep)
                continue
            values = [made[slot][field] for slot in keep]
            if self._forms.get(field) != "padded":
                out[field] = values
                continue
            for slot, v in zip(keep, values):
                if v.dim() != values[0].dim() or v.dtype != values[0].dtype:
                    raise SampleError(sample_message(
                        IMAGE, slot, index, epoch, f"the Python steps gave {field} {v.dtype} "
                        f"{list(v.shape)}, but sample {keep[0]} {values[0].dtype} "
                        f"{list(values[0].shape)}: a padded batch holds one rank and dtype"))
            out[field], out[field + "_sizes"] = _padded(self._torch, values)
        return out
