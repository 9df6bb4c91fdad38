"""timm's create_transform through stoker.Loader: its RandAugment, AugMix and RandomErasing
translate to the native operations (whose pixels equal timm's for the same draws: the C++ tests
ops/timm_rand_augment_test.cc, ops/timm_augmix_test.cc and ops/timm_random_erasing_test.cc),
its usual training configurations run with no step in Python, its eval configurations give its own pixels."""

import io
import math
import random

import pytest
import torch
from PIL import Image

import stoker
from stoker import transforms as S

timm_data = pytest.importorskip("timm.data")
from timm.data import auto_augment as timm_aa  # noqa: E402


def timm_step(pipeline, name):
    return next(t for t in pipeline.transforms if type(t).__name__ == name)


@pytest.mark.parametrize("auto_augment, interpolation", [
    ("rand-m9-mstd0.5-inc1", "bicubic"),
    ("rand-m9-mstd0.5", "random"),
    ("rand-m7-n3-p1-mmax12-tweights", "bilinear"),
    ("rand-n1-mstd101-m5", "random"),
    ("rand-m9-mstd0.5-t3a", "bicubic"),
    ("rand-m6-n3-mmax12-t3aw", "random"),
])
def test_timms_rand_augment_is_its_config_string(auto_augment, interpolation):
    train = timm_data.create_transform(24, is_training=True, auto_augment=auto_augment,
                                       interpolation=interpolation)
    theirs = timm_step(train, "RandAugment")
    ours = S._stoker_transform(theirs)
    assert type(ours).__name__ == "TimmRandAugment"
    assert ours.fill == [124.0, 116.0, 104.0]
    assert ours.interpolation == interpolation
    # The rebuilt string makes timm's same RandAugment.
    again = timm_aa.rand_augment_transform(ours.config, dict(theirs.ops[0].hparams))
    assert again.num_layers == theirs.num_layers
    assert [(o.name, o.prob, o.magnitude, o.magnitude_std, o.magnitude_max) for o in again.ops] \
        == [(o.name, o.prob, o.magnitude, o.magnitude_std, o.magnitude_max) for o in theirs.ops]
    assert (again.choice_weights is None) == (theirs.choice_weights is None)
    if theirs.choice_weights is not None:
        assert list(again.choice_weights) == list(theirs.choice_weights)


@pytest.mark.parametrize("auto_augment, interpolation", [
    ("augmix-m3-w3", "random"),
    ("augmix-m5-w4-d2-mstd0.5", "bicubic"),
    ("augmix-m9-w2-d3-a0.5-mstd0", "bilinear"),
    ("augmix-m1-w1-a2-mstd0.00001", "random"),
    ("augmix-m3-w3-b1", "random"),
])
def test_timms_augmix_is_its_config_string(auto_augment, interpolation):
    train = timm_data.create_transform(24, is_training=True, auto_augment=auto_augment,
                                       interpolation=interpolation)
    theirs = timm_step(train, "AugMixAugment")
    ours = S._stoker_transform(theirs)
    assert type(ours).__name__ == "TimmAugMix"
    assert ours.fill == [124.0, 116.0, 104.0]
    assert ours.interpolation == interpolation
    assert ours.translate_pct == 0.3
    # The rebuilt string makes timm's same AugMix.
    hparams = {k: v for k, v in theirs.ops[0].hparams.items() if k != "magnitude_std"}
    again = timm_aa.augment_and_mix_transform(ours.config, hparams)
    assert (again.alpha, again.width, max(again.depth, 0), again.blended) == \
        (theirs.alpha, theirs.width, max(theirs.depth, 0), theirs.blended)
    assert [(o.name, o.prob, o.magnitude, o.magnitude_std) for o in again.ops] == \
        [(o.name, o.prob, o.magnitude, o.magnitude_std) for o in theirs.ops]


def test_an_augmix_stoker_cannot_express_runs_in_python():
    with pytest.raises(ValueError, match="mmax=12"):
        S._stoker_transform(timm_aa.augment_and_mix_transform("augmix", {"magnitude_max": 12,
                                                                        "img_mean": (1, 2, 3)}))
    with pytest.raises(ValueError, match="img_mean 128"):
        S._stoker_transform(timm_aa.augment_and_mix_transform("augmix", {"img_mean": 128}))


def test_a_rand_augment_stoker_cannot_express_runs_in_python(images):
    path, _ = images
    own_list = timm_aa.rand_augment_transform("rand-m9", {"img_mean": (1, 2, 3)},
                                              transforms=["Rotate", "GaussianBlurRand"])
    with pytest.raises(ValueError, match="GaussianBlurRand"):
        S._stoker_transform(own_list)
    pipeline = timm_data.create_transform(24, is_training=True)
    pipeline.transforms.insert(2, own_list)
    loader = stoker.Loader(path, shuffle=True, batch_size=4, transforms=pipeline, batch_format="dict")
    plan = loader.plan["image"]
    assert plan[0][1] == "native" and plan[1][1] == "python", plan  # the flip is in the crop
    assert plan[1][0].startswith("RandAugment("), plan


@pytest.mark.parametrize("mode, count", [("const", 1), ("rand", 2), ("pixel", 3), ("", 1)])
def test_timms_random_erasing_translates(mode, count):
    theirs = timm_data.random_erasing.RandomErasing(0.25, mode=mode or "const", max_count=count,
                                                    min_aspect=0.3, device="cpu")
    theirs.mode = mode
    ours = S._stoker_transform(theirs)
    assert type(ours).__name__ == "TimmRandomErasing"
    assert (ours.probability, ours.mode, ours.min_count, ours.max_count) == \
        (0.25, mode or "const", 1, count)
    assert (math.log(ours.min_aspect), math.log(ours.max_aspect)) == theirs.log_aspect_ratio

def test_timms_random_erasing_with_num_splits_is_native_as_timm_erases_one_image():
    # timm's num_splits spares a batch's first part; on one image it erases as without it.
    split = timm_data.random_erasing.RandomErasing(0.5, num_splits=2, max_count=2, device="cpu")
    plain = timm_data.random_erasing.RandomErasing(0.5, max_count=2, device="cpu")
    image = torch.rand(3, 16, 12)
    for seed in range(8):
        random.seed(seed)
        torch.manual_seed(seed)
        theirs = split(image.clone())
        random.seed(seed)
        torch.manual_seed(seed)
        assert torch.equal(theirs, plain(image.clone()))
    ours = S._stoker_transform(split)
    assert type(ours).__name__ == "TimmRandomErasing"
    assert ours.params == S._stoker_transform(plain).params


TRAINING = [
    dict(auto_augment="rand-m9-mstd0.5-inc1", re_prob=0.25, interpolation="bicubic"),
    dict(auto_augment="rand-m9-mstd0.5-inc1", re_prob=0.25, interpolation="random"),
    dict(auto_augment="rand-m7-n3-mstd1", re_prob=0.25, re_mode="pixel", re_count=2,
         interpolation="bicubic"),
    dict(auto_augment="rand-m9-mstd0.5-inc1", re_prob=0.25, re_mode="pixel", vflip=0.5,
         interpolation="random", scale=(0.5, 1.0)),
    dict(color_jitter=0.4, re_prob=0.1, interpolation="bilinear"),
    dict(auto_augment="rand-m6-n4-p0.7-tweights", interpolation="random", hflip=0.0),
    dict(auto_augment="augmix-m3-w3", re_prob=0.25, interpolation="random"),
    dict(auto_augment="augmix-m9-mstd0.5-w4-d2", interpolation="bicubic"),
]


@pytest.mark.parametrize("config", TRAINING, ids=str)
def test_timms_training_configs_run_with_no_python_step(images, config):
    path, _ = images
    train = timm_data.create_transform(24, is_training=True, **config)

    def epoch(workers):
        loader = stoker.Loader(path, shuffle=True, batch_size=3, seed=4, workers=workers, transforms=train,
                               batch_format="dict")
        assert {where for _, where in loader.plan["image"]} == {"native"}, loader.plan["image"]
        return torch.cat([b["image"] for b in loader.epoch(1)])

    first = epoch(1)
    assert first.dtype == torch.float32 and first.shape[1:] == (3, 24, 24)
    assert torch.equal(epoch(2), first)


@pytest.mark.parametrize("config", [dict(interpolation="bicubic", crop_pct=0.95),
                                    dict(interpolation="bilinear", crop_pct=0.875),
                                    dict(interpolation="bicubic", crop_pct=1.0)], ids=str)
def test_timms_eval_configs_give_its_own_pixels(images, config):
    path, encoded = images
    evaluation = timm_data.create_transform(30, is_training=False, **config)
    loader = stoker.Loader(path, batch_size=64, shuffle=False, transforms=evaluation,
                           batch_format="dict")
    assert {where for _, where in loader.plan["image"]} == {"native"}
    want = torch.stack([evaluation(Image.open(io.BytesIO(e)).convert("RGB")) for e in encoded])
    torch.testing.assert_close(next(iter(loader))["image"], want, rtol=0, atol=0)
