"""stoker.Loader(device="cuda") on a real GPU (skipped without one; scripts/gpu/run.sh tests
runs them on the GPU machine): device batches equal the CPU batches bit for bit (Python steps
and a Python batch transform included), the pinned buffers and device memory do not grow, a
held batch stays intact, breaking out of an epoch, state_dict resume and workers="auto" work on
the device, and fields of varying size (images alone, and a detection sample's image, boxes,
labels and masks) arrive as on the CPU, as lists or padded."""

import random

import pytest
import torch
import torchvision.transforms as T
import torchvision.transforms.v2 as T2

import stoker
from loader_datasets import write_one_cut_image
from stoker import transforms as S

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
TRAIN = S.Compose([S.RandomResizedCrop(28), S.RandomHorizontalFlip(), S.ToTensor(),
                   S.Normalize(MEAN, STD)])


def batches(loader, epoch=0):
    return [{k: v.cpu() for k, v in b.items()} for b in loader.epoch(epoch)]


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for k in x:
            assert x[k].dtype == y[k].dtype and x[k].shape == y[k].shape
            assert torch.equal(x[k].view(torch.uint8), y[k].view(torch.uint8)), k  # every bit


@pytest.mark.parametrize("transforms", [None, S.Compose([S.RandomResizedCrop(28)]), TRAIN],
                         ids=["stored", "uint8", "float32"])
@pytest.mark.parametrize("normalize_on_device", [False, True])
def test_device_batches_equal_cpu_batches_bit_for_bit(images, transforms, normalize_on_device):
    path, _ = images
    if transforms is None:
        transforms = {"image": None}  # encoded bytes have no fixed shape: labels only
    cpu = stoker.Loader(path, shuffle=True, batch_size=8, seed=1, transforms=transforms, batch_format="dict")
    gpu = stoker.Loader(path, shuffle=True, batch_size=8, seed=1, transforms=transforms, device="cuda",
                        normalize_on_device=normalize_on_device, batch_format="dict")
    assert gpu.options["pinned_by_workers"]
    got = list(gpu.epoch(2))
    assert all(t.is_cuda for b in got for t in b.values())
    assert_same([{k: v.cpu() for k, v in b.items()} for b in got], batches(cpu, 2))
    assert [f[:2] for f in gpu.fields] == [f[:2] for f in cpu.fields]


def test_fixed_uint8_fields_normalised_on_the_device_equal_the_workers(labelled):
    transforms = {"image": S.Normalize(0.3, 0.7)}
    cpu = stoker.Loader(labelled, shuffle=True, batch_size=32, seed=2, transforms=transforms, batch_format="dict")
    gpu = stoker.Loader(labelled, shuffle=True, batch_size=32, seed=2, transforms=transforms, device="cuda",
                        normalize_on_device=True, batch_format="dict")
    assert gpu.options["normalize_on_device"]
    assert_same(batches(gpu), batches(cpu))


def test_no_growth_of_pinned_buffers_or_device_memory_over_10000_batches(labelled):
    loader = stoker.Loader(labelled, shuffle=True, batch_size=4, device="cuda", workers=2, batch_format="dict")
    per_epoch = len(loader)
    epochs = -(-10_000 // per_epoch)
    seen = 0
    for epoch in range(epochs):
        for batch in loader.epoch(epoch):
            batch["image"].float().sum()  # the consumer's stream uses it
            seen += 1
            if seen == 200:
                torch.cuda.synchronize()
                device_bytes = torch.cuda.memory_allocated()
                host_bytes = loader._native.buffer_bytes()
    torch.cuda.synchronize()
    assert seen >= 10_000
    assert torch.cuda.memory_allocated() <= device_bytes
    # buffer_bytes counts every buffer ever allocated: the pool may reach its bound, prefetch + 2
    # batches, after batch 200 (the H100 run reached 66 of 66 buffers later than the CPU), and
    # never passes it; a leak would add one an epoch (40 here) or a batch.
    batch_bytes = 4 * (16 + 8)  # the labelled set's image uint8 [1, 4, 4] and int64 label
    assert host_bytes <= loader._native.buffer_bytes() <= \
        (loader.options["prefetch"] + 2) * batch_bytes


def test_a_batch_held_across_many_steps_stays_intact(labelled):
    cpu = batches(stoker.Loader(labelled, shuffle=True, batch_size=16, seed=4, batch_format="dict"))
    loader = stoker.Loader(labelled, shuffle=True, batch_size=16, seed=4, device="cuda", workers=2,
                           batch_format="dict")
    iterator = loader.epoch(0)
    held = next(iterator)
    for _ in iterator:
        pass
    for _ in loader.epoch(1):  # the workers reuse every pinned buffer meanwhile
        pass
    torch.cuda.synchronize()
    assert_same([{k: v.cpu() for k, v in held.items()}], cpu[:1])


def test_breaking_out_and_resuming_on_the_device(labelled):
    straight = batches(stoker.Loader(labelled, shuffle=True, batch_size=16, seed=5, batch_format="dict"), 0)
    loader = stoker.Loader(labelled, shuffle=True, batch_size=16, seed=5, device="cuda", batch_format="dict")
    first = []
    for batch in loader.epoch(0):
        first.append({k: v.cpu() for k, v in batch.items()})
        if len(first) == 5:
            state = loader.state_dict()
            break
    again = batches(loader, 0)  # a new iteration of the epoch starts at batch 0
    assert_same(again, straight)
    resumed = stoker.Loader(labelled, shuffle=True, batch_size=16, seed=5, device="cuda", workers=3,
                            batch_format="dict")
    resumed.load_state_dict(state)
    assert_same(first + [{k: v.cpu() for k, v in b.items()} for b in resumed], straight)


def test_tuple_batches_on_the_device_resume_after_the_last_one_yielded(labelled):
    """(image, label) tuples over the device epoch: its state (two batches behind the native
    loader's) is the one state_dict saves."""
    straight = batches(stoker.Loader(labelled, shuffle=True, batch_size=16, seed=5, batch_format="dict"))
    loader = stoker.Loader(labelled, shuffle=True, batch_size=16, seed=5, device="cuda", last_batch="pad")
    first = []
    for image, label, valid in loader:
        assert image.is_cuda and label.is_cuda and valid.is_cuda
        first.append({"image": image.cpu(), "label": label.cpu()})
        if len(first) == 5:
            state = loader.state_dict()
            break
    resumed = stoker.Loader(labelled, shuffle=True, batch_size=16, seed=5, device="cuda")
    resumed.load_state_dict(state)
    first += [{"image": image.cpu(), "label": label.cpu()} for image, label in resumed]
    assert_same(first, straight)  # the resumed loader's last batch is short, as straight's


def test_workers_auto_on_the_device(images):
    path, _ = images
    cpu = batches(stoker.Loader(path, shuffle=True, batch_size=8, seed=6, transforms=TRAIN, workers=0,
                                batch_format="dict"))
    loader = stoker.Loader(path, shuffle=True, batch_size=8, seed=6, transforms=TRAIN, workers="auto",
                           device="cuda", batch_format="dict")
    assert_same(batches(loader), cpu)
    assert loader.tuning is not None


def test_a_corrupt_image_raises_in_order_on_the_device(tmp_path):
    path = write_one_cut_image(tmp_path / "ds", 24, cut=13)
    pipeline = S.Compose([S.Resize(20), S.CenterCrop(16), S.ToTensor()])
    loader = stoker.Loader(path, batch_size=3, shuffle=False, transforms=pipeline, device="cuda",
                           batch_format="dict")
    labels = []
    with pytest.raises(stoker.Error, match="dataset record 13"):
        for batch in loader:
            labels += batch["label"].tolist()
    assert labels == list(range(12))  # every batch before the bad one, in order


def shifted(x):
    """A user's own step, drawing from torch and random."""
    shift = int(torch.randint(0, 40, ())) + random.randint(0, 40)
    return (x.to(torch.int32) + shift).clamp(0, 255).to(torch.uint8)


@pytest.mark.parametrize("python_workers", [0, 2])
def test_python_steps_and_batch_transform_on_the_device_equal_the_cpu(images, python_workers):
    path, _ = images
    steps = T.Compose([T.RandomResizedCrop(24), T.RandomHorizontalFlip(), T2.GaussianBlur(3),
                       shifted, T.ToTensor()])

    def made(device):
        return stoker.Loader(path, shuffle=True, batch_size=4, seed=7, transforms=steps, device=device,
                             python_input="tensor", python_workers=python_workers,
                             batch_transform=T2.MixUp(alpha=0.4, num_classes=30),
                             batch_format="dict")

    gpu = made("cuda")
    assert [where for _, where in gpu.plan["image"]][-3:] == ["python"] * 3
    got = list(gpu.epoch(1))
    assert all(t.is_cuda for b in got for t in b.values())
    assert_same([{k: v.cpu() for k, v in b.items()} for b in got], batches(made("cpu"), 1))


def on_cpu(field):
    return [t.cpu() for t in field] if isinstance(field, list) else field.cpu()


def assert_same_fields(got, want):
    """Batches of tensors and lists of tensors, equal each bit; `got` on the device."""
    assert len(got) == len(want)
    for x, y in zip(got, want):
        assert x.keys() == y.keys()
        for name in x:
            xs, ys = (x[name], y[name]) if isinstance(y[name], list) else ([x[name]], [y[name]])
            assert len(xs) == len(ys), name
            for a, b in zip(xs, ys):
                assert a.is_cuda and a.dtype == b.dtype and a.shape == b.shape, name
                assert torch.equal(a.cpu().view(torch.uint8), b.view(torch.uint8)), name


@pytest.mark.parametrize("form", ["list", "padded"])
def test_images_of_varying_size_on_the_device_equal_the_cpu(images, form):
    path, _ = images
    def made(device):
        return stoker.Loader(path, shuffle=True, batch_size=3, seed=8, transforms={"image": S.DecodeImage()},
                             variable=form, device=device, batch_format="dict")

    want = [{k: v if isinstance(v, list) else v.clone() for k, v in b.items()}
            for b in made("cpu").epoch(1)]
    assert_same_fields(list(made("cuda").epoch(1)), want)


@pytest.mark.parametrize("form", ["list", "padded"])
def test_a_detection_sample_on_the_device_equals_the_cpu(coco_dataset, form):
    """The detection reference's hflip preset (a joint transform: image, boxes, labels, masks)
    delivered to the device: every field and sample as on the CPU."""
    preset = T2.Compose([S.DecodeImage(max_size=2048), T2.RandomHorizontalFlip(0.5),
                         T2.ToImage(), T2.ToDtype(torch.float, scale=True),
                         T2.SanitizeBoundingBoxes(), T2.ToPureTensor()])

    def made(device):
        return stoker.Loader(coco_dataset, shuffle=True, batch_size=5, seed=3, transforms=preset,
                             variable=form, device=device, batch_format="dict")

    want = [{k: [t.clone() for t in v] if isinstance(v, list) else v.clone()
             for k, v in b.items()} for b in made("cpu").epoch(0)]
    got = list(made("cuda").epoch(0))
    assert {"boxes", "labels", "masks"} <= set(got[0])
    assert_same_fields(got, want)


def test_nested_boxes_and_labels_on_the_device_equal_the_cpu(coco_dataset):
    """variable="nested" after the copy: jagged tensors on the device, each sample as on the
    CPU."""
    preset = T2.Compose([S.DecodeImage(max_size=2048), T2.RandomHorizontalFlip(0.5),
                         T2.ToImage(), T2.ToDtype(torch.float, scale=True),
                         T2.SanitizeBoundingBoxes(), T2.ToPureTensor()])
    variable = {"boxes": "nested", "labels": "nested", "image": "list", "masks": "list"}

    def made(device):
        return stoker.Loader(coco_dataset, shuffle=True, batch_size=5, seed=3, transforms=preset,
                             variable=variable, device=device, batch_format="dict")

    for a, b in zip(made("cuda").epoch(0), made("cpu").epoch(0)):
        for name in ("boxes", "labels"):
            assert a[name].is_nested and a[name].is_cuda
            assert all(torch.equal(x.cpu(), y) for x, y in zip(a[name].unbind(),
                                                               b[name].unbind()))
