"""Image-text pairs (LAION/DataComp-style tars of jpg + txt or json captions) read by
stoker.WebDataset(label=None), the captions tokenized by stoker.transforms.Tokenize: token for
token the tokenizer's own ids, cut and padded, in threads and in processes; bad captions named."""

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


def read(tars, tokenize, cache, member="txt", parallel="threads", **options):
    loader = stoker.Loader(
        stoker.WebDataset(tars, label=None, transforms={
            "image": T.RandomResizedCrop(32), member: tokenize}),
        batch_size=16, shuffle=False, cache_dir=cache, python_parallel=parallel,
        python_workers=2, batch_format=("image", member, "label"), **options)
    return [batch for batch in loader]


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


@pytest.mark.parametrize("bad, message", [
    ({"KEY.jpg": None, "KEY.txt": b"a \xff photo"},
     r"field 'txt', sample 3 of batch 0 \(epoch 0\): Tokenize\(.*\) raised UnicodeDecodeError"),
    ({"KEY.jpg": None},
     r"bad\.tar: sample k3: no txt \(dataset record 3\)"),
    ({"KEY.jpg": None, "KEY.txt": b"a storm"},
     r"field 'txt', sample 3 of batch 0 \(epoch 0\): Tokenize\(.*\) raised RuntimeError: no "
     r"storms here"),
], ids=["not-utf8", "missing-caption", "tokenizer-raises"])
def test_a_bad_caption_is_one_line_and_skipped_under_on_error(tmp_path, cache, jpeg, bad,
                                                              message):
    tar = bad_tar(tmp_path, jpeg, {k: jpeg if v is None else v for k, v in bad.items()})
    tokenize = T.Tokenize(Raising(bpe(["a photo of a dune", "a storm"])), context_length=CONTEXT)
    with pytest.raises(stoker.Error, match=message) as error:
        read([tar], tokenize, cache)
    assert "\n" not in str(error.value)
    kept = read([tar], tokenize, cache, on_error="skip")
    assert sum(len(b[1]) for b in kept) == 5


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
