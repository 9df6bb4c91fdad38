"""The classification recipes people train with (issue 47's list), as their code builds them,
through stoker.Loader: torchvision's reference (its README's commands, as its presets build
them, transforms v1 as its default and v2 as --use-v2), the weights' eval transforms and
pytorch/examples' imagenet. Which steps run natively and which in Python (``loader.plan``), and
a batch of each."""

import pytest
import torch
import torchvision.transforms as T1
import torchvision.transforms.v2 as T2

import stoker

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def preset_train(T, crop_size, interpolation="bilinear", auto_augment=None,
                 random_erase=0.0, augmix_severity=3, use_v2=False, backend="pil"):
    """torchvision's references/classification/presets.py ClassificationPresetTrain, PIL
    backend (its default) or --backend tensor (PILToTensor first), as it composes the steps."""
    mode = T.InterpolationMode(interpolation)
    steps = [T.PILToTensor()] if backend == "tensor" else []
    steps += [T.RandomResizedCrop(crop_size, interpolation=mode, antialias=True),
              T.RandomHorizontalFlip(0.5)]
    if auto_augment == "ra":
        steps.append(T.RandAugment(interpolation=mode, magnitude=9))
    elif auto_augment == "ta_wide":
        steps.append(T.TrivialAugmentWide(interpolation=mode))
    elif auto_augment == "augmix":
        steps.append(T.AugMix(interpolation=mode, severity=augmix_severity))
    elif auto_augment is not None:
        steps.append(T.AutoAugment(policy=T.AutoAugmentPolicy(auto_augment), interpolation=mode))
    if backend == "pil":
        steps.append(T.PILToTensor())
    steps += [T.ToDtype(torch.float, scale=True) if use_v2 else T.ConvertImageDtype(torch.float),
              T.Normalize(mean=MEAN, std=STD)]
    if random_erase > 0:
        steps.append(T.RandomErasing(p=random_erase))
    if use_v2:
        steps.append(T.ToPureTensor())
    return T.Compose(steps)


def preset_eval(T, crop_size, resize_size, interpolation="bilinear", use_v2=False):
    """ClassificationPresetEval, PIL backend."""
    steps = [T.Resize(resize_size, interpolation=T.InterpolationMode(interpolation),
                      antialias=True),
             T.CenterCrop(crop_size), T.PILToTensor(),
             T.ToDtype(torch.float, scale=True) if use_v2 else T.ConvertImageDtype(torch.float),
             T.Normalize(mean=MEAN, std=STD)]
    if use_v2:
        steps.append(T.ToPureTensor())
    return T.Compose(steps)


# The README's commands: (model, train preset arguments, eval (crop, resize, interpolation)).
REFERENCE = [
    ("resnet50", dict(crop_size=224), (224, 256, "bilinear")),
    ("resnet50 v2", dict(crop_size=176, auto_augment="ta_wide", random_erase=0.1),
     (224, 232, "bilinear")),
    ("vit_b_16", dict(crop_size=224, auto_augment="ra"), (224, 256, "bilinear")),
    ("swin_t", dict(crop_size=224, interpolation="bicubic", auto_augment="ta_wide",
                    random_erase=0.25), (224, 232, "bicubic")),
    ("swin_v2_t", dict(crop_size=256, interpolation="bicubic", auto_augment="ta_wide",
                       random_erase=0.25), (256, 260, "bicubic")),
    ("maxvit_t", dict(crop_size=224, interpolation="bicubic", auto_augment="ta_wide"),
     (224, 224, "bicubic")),
    ("convnext_tiny", dict(crop_size=176, auto_augment="ta_wide", random_erase=0.1),
     (224, 232, "bilinear")),
    ("efficientnet_v2_s", dict(crop_size=300, auto_augment="ta_wide", random_erase=0.1),
     (384, 384, "bilinear")),
    ("regnet_y_16gf", dict(crop_size=176, auto_augment="ta_wide", random_erase=0.1),
     (224, 232, "bilinear")),
    ("mobilenet_v3_large", dict(crop_size=224, auto_augment="imagenet", random_erase=0.2),
     (224, 256, "bilinear")),
    ("mobilenet_v2", dict(crop_size=224), (224, 256, "bilinear")),
    ("resnet50 --auto-augment augmix", dict(crop_size=176, auto_augment="augmix",
                                            augmix_severity=5, random_erase=0.1),
     (224, 232, "bilinear")),
    ("efficientnet_b7 (eval)", None, (600, 600, "bicubic")),
]


def plan_of(path, transforms):
    loader = stoker.Loader(path, shuffle=True, batch_size=4, transforms=transforms, batch_format="dict")
    batch = next(iter(loader))
    return [where for _, where in loader.plan["image"]], batch["image"]


@pytest.mark.parametrize("model, train, evaluation", REFERENCE, ids=[r[0] for r in REFERENCE])
def test_the_references_recipes_run_natively(images, model, train, evaluation):
    path, _ = images
    crop, resize, interpolation = evaluation
    for use_v2, T in ((False, T1), (True, T2)):
        where, batch = plan_of(path, preset_eval(T, crop, resize, interpolation, use_v2))
        assert set(where) == {"native"}, (model, "eval", use_v2)
        assert batch.shape == (4, 3, crop, crop) and batch.dtype == torch.float32
    if train is None:
        return
    where, batch = plan_of(path, preset_train(T1, **train))
    assert set(where) == {"native"}, (model, "train v1")
    assert batch.shape == (4, 3, train["crop_size"], train["crop_size"])
    # --use-v2: v2's policies natively too (version="v2": Solarize's threshold; AugMix's
    # kernels="v2": its draws and tensor kernels).
    where, batch = plan_of(path, preset_train(T2, use_v2=True, **train))
    assert set(where) == {"native"}, (model, "train v2", where)
    assert batch.shape == (4, 3, train["crop_size"], train["crop_size"])
    # --backend tensor: the policies' tensor kernels (bicubic recipes: torchvision's tensor
    # geometry refuses bicubic, so theirs do not run on tensors).
    if train.get("interpolation") == "bicubic" or not train.get("auto_augment"):
        return
    for use_v2, T in ((False, T1), (True, T2)):
        where, batch = plan_of(path, preset_train(T, use_v2=use_v2, backend="tensor", **train))
        assert set(where) == {"native"}, (model, "train tensor", use_v2, where)
        assert batch.shape == (4, 3, train["crop_size"], train["crop_size"])


def test_pytorch_examples_imagenet_runs_natively(images):
    path, _ = images
    normalize = T1.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train = T1.Compose([T1.RandomResizedCrop(224), T1.RandomHorizontalFlip(), T1.ToTensor(),
                        normalize])
    evaluation = T1.Compose([T1.Resize(256), T1.CenterCrop(224), T1.ToTensor(), normalize])
    for transforms in (train, evaluation):
        where, batch = plan_of(path, transforms)
        assert set(where) == {"native"} and batch.shape == (4, 3, 224, 224)
