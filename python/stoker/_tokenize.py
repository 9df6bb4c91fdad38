"""Text tokenized on the fly: stoker.transforms.Tokenize, a caption field's transform. The
loader reads the field's bytes natively (RawBytes) and the tokenizer runs as the field's Python
step (_caption_steps.py), in threads where the loader says ``python_parallel="threads"``
(Hugging Face ``tokenizers`` releases the GIL while it encodes) or in worker processes, a
batch's captions (a worker's share of them) in one batched encode where the tokenizer has one."""

import json


class Tokenize:
    """A caption (a bytes field: a ``txt`` member, or a ``json`` one with ``key``) as token ids,
    int64 [context_length]: ``tokenizer.encode(text).ids`` (a Hugging Face
    ``tokenizers.Tokenizer``, or anything whose ``encode(str)`` gives an object with ``ids``),
    the text the field's bytes decoded as UTF-8 (a JSON object's ``key`` with ``key``), cut to
    ``context_length`` ids (``truncate=False``: a longer caption is the sample's error) and
    padded with ``pad_id`` after them. In a loader, a batch's captions are encoded together by
    the tokenizer's ``encode_batch_fast`` or ``encode_batch`` where it has one (the same ids as
    ``encode``'s; not where its padding is to a batch's longest, which depends on the batch:
    then one by one).
    ``return_attention_mask``: the batch also holds ``attention_mask`` int64 [context_length],
    the encoding's own ``attention_mask`` (1 on tokens; its length where it has none) cut as the
    ids, 0 on the padding: Hugging Face's for the same ids. ``max_bytes`` bounds the field's
    bytes (it sizes the loader's buffers, as RawBytes' max_length); a longer value is an error
    naming the record. Bytes that are not UTF-8, JSON without ``key`` as a string, or a
    tokenizer that raises fail the sample (one stoker.Error naming where the record lies, the
    field and the sample; skipped and counted under on_error="skip"). Other steps may follow it
    in the field's transforms (they get the ids).
    ``packed=True``: no padding; the batch's captions concatenated (_cu_seqlens.packed): the
    field int64 [total] (each caption's ids cut as above, an empty caption none), then
    ``cu_seqlens`` int32 [batch + 1] (caption k's ids at [cu[k], cu[k + 1])), ``max_seqlen``
    (an int) and ``position_ids`` int64 [total] (0 at each caption's start), as FlashAttention's
    varlen kernels and torch's jagged nested tensors take them; not with return_attention_mask
    (nothing is padded). Steps after it get each caption's ids, int64 [n], and give one row."""

    def __init__(self, tokenizer, context_length=77, pad_id=0, truncate=True, key=None,
                 max_bytes=4096, return_attention_mask=False, packed=False):
        if not callable(getattr(tokenizer, "encode", None)):
            raise ValueError(f"Tokenize: tokenizer must have an encode(text) method, not "
                             f"{type(tokenizer).__name__}")
        for name, value in (("context_length", context_length), ("pad_id", pad_id)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0 or \
                    (name == "context_length" and value == 0):
                raise ValueError(f"Tokenize: {name} must be an int "
                                 f"{'>= 1' if name == 'context_length' else '>= 0'}, not "
                                 f"{value!r}")
        if packed and return_attention_mask:
            raise ValueError("Tokenize: packed=True pads nothing, so it returns no "
                             "attention_mask (cu_seqlens mark the captions): one of them")
        if key is not None and not isinstance(key, str):
            raise ValueError(f"Tokenize: key must be a str or None, not {key!r}")
        self.tokenizer = tokenizer
        self.context_length = context_length
        self.pad_id = pad_id
        self.truncate = bool(truncate)
        self.key = key
        self.max_bytes = max_bytes
        self.return_attention_mask = bool(return_attention_mask)
        self.packed = bool(packed)

    def text(self, data: bytes) -> str:
        """The caption in a field's bytes."""
        text = data.decode("utf-8")
        if self.key is None:
            return text
        value = json.loads(text)
        caption = value.get(self.key) if isinstance(value, dict) else None
        if not isinstance(caption, str):
            raise ValueError(f"the JSON holds no string {self.key!r}")
        return caption

    def _batched(self):
        """The tokenizer's encode_batch_fast (tokenizers >= 0.21: no character offsets, which
        Tokenize does not read) or encode_batch, where it gives encode's ids: None where it has
        neither, or pads to the longest of what it is given."""
        padding = getattr(self.tokenizer, "padding", None)
        if isinstance(padding, dict) and padding.get("length") is None:
            return None
        for name in ("encode_batch_fast", "encode_batch"):
            if callable(getattr(self.tokenizer, name, None)):
                return getattr(self.tokenizer, name)
        return None

    def encode_many(self, captions: list) -> list:
        """Each caption's (bytes) encoding, or the exception it raised, in order: one
        batched encode over those that decode (where _batched; where it raises, each again
        alone to find which), else encode one by one."""
        out = []
        for data in captions:
            try:
                out.append(self.text(data))
            except Exception as e:  # noqa: BLE001 (the sample's error)
                out.append(e)
        texts = [k for k, x in enumerate(out) if isinstance(x, str)]
        batched = self._batched() if len(texts) > 1 else None
        if batched is not None:
            try:
                for k, encoding in zip(texts, batched([out[k] for k in texts])):
                    out[k] = encoding
                return out
            except Exception:  # noqa: BLE001 (one caption's: found one by one below)
                pass
        for k in texts:
            try:
                out[k] = self.tokenizer.encode(out[k])
            except Exception as e:  # noqa: BLE001 (the sample's error)
                out[k] = e
        return out

    def tensors(self, encodings: list) -> list:
        """Each of `encodings` (or the exception in its place) as (ids, attention mask or None:
        not asked), int64 [context_length] rows of one batch tensor each, cut and padded (with
        packed, the ids' row before its padding); or the exception: its own, or ValueError for
        a longer one without truncate."""
        import numpy
        import torch
        ids = numpy.full((len(encodings), self.context_length), self.pad_id, numpy.int64)
        masks = numpy.zeros_like(ids) if self.return_attention_mask else None
        rows = []
        for k, encoding in enumerate(encodings):
            given = encoding if isinstance(encoding, Exception) else encoding.ids
            if not isinstance(given, Exception) and len(given) > self.context_length and \
                    not self.truncate:
                given = ValueError(f"{len(given)} tokens, more than context_length="
                                   f"{self.context_length} (truncate=False)")
            if isinstance(given, Exception):
                rows.append(given)
                continue
            n = min(len(given), self.context_length)
            ids[k, :n] = given[:n]
            if masks is not None:
                mask = getattr(encoding, "attention_mask", None)
                masks[k, :n] = 1 if mask is None else mask[:n]
            rows.append((k, n))
        ids = torch.from_numpy(ids)
        masks = None if masks is None else torch.from_numpy(masks)
        return [row if isinstance(row, Exception) else
                (ids[row[0], :row[1]] if self.packed else ids[row[0]],
                 None if masks is None else masks[row[0]]) for row in rows]

    def __call__(self, data, generator=None):
        """Token ids of one sample's bytes (a uint8 tensor [N]); `generator` is not used (a
        tokenizer draws nothing): taking it lets the step run in threads."""
        made = self.tensors(self.encode_many([data.numpy().tobytes()]))[0]
        if isinstance(made, Exception):
            raise made
        return made[0]

    def __repr__(self):
        key = f", key={self.key!r}" if self.key is not None else ""
        mask = ", return_attention_mask=True" if self.return_attention_mask else ""
        packed = ", packed=True" if self.packed else ""
        return (f"Tokenize(context_length={self.context_length}, pad_id={self.pad_id}, "
                f"truncate={self.truncate}{key}{mask}{packed})")
