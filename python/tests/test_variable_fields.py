"""Fields of varying size in stoker.Loader: a bytes field as uint8 [N] (RawBytes) and encoded
images at their own size (DecodeImage) or resized alone (torchvision's Resize), delivered as a list of tensors or padded with their
sizes; values equal the stored ones (PIL's pixels), tensors view the batch without a copy and
stay valid after the next batch, and bad requests are one line."""

import io

import numpy as np
import pytest
import torch
import torchvision.transforms as T
import torchvision.transforms.v2 as T2
from PIL import Image

import stoker
from stoker.transforms import DecodeImage, RawBytes

from loader_datasets import images  # noqa: F401 (fixture)

CAPTIONS = 61


def caption(i):
    """Record i's caption: i % 11 bytes."""
    return bytes((i * 7 + j) % 256 for j in range(i % 11))


@pytest.fixture(scope="module")
def captions(tmp_path_factory):
    path = tmp_path_factory.mktemp("captions") / "ds"
    with stoker.DatasetWriter(path, {"label": "int64", "caption": "bytes"},
                              shard_mb=1 / 1024) as writer:
        for i in range(CAPTIONS):
            writer.append({"label": i, "caption": caption(i)})
    return path


def loader(path, **options):
    options.setdefault("shuffle", True)
    options.setdefault("transforms", {"caption": RawBytes(max_length=16)})
    return stoker.Loader(path, batch_size=8, seed=4, batch_format="dict", **options)


@pytest.mark.parametrize("workers", [0, 3])
def test_list_form_is_the_stored_bytes_viewing_the_batch(captions, workers):
    seen = []
    for batch in loader(captions, workers=workers):
        texts = batch["caption"]
        assert isinstance(texts, list) and len(texts) == len(batch["label"])
        for label, text in zip(batch["label"].tolist(), texts):
            assert text.dtype == torch.uint8 and text.shape == (len(caption(label)),)
            assert bytes(text.tolist()) == caption(label)
            seen.append(label)
        # Each sample views its slot of one pooled block: capacity 16 bytes apart (an empty
        # tensor has no storage to compare).
        start = batch["caption"][0].data_ptr() if len(texts[0]) else None
        for k, text in enumerate(texts):
            if len(text) and start is not None:
                assert text.data_ptr() - start == 16 * k
    assert sorted(seen) == list(range(CAPTIONS))
    assert seen == [l for b in loader(captions, workers=1) for l in b["label"].tolist()]


def test_padded_form_is_zero_padded_with_its_sizes(captions):
    for batch in loader(captions, workers=2, variable="padded"):
        padded, sizes = batch["caption"], batch["caption_sizes"]
        labels = batch["label"].tolist()
        assert sizes.dtype == torch.int64 and sizes.shape == (len(labels), 1)
        assert sizes[:, 0].tolist() == [len(caption(i)) for i in labels]
        assert padded.shape == (len(labels), max(len(caption(i)) for i in labels))
        assert padded.stride() == (16, 1)  # a strided view of the slots, not a copy
        for row, label in zip(padded, labels):
            n = len(caption(label))
            assert bytes(row[:n].tolist()) == caption(label)
            assert not row[n:].any()


@pytest.mark.parametrize("workers", [0, 3])
def test_nested_form_is_a_jagged_tensor_viewing_the_slots(captions, workers):
    """variable="nested": torch's jagged nested tensor of the samples, their values read in
    place (the padded batch's slots 16 bytes apart: a copy would pack them), no caption_sizes;
    the same samples as the list form."""
    seen = []
    for batch in loader(captions, workers=workers, variable="nested"):
        texts, labels = batch["caption"], batch["label"].tolist()
        assert texts.is_nested and texts.dtype == torch.uint8 and "caption_sizes" not in batch
        assert [bytes(t.tolist()) for t in texts.unbind()] == [caption(i) for i in labels]
        longest = max(len(caption(i)) for i in labels)
        if longest:
            assert texts.values().shape == ((len(labels) - 1) * 16 + longest,)
            assert texts.offsets().tolist()[:-1] == [16 * k for k in range(len(labels))]
        seen += labels
    assert seen == [l for b in loader(captions, workers=1) for l in b["label"].tolist()]
    kept = [b for b in loader(captions, variable="nested", prefetch=1)]
    for batch in kept:  # each batch's tensors hold its buffer after later batches
        assert [bytes(t.tolist()) for t in batch["caption"].unbind()] == \
            [caption(i) for i in batch["label"].tolist()]
    batch = next(iter(stoker.Loader(captions, batch_size=4, shuffle=False, variable="nested",
                                    transforms={"caption": RawBytes(max_length=16)},
                                    batch_format="tuple")))
    assert len(batch) == 2 and batch[1].is_nested  # (label, caption): no caption_sizes


def test_nested_form_of_an_all_empty_batch(tmp_path):
    """A batch whose samples are all empty is a nested tensor of empty samples."""
    with stoker.DatasetWriter(tmp_path / "ds", {"label": "int64", "caption": "bytes"}) as writer:
        for i, text in enumerate([b"", b"", b"abc"]):
            writer.append({"label": i, "caption": text})
    batches = list(stoker.Loader(tmp_path / "ds", batch_size=2, shuffle=False,
                                 variable="nested", batch_format="dict",
                                 transforms={"caption": RawBytes(max_length=4)}))
    assert [t.shape for t in batches[0]["caption"].unbind()] == [(0,), (0,)]
    assert [bytes(t.tolist()) for t in batches[1]["caption"].unbind()] == [b"abc"]


def test_tensors_kept_after_the_next_batch_stay_valid(captions):
    kept = []
    for batch in loader(captions, workers=2, prefetch=1, variable={"caption": "padded"}):
        kept.append((batch["label"], batch["caption"], batch["caption_sizes"]))
    for label, padded, sizes in kept:
        for i, row, n in zip(label.tolist(), padded, sizes[:, 0].tolist()):
            assert bytes(row[:n].tolist()) == caption(i)
    kept = [(b["label"], b["caption"]) for b in loader(captions, workers=2, prefetch=1)]
    for label, texts in kept:
        assert [bytes(t.tolist()) for t in texts] == [caption(i) for i in label.tolist()]


def test_tuples_may_name_the_sizes(captions):
    batch = next(iter(stoker.Loader(captions, batch_size=4, shuffle=False, variable="padded",
                                    transforms={"caption": RawBytes(max_length=16)},
                                    batch_format=("caption", "caption_sizes", "label"))))
    padded, sizes, label = batch
    assert label.tolist() == [0, 1, 2, 3] and sizes[:, 0].tolist() == [0, 1, 2, 3]


def test_a_caption_over_max_length_names_the_record(captions):
    with pytest.raises(ValueError, match=r"shard-.*record 10: field 'caption': 10 rows, more "
                                         r"than the capacity of 9 \(dataset record 10\)"):
        list(loader(captions, shuffle=False, transforms={"caption": RawBytes(max_length=9)}))
    skipped = loader(captions, on_error="skip", transforms={"caption": RawBytes(max_length=9)})
    labels = [l for b in skipped for l in b["label"].tolist()]
    assert sorted(labels) == [i for i in range(CAPTIONS) if i % 11 <= 9]


def test_images_at_their_own_size_are_pils(images):  # noqa: F811
    path, encoded = images
    seen = 0
    for form in ("list", "padded"):
        batches = stoker.Loader(path, batch_size=3, shuffle=False, variable=form,
                                transforms={"image": DecodeImage(max_size=128)},
                                batch_format="dict")
        for batch in batches:
            for k, label in enumerate(batch["label"].tolist()):
                want = np.asarray(Image.open(io.BytesIO(encoded[label])).convert("RGB"))
                want = torch.from_numpy(want.transpose(2, 0, 1).copy())
                if form == "list":
                    got = batch["image"][k]
                else:
                    h, w = batch["image_sizes"][k, 1:].tolist()
                    got = batch["image"][k, :, :h, :w]
                    assert not batch["image"][k, :, h:, :].any()
                    assert not batch["image"][k, :, :, w:].any()
                assert torch.equal(got, want), (form, label)
                seen += 1
    assert seen == 2 * len(encoded)


@pytest.mark.parametrize("theirs", [
    T.Resize(20), T.Resize(23, max_size=30, interpolation=T.InterpolationMode.BICUBIC),
    T2.Resize(26, max_size=40), T.Compose([T.Resize(17), T.PILToTensor()])])
def test_resize_alone_gives_torchvisions_images_at_their_resized_size(images, theirs):  # noqa: F811
    path, encoded = images
    sizes = set()
    for form in ("list", "padded"):
        loader = stoker.Loader(path, batch_size=4, shuffle=False, variable=form,
                               transforms={"image": theirs}, batch_format="dict", workers=2)
        assert [where for _, where in loader.plan["image"]] == ["native"]
        for batch in loader:
            for k, label in enumerate(batch["label"].tolist()):
                want = np.asarray(theirs(Image.open(io.BytesIO(encoded[label])).convert("RGB")))
                want = torch.from_numpy(want if want.shape[0] == 3 else
                                        want.transpose(2, 0, 1).copy())
                if form == "list":
                    got = batch["image"][k]
                else:
                    h, w = batch["image_sizes"][k, 1:].tolist()
                    got = batch["image"][k, :, :h, :w]
                assert torch.equal(got, want), (form, label)
                sizes.add(tuple(got.shape))
    assert len(sizes) > 1, sizes


def test_resize_alone_over_its_capacity_names_the_record(images):  # noqa: F811
    loader = stoker.Loader(images[0], batch_size=4, shuffle=False, batch_format="dict",
                           transforms={"image": stoker.transforms.Resize(20, capacity=21)})
    with pytest.raises(ValueError, match=r"record \d+: field 'image': .*the image resized is "
                                         r"\d+x\d+, over the capacity 21x21 \(dataset record"):
        list(loader)


def test_bad_requests_are_one_line(captions, images):  # noqa: F811
    with pytest.raises(ValueError, match="variable: field 'caption' must be 'list', 'padded' "
                                         "or 'nested', not 'jagged'"):
        loader(captions, variable="jagged")
    with pytest.raises(ValueError, match="variable: field 'image' varies in more than its first "
                                         "dimension; 'nested' .* takes one: 'list' or 'padded'"):
        stoker.Loader(images[0], batch_size=256, shuffle=True, transforms={"image": DecodeImage()}, variable="nested")
    with pytest.raises(ValueError, match="variable names 'label', which is not a field of "
                                         "varying size"):
        loader(captions, variable={"label": "padded"})
    with pytest.raises(ValueError, match="max_length must be an int from 1"):
        RawBytes(max_length=0)
    with pytest.raises(ValueError, match="DecodeImage makes samples of varying size; no native "
                                         "step"):
        stoker.Loader(images[0], batch_size=256, shuffle=True, transforms={"image": stoker.transforms.Compose(
            [DecodeImage(), stoker.transforms.Normalize([0.5], [0.5])])})
    with pytest.raises(ValueError, match="Resize without CenterCrop makes samples of varying "
                                         "size; no native step may follow it, not ToTensor"):
        stoker.Loader(images[0], batch_size=256, shuffle=True, transforms=stoker.transforms.Compose(
            [stoker.transforms.Resize(20), stoker.transforms.ToTensor()]))


DETECTIONS = 37


def detection(i):
    """Record i's boxes (float32 [N, 4]) and labels (int64 [N]), N = i % 5 (0 included)."""
    rng = np.random.default_rng(i)
    n = i % 5
    return {"image_id": i, "boxes": rng.random((n, 4), dtype=np.float32),
            "labels": rng.integers(1, 91, n).astype(np.int64)}


@pytest.fixture(scope="module")
def detections(tmp_path_factory):
    path = tmp_path_factory.mktemp("detections") / "ds"
    schema = {"image_id": "int64", "boxes": ("float32", ("N", 4)), "labels": ("int64", ("N",))}
    stoker.write_dataset(path, [detection(i) for i in range(DETECTIONS)], schema=schema,
                         shard_mb=1 / 1024)
    return path


@pytest.mark.parametrize("workers", [0, 2])
def test_stored_variable_length_fields_load_as_lists_and_padded(detections, workers):
    """Stored [N, 4] and [N] fields come as written: per-sample tensors, or one zero-padded
    tensor (to the batch's most rows) with NAME_sizes; the same for any number of workers."""
    seen = 0
    for form in ("list", "padded"):
        for batch in stoker.Loader(detections, batch_size=8, shuffle=False, workers=workers,
                                   batch_format="dict", variable=form):
            for k, i in enumerate(batch["image_id"].tolist()):
                want = detection(i)
                if form == "list":
                    boxes, labels = batch["boxes"][k], batch["labels"][k]
                else:
                    n = int(batch["boxes_sizes"][k][0])
                    assert batch["boxes_sizes"][k].tolist() == [n, 4]
                    assert batch["labels_sizes"][k].tolist() == [n]
                    assert batch["boxes"].shape[1] == int(batch["boxes_sizes"][:, 0].max())
                    assert not batch["boxes"][k, n:].any() and not batch["labels"][k, n:].any()
                    boxes, labels = batch["boxes"][k, :n], batch["labels"][k, :n]
                assert np.array_equal(boxes.numpy(), want["boxes"])
                assert np.array_equal(labels.numpy(), want["labels"])
                seen += 1
    assert seen == 2 * DETECTIONS


@pytest.mark.parametrize("form", ["padded", "nested"])
def test_a_field_named_like_a_padded_fields_sizes_is_refused_in_one_line(tmp_path, form):
    """A dataset field 'caption_sizes' beside a padded 'caption' would be replaced by (or
    replace) the sizes: refused, naming both, unless the field is left out."""
    path = tmp_path / "ds"
    with stoker.DatasetWriter(path, {"caption": "bytes", "caption_sizes": "int64"}) as writer:
        for i in range(4):
            writer.append({"caption": caption(i + 1), "caption_sizes": 99})
    with pytest.raises(ValueError, match=f"variable: field 'caption' {form} comes with its sizes "
                                         f"as 'caption_sizes', a field the dataset has too"):
        loader(path, variable=form)
    kept = next(iter(loader(path, variable=form, transforms={
        "caption": RawBytes(max_length=16), "caption_sizes": None})))
    sizes = kept["caption_sizes"] if form == "padded" else kept["caption"].offsets().diff()
    assert sorted(sizes.flatten().tolist()) != [99] * 4
