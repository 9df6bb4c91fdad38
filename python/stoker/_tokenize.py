"""Text tokenized on the fly: stoker.transforms.Tokenize, a caption field's transform. The
loader reads the field's bytes natively (RawBytes) and the tokenizer runs as the field's Python
step (_caption_steps.py), in threads where the loader says ``python_parallel="threads"``
(Hugging Face ``tokenizers`` releases the GIL while it encodes) or in worker processes, a
batch's captions (a worker's share of them) in one ``encode_batch`` where the tokenizer has one."""

import json


class Tokenize:
    """A caption (a bytes field: a ``txt`` member, or a ``json`` one with ``key``) as token ids,
    int64 [context_length]: ``tokenizer.encode(text).ids`` (a Hugging Face
    ``tokenizers.Tokenizer``, or anything whose ``encode(str)`` gives an object with ``ids``),
    the text the field's bytes decoded as UTF-8 (a JSON object's ``key`` with ``key``), cut to
    ``context_length`` ids (``truncate=False``: a longer caption is the sample's error) and
    padded with ``pad_id`` after them. In a loader, a batch's captions are encoded together by
    the tokenizer's ``encode_batch`` where it has one (the same ids as ``encode``'s; not where
    its padding is to a batch's longest, which depends on the batch: then one by one).
    ``return_attention_mask``: the batch also holds ``attention_mask`` int64 [context_length],
    the encoding's own ``attention_mask`` (1 on tokens; its length where it has none) cut as the
    ids, 0 on the padding: Hugging Face's for the same ids. ``max_bytes`` bounds the field's
    bytes (it sizes the loader's buffers, as RawBytes' max_length); a longer value is an error
    naming the record. Bytes that are not UTF-8, JSON without ``key`` as a string, or a
    tokenizer that raises fail the sample (one stoker.Error naming where the record lies, the
    field and the sample; skipped and counted under on_error="skip"). Other steps may follow it
    in the field's transforms (they get the ids)."""

    def __init__(self, tokenizer, context_length=77, pad_id=0, truncate=True, key=None,
                 max_bytes=4096, return_attention_mask=False):
        if not callable(getattr(tokenizer, "encode", None)):
            raise ValueError(f"Tokenize: tokenizer must have an encode(text) method, not "
                             f"{type(tokenizer).__name__}")
        for name, value in (("context_length", context_length), ("pad_id", pad_id)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0 or \
                    (name == "context_length" and value == 0):
                raise ValueError(f"Tokenize: {name} must be an int "
                                 f"{'>= 1' if name == 'context_length' else '>= 0'}, not "
                                 f"{value!r}")
        if key is not None and not isinstance(key, str):
            raise ValueError(f"Tokenize: key must be a str or None, not {key!r}")
        self.tokenizer = tokenizer
        self.context_length = context_length
        self.pad_id = pad_id
        self.truncate = bool(truncate)
        self.key = key
        self.max_bytes = max_bytes
        self.return_attention_mask = bool(return_attention_mask)

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

    def _batched(self) -> bool:
        """Whether encode_batch gives encode's ids: it exists, and the tokenizer does not pad
        to the longest of what it is given."""
        if not callable(getattr(self.tokenizer, "encode_batch", None)):
            return False
        padding = getattr(self.tokenizer, "padding", None)
        return not (isinstance(padding, dict) and padding.get("length") is None)

    def encode_many(self, captions: list) -> list:
        """Each caption's (bytes) encoding, or the exception it raised, in order: one
        encode_batch over those that decode (where _batched; where it raises, each again alone
        to find which), else encode one by one."""
        out = []
        for data in captions:
            try:
                out.append(self.text(data))
            except Exception as e:  # noqa: BLE001 (the sample's error)
                out.append(e)
        texts = [k for k, x in enumerate(out) if isinstance(x, str)]
        if len(texts) > 1 and self._batched():
            try:
                for k, encoding in zip(texts, self.tokenizer.encode_batch(
                        [out[k] for k in texts])):
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

    def tensors(self, encoding) -> tuple:
        """(ids, attention mask or None: not asked) of an encoding, int64 [context_length]
        each: cut (ValueError for a longer one without truncate) and padded."""
        import torch
        ids = encoding.ids
        if len(ids) > self.context_length and not self.truncate:
            raise ValueError(f"{len(ids)} tokens, more than context_length="
                             f"{self.context_length} (truncate=False)")
        n = min(len(ids), self.context_length)
        out = torch.full((self.context_length,), self.pad_id, dtype=torch.int64)
        out[:n] = torch.tensor(ids[:n], dtype=torch.int64)
        if not self.return_attention_mask:
            return out, None
        mask = torch.zeros(self.context_length, dtype=torch.int64)
        given = getattr(encoding, "attention_mask", None)
        mask[:n] = 1 if given is None else torch.tensor(list(given)[:n], dtype=torch.int64)
        return out, mask

    def __call__(self, data, generator=None):
        """Token ids of one sample's bytes (a uint8 tensor [N]); `generator` is not used (a
        tokenizer draws nothing): taking it lets the step run in threads."""
        encoding = self.encode_many([data.numpy().tobytes()])[0]
        if isinstance(encoding, Exception):
            raise encoding
        return self.tensors(encoding)[0]

    def __repr__(self):
        key = f", key={self.key!r}" if self.key is not None else ""
        mask = ", return_attention_mask=True" if self.return_attention_mask else ""
        return (f"Tokenize(context_length={self.context_length}, pad_id={self.pad_id}, "
                f"truncate={self.truncate}{key}{mask})")
