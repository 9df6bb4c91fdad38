"""The Python steps of a caption field, whose first step is stoker.transforms.Tokenize: one of
the loader's units of Python steps (as _python_steps.FieldSteps, whose attributes it has), run
in the iterating thread, in threads or in worker processes as any field's. What it adds:

- the captions of a batch (of a worker's share of one) are encoded together, by one
  ``Tokenize.encode_many`` (the tokenizer's ``encode_batch_fast`` or ``encode_batch``: Rust, the
  GIL released, its own threads) and cut and padded into one batch tensor, when the first of
  their samples' steps asks; each sample then takes its row (or the exception its caption
  raised: that sample's error, naming Tokenize);
- Tokenize alone draws nothing, so the global generators are not seeded for it (``seeded``);
- with ``return_attention_mask``, a second output, ``attention_mask`` int64 [context_length],
  which the batch holds after the field (_python_steps.assembled);
- with ``packed``, each sample's ids unpadded, the field "packed" (_python_steps.batch_values:
  the rows concatenated, with cu_seqlens, max_seqlen and position_ids after them)."""

from __future__ import annotations

import threading

from stoker._python_steps import FieldSteps, call_step

ATTENTION_MASK = "attention_mask"


class _Encodings:
    """A batch's captions (uint8 tensors, by slot) encoded once, by the first sample that asks
    (threads wait for it); ``of(slot)`` is that sample's (ids, attention mask or None), or
    raises what its caption raised."""

    def __init__(self, tokenize, captions: list):
        self._tokenize = tokenize
        self._captions = captions
        self._lock = threading.Lock()
        self._done = None

    def of(self, slot: int):
        with self._lock:
            if self._done is None:
                self._done = self._tokenize.tensors(self._tokenize.encode_many(
                    [c.numpy().tobytes() for c in self._captions]))
        made = self._done[slot]
        if isinstance(made, Exception):
            raise made
        return made


class _Caption:
    """Sample `slot`'s input: its place in the batch's _Encodings."""

    def __init__(self, encodings: _Encodings, slot: int):
        self.encodings = encodings
        self.slot = slot


class CaptionSteps(FieldSteps):
    """A caption field's steps (Tokenize, then any on its ids): ``outputs`` the field stacked
    (packed where Tokenize packs), and ``attention_mask`` stacked where Tokenize returns it."""

    def __init__(self, torch, steps: list, field: str, python_input=None):
        super().__init__(torch, steps, field, python_input)
        self.tokenize = steps[0]
        self.seeded = len(steps) > 1  # Tokenize alone draws nothing: no generator to seed
        if self.tokenize.packed:
            self.outputs[field] = "packed"
        if self.tokenize.return_attention_mask:
            self.outputs[ATTENTION_MASK] = "stack"

    def gathered(self, captions: list) -> list:
        """Each caption's input to run(), the batch's encoded together when first asked."""
        encodings = _Encodings(self.tokenize, captions)
        return [_Caption(encodings, k) for k in range(len(captions))]

    def _tokens(self, caption: _Caption):
        return caption.encodings.of(caption.slot)

    def run(self, torch, numpy, values: tuple, seed: int, where: tuple, on_step=None) -> tuple:
        """(the ids after the steps[, the attention mask]) of a sample (`values`: its
        _Caption), as FieldSteps.run."""
        generator = torch.Generator().manual_seed(seed) if any(self.generator[1:]) else None
        if on_step is not None:
            on_step(0)
        x, mask = call_step(self.tokenize, (values[0],), {}, where, self.seconds, 0,
                            call=self._tokens)
        out = self.rest(torch, numpy, x, 1, generator, where, on_step)
        return out + (mask,) if ATTENTION_MASK in self.outputs else out
