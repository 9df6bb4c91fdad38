"""stoker.Loader(device="cuda") on a real GPU (skipped without one; scripts/gpu/run.sh tests
runs them on the GPU machine): device batches equal the CPU batches bit for bit, the pinned
buffers and device memory do not grow, a held batch stays intact, and breaking out of an epoch,
state_dict resume and workers="auto" work on the device."""

import pytest
import torch

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
    cpu = stoker.Loader(path, batch_size=8, seed=1, transforms=transforms, batch_format="dict")
    gpu = stoker.Loader(path, batch_size=8, seed=1, transforms=transforms, device="cuda",
                        normalize_on_device=normalize_on_device, batch_format="dict")
    assert gpu.options["pinned_by_workers"]
    got = list(gpu.epoch(2))
    assert all(t.is_cuda for b in got for t in b.values())
    assert_same([{k: v.cpu() for k, v in b.items()} for b in got], batches(cpu, 2))
    assert [f[:2] for f in gpu.fields] == [f[:2] for f in cpu.fields]


def test_fixed_uint8_fields_normalised_on_the_device_equal_the_workers(labelled):
    transforms = {"image": S.Normalize(0.3, 0.7)}
    cpu = stoker.Loader(labelled, batch_size=32, seed=2, transforms=transforms, batch_format="dict")
    gpu = stoker.Loader(labelled, batch_size=32, seed=2, transforms=transforms, device="cuda",
                        normalize_on_device=True, batch_format="dict")
    assert gpu.options["normalize_on_device"]
    assert_same(batches(gpu), batches(cpu))


def test_no_growth_of_pinned_buffers_or_device_memory_over_10000_batches(labelled):
    loader = stoker.Loader(labelled, batch_size=4, device="cuda", workers=2, batch_format="dict")
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
    assert loader._native.buffer_bytes() <= host_bytes


def test_a_batch_held_across_many_steps_stays_intact(labelled):
    cpu = batches(stoker.Loader(labelled, batch_size=16, seed=4, batch_format="dict"))
    loader = stoker.Loader(labelled, batch_size=16, seed=4, device="cuda", workers=2,
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
    straight = batches(stoker.Loader(labelled, batch_size=16, seed=5, batch_format="dict"), 0)
    loader = stoker.Loader(labelled, batch_size=16, seed=5, device="cuda", batch_format="dict")
    first = []
    for batch in loader.epoch(0):
        first.append({k: v.cpu() for k, v in batch.items()})
        if len(first) == 5:
            state = loader.state_dict()
            break
    again = batches(loader, 0)  # a new iteration of the epoch starts at batch 0
    assert_same(again, straight)
    resumed = stoker.Loader(labelled, batch_size=16, seed=5, device="cuda", workers=3,
                            batch_format="dict")
    resumed.load_state_dict(state)
    assert_same(first + [{k: v.cpu() for k, v in b.items()} for b in resumed], straight)


def test_tuple_batches_on_the_device_resume_after_the_last_one_yielded(labelled):
    """(image, label) tuples over the device epoch: its state (two batches behind the native
    loader's) is the one state_dict saves."""
    straight = batches(stoker.Loader(labelled, batch_size=16, seed=5, batch_format="dict"))
    loader = stoker.Loader(labelled, batch_size=16, seed=5, device="cuda", last_batch="pad")
    first = []
    for image, label, valid in loader:
        assert image.is_cuda and label.is_cuda and valid.is_cuda
        first.append({"image": image.cpu(), "label": label.cpu()})
        if len(first) == 5:
            state = loader.state_dict()
            break
    resumed = stoker.Loader(labelled, batch_size=16, seed=5, device="cuda")
    resumed.load_state_dict(state)
    first += [{"image": image.cpu(), "label": label.cpu()} for image, label in resumed]
    assert_same(first, straight)  # the resumed loader's last batch is short, as straight's


def test_workers_auto_on_the_device(images):
    path, _ = images
    cpu = batches(stoker.Loader(path, batch_size=8, seed=6, transforms=TRAIN, workers=0,
                                batch_format="dict"))
    loader = stoker.Loader(path, batch_size=8, seed=6, transforms=TRAIN, workers="auto",
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
