"""Where stoker.Loader's batches go: the CPU as they are, or a CUDA device.

For CUDA each field is copied into pinned memory (torch's caching host allocator) and on to
the device with a non-blocking copy on a side stream, one batch ahead of the consumer, whose
stream waits for the copy before it uses the batch. This part is torch's own API only (the
extension links no torch); it cannot be tested without a GPU, so it is kept this small.
"""

from __future__ import annotations


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


class CudaEpoch:
    """The batches of a native epoch, on a CUDA device, copied one batch ahead.

    ``state`` is the native loader's state as of the last batch this iterator yielded (the
    native loader itself is one batch further).
    """

    def __init__(self, torch, native_loader, native_epoch, device):
        self._torch = torch
        self._native = native_epoch
        self._loader = native_loader
        self._device = device
        self._stream = torch.cuda.Stream(device)
        self.state = native_loader.state()
        self._ahead = self._copy_next()

    def _copy_next(self):
        host = next(self._native, None)
        if host is None:
            return None
        with self._torch.cuda.stream(self._stream):
            return {k: v.pin_memory().to(self._device, non_blocking=True)
                    for k, v in host.items()}

    def __iter__(self):
        return self

    def __next__(self):
        batch = self._ahead
        if batch is None:
            raise StopIteration
        state = self._loader.state()
        self._ahead = self._copy_next()
        self.state = state
        current = self._torch.cuda.current_stream(self._device)
        current.wait_stream(self._stream)
        for tensor in batch.values():
            tensor.record_stream(current)
        return batch

    def __len__(self):
        return len(self._native)

    @property
    def live(self):
        return self._ahead is not None

    def close(self):
        self._ahead = None
        self._native.close()
