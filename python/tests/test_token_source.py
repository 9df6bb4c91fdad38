"""stoker.Tokens: token files read in place (nanoGPT's .bin, a 1-D .npy, Megatron-LM's indexed
dataset) give nanoGPT's get_batch slices of ``np.memmap(path)`` as input_ids and labels: in
order unshuffled, each sample once in a shuffled epoch, every token once per epoch across ranks,
an exact resume, the same through units' boundaries and mixtures (the samples widened from the
mapped file straight into the batch); bad files refused in one line naming the file, and a file
cut short under a running loader too."""

import os
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import stoker

L = 16


def write_bin(path, tokens, dtype=np.uint16):
    np.asarray(tokens, dtype=dtype).tofile(path)
    return path


def random_tokens(n, seed=0):
    return np.random.default_rng(seed).integers(0, 65536, n, dtype=np.uint16)


def nanogpt_samples(path, seq_len, dtype=np.uint16):
    """nanoGPT's get_batch's (x, y) for every i, from np.memmap as it reads train.bin."""
    data = np.memmap(path, dtype=dtype, mode="r")
    return [(data[i * seq_len:(i + 1) * seq_len].astype(np.int64),
             data[i * seq_len + 1:(i + 1) * seq_len + 1].astype(np.int64))
            for i in range((len(data) - 1) // seq_len)]


def loaded(source, **options):
    """(input_ids, labels) of every sample the loader delivers, in order."""
    options.setdefault("batch_size", 8)
    options.setdefault("shuffle", False)
    loader = stoker.Loader(source, batch_format="dict", seed=3, **options)
    return [(x.numpy(), y.numpy()) for batch in loader
            for x, y in zip(batch["input_ids"], batch["labels"])]


def keys(samples):
    return [x.tobytes() + y.tobytes() for x, y in samples]


def write_megatron(prefix, sequences, dtype=np.uint16, code=8):
    """PREFIX.bin and PREFIX.idx as Megatron-LM's IndexedDatasetBuilder writes them, a document
    per sequence."""
    arrays = [np.asarray(s, dtype=dtype) for s in sequences]
    np.concatenate(arrays).tofile(f"{prefix}.bin")
    lengths = np.array([len(a) for a in arrays], np.int32)
    pointers = np.concatenate([[0], np.cumsum(lengths[:-1]) * np.dtype(dtype).itemsize])
    with open(f"{prefix}.idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, code, len(arrays), len(arrays) + 1))
        f.write(lengths.tobytes() + pointers.astype(np.int64).tobytes())
        f.write(np.arange(len(arrays) + 1, dtype=np.int64).tobytes())
    return prefix


def test_unshuffled_batches_are_nanogpts_slices(tmp_path):
    path = write_bin(tmp_path / "train.bin", random_tokens(40 * L + 5))
    source = stoker.Tokens(path, seq_len=L)
    assert len(source) == 40
    assert source.fields[0] == {"name": "input_ids", "dtype": "int64", "shape": [L]}
    batch = next(iter(stoker.Loader(source, batch_size=8, batch_format="dict", shuffle=False)))
    assert batch["input_ids"].dtype == torch.int64 and tuple(batch["labels"].shape) == (8, L)
    expected = nanogpt_samples(path, L)
    assert keys(loaded(source)) == keys(expected)
    # A shuffled epoch: the same samples in another order.
    shuffled = keys(loaded(source, shuffle=True))
    assert shuffled != keys(expected) and sorted(shuffled) == sorted(keys(expected))


def test_every_token_once_per_epoch_across_ranks_and_an_exact_resume(tmp_path):
    # uint32 tokens numbering their positions: a sample's input_ids say which tokens it holds.
    path = write_bin(tmp_path / "wide.bin", np.arange(48 * L + 3), np.uint32)
    source = stoker.Tokens(path, seq_len=L, dtype="uint32")
    dealt = [x for r in range(3)
             for x, _ in loaded(source, shuffle=True, rank=r, world_size=3, batch_size=4)]
    assert sorted(np.concatenate(dealt).tolist()) == list(range(48 * L))
    whole = keys(loaded(source, shuffle=True))
    first = stoker.Loader(source, batch_size=8, batch_format="dict", seed=3, shuffle=True)
    iterator = iter(first)
    taken = [(x.numpy(), y.numpy()) for _ in range(2)
             for batch in [next(iterator)] for x, y in zip(batch["input_ids"], batch["labels"])]
    resumed = stoker.Loader(source, batch_size=8, batch_format="dict", seed=3, shuffle=True)
    resumed.load_state_dict(first.state_dict())
    assert keys(taken) + keys([(x.numpy(), y.numpy()) for batch in resumed
                               for x, y in zip(batch["input_ids"], batch["labels"])]) == whole


def test_npy_and_megatron_read_as_their_arrays(tmp_path):
    tokens = np.random.default_rng(1).integers(0, 2**31 - 1, 10 * L + 1, dtype=np.int32)
    np.save(tmp_path / "t.npy", tokens)
    tokens.tofile(tmp_path / "same.bin")
    expected = keys(nanogpt_samples(tmp_path / "same.bin", L, np.int32))
    assert keys(loaded(stoker.Tokens(tmp_path / "t.npy", seq_len=L))) == expected
    sequences = [random_tokens(n, seed=n) for n in (50, 0, 77, 40)]
    prefix = write_megatron(tmp_path / "corpus_text_document", sequences)
    write_bin(tmp_path / "flat.bin", np.concatenate(sequences))
    expected = keys(nanogpt_samples(tmp_path / "flat.bin", L))
    for name in (f"{prefix}.bin", f"{prefix}.idx", prefix):
        assert keys(loaded(stoker.Tokens(name, seq_len=L))) == expected
    # `auto` takes Megatron's datasets and .npy token arrays (seq_len 1024 by default).
    long = write_megatron(tmp_path / "long", [random_tokens(3000)])
    assert len(stoker.Dataset(f"{long}.bin")) == 2
    np.save(tmp_path / "big.npy", np.arange(3 * 1024 + 1, dtype=np.int32))
    assert len(stoker.Dataset(tmp_path / "big.npy")) == 3


def one_line_error(error, path):
    message = str(error.value)
    assert str(path) in message and "\n" not in message, message
    return message


def test_bad_files_are_one_line_errors_naming_the_file(tmp_path):
    odd = tmp_path / "odd.bin"
    odd.write_bytes(b"abc")
    with pytest.raises(stoker.Error) as error:
        stoker.Loader(stoker.Tokens(odd, seq_len=1))
    assert "not a whole number of uint16 tokens" in one_line_error(error, odd)
    short = write_bin(tmp_path / "short.bin", random_tokens(L))
    with pytest.raises(ValueError) as error:
        stoker.Loader(stoker.Tokens(short, seq_len=L))
    assert "fewer than seq_len + 1" in one_line_error(error, short)
    with pytest.raises(ValueError):
        stoker.Loader(stoker.Tokens(short, seq_len=0))
    bad = np.arange(4 * L + 1, dtype=np.int64)
    bad[2 * L + 3] = -7
    np.save(tmp_path / "neg.npy", bad)
    with pytest.raises(stoker.Error) as error:
        loaded(stoker.Tokens(tmp_path / "neg.npy", seq_len=L))
    assert f"sample 2: token {2 * L + 3} is -7" in one_line_error(error, tmp_path / "neg.npy")
    prefix = write_megatron(tmp_path / "m", [random_tokens(40)])
    idx = tmp_path / "m.idx"
    idx.write_bytes(b"NOTMEGA" + idx.read_bytes()[7:])
    with pytest.raises(stoker.Error) as error:
        stoker.Loader(stoker.Tokens(f"{prefix}.bin", seq_len=4))
    assert "does not start with MMIDIDX" in one_line_error(error, idx)


def test_samples_across_units_are_numpys_for_uint16_and_uint32_alone_mixed_and_resumed(tmp_path):
    # Files of 2.5 units (a unit is the samples of 2^20 tokens), of values past 2^15 and 2^31
    # (widened unsigned), a seq_len that divides no unit: each sample is numpy's reading.
    seq_len, n = 1000, 5 * 2**19 + 7
    rng = np.random.default_rng(5)
    short = write_bin(tmp_path / "short.bin", rng.integers(0, 2**16, n, dtype=np.uint16))
    wide = write_bin(tmp_path / "wide.bin", rng.integers(0, 2**32, n, dtype=np.uint32), np.uint32)
    sources = [stoker.Tokens(short, seq_len=seq_len),
               stoker.Tokens(wide, seq_len=seq_len, dtype="uint32")]
    expected = [keys(nanogpt_samples(short, seq_len)),
                keys(nanogpt_samples(wide, seq_len, np.uint32))]
    assert len(expected[0]) == (n - 1) // seq_len and max(np.fromfile(wide, np.uint32)) >= 2**31
    for source, want in zip(sources, expected):
        assert keys(loaded(source, workers=2)) == want
        assert sorted(keys(loaded(source, shuffle=True, workers=0))) == sorted(want)

    def mixed_samples(loader):
        return [(int(s), x.numpy().tobytes() + y.numpy().tobytes()) for batch in loader
                for s, x, y in zip(batch["source"], batch["input_ids"], batch["labels"])]

    def mixture_loader():
        return stoker.Loader(stoker.Mixture(sources, until="all"), batch_size=8, seed=3,
                             shuffle=True, batch_format="dict", workers=2)

    whole = mixed_samples(mixture_loader())
    for part, want in enumerate(expected):
        assert {key for s, key in whole if s == part} == set(want)
    first = mixture_loader()
    iterator = iter(first)
    taken = mixed_samples([next(iterator) for _ in range(300)])
    resumed = mixture_loader()
    resumed.load_state_dict(first.state_dict())
    assert taken + mixed_samples(resumed) == whole


# Run in a child process: were the SIGBUS handler not to cover the mapped token file, the fault
# would end the test process.
CUT_UNDER_A_LOADER = textwrap.dedent("""
    import os, sys, stoker
    path, workers = sys.argv[1], int(sys.argv[2])
    loader = stoker.Loader(stoker.Tokens(path, seq_len=64), batch_size=4, shuffle=False,
                           workers=workers, prefetch=2)
    batches = iter(loader)
    next(batches)
    os.truncate(path, 4096)  # a page: the unit's samples past it are gone
    try:
        print("no error after", sum(1 for _ in batches), "batches")
    except stoker.Error as e:
        print("raised:", e)
""")


@pytest.mark.parametrize("workers", [0, 2])
def test_a_file_cut_short_under_a_running_loader_raises_naming_it(tmp_path, workers):
    path = write_bin(tmp_path / "cut.bin", random_tokens(2**18 + 1))
    run = subprocess.run([sys.executable, "-c", CUT_UNDER_A_LOADER, str(path), str(workers)],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode == 0, (run.returncode, run.stdout, run.stderr)
    line = run.stdout.splitlines()[0]
    assert line.startswith(f"raised: {path}: sample ") and "changed size" in line, run.stdout


@pytest.mark.parametrize("on_error", ["raise", "skip"])
def test_a_token_id_at_or_above_vocab_size_fails_its_batch_naming_it(tmp_path, on_error):
    tokens = np.random.default_rng(4).integers(0, 50257, 40 * L + 1, dtype=np.uint16)
    at = 23 * L + 5
    tokens[at] = 50257
    path = write_bin(tmp_path / "v.bin", tokens)
    expected = f"sample 23: token {at} is 50257, not below vocab_size 50257"
    for source in (stoker.Tokens(path, seq_len=L, vocab_size=50257),
                   stoker.Tokens(path, seq_len=L, vocab_size=50257, eos_id=3,
                                 packing="first_fit")):
        with pytest.raises(stoker.Error) as error:
            loaded(source, on_error=on_error)
        message = one_line_error(error, path)
        assert f"token {at} is 50257, not below vocab_size 50257" in message, message
        if source.packing == "none":
            assert expected in message, message
    # The id just below, or no vocabulary: every sample read.
    assert len(loaded(stoker.Tokens(path, seq_len=L, vocab_size=50258))) == 40
    assert len(loaded(stoker.Tokens(path, seq_len=L))) == 40


def test_id_parameters_at_or_above_vocab_size_are_refused_naming_them(tmp_path):
    path = write_bin(tmp_path / "p.bin", random_tokens(4 * L + 1) % 100)
    for name, options in (("eos_id", dict(eos_id=100, return_position_ids=True)),
                          ("pad_id", dict(eos_id=3, packing="best_fit", pad_id=100)),
                          ("prompt_end_id", dict(eos_id=3, packing="best_fit",
                                                 prompt_end_id=120))):
        with pytest.raises(ValueError) as error:
            stoker.Loader(stoker.Tokens(path, seq_len=L, vocab_size=100, **options))
        assert f"{name} {options[name]} is not below vocab_size 100" in one_line_error(error, path)
    for bad in (0, -5, 2.5, True):
        with pytest.raises(ValueError, match="vocab_size"):
            stoker.Tokens(path, seq_len=L, vocab_size=bad)
    assert "vocab_size=100" in repr(stoker.Tokens(path, vocab_size=100))


def test_dtype_as_numpy_spells_it_reads_the_same_tokens(tmp_path):
    """nanoGPT's prepare.py writes np.uint16: numpy's names of the two types read as the names
    do; another type, or big-endian ids, is one line naming dtype and the file."""
    for name, dtype in (("uint16", np.uint16), ("uint32", np.uint32)):
        path = write_bin(tmp_path / f"{name}.bin", np.arange(8 * L + 1) * 7, dtype)
        want = keys(nanogpt_samples(path, L, dtype))
        for spelling in (dtype, np.dtype(dtype), np.dtype(dtype).str, name):
            source = stoker.Tokens(path, seq_len=L, dtype=spelling)
            assert source.dtype == name and keys(loaded(source)) == want
    for bad in (np.int32, ">u2", "int16", None, 2):
        with pytest.raises(ValueError) as error:
            stoker.Tokens(path, seq_len=L, dtype=bad)
        assert f"dtype {bad!r} is not uint16 or uint32" in one_line_error(error, path)


def test_seq_len_must_be_an_integer(tmp_path):
    path = write_bin(tmp_path / "a.bin", random_tokens(8 * L + 1))
    assert len(stoker.Tokens(path, seq_len=np.int64(L))) == 8
    for bad in (16.7, 16.0, True, None, "16"):
        with pytest.raises(ValueError) as error:
            stoker.Tokens(path, seq_len=bad)
        assert f"seq_len {bad!r} is not an integer" in one_line_error(error, path)


def test_several_raw_files_or_a_folder_without_tables_are_one_line(tmp_path):
    """A raw token file is read one per Tokens (a folder or glob only of Parquet or Arrow
    files): a list, a glob or a folder of .bin files says to mix them with stoker.Mixture, an
    empty folder that it holds no token file."""
    shards = [write_bin(tmp_path / f"shard_{i}.bin", random_tokens(4 * L + 1, i)) for i in (0, 1)]
    with pytest.raises(ValueError) as error:
        stoker.Tokens(shards, seq_len=L)
    assert "stoker.Mixture" in one_line_error(error, shards[0])
    for path, said in ((tmp_path / "shard_*.bin", f"a pattern of 2 files ({shards[0]}, ...)"),
                       (tmp_path, "a folder of 2 .bin files")):
        with pytest.raises(ValueError) as error:
            stoker.Loader(stoker.Tokens(path, seq_len=L))
        assert said in one_line_error(error, path) and "stoker.Mixture" in str(error.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError) as error:
        stoker.Loader(stoker.Tokens(tmp_path / "empty", seq_len=L))
    assert "a folder that holds no token file" in one_line_error(error, tmp_path / "empty")
    mixed = stoker.Mixture([stoker.Tokens(p, seq_len=L) for p in shards])
    assert len(loaded(mixed)) == 8


def test_files_plainly_not_raw_tokens_are_one_line_naming_what_they_look_like(tmp_path):
    """Text or JSON, a zip (an .npz), a .npy renamed .bin and an llm.c shard are refused when
    the loader opens, alone or in a Mixture, instead of their bytes read as token ids."""
    tokens = np.arange(100, dtype=np.uint16)
    files = {}
    for extension in (".txt", ".json", ".jsonl", ".csv"):
        files[f"train{extension}"] = f"a {extension} file (text), not token ids"
        (tmp_path / f"train{extension}").write_text('{"text": "hello world"}\n' * 50)
    np.savez(tmp_path / "tokens.npz", ids=tokens)
    files["tokens.npz"] = "a zip archive (an .npz?)"
    np.save(tmp_path / "saved.npy", tokens)
    os.replace(tmp_path / "saved.npy", tmp_path / "renamed.bin")
    files["renamed.bin"] = "a .npy file (numpy's header), not headerless token ids: rename it"
    header = np.zeros(256, np.int32)
    header[:3] = [20240520, 1, len(tokens)]
    (tmp_path / "fineweb_train_000001.bin").write_bytes(header.tobytes() + tokens.tobytes())
    files["fineweb_train_000001.bin"] = "an llm.c shard (a 1024-byte header, magic 20240520)"
    good = stoker.Tokens(write_bin(tmp_path / "good.bin", random_tokens(4 * L + 1)), seq_len=L)
    for name, said in files.items():
        for source in (stoker.Tokens(tmp_path / name, seq_len=8),
                       stoker.Mixture([good, stoker.Tokens(tmp_path / name, seq_len=L)])):
            with pytest.raises(ValueError) as error:
                stoker.Loader(source)
            assert said in one_line_error(error, tmp_path / name)
    # Its tokens after the header, as a .npy, read as they are.
    np.save(tmp_path / "shard.npy", np.fromfile(tmp_path / "fineweb_train_000001.bin",
                                                np.uint16, offset=1024))
    assert [int(x[0]) for x, _ in loaded(stoker.Tokens(tmp_path / "shard.npy", seq_len=8))] == \
        [int(t) for t in tokens[:96:8]]
    # Token ids that happen to spell the magic, in a file of no llm.c header's size: tokens.
    ids = np.concatenate([np.array([20240520 & 0xFFFF, 20240520 >> 16], np.uint16), tokens])
    ids.tofile(tmp_path / "ids.bin")
    assert [int(x[0]) for x, _ in loaded(stoker.Tokens(tmp_path / "ids.bin", seq_len=8))] == \
        [int(t) for t in ids[:96:8]]
