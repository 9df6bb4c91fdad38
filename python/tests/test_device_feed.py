"""The parts of stoker.Loader's CUDA feed that run without a GPU: normalisation on the device
gives the workers' values bit for bit (checked here on CPU tensors, where torch rounds each
multiply and add as CUDA does), the deferred specs, the option's checks, and the workers'
batch buffers from a caller's allocator (cudaHostAlloc's signature; here a counting stand-in)."""

import ctypes

import pytest
import torch

import stoker
from stoker import _device, _stoker
from stoker import transforms as S
from stoker.transforms import defer_normalization, field_specs

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def first_batch(path, transforms, **options):
    loader = stoker.Loader(path, batch_size=64, shuffle=False, transforms=transforms, seed=3,
                           **options, batch_format="dict")
    return next(iter(loader))


def normalized_after(batch, loader_fields, name, mean, std, unit_scale="divide"):
    """`batch[name]` (uint8) normalised as the device path does, on the CPU."""
    shape = {n: s for n, _, s in loader_fields}[name]
    mean, std = _stoker.normalization(shape, mean, std)
    return _device.normalizer(torch, mean, std, unit_scale, len(shape),
                              torch.device("cpu"))(batch[name])


@pytest.mark.parametrize("geometry", [
    [S.RandomResizedCrop(28), S.RandomHorizontalFlip()],
    [S.Resize(40), S.CenterCrop(32)],
])
@pytest.mark.parametrize("tail, mean, std, unit", [
    ([S.ToTensor(), S.Normalize(MEAN, STD)], MEAN, STD, "divide"),
    ([S.ToTensor("multiply"), S.Normalize(MEAN, STD)], MEAN, STD, "multiply"),
    ([S.ToTensor()], [0.0], [1.0], "divide"),
    ([S.Normalize([0.5], [0.2])], [0.5], [0.2], "divide"),
])
def test_images_normalised_after_the_copy_equal_the_workers_bit_for_bit(images, geometry, tail,
                                                                        mean, std, unit):
    path, _ = images
    loader = stoker.Loader(path, batch_size=64, shuffle=False, transforms=S.Compose(geometry),
                           seed=3, batch_format="dict")
    as_uint8 = next(iter(loader))
    workers = first_batch(path, S.Compose(geometry + tail))["image"]
    deferred = normalized_after(as_uint8, loader.fields, "image", mean, std, unit)
    assert deferred.dtype == torch.float32 and deferred.shape == workers.shape
    assert torch.equal(deferred.view(torch.int32), workers.view(torch.int32))  # every bit


def test_uint8_fields_normalised_after_the_copy_equal_the_workers_bit_for_bit(labelled):
    loader = stoker.Loader(labelled, batch_size=64, shuffle=False, seed=3, batch_format="dict")
    stored = next(iter(loader))
    workers = first_batch(labelled, {"image": S.Normalize(0.3, 0.7)})["image"]
    deferred = normalized_after(stored, loader.fields, "image", [0.3], [0.7])
    assert torch.equal(deferred.view(torch.int32), workers.view(torch.int32))


def test_deferred_specs_deliver_uint8_and_keep_mean_and_std(images):
    specs = field_specs({"image": S.Compose([S.RandomResizedCrop(28), S.ToTensor(),
                                            S.Normalize(MEAN, STD)]), "label": None},
                        [{"name": "image", "dtype": "bytes", "shape": None},
                         {"name": "label", "dtype": "int64", "shape": []}])
    native, deferred = defer_normalization(specs)
    assert [op["op"] for op in native[0]["ops"]] == ["random_resized_crop"]  # uint8 as resized
    assert deferred == {"image": (MEAN, STD, "divide")}
    uint8_specs = field_specs(S.Compose([S.RandomResizedCrop(28)]),
                              [{"name": "image", "dtype": "bytes", "shape": None}])
    assert defer_normalization(uint8_specs) == (uint8_specs, {})  # nothing to defer


@pytest.mark.parametrize("mean, std, message", [
    ([0.5, 0.5], [0.2, 0.2], "1 or 3 values each"),
    ([0.5], [0.0], "std must be non-zero"),
    ([float("nan")], [1.0], "finite"),
])
def test_the_device_normalisation_refuses_what_the_workers_refuse(mean, std, message):
    with pytest.raises(ValueError, match=message):
        _stoker.normalization([3, 8, 8], mean, std)


def test_normalize_on_device_needs_cuda(images):
    with pytest.raises(ValueError, match="normalize_on_device=True needs device='cuda'"):
        stoker.Loader(images[0], batch_size=256, shuffle=True, transforms=S.Compose([S.RandomResizedCrop(28), S.ToTensor()]),
                      normalize_on_device=True, batch_format="dict")


def test_the_loader_says_how_batches_are_delivered(labelled):
    options = stoker.Loader(labelled, batch_size=256, shuffle=True, batch_format="dict").options
    assert options["device"] == "cpu"
    assert options["normalize_on_device"] is False and options["pinned_by_workers"] is False


class CountingHostMemory:
    """cudaHostAlloc/cudaFreeHost's signatures over Python-owned buffers, counting calls."""

    ALLOC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t,
                             ctypes.c_uint)
    FREE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)

    def __init__(self, fail=False):
        self.live = {}
        self.allocations = 0
        self.fail = fail
        self._alloc = self.ALLOC(self.alloc)
        self._free = self.FREE(self.free)

    def alloc(self, out, size, flags):
        if self.fail:
            return 2  # cudaErrorMemoryAllocation
        buffer = ctypes.create_string_buffer(size)
        address = ctypes.addressof(buffer)
        self.live[address] = buffer
        self.allocations += 1
        out[0] = address
        return 0

    def free(self, address):
        return 0 if self.live.pop(address, None) is not None else 1

    @property
    def addresses(self):
        return (ctypes.cast(self._alloc, ctypes.c_void_p).value,
                ctypes.cast(self._free, ctypes.c_void_p).value)


def configured(path, pinned_memory, **options):
    native = _stoker.LoaderCore(path.encode())
    settings = dict(batch_size=16, shuffle=True, seed=5, last_batch="short", workers=2, prefetch=2,
                    rank=0, world_size=1, verify="once", on_error="raise")
    settings.update(options)
    native.configure(**settings, fields=field_specs(None, native.schema),
                     to_tensor=torch.utils.dlpack.from_dlpack, pinned_memory=pinned_memory)
    return native


def all_batches(native, epochs):
    out = []
    for epoch in range(epochs):
        out += [{k: v.clone() for k, v in batch.items()} for batch in native.epoch(epoch)]
    return out


# Batches built on the iterating thread (workers=0): a Python stand-in called from a worker
# needs the GIL, which a thread stopping or joining the workers may hold (cudaHostAlloc takes
# no GIL; test_cuda.py runs the real one with workers).
def test_batches_are_built_in_the_callers_memory_and_all_of_it_is_given_back(labelled):
    workers = 0
    memory = CountingHostMemory()
    native = configured(str(labelled), memory.addresses, workers=workers)
    expected = all_batches(configured(str(labelled), None, workers=workers), 3)
    seen = set()
    batches = []
    for epoch in range(3):
        for batch in native.epoch(epoch):
            seen.update(t.data_ptr() for t in batch.values())
            batches.append({k: v.clone() for k, v in batch.items()})
    assert len(batches) == len(expected)
    for ours, theirs in zip(batches, expected):
        assert all(torch.equal(ours[k], theirs[k]) for k in theirs)
    # Every field of every batch lay in memory the allocator gave (a field's tensor starts at
    # its buffer), reused: no more buffers than the pool holds, far fewer than the batches.
    assert seen <= set(memory.live)
    assert 0 < memory.allocations <= 2 * (2 + 2 + workers) < len(batches)
    del native, batch
    assert memory.live == {}  # every buffer freed through the caller's free


def test_a_failing_allocation_is_an_error_naming_the_size_and_code(labelled):
    memory = CountingHostMemory(fail=True)
    # The pool's first buffer is made when the loader is configured.
    with pytest.raises(RuntimeError, match=r"pinned host memory: allocating 256 bytes failed "
                                           r"\(CUDA error 2\)"):
        configured(str(labelled), memory.addresses, workers=0)
