"""Text tokenized on the fly: stoker.transforms.Tokenize, a caption field's transform. The
loader reads the field's bytes natively (RawBytes) and the tokenizer runs as the field's Python
step (_python_steps.py), in threads where the loader says ``python_parallel="threads"``
(Hugging Face ``tokenizers`` releases the GIL while it encodes) or in worker processes."""

import json


class Tokenize:
    """A caption (a bytes field: a ``txt`` member, or a ``json`` one with ``key``) as token ids,
    int64 [context_length]: ``tokenizer.encode(text).ids`` (a Hugging Face
    ``tokenizers.Tokenizer``, or anything whose ``encode(str)`` gives an object with ``ids``),
    the text the field's bytes decoded as UTF-8 (a JSON object's ``key`` with ``key``), cut to
    ``context_length`` ids (``truncate=False``: a longer caption is the sample's error) and
    padded with ``pad_id`` after them. ``max_bytes`` bounds the field's bytes (it sizes the
    loader's buffers, as RawBytes' max_length); a longer value is an error naming the record.
    Bytes that are not UTF-8, JSON without ``key`` as a string, or a tokenizer that raises fail
    the sample (one stoker.Error naming the field and sample; skipped under
    on_error="skip"). Other steps may follow it in the field's transforms (they get the ids)."""

    def __init__(self, tokenizer, context_length=77, pad_id=0, truncate=True, key=None,
                 max_bytes=4096):
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

    def __call__(self, data, generator=None):
        """Token ids of one sample's bytes (a uint8 tensor [N]); `generator` is not used (a
        tokenizer draws nothing): taking it lets the step run in threads."""
        import torch
        ids = self.tokenizer.encode(self.text(data.numpy().tobytes())).ids
        if len(ids) > self.context_length and not self.truncate:
            raise ValueError(f"{len(ids)} tokens, more than context_length="
                             f"{self.context_length} (truncate=False)")
        ids = ids[:self.context_length]
        out = torch.full((self.context_length,), self.pad_id, dtype=torch.int64)
        out[:len(ids)] = torch.tensor(ids, dtype=torch.int64)
        return out

    def __repr__(self):
        key = f", key={self.key!r}" if self.key is not None else ""
        return (f"Tokenize(context_length={self.context_length}, pad_id={self.pad_id}, "
                f"truncate={self.truncate}{key})")
