"""Where stoker.Loader's batches go: the CPU as they are, or a CUDA device.

For CUDA the native workers build each batch in page-locked memory (the CUDA runtime's
cudaHostAlloc, found in the process: see ``pinned_memory``), so the only copy is the DMA: a
non-blocking copy on a side stream, ``AHEAD`` batches ahead of the consumer, whose stream waits
for the copy's event before it uses the batch. A host batch goes back to the workers' pool only
once its copy has completed (its event), never earlier; each device tensor is recorded on the
consumer's stream, so the caching allocator does not reuse its memory while the consumer's
kernels may still read it. Optionally images cross the bus as uint8 and are normalised on the
device with the workers' own float32 scale and bias, one rounded multiply and one rounded add
as the workers do (bit for bit on CPU tensors: test_device_feed.py; on a GPU: test_cuda.py).

This part is torch's own API only (the extension links no torch); the CUDA parts run only on a
GPU (python/tests/test_cuda.py), so they are kept this small.
"""

from __future__ import annotations

import collections
import ctypes
from typing import Dict, Optional, Tuple

# Batches copied ahead of the one the consumer holds.
AHEAD = 2


def resolve(torch, device):
    """A torch.device for `device`; ValueError if it is neither the CPU nor a usable GPU."""
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"device {device!r} is not a device: {e}") from None
    if resolved.type == "cpu":
        return resolved
    if resolved.type != "cuda":
        raise ValueError(f"device {device!r}: stoker.Loader delivers to 'cpu' or 'cuda'")
    if not torch.cuda.is_available():
        raise ValueError(f"device {device!r}: torch.cuda.is_available() is False (this PyTorch "
                         "has no CUDA, or no GPU is visible); use device='cpu'")
    return resolved


def pinned_memory(torch) -> Optional[Tuple[int, int]]:
    """The addresses of (cudaHostAlloc, cudaFreeHost) of the CUDA runtime torch loaded, for the
    workers' batch buffers; None where this process has no shared CUDA runtime library (the
    consumer then pins each batch itself, one more copy)."""
    torch.cuda.init()
    path = _loaded_library("libcudart.so")
    if path is None:
        return None
    runtime = ctypes.CDLL(path)  # the library already loaded: dlopen returns it
    return tuple(ctypes.cast(getattr(runtime, name), ctypes.c_void_p).value
                 for name in ("cudaHostAlloc", "cudaFreeHost"))


def _loaded_library(prefix: str) -> Optional[str]:
    """The path of a shared library mapped into this process whose file name starts with
    `prefix`, or None."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split(maxsplit=5)[-1].strip()
                if path.rsplit("/", 1)[-1].startswith(prefix):
                    return path
    except OSError:
        pass
    return None


def normalizer(torch, mean, std, unit_scale: str, sample_dims: int, device):
    """A function from a uint8 batch (on `device`) to the float32 batch the workers would have
    made, torchvision's: x / 255 (`unit_scale` "divide") or x * float32(1 / 255) ("multiply"),
    then (x - mean) / std, each operation rounded to float32; `mean`/`std` one value, or one per
    channel (dim 1 of the batch). Every operand a tensor on `device`: CUDA divides by a CPU
    scalar as a product with its reciprocal, which is not torchvision's division."""
    shape = [1, len(mean)] + [1] * (sample_dims - 1) if len(mean) > 1 else [1] * (sample_dims + 1)
    mean_t = torch.tensor(mean, dtype=torch.float32, device=device).reshape(shape)
    std_t = torch.tensor(std, dtype=torch.float32, device=device).reshape(shape)
    divide = unit_scale == "divide"
    unit_t = torch.tensor(255.0 if divide else 1.0 / 255.0, dtype=torch.float32, device=device)

    def normalize(batch):
        x = batch.to(torch.float32)
        x = x.div_(unit_t) if divide else x.mul_(unit_t)
        return x.sub_(mean_t).div_(std_t)

    return normalize


def _to_device(field, device):
    """A batch field (a tensor, or a list of them: a field of varying size) copied to `device`
    on the current stream, without waiting; an int (max_seqlen) as it is."""
    if isinstance(field, list):
        return [sample.to(device, non_blocking=True) for sample in field]
    return field if isinstance(field, int) else field.to(device, non_blocking=True)


def _tensors(batch):
    """Every tensor of a batch, the samples of its list fields included."""
    for field in batch.values():
        if not isinstance(field, int):
            yield from field if isinstance(field, list) else (field,)


class CudaEpoch:
    """The batches of a native epoch, on a CUDA device, copied ``AHEAD`` batches ahead.

    ``state`` is the native loader's state as of the last batch this iterator yielded (the
    native loader itself is further on). ``normalize``: {field: function} applied on the side
    stream after the copy (normalizer()). An error of the native epoch (stoker.Error) is raised
    in order, at the batch it belongs to.
    """

    def __init__(self, torch, native_loader, native_epoch, device,
                 normalize: Optional[Dict[str, object]] = None):
        self._torch = torch
        self._native = native_epoch
        self._loader = native_loader
        self._device = device
        self._normalize = normalize or {}
        self._stream = torch.cuda.Stream(device)
        # Batches copied or being copied, oldest first: (state after it, batch or exception,
        # its copy's event).
        self._ready = collections.deque()
        # Host batches whose copies may not have completed: (event, host batch). Holding one
        # keeps its pinned buffer out of the workers' pool.
        self._copying = collections.deque()
        self._exhausted = False
        self.state = native_loader.state()
        self._fill()

    def _fill(self):
        while len(self._ready) < AHEAD and not self._exhausted:
            # At most one host batch in flight while waiting for the workers: the pool must
            # keep buffers for them (its capacity is prefetch + 2).
            self._release(keep=1)
            try:
                host = next(self._native, None)
            except Exception as error:  # noqa: BLE001 (raised in order by __next__)
                self._ready.append((self._loader.state(), error, None))
                return
            if host is None:
                self._exhausted = True
                return
            state = self._loader.state()
            with self._torch.cuda.stream(self._stream):
                batch = {k: _to_device(v, self._device) for k, v in host.items()}
                for name, normalize in self._normalize.items():
                    batch[name] = normalize(batch[name])
                copied = self._torch.cuda.Event()
                copied.record(self._stream)
            self._copying.append((copied, host))
            self._ready.append((state, batch, copied))

    def _release(self, keep: int):
        """Drops the host batches whose copies completed; waits for the oldest while more than
        `keep` are held."""
        while self._copying and (len(self._copying) > keep or self._copying[0][0].query()):
            self._copying[0][0].synchronize()
            self._copying.popleft()

    def __iter__(self):
        return self

    def __next__(self):
        if not self._ready:
            raise StopIteration
        state, batch, copied = self._ready.popleft()
        self.state = state
        if isinstance(batch, Exception):
            self._fill()
            raise batch
        current = self._torch.cuda.current_stream(self._device)
        current.wait_event(copied)
        for tensor in _tensors(batch):
            tensor.record_stream(current)
        self._fill()
        return batch

    def __len__(self):
        return len(self._native)

    @property
    def live(self):
        return bool(self._ready) or not self._exhausted

    def close(self):
        self._ready.clear()
        self._exhausted = True
        self._release(keep=0)
        self._native.close()

    def __del__(self):
        # The pinned buffers must not go back to the workers while a copy still reads them.
        if hasattr(self, "_copying"):
            self._release(keep=0)
