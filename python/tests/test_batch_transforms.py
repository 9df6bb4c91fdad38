"""torchvision v2's MixUp, CutMix and RandomChoice of them, and timm's Mixup, given as a Loader's
batch_transform, run natively in the workers (the plan says so): soft targets over num_classes,
the pixels torchvision's for the weight the targets show, the same batches for any workers and
after a resume; a label past num_classes is one line naming the operation. (The operations'
pixels against torchvision's and timm's for the same draws: operations_test.)"""

import pytest
import torch
import torchvision.transforms as T
import torchvision.transforms.v2 as T2

import stoker

STEPS = T.Compose([T.RandomResizedCrop(24), T.RandomHorizontalFlip(), T.ToTensor()])


def mixing_loader(path, batch_transform, **options):
    return stoker.Loader(path, batch_size=4, seed=3, transforms=STEPS,
                         batch_format=("image", "label"), batch_transform=batch_transform,
                         **options)


class Drawn:
    """A Beta distribution that gives `lam`: torchvision's MixUp with a known weight."""

    def __init__(self, lam):
        self.lam = lam

    def sample(self, shape=()):
        return torch.tensor(self.lam, dtype=torch.float32)


def test_mixup_runs_natively_with_torchvisions_pixels_for_its_weight(images):
    path, _ = images
    mixup = T2.MixUp(alpha=0.4, num_classes=8)
    made = mixing_loader(path, mixup)
    assert made.plan["batch_transform"] == [("mixup(alpha=0.4, num_classes=8)", "native")]
    assert [f for f in made.fields if f[0] == "label"] == [("label", "float32", [8])]
    plain = mixing_loader(path, None)
    for (image, target), (base_image, base_label) in zip(made.epoch(1), plain.epoch(1)):
        assert target.shape == (len(base_label), 8) and target.dtype == torch.float32
        assert torch.allclose(target.sum(1), torch.ones(len(base_label)))
        # Labels differ from the previous sample's here (0-7, each once): the weight is the
        # target's value at the sample's own label.
        mixup._dist = Drawn(float(target[0, base_label[0]]))
        want_image, want_target = mixup(base_image.clone(), base_label.clone())
        assert torch.equal(image, want_image) and torch.equal(target, want_target)


def test_a_random_choice_and_timms_mixup_run_natively_the_same_for_any_workers(images):
    from timm.data import Mixup
    path, _ = images
    choice = T2.RandomChoice([T2.CutMix(alpha=1.0, num_classes=8),
                              T2.MixUp(alpha=0.2, num_classes=8)], p=[3, 1])
    timm = Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1, num_classes=8,
                 mode="elem")
    for transform, call in ((choice, "mixup_cutmix(mixup_alpha=0.2, cutmix_alpha=1.0, "
                                     "num_classes=8, p=[0.25, 0.75])"),
                            (timm, "timm_mixup(mixup_alpha=0.8, cutmix_alpha=1.0, "
                                   "cutmix_minmax=[], prob=1.0, switch_prob=0.5, mode='elem', "
                                   "correct_lam=True, label_smoothing=0.1, num_classes=8)")):
        def run(**options):
            made = mixing_loader(path, transform, **options)
            return made, [torch.cat([b[0].flatten(1), b[1]], 1) for b in made.epoch(2)]

        made, reference = run(workers=0)
        assert made.plan["batch_transform"] == [(call, "native")]
        assert all(torch.equal(a, b) for a, b in zip(run(workers=2)[1], reference))
        first = mixing_loader(path, transform, workers=1)
        next(first.epoch(2))
        resumed = mixing_loader(path, transform, workers=2)
        resumed.load_state_dict(first.state_dict())
        rest = [torch.cat([b[0].flatten(1), b[1]], 1) for b in resumed]
        assert len(rest) == len(reference) - 1
        assert all(torch.equal(a, b) for a, b in zip(rest, reference[1:]))
    # timm's smoothing: 0.1 / 8 where neither the sample's nor its mirror's label is.
    _, target = next(iter(mixing_loader(path, timm)))
    assert float(target.min()) == pytest.approx(0.1 / 8)


def test_a_label_past_num_classes_is_one_line_naming_the_operation(images):
    path, _ = images
    made = mixing_loader(path, T2.CutMix(alpha=1.0, num_classes=2), shuffle=False)
    with pytest.raises(ValueError) as raised:
        next(iter(made))
    assert str(raised.value) == "cutmix: label 2 is not in [0, num_classes = 2)"


def test_what_has_no_native_operation_runs_in_python(images):
    path, _ = images
    made = mixing_loader(path, T2.MixUp(alpha=0.4))  # no num_classes: torchvision's own error
    assert made.plan["batch_transform"] == [("MixUp(alpha=0.4)", "python")]
    with pytest.raises(stoker.Error, match="num_classes must be passed"):
        next(iter(made))
