"""Image-text pairs (LAION/DataComp-style tars of jpg + txt or json captions) read by
stoker.WebDataset(label=None), the captions tokenized by stoker.transforms.Tokenize: token for
token the tokenizer's own ids, cut and padded, in threads and in processes, a batch's captions
in one encode_batch; the attention mask Hugging Face's; bad captions named by tar and member."""

import io
import json
import os
import sys
import tarfile

import pytest
import torch
import webdataset as wds
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

import stoker

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
from make_image_text_set import write_tars  # noqa: E402

T = stoker.transforms
CONTEXT = 6  # shorter than some captions: they are cut


def bpe(texts) -> Tokenizer:
    """A small BPE tokenizer trained here on `texts` (nothing downloaded)."""
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=120, special_tokens=["[PAD]", "[UNK]"], show_progress=False))
    return tokenizer


def captions(tars, member="txt") -> list:
    """Each sample's caption in order, as the webdataset library reads it."""
    samples = wds.WebDataset(tars, shardshuffle=False, empty_check=False)
    texts = [s[member].decode() for s in samples]
    return [json.loads(t)["caption"] for t in texts] if member == "json" else texts


def expected(tokenizer, text, pad_id=0) -> list:
    ids = tokenizer.encode(text).ids[:CONTEXT]
    return ids + [pad_id] * (CONTEXT - len(ids))


def loader_of(tars, tokenize, cache, member="txt", parallel="threads", **options):
    options.setdefault("batch_format", ("image", member, "label"))
    return stoker.Loader(
        stoker.WebDataset(tars, label=None, transforms={
            "image": T.RandomResizedCrop(32), member: tokenize}),
        batch_size=16, shuffle=False, cache_dir=cache, python_parallel=parallel,
        python_workers=2, **options)


def read(tars, tokenize, cache, member="txt", parallel="threads", **options):
    return list(loader_of(tars, tokenize, cache, member, parallel, **options))


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    out = tmp_path_factory.mktemp("pairs")
    return {member: write_tars(out / member, samples=40, per_tar=16, size=40,
                               caption_member=member) for member in ("txt", "json")}


@pytest.fixture
def cache(tmp_path):
    return str(tmp_path / "cache")


@pytest.mark.parametrize("parallel", ["threads", "processes"])
@pytest.mark.parametrize("member", ["txt", "json"])
def test_tokens_are_the_tokenizers_ids_cut_and_padded(pairs, cache, member, parallel):
    texts = captions(pairs[member], member)
    tokenizer = bpe(texts)
    assert any(len(tokenizer.encode(t).ids) > CONTEXT for t in texts)  # some are cut
    assert any(len(tokenizer.encode(t).ids) < CONTEXT for t in texts)  # some are padded
    key = "caption" if member == "json" else None
    batches = read(pairs[member], T.Tokenize(tokenizer, context_length=CONTEXT, pad_id=7,
                                             key=key), cache, member, parallel)
    ids = torch.cat([b[1] for b in batches])
    assert ids.dtype == torch.int64 and ids.shape == (len(texts), CONTEXT)
    assert ids.tolist() == [expected(tokenizer, t, pad_id=7) for t in texts]
    images, labels = torch.cat([b[0] for b in batches]), torch.cat([b[2] for b in batches])
    assert images.shape == (len(texts), 3, 32, 32)
    assert (labels == -1).all()  # no label: the txt is a caption, not a class index


def test_by_default_a_txt_member_is_still_the_label(pairs, cache):
    with pytest.raises(stoker.Error, match="not an integer label"):
        list(stoker.Loader(stoker.WebDataset(pairs["txt"]), batch_size=4, cache_dir=cache,
                           transforms={"image": T.RandomResizedCrop(32)}))


def write(path, samples) -> str:
    """A tar of `samples`, each {member name: bytes}."""
    with tarfile.open(path, "w") as tar:
        for sample in samples:
            for name, data in sample.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return str(path)


@pytest.fixture
def jpeg(pairs):
    with tarfile.open(pairs["txt"][0]) as tar:
        return tar.extractfile("000000000.jpg").read()


def bad_tar(tmp_path, jpeg, bad: dict) -> str:
    """Six samples k0..k5 of an image and a caption; sample k3's members replaced by `bad`."""
    samples = [{f"k{i}.jpg": jpeg, f"k{i}.txt": b"a photo of a dune"} for i in range(6)]
    samples[3] = {name.replace("KEY", "k3"): data for name, data in bad.items()}
    return write(tmp_path / "bad.tar", samples)


class Raising:
    """A tokenizer whose encode raises on one caption."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def encode(self, text):
        if "storm" in text:
            raise RuntimeError("no storms here")
        return self.tokenizer.encode(text)


class RaisingBatches(Raising):
    """One whose encode_batch raises too, on a batch holding that caption."""

    def encode_batch(self, texts):
        return [self.encode(text) for text in texts]


@pytest.mark.parametrize("batched", [False, True], ids=["encode", "encode_batch"])
@pytest.mark.parametrize("parallel", ["threads", "processes"])
@pytest.mark.parametrize("bad, message", [
    ({"KEY.jpg": None, "KEY.txt": b"a \xff photo"},
     r"^[^ ]*bad\.tar: member k3\.jpg: field 'txt', sample 3 of batch 0 \(epoch 0\): "
     r"Tokenize\(.*\) raised UnicodeDecodeError.* \(dataset record 3\)$"),
    ({"KEY.jpg": None},
     r"bad\.tar: sample k3: no txt \(dataset record 3\)"),
    ({"KEY.jpg": None, "KEY.txt": b"a storm"},
     r"^[^ ]*bad\.tar: member k3\.jpg: field 'txt', sample 3 of batch 0 \(epoch 0\): "
     r"Tokenize\(.*\) raised RuntimeError: no storms here \(dataset record 3\)$"),
], ids=["not-utf8", "missing-caption", "tokenizer-raises"])
def test_a_bad_caption_names_its_tar_and_member_and_is_skipped_and_counted(
        tmp_path, cache, jpeg, bad, message, parallel, batched):
    tar = bad_tar(tmp_path, jpeg, {k: jpeg if v is None else v for k, v in bad.items()})
    tokenizer = (RaisingBatches if batched else Raising)(bpe(["a photo of a dune", "a storm"]))
    tokenize = T.Tokenize(tokenizer, context_length=CONTEXT)
    with pytest.raises(stoker.Error, match=message) as error:
        read([tar], tokenize, cache, parallel=parallel)
    assert "\n" not in str(error.value)
    loader = loader_of([tar], tokenize, cache, parallel=parallel, on_error="skip")
    kept = list(loader)
    assert sum(len(b[1]) for b in kept) == 5
    stats = loader.stats()
    assert stats["python_skipped"] + stats["skipped"] == 1


class Counting:
    """A tokenizer that counts its encode and encode_batch calls (threads: this process's)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.calls = {"encode": 0, "encode_batch": 0}

    def encode(self, text):
        self.calls["encode"] += 1
        return self.tokenizer.encode(text)

    def encode_batch(self, texts):
        self.calls["encode_batch"] += 1
        return self.tokenizer.encode_batch(texts)

    @property
    def padding(self):
        return self.tokenizer.padding


def test_a_batchs_captions_are_encoded_in_one_encode_batch_with_encodes_ids(pairs, cache):
    texts = captions(pairs["txt"])
    counting = Counting(bpe(texts))
    batches = read(pairs["txt"], T.Tokenize(counting, context_length=CONTEXT), cache)
    assert counting.calls == {"encode": 0, "encode_batch": len(batches)}
    ids = torch.cat([b[1] for b in batches]).tolist()
    assert ids == [expected(counting.tokenizer, t) for t in texts]


def test_a_tokenizer_padding_to_a_batchs_longest_is_encoded_one_by_one(pairs, cache):
    # Its encode_batch would pad each caption to the batch's longest (batch-dependent ids).
    texts = captions(pairs["txt"])
    padding = bpe(texts)
    padding.enable_padding(pad_id=1, pad_token="[UNK]")
    counting = Counting(padding)
    ids = torch.cat([b[1] for b in read(pairs["txt"], T.Tokenize(counting, context_length=40),
                                        cache)])
    assert counting.calls["encode_batch"] == 0
    assert ids.tolist() == [padding.encode(t).ids + [0] * (40 - len(padding.encode(t).ids))
                            for t in texts]
    assert any(len(e.ids) < max(len(f.ids) for f in padding.encode_batch(texts))
               for e in padding.encode_batch(texts[:1]))  # encode_batch would have padded


@pytest.mark.parametrize("parallel", ["threads", "processes"])
def test_the_attention_mask_is_hugging_faces_for_the_same_ids(pairs, cache, parallel):
    texts = captions(pairs["txt"])
    tokenizer = bpe(texts)
    tokenize = T.Tokenize(tokenizer, context_length=CONTEXT, pad_id=7, return_attention_mask=True)
    loader = loader_of(pairs["txt"], tokenize, cache, parallel=parallel, batch_format="dict")
    batches = list(loader)
    names = list(batches[0])
    assert names[names.index("txt") + 1] == "attention_mask"
    ids = torch.cat([b["txt"] for b in batches])
    masks = torch.cat([b["attention_mask"] for b in batches])
    # Hugging Face's: the tokenizer itself cutting and padding to the context.
    tokenizer.enable_truncation(CONTEXT)
    tokenizer.enable_padding(length=CONTEXT, pad_id=7)
    hugging_face = tokenizer.encode_batch(texts)
    assert ids.tolist() == [e.ids for e in hugging_face]
    assert masks.dtype == torch.int64
    assert masks.tolist() == [e.attention_mask for e in hugging_face]
    assert 0 < int(masks.sum()) < masks.numel()
    tuples = loader_of(pairs["txt"], tokenize, cache, parallel=parallel, batch_format="tuple")
    as_tuple = next(iter(tuples))
    assert len(as_tuple) == len(names) and torch.equal(as_tuple[names.index("attention_mask")],
                                                       masks[:16])
    named = loader_of(pairs["txt"], tokenize, cache, batch_format=("attention_mask", "txt"))
    assert torch.equal(next(iter(named))[0], masks[:16])


def test_a_caption_longer_than_the_context_fails_without_truncation(tmp_path, cache, jpeg):
    tar = bad_tar(tmp_path, jpeg, {"KEY.jpg": jpeg, "KEY.txt": b"dune " * 20})
    tokenize = T.Tokenize(bpe(["a photo of a dune"]), context_length=CONTEXT, truncate=False)
    with pytest.raises(stoker.Error, match=r"sample 3 of batch 0 .*20 tokens, more than "
                                           r"context_length=6 \(truncate=False\)"):
        read([tar], tokenize, cache)


@pytest.mark.parametrize("args, message", [
    (dict(tokenizer=object()), "tokenizer must have an encode"),
    (dict(context_length=0), "context_length must be an int >= 1"),
    (dict(pad_id=-1), "pad_id must be an int >= 0"),
    (dict(key=3), "key must be a str or None"),
])
def test_wrong_arguments_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        T.Tokenize(**{"tokenizer": bpe(["a b"]), **args})


def test_two_attention_masks_are_refused_in_one_line(tmp_path, cache, jpeg):
    tar = write(tmp_path / "both.tar", [{f"k{i}.jpg": jpeg, f"k{i}.txt": b"a dune",
                                         f"k{i}.json": b'{"caption": "a dune"}'}
                                        for i in range(2)])
    tokenizer = bpe(["a dune"])
    masked = dict(context_length=CONTEXT, return_attention_mask=True)
    with pytest.raises(ValueError) as raised:
        stoker.Loader(stoker.WebDataset([tar], label=None, transforms={
            "txt": T.Tokenize(tokenizer, **masked),
            "json": T.Tokenize(tokenizer, key="caption", **masked)}), cache_dir=cache)
    message = str(raised.value)
    assert "fields 'txt' and 'json' both return 'attention_mask'" in message
    assert "\n" not in message
    # A member named so is a field of the tars: refused, unless the transforms leave it out.
    named = write(tmp_path / "named.tar", [{f"k{i}.jpg": jpeg, f"k{i}.txt": b"a dune",
                                           f"k{i}.attention_mask": b"1"} for i in range(2)])
    mask = {"txt": T.Tokenize(tokenizer, **masked)}
    with pytest.raises(ValueError, match="the dataset has a field 'attention_mask', and field "
                                         "'txt' returns"):
        stoker.Loader(stoker.WebDataset([named], label=None, transforms=mask), cache_dir=cache)
    batch = next(iter(stoker.Loader(stoker.WebDataset(
        [named], label=None, transforms={**mask, "attention_mask": None}), cache_dir=cache,
        batch_size=2, batch_format="dict")))
    assert batch["attention_mask"].tolist() == [[1, 1] + [0] * (CONTEXT - 2)] * 2


# Packed captions (Tokenize(packed=True)) -----------------------------------------------------

PACKED = ("image", "txt", "cu_seqlens", "max_seqlen", "position_ids")


@pytest.fixture
def varied(tmp_path, jpeg):
    """Two tars of 37 samples whose captions include empty ones, over-long ones (cut), one of a
    single token and ones holding the padding id's own token ([PAD]: id 0, not padding)."""
    texts = ["", "a photo of a dune", "dune " * 30, "lady", "[PAD] bird [PAD]", "the lady bird "
             "on a dune at dawn", "a", ""]
    texts = [texts[(7 * k) % len(texts)] + (" bird" * (k % 4) if k % 3 else "") for k in range(37)]
    tars = [write(tmp_path / f"varied-{t}.tar", [
        {f"k{k:03d}.jpg": jpeg, f"k{k:03d}.txt": texts[k].encode()} for k in range(37)
        if k % 2 == t]) for t in range(2)]
    return tars, texts[0::2] + texts[1::2]


def packed_loader(tars, tokenize, cache, parallel="threads", workers=2, **options):
    options.setdefault("batch_format", PACKED)
    return stoker.Loader(stoker.WebDataset(tars, label=None, transforms={
        "image": T.RandomResizedCrop(32), "txt": tokenize}), batch_size=8, shuffle=True,
        seed=3, cache_dir=cache, python_parallel=parallel, python_workers=workers, **options)


@pytest.mark.parametrize("parallel", ["threads", "processes"])
def test_packed_captions_are_the_padded_ids_without_their_padding(varied, cache, parallel):
    tars, texts = varied
    tokenizer = bpe(texts)
    lengths = [len(tokenizer.encode(t).ids) for t in texts]
    assert 0 in lengths and max(lengths) > CONTEXT
    assert any(0 in tokenizer.encode(t).ids for t in texts)  # [PAD] in a caption: a token
    padded = list(packed_loader(tars, T.Tokenize(tokenizer, context_length=CONTEXT, pad_id=0,
                                                 return_attention_mask=True), cache, parallel,
                                batch_format=("image", "txt", "attention_mask")))
    runs = {workers: list(packed_loader(tars, T.Tokenize(tokenizer, context_length=CONTEXT,
                                                         packed=True), cache, parallel, workers))
            for workers in (0, 1, 3)}
    packed = runs[0]
    assert len(packed) == len(padded) == 5
    for (image, ids, cu, longest, positions), (padded_image, padded_ids, mask) in zip(
            packed, padded):
        assert torch.equal(image, padded_image)
        assert ids.dtype == positions.dtype == torch.int64 and cu.dtype == torch.int32
        assert ids.dim() == 1 and positions.shape == ids.shape
        assert cu.shape == (len(padded_ids) + 1,) and cu[0] == 0 and cu[-1] == len(ids)
        sizes = (cu[1:] - cu[:-1]).tolist()
        assert isinstance(longest, int) and longest == max(sizes)
        assert sizes == mask.sum(1).tolist()
        for k, size in enumerate(sizes):
            row = ids[cu[k]:cu[k + 1]]
            assert torch.equal(row, padded_ids[k][mask[k].bool()])
            assert positions[cu[k]:cu[k + 1]].tolist() == list(range(size))
    # Every caption once (shuffled): the tokenizer's ids cut to the context, empty ones empty.
    rows = sorted(tuple(b[1][b[2][k]:b[2][k + 1]].tolist()) for b in packed
                  for k in range(len(b[2]) - 1))
    assert rows == sorted(tuple(tokenizer.encode(t).ids[:CONTEXT]) for t in texts)
    assert () in rows
    for workers, batches in runs.items():  # the same batches for any number of workers
        assert len(batches) == len(packed), workers
        for batch, first in zip(batches, packed):
            assert batch[3] == first[3]
            assert all(torch.equal(a, b) for a, b in zip(batch[:3] + batch[4:],
                                                          first[:3] + first[4:])), workers


def test_a_packed_dict_batch_adds_its_fields_after_the_caption(varied, cache):
    tars, texts = varied
    tokenize = T.Tokenize(bpe(texts), context_length=CONTEXT, packed=True)
    names = list(next(iter(packed_loader(tars, tokenize, cache, batch_format="dict"))))
    at = names.index("txt")
    assert names[at:at + 4] == ["txt", "cu_seqlens", "max_seqlen", "position_ids"]
    assert len(next(iter(packed_loader(tars, tokenize, cache, batch_format="tuple")))) == \
        len(names)


@pytest.mark.parametrize("parallel", ["threads", "processes"])
def test_a_bad_packed_caption_names_its_tar_and_member_or_is_left_out(tmp_path, cache, jpeg,
                                                                       parallel):
    tar = bad_tar(tmp_path, jpeg, {"KEY.jpg": jpeg, "KEY.txt": b"a \xff photo"})
    tokenizer = bpe(["a photo of a dune"])
    tokenize = T.Tokenize(tokenizer, context_length=CONTEXT, packed=True)
    with pytest.raises(stoker.Error, match=r"^[^ ]*bad\.tar: member k3\.jpg: field 'txt', "
                       r"sample 3 of batch 0 \(epoch 0\): Tokenize\(.*packed=True\) raised "
                       r"UnicodeDecodeError.* \(dataset record 3\)$"):
        read([tar], tokenize, cache, parallel=parallel, batch_format=PACKED)
    (batch,) = read([tar], tokenize, cache, parallel=parallel, batch_format=PACKED,
                    on_error="skip")
    ids = tokenizer.encode("a photo of a dune").ids
    assert len(batch[0]) == 5 and batch[2].tolist() == [len(ids) * k for k in range(6)]
    assert batch[1].tolist() == ids * 5


def test_steps_after_a_packed_tokenize_make_its_rows(tmp_path, cache, jpeg):
    tar = bad_tar(tmp_path, jpeg, {"KEY.jpg": jpeg, "KEY.txt": b"a dune"})
    tokenizer = bpe(["a photo of a dune"])
    first = T.Compose([T.Tokenize(tokenizer, context_length=CONTEXT, packed=True),
                       lambda ids: ids[:1]])
    (batch,) = packed_loader([tar], first, cache, workers=0)
    assert batch[2].tolist() == list(range(7)) and batch[3] == 1
    assert batch[1].tolist() == [tokenizer.encode("a").ids[0]] * 6
    square = T.Compose([T.Tokenize(tokenizer, context_length=CONTEXT, packed=True),
                        lambda ids: ids[None]])
    with pytest.raises(stoker.Error, match=r"field 'txt', sample 0 of batch 0 .*gave txt "
                       r"torch.int64 \[1, 2\]: a packed batch joins rows \(1-D\)$"):
        list(packed_loader([tar], square, cache, workers=0))


def test_packed_fields_that_would_take_a_name_are_refused_in_one_line(tmp_path, cache, jpeg):
    tokenizer = bpe(["a dune"])
    with pytest.raises(ValueError, match="packed=True pads nothing"):
        T.Tokenize(tokenizer, packed=True, return_attention_mask=True)
    both = write(tmp_path / "both.tar", [{f"k{i}.jpg": jpeg, f"k{i}.txt": b"a dune",
                                          f"k{i}.position_ids": b"1",
                                          f"k{i}.json": b'{"caption": "a dune"}'}
                                         for i in range(2)])
    txt = T.Tokenize(tokenizer, packed=True)
    for transforms, message in (
            ({"txt": txt, "json": T.Tokenize(tokenizer, key="caption", packed=True),
              "position_ids": None},
             "Tokenize(packed=True): fields 'txt' and 'json' both return 'cu_seqlens'"),
            ({"txt": txt}, "Tokenize(packed=True): the dataset has a field 'position_ids', "
                           "and field 'txt' returns 'position_ids'")):
        with pytest.raises(ValueError) as raised:
            stoker.Loader(stoker.WebDataset([both], label=None, transforms=transforms),
                          cache_dir=cache)
        assert message in str(raised.value) and "\n" not in str(raised.value)
    batch = next(iter(stoker.Loader(stoker.WebDataset([both], label=None, transforms={
        "txt": txt, "position_ids": None}), cache_dir=cache, batch_size=2, batch_format=PACKED[
            1:])))
    assert batch[0].tolist() == tokenizer.encode("a dune").ids * 2
    mixture = stoker.Mixture([stoker.WebDataset([both], label=None, transforms={"txt": txt}),
                              stoker.WebDataset([both], label=None)])
    with pytest.raises(ValueError, match=r"which takes no Tokenize\(packed=True\)"):
        stoker.Loader(mixture, cache_dir=cache)
