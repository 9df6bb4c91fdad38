"""stoker.Tokens' document boundaries (eos_id, or Megatron-LM's document index): position_ids,
cu_seqlens and labels masked at boundaries, each sample's against a reference computed here
from where documents start, over seq_len, document layouts, file formats, worker counts, ranks
and resume points; the samples and their input_ids the same as without boundaries, so every
token of the epoch is in exactly one sample's input_ids; bad options refused in one line naming
the file and the parameter."""

import numpy as np
import pytest

import stoker
from token_files import (EOS, documents, eos_file, megatron_documents, resumed_epoch,
                         write_megatron)


def reference(tokens, starts, seq_len):
    """Each sample's (input_ids, labels, position_ids, cu_seqlens), as lists, from `starts` (a
    bool per token: a document starts there) by the rules of stoker.Tokens' docstring."""
    samples = []
    for i in range((len(tokens) - 1) // seq_len):
        s = i * seq_len
        segments = [j for j in range(seq_len) if j == 0 or starts[s + j]]
        positions = [j - max(k for k in segments if k <= j) for j in range(seq_len)]
        labels = [-100 if starts[s + j + 1] else int(tokens[s + j + 1]) for j in range(seq_len)]
        samples.append((tokens[s:s + seq_len].astype(np.int64).tolist(), labels, positions,
                        segments + [seq_len]))
    return samples


def eos_starts(tokens):
    return np.concatenate([[True], tokens[:-1] == EOS])


def delivered(loader):
    """Every sample the loader delivers, as reference() gives them, in order."""
    return [(x.tolist(), y.tolist(), p.tolist(), c.tolist()) for batch in loader
            for x, y, p, c in zip(batch["input_ids"], batch["labels"], batch["position_ids"],
                                  batch["cu_seqlens"])]


def boundary_source(path, seq_len, **options):
    return stoker.Tokens(path, seq_len=seq_len, return_position_ids=True,
                         return_cu_seqlens=True, mask_boundary_labels=True, **options)


def loader(source, **options):
    options.setdefault("shuffle", True)
    return stoker.Loader(source, batch_size=options.pop("batch_size", 5), batch_format="dict",
                         seed=11, **options)


def key(sample):
    return repr(sample)


@pytest.mark.parametrize("seq_len", [1, 3, 16, 100])
@pytest.mark.parametrize("layout", ["short", "mixed", "long", "one"])
def test_fields_match_the_reference_and_every_token_is_in_one_sample(tmp_path, seq_len, layout):
    rng = np.random.default_rng(seq_len * 7 + len(layout))
    path = tmp_path / "train.bin"
    tokens = eos_file(path, documents(rng, 40 * seq_len + 1 + seq_len // 2, layout, seq_len), rng)
    want = reference(tokens, eos_starts(tokens), seq_len)
    source = boundary_source(path, seq_len, eos_id=EOS)
    assert delivered(loader(source, shuffle=False)) == want
    # Shuffled, over workers and ranks: each sample exactly once, so the union of the input_ids
    # is the epoch's tokens, each once.
    for workers in (0, 2):
        ranks = [delivered(loader(source, rank=r, world_size=2, workers=workers))
                 for r in range(2)]
        union = ranks[0] + ranks[1]
        assert sorted(map(key, union)) == sorted(map(key, want))
        dealt = np.concatenate([np.asarray(x) for x, _, _, _ in union])
        assert np.array_equal(np.sort(dealt), np.sort(tokens[:len(want) * seq_len]))
    # The input_ids, in the shuffled order, are those of the same loader without boundaries.
    plain = stoker.Tokens(path, seq_len=seq_len)
    assert [x for x, *_ in delivered(loader(source))] == [
        x.tolist() for batch in loader(plain) for x in batch["input_ids"]]


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("taken", [1, 4, 9])
def test_a_resume_delivers_the_rest_of_the_epoch(tmp_path, workers, taken):
    rng = np.random.default_rng(taken)
    path = tmp_path / "train.bin"
    tokens = eos_file(path, documents(rng, 60 * 8 + 3, "mixed", 8), rng)
    source = boundary_source(path, 8, eos_id=EOS)
    whole, head, rest, _ = resumed_epoch(lambda: loader(source, workers=workers), delivered,
                                         taken)
    assert head + rest == whole
    assert sorted(map(key, whole)) == sorted(map(key, reference(tokens, eos_starts(tokens), 8)))


def test_units_and_file_formats_uint32_npy_and_megatron(tmp_path):
    # 2.5 units of samples (a unit: the samples of 2^20 tokens) and a seq_len that divides none:
    # boundaries across units' edges, scanned per unit; uint32 and a .npy of int32.
    rng = np.random.default_rng(3)
    seq_len, total = 1000, 5 * 2**19 + 7
    wide = eos_file(tmp_path / "wide.bin", documents(rng, total, "mixed", seq_len), rng,
                    np.uint32)
    want = reference(wide, eos_starts(wide), seq_len)
    got = delivered(loader(boundary_source(tmp_path / "wide.bin", seq_len, eos_id=EOS,
                                           dtype="uint32"), shuffle=False, batch_size=64,
                           workers=2))
    assert got == want
    np.save(tmp_path / "t.npy", wide[:50 * 16 + 1].astype(np.int32))
    npy = delivered(loader(boundary_source(tmp_path / "t.npy", 16, eos_id=EOS), shuffle=False))
    assert npy == reference(wide[:50 * 16 + 1], eos_starts(wide), 16)


@pytest.mark.parametrize("gap", [0, 3])
def test_megatron_documents_from_its_index(tmp_path, gap):
    # Documents from the index alone (token_files.megatron_documents); gap 3: the sequences
    # read into memory.
    prefix, tokens, starts, offsets, index = megatron_documents(tmp_path, gap)
    for seq_len in (1, 5, 16):
        want = reference(tokens, starts, seq_len)
        source = boundary_source(prefix, seq_len)
        assert delivered(loader(source, shuffle=False)) == want
        assert sorted(map(key, delivered(loader(source, workers=2)))) == sorted(map(key, want))
    # eos_id given: its tokens say where documents end, not the index.
    tokens_eos = np.where(tokens % 5 == 0, EOS, tokens)
    pieces = np.split(tokens_eos, offsets[1:-1])
    write_megatron(tmp_path / "eos", pieces, index, gap)
    want = reference(tokens_eos, eos_starts(tokens_eos), 16)
    assert delivered(loader(boundary_source(tmp_path / "eos", 16, eos_id=EOS),
                            shuffle=False)) == want


def test_each_field_alone_and_the_default_unchanged(tmp_path):
    rng = np.random.default_rng(9)
    path = tmp_path / "train.bin"
    tokens = eos_file(path, documents(rng, 30 * 8 + 1, "mixed", 8), rng)
    want = reference(tokens, eos_starts(tokens), 8)
    plain = [(x.tolist(), y.tolist()) for batch in loader(stoker.Tokens(path, seq_len=8),
                                                           shuffle=False)
             for x, y in zip(batch["input_ids"], batch["labels"])]
    assert plain == [(x, tokens[i * 8 + 1:(i + 1) * 8 + 1].astype(int).tolist())
                     for i, (x, *_) in enumerate(want)]
    for option, field, column in (("return_position_ids", "position_ids", 2),
                                  ("return_cu_seqlens", "cu_seqlens", 3),
                                  ("mask_boundary_labels", "labels", 1)):
        source = stoker.Tokens(path, seq_len=8, eos_id=EOS, **{option: True})
        names = [f["name"] for f in source.fields]
        assert names == ["input_ids", "labels"] + ([field] if field != "labels" else [])
        got = [v.tolist() for batch in loader(source, shuffle=False) for v in batch[field]]
        assert got == [sample[column] for sample in want]
    # cu_seqlens padded to the batch's longest, with its sizes.
    batch = next(iter(loader(boundary_source(path, 8, eos_id=EOS), shuffle=False,
                             variable={"cu_seqlens": "padded"})))
    longest = max(len(sample[3]) for sample in want[:5])
    assert tuple(batch["cu_seqlens"].shape) == (5, longest) and longest > 2
    for k in range(5):
        size = int(batch["cu_seqlens_sizes"][k][0])
        assert batch["cu_seqlens"][k][:size].tolist() == want[k][3]


def test_bad_boundary_options_are_one_line_errors_naming_file_and_parameter(tmp_path):
    path = tmp_path / "t.bin"
    np.arange(100, dtype=np.uint16).tofile(path)

    def refused(source, words, error=ValueError):
        with pytest.raises(error) as raised:
            stoker.Loader(source)
        message = str(raised.value)
        assert "\n" not in message and all(w in message for w in words), message

    refused(boundary_source(path, 4, eos_id=65536), [str(path), "eos_id 65536", "uint16"])
    refused(stoker.Tokens(path, seq_len=4, eos_id=3), [str(path), "eos_id 3", "no field"])
    refused(stoker.Tokens(path, seq_len=4, return_cu_seqlens=True),
            [str(path), "return_cu_seqlens", "eos_id"])
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match="eos_id"):
            stoker.Tokens(path, eos_id=bad)
    # A Megatron index of one sequence and no document.
    prefix = write_megatron(tmp_path / "nodoc", [np.arange(40)], [0])
    refused(boundary_source(prefix, 4), [f"{prefix}.idx", "no document", "eos_id"])
