"""The Python steps after a joint transform (stoker/_joint.py): the steps from the first one
stoker cannot run natively on a detection or segmentation sample (a torchvision v2 class it does
not translate, a reference's or a user's callable taking (image, target)) run here, as one unit
of the loader's Python steps (in the iterating thread, in threads or in worker processes, as a
field's steps: _python_steps.PythonSteps, _python_pool.PythonPool), on each sample the native
steps made, as torchvision has it at that point: called as ``step(image, target)`` (the
references' convention, v2's), `image` a PIL image where the pipeline is still PIL (before
ToImage/PILToTensor, uint8), a tv_tensors.Image after ToImage (or after ToDtype: float32), a
plain tensor after PILToTensor; `target` a detection sample's {"boxes":
tv_tensors.BoundingBoxes (XYXY, canvas_size the image's), "labels", "masks": tv_tensors.Mask}
(the masks where the joint transform makes them), a segmentation sample's tv_tensors.Mask class
map; plain tensors after ToPureTensor. Each step's output, (image, target), is the next one's
input; the last one's goes back into the batch: a PIL image as uint8 [C, H, W], every value a
plain tensor, as a list of tensors or padded with its NAME_sizes (``variable``).

Random draws, errors and skips as _python_steps.PythonSteps: torch's, Python's and numpy's
generators seeded per sample by sample_seed(seed, epoch, rank, position, slot) (the same batches
for any number of native or Python workers, again after a resume; a step taking a generator=
keyword gets a torch.Generator seeded so, and only such steps may run in threads); an
exception, or an output that is not (image, target) of tensors, is one stoker.Error naming the
field 'image', the sample and the step; on_error="skip" drops the sample from every field of
its batch."""

from __future__ import annotations

from typing import Dict, List

from stoker._joint import BOXES, CLASS_MAP, IMAGE, LABELS, MASKS, JointTail
from stoker._python_steps import (SampleError, call_step, from_pil, is_pil, plain_tensor,
                                  sample_message, step_name, takes_generator, to_pil)


def joint_units(torch, tail: JointTail, forms: Dict[str, str]) -> dict:
    """{'image': the unit of Python steps of `tail`} (errors name the field 'image'), its
    fields in `forms` ({field: "list" or "padded"}; a field not there comes as a list)."""
    return {IMAGE: JointSteps(torch, tail.steps, tail.outputs, tail.image, tail.plain,
                              {field: forms.get(field, "list") for field in tail.outputs})}


class JointSteps:
    """A JointTail's steps ready to run on each sample, one of the loader's units of Python
    steps (as _python_steps.FieldSteps, whose attributes it has): ``inputs`` and ``outputs``
    the joint fields (image, then boxes, labels and masks, or the class map), each read from
    and given back in its form, a list of tensors or padded with NAME_sizes; it is named
    'image' in errors. A step taking a generator= keyword is given a torch.Generator seeded
    by the sample's seed (such steps may run in threads)."""

    def __init__(self, torch, steps: list, outputs: List[str], image: str, plain: bool,
                 forms: Dict[str, str]):
        from torchvision import tv_tensors
        self._tv_tensors = tv_tensors
        self.raw = self.steps = steps
        self.args = (outputs, image, plain, forms)
        self._image, self._plain = image, plain  # JointTail's
        self._segmentation = CLASS_MAP in outputs
        self.inputs = tuple(outputs)
        self.outputs = dict(forms)
        self.generator = [takes_generator(step) for step in steps]
        self.seconds = [0.0] * len(steps)

    def timing(self) -> list:
        return [(step_name(step), seconds) for step, seconds in zip(self.steps, self.seconds)]

    def samples(self, batch: dict, field: str):
        """The samples of `field` in `batch`, each without its padding."""
        value = batch[field]
        if self.outputs[field] != "padded":
            return value
        return [value[(slot, *(slice(0, n) for n in sizes))]
                for slot, sizes in enumerate(batch[field + "_sizes"].tolist())]

    def _sample(self, values: tuple) -> tuple:
        """(image, target) of a sample's plain tensors, as torchvision has them where the tail
        starts."""
        tv = self._tv_tensors
        fields = dict(zip(self.inputs, values))
        image = fields[IMAGE]
        height, width = image.shape[-2:]
        if self._image == "pil":
            image = to_pil(image)
        elif self._image == "image":
            image = tv.Image(image)
        plain = self._plain
        if self._segmentation:
            mask = fields[CLASS_MAP]
            return image, mask if plain else tv.Mask(mask)
        boxes = fields[BOXES]
        target = {BOXES: boxes if plain else tv.BoundingBoxes(
            boxes, format="XYXY", canvas_size=(int(height), int(width))),
            LABELS: fields[LABELS]}
        if MASKS in fields:
            target[MASKS] = fields[MASKS] if plain else tv.Mask(fields[MASKS])
        return image, target

    def _outputs(self, torch, numpy, made, where: tuple) -> tuple:
        """The plain tensors of the steps' last output `made`, one per output field;
        SampleError if it is not (image, target) holding them."""
        image, target = made
        if is_pil(image):
            image = from_pil(torch, numpy, image)
        values = {IMAGE: image}
        for field in self.inputs[1:]:
            values[field] = target if self._segmentation else \
                target.get(field) if isinstance(target, dict) else None
        wrong = [field for field, value in values.items() if not isinstance(value, torch.Tensor)]
        if wrong:
            want = "(image, mask)" if self._segmentation else \
                f"(image, {{{', '.join(self.inputs[1:])}}})"
            raise SampleError(sample_message(
                *where, f"the Python steps gave no tensor for {', '.join(wrong)}: they must "
                f"give {want} of tensors (last step {step_name(self.steps[-1])})"))
        return tuple(plain_tensor(torch, values[field], where, self.steps)
                     for field in self.inputs)

    def run(self, torch, numpy, values: tuple, seed: int, where: tuple, on_step=None) -> tuple:
        """The output fields' tensors of a sample (`values`, one plain tensor per input field)
        after the steps, as FieldSteps.run."""
        generator = torch.Generator().manual_seed(seed) if any(self.generator) else None
        sample = self._sample(values)
        for number, step in enumerate(self.steps):
            if on_step is not None:
                on_step(number)
            kwargs = {"generator": generator} if self.generator[number] else {}
            sample = call_step(step, tuple(sample), kwargs, where, self.seconds, number)
            if not (isinstance(sample, (tuple, list)) and len(sample) == 2):
                raise SampleError(sample_message(*where, f"{step_name(step)} gave a "
                                                 f"{type(sample).__name__}, not (image, target)"))
        return self._outputs(torch, numpy, sample, where)
