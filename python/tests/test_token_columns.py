"""stoker.Tokens on Parquet and Arrow files whose column lists a document's token ids a row
(Hugging Face datasets' tokenized input_ids): the samples are numpy's concatenation of the rows
split as for a token file, with the rows as documents; uncompressed Arrow read in place (nothing
in the cache), Parquet and compressed Arrow decoded once into the cache (a later open decodes
nothing, a changed file is decoded again, replacing its copy), uint16 where every id fits; bad
tables refused in one line naming the file and row, nothing left in the cache."""

import os
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import stoker
from parquet_build import needs_parquet

pytestmark = needs_parquet

L = 16


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """The cache folder the loaders use; its token-columns folder returned."""
    monkeypatch.setenv("STOKER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "token-columns"


def documents(seed, count, vocab=50257):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, vocab, int(rng.integers(0, 3 * L)), dtype=np.int64)
            for _ in range(count)]


def table(docs, item=pa.int32(), **columns):
    return pa.table({"input_ids": pa.array([list(map(int, d)) for d in docs],
                                           pa.list_(item)), **columns})


def write_parquet(path, docs, item=pa.int32(), row_group_size=7, **options):
    pq.write_table(table(docs, item), path, row_group_size=row_group_size, **options)
    return path


def loaded(source, fields=("input_ids", "labels"), **options):
    """Every sample's `fields` in order, as numpy arrays."""
    loader = stoker.Loader(source, batch_size=4, shuffle=False, batch_format="dict", **options)
    return [tuple(batch[f][k].numpy() for f in fields)
            for batch in loader for k in range(len(batch["input_ids"]))]


def expected(docs, fields=("input_ids", "labels")):
    """Concatenate and split: input_ids, labels and position_ids (from each document's start
    in the sample, or the sample's first token) of every sample."""
    tokens = np.concatenate(docs)
    starts = np.zeros(len(tokens), np.int64)
    at = 0
    for d in docs:
        starts[at:at + len(d)] = at
        at += len(d)
    samples = []
    for i in range((len(tokens) - 1) // L):
        span = np.arange(i * L, (i + 1) * L)
        made = {"input_ids": tokens[span], "labels": tokens[span + 1],
                "position_ids": span - np.maximum(starts[span], i * L)}
        samples.append(tuple(made[f] for f in fields))
    return samples


def same(got, want):
    assert len(got) == len(want) > 0
    for g, w in zip(got, want):
        for a, b in zip(g, w):
            np.testing.assert_array_equal(a, b)


def copies(cache):
    """The decoded copies in the cache: {folder name: tokens.bin's (mtime_ns, size)}."""
    if not cache.exists():
        return {}
    return {p.name: ((p / "tokens.bin").stat().st_mtime_ns, (p / "tokens.bin").stat().st_size)
            for p in cache.iterdir()}


def test_parquet_files_and_row_groups_are_the_rows_concatenated_and_split(tmp_path, cache):
    folder = tmp_path / "data"
    folder.mkdir()
    docs = [documents(1, 30), documents(2, 25)]
    write_parquet(folder / "train-00001-of-00002.parquet", docs[1], pa.int64())
    write_parquet(folder / "train-00000-of-00002.parquet", docs[0])
    fields = ("input_ids", "labels", "position_ids")
    want = expected(docs[0] + docs[1], fields)
    for path in (folder, folder / "*.parquet"):
        got = loaded(stoker.Tokens(path, seq_len=L, return_position_ids=True), fields)
        same(got, want)
    # Named by a folder and by a glob: one file set, one copy, of uint16 ids.
    (size,) = [s for _, s in copies(cache).values()]
    assert size == 2 * sum(map(len, docs[0] + docs[1]))


def test_a_later_open_decodes_nothing_and_a_changed_file_is_decoded_again(tmp_path, cache):
    path = write_parquet(tmp_path / "t.parquet", documents(3, 40))
    same(loaded(stoker.Tokens(path, seq_len=L)), expected(documents(3, 40)))
    first = copies(cache)
    assert len(first) == 1
    # Its bytes zeroed, its size and time kept: the copy is read, the file not decoded again.
    stat, data = os.stat(path), bytearray(path.read_bytes())
    data[4:len(data) // 2] = bytes(len(data) // 2 - 4)
    path.write_bytes(data)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    same(loaded(stoker.Tokens(path, seq_len=L)), expected(documents(3, 40)))
    assert copies(cache) == first
    write_parquet(path, documents(4, 50))
    same(loaded(stoker.Tokens(path, seq_len=L)), expected(documents(4, 50)))
    again = copies(cache)
    assert len(again) == 1 and again != first  # the stale copy replaced


def test_ids_above_uint16_are_kept_whole_with_or_without_statistics(tmp_path, cache):
    small, large = documents(5, 20), documents(6, 20, vocab=200_000)
    for stats in (True, False):
        folder = tmp_path / f"stats-{stats}"
        folder.mkdir()
        write_parquet(folder / "a.parquet", small, write_statistics=stats)
        write_parquet(folder / "b.parquet", large, pa.int64(), write_statistics=stats)
        same(loaded(stoker.Tokens(folder, seq_len=L)), expected(small + large))
    assert all(s == 4 * sum(map(len, small + large)) for _, s in copies(cache).values())


def write_stream(path, docs, item=pa.int32(), chunk=9, compression=None):
    with ipc.new_stream(path, table(docs, item).schema,
                        options=ipc.IpcWriteOptions(compression=compression)) as out:
        for batch in table(docs, item).to_batches(max_chunksize=chunk):
            out.write_batch(batch)
    return path


def test_arrow_stream_and_file_formats_are_read_in_place(tmp_path, cache):
    docs = documents(7, 40)
    stream = write_stream(tmp_path / "data-00000-of-00001.arrow", docs)
    file = tmp_path / "feather.arrow"
    with ipc.new_file(file, table(docs, pa.int64()).schema) as out:
        out.write_table(table(docs, pa.int64()), max_chunksize=11)
    one = write_stream(tmp_path / "one.arrow", docs, chunk=len(docs))  # one run: mapped
    fields = ("input_ids", "labels", "position_ids")
    for path in (stream, file, one):
        same(loaded(stoker.Tokens(path, seq_len=L)), expected(docs))
        # The rows are the documents, as a copy's Megatron index says.
        same(loaded(stoker.Tokens(path, seq_len=L, return_position_ids=True), fields),
             expected(docs, fields))
    assert not cache.exists()  # no copy


def test_several_arrow_files_are_one_array_read_in_place(tmp_path, cache):
    folder = tmp_path / "saved"
    folder.mkdir()
    docs = [documents(12, 30), documents(13, 1), documents(14, 25)]
    for i, d in enumerate(docs):
        write_stream(folder / f"data-0000{i}-of-00003.arrow", d, pa.uint16(), chunk=4)
    fields = ("input_ids", "labels", "position_ids")
    want = expected(docs[0] + docs[1] + docs[2], fields)
    for path in (folder, folder / "*.arrow"):
        same(loaded(stoker.Tokens(path, seq_len=L, return_position_ids=True), fields), want)
    got = loaded(stoker.Tokens(folder, seq_len=L, packing="first_fit"),
                 ("input_ids", "segment_ids"))
    tokens = np.concatenate([x[s > 0] for x, s in got])
    np.testing.assert_array_equal(np.sort(tokens), np.sort(np.concatenate(sum(docs, []))))
    assert not cache.exists()


def test_compressed_or_mixed_arrow_is_decoded_into_the_cache(tmp_path, cache):
    docs = documents(15, 40)
    for compression in ("lz4", "zstd"):
        path = write_stream(tmp_path / f"{compression}.arrow", docs, compression=compression)
        same(loaded(stoker.Tokens(path, seq_len=L)), expected(docs))
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    write_stream(mixed / "a.arrow", docs[:20])
    write_stream(mixed / "b.arrow", docs[20:], pa.int64())  # another type: one copy of both
    same(loaded(stoker.Tokens(mixed, seq_len=L)), expected(docs))
    assert len(copies(cache)) == 3


def test_packing_puts_every_token_in_one_row(tmp_path, cache):
    docs = documents(8, 60)
    path = write_parquet(tmp_path / "t.parquet", docs)
    got = loaded(stoker.Tokens(path, seq_len=L, packing="best_fit"),
                 ("input_ids", "segment_ids"))
    tokens = np.concatenate([x[s > 0] for x, s in got])
    np.testing.assert_array_equal(np.sort(tokens), np.sort(np.concatenate(docs)))


def test_a_mixture_with_a_bin_file(tmp_path, cache):
    docs = documents(9, 40)
    path = write_parquet(tmp_path / "t.parquet", docs)
    bin_tokens = np.random.default_rng(0).integers(0, 65536, 20 * L + 1, dtype=np.uint16)
    bin_tokens.tofile(tmp_path / "t.bin")
    mixture = stoker.Mixture([stoker.Tokens(path, seq_len=L),
                              stoker.Tokens(tmp_path / "t.bin", seq_len=L)], until="all")
    got = {x.tobytes() + y.tobytes() for x, y in loaded(mixture)}
    want = {x.tobytes() + y.tobytes()
            for x, y in expected(docs) + expected([bin_tokens.astype(np.int64)])}
    assert got == want


def refused(path, error=stoker.Error, **options):
    with pytest.raises(error) as raised:
        stoker.Loader(stoker.Tokens(path, seq_len=L, **options))
    message = str(raised.value)
    assert str(path) in message and "\n" not in message, message
    return message


def test_bad_tables_are_one_line_errors_and_leave_nothing_in_the_cache(tmp_path, cache):
    ok = [np.arange(40)] * 3
    missing = tmp_path / "missing.parquet"
    pq.write_table(pa.table({"text": ["a"]}), missing)
    assert "no column 'input_ids' (its columns: text)" in refused(missing, ValueError)
    floats = tmp_path / "floats.parquet"
    pq.write_table(pa.table({"input_ids": pa.array([[1.5]], pa.list_(pa.float32()))}), floats)
    assert "not a list of integer token ids" in refused(floats, ValueError)
    negative = write_parquet(tmp_path / "neg.parquet", ok * 3 + [np.array([1, -3])])
    assert "row 9 (row group 1): token id -3 at 1 is negative" in refused(negative)
    big = tmp_path / "big.parquet"
    pq.write_table(table([[1], [2**63]], pa.uint64()), big)
    assert "row 1 (row group 0): token id 9223372036854775808 at 0 is beyond int64" in \
        refused(big)
    nulls = tmp_path / "null.parquet"
    pq.write_table(pa.table({"input_ids": pa.array([[1, 2], None], pa.list_(pa.int32()))}), nulls)
    assert "row 1 (row group 0): a null row" in refused(nulls)
    pq.write_table(pa.table({"input_ids": pa.array([[1, None]], pa.list_(pa.int32()))}), nulls)
    assert "row 0 (row group 0): a null token id at 1" in refused(nulls)
    cut = write_parquet(tmp_path / "cut.parquet", ok)
    cut.write_bytes(cut.read_bytes()[:-30])
    assert "not a Parquet file" in refused(cut)
    zeroed = write_parquet(tmp_path / "zeroed.parquet", ok)
    data = bytearray(zeroed.read_bytes())
    data[4:40] = bytes(36)  # the first page's header
    zeroed.write_bytes(data)
    assert "row group 0: " in refused(zeroed)
    arrow = tmp_path / "bad.arrow"
    arrow.write_bytes(b"not arrow at all")
    assert "not an Arrow file" in refused(arrow)
    arrow_nulls = tmp_path / "null.arrow"
    with ipc.new_stream(arrow_nulls, pa.schema({"input_ids": pa.list_(pa.int32())})) as out:
        out.write_table(pa.table({"input_ids": pa.array([[1, 2], None], pa.list_(pa.int32()))}))
    assert "row 1 (record batch 0): a null row" in refused(arrow_nulls)
    two = write_stream(tmp_path / "two.arrow", [np.array([1, 2, 3]), np.array([4, 5, 6])])
    data = two.read_bytes()
    two.write_bytes(data[:-8 - 6])  # cut in the ids (before the 8-byte end of stream)
    assert "record batch 0" in refused(two)
    offsets = np.array([0, 3, 6], np.int32).tobytes()
    two.write_bytes(data.replace(offsets, np.array([0, 3, 60], np.int32).tobytes()))
    assert "record batch 0): damaged column data" in refused(two)
    assert copies(cache) == {}
    url = "https://example.com/data/train-00000-of-00001.parquet"
    with pytest.raises(stoker.Error, match="read from local paths only, not URLs"):
        stoker.Loader(stoker.Tokens(url, seq_len=L))
    short = write_parquet(tmp_path / "short.parquet", [np.arange(L)])
    assert "fewer than seq_len + 1" in refused(short, ValueError)
    assert refused(short, ValueError, column="text").endswith("no column 'text' (its columns: "
                                                              "input_ids)")


PEAK = """
import sys
path, warm = sys.argv[1:3]
sys.path[:0] = sys.argv[3:]
import stoker
stoker.Loader(stoker.Tokens(warm, seq_len=16))  # a process's first loader's setup done


def kb(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])


open("/proc/self/clear_refs", "w").write("5")  # VmHWM from here
before = kb("VmRSS")
try:
    stoker.Loader(stoker.Tokens(path, seq_len=16))
    print("opened")
except stoker.Error as error:
    print(error)
print(kb("VmHWM") - before)
"""


def refused_in_a_child(path, tmp_path, cache, bombed):
    """stoker's error opening token column file `path` (of a few KB, whose reading at once would
    take `bombed`) in a new process, its first loader's setup done before; checked: its peak
    memory grew by less than 64 MiB, nothing left in the cache."""
    assert path.stat().st_size < 64 << 10
    warm = tmp_path / "warm.bin"
    np.arange(4 * L, dtype=np.uint16).tofile(warm)
    run = subprocess.run([sys.executable, "-c", PEAK, str(path), str(warm), *sys.path],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    message, grown = run.stdout.splitlines()
    assert int(grown) < 64 << 10, f"{grown} KB more at the peak than before ({bombed})"
    assert copies(cache) == {}
    return message


def test_a_row_group_decoding_to_far_more_than_its_bytes_may_hold_is_refused(tmp_path, cache):
    """A file of a few hundred bytes whose one row's dictionary and RLE runs decode to 2^27 - 16
    int64 ids (1 GiB, token_bombs.py): one line naming the file, the row group and the limit
    (2^24 ids where the row group holds so few bytes), in a process whose peak memory grows by
    far less than the ids would take, nothing left in the cache; a row of 2^24 ids, the limit,
    reads as pyarrow reads it (issue 64)."""
    from token_bombs import write_bomb
    bomb = tmp_path / "bomb.parquet"
    write_bomb(bomb, (1 << 27) - 16)
    assert bomb.stat().st_size < 1000
    message = refused_in_a_child(bomb, tmp_path, cache, "the ids: 1 GiB")
    assert message == (f"{bomb}: row group 0 decodes to more than 16777216 token ids, more than "
                       "its 70 bytes in the file may hold (8192 a byte, at least 16777216): a "
                       "decompression bomb or a damaged file")
    under = tmp_path / "under.parquet"
    write_bomb(under, 1 << 24)
    ids = pq.read_table(under).column("input_ids").combine_chunks().values.to_numpy()
    elsewhere = pa.allocate_buffer(3 << 29)  # Arrow's pool's, untouched: not this read's 1 GiB
    loader = stoker.Loader(stoker.Tokens(under, seq_len=1 << 16), batch_size=8, shuffle=False,
                           batch_format="dict")
    del elsewhere
    got = np.concatenate([batch["input_ids"].numpy().ravel() for batch in loader])
    assert len(got) == (len(ids) - 1) // (1 << 16) * (1 << 16) > 0  # samples of seq_len + 1
    np.testing.assert_array_equal(got, ids[:len(got)])


def test_a_page_whose_header_claims_more_than_a_gib_is_refused_before_it_is_read(tmp_path, cache):
    """A Parquet page header claiming 1 GiB more than its page holds (token_bombs.py): one line
    naming the file, the row group, the bytes asked and the cap; Arrow's buffer for the page never
    allocated (the process's peak grows by far less); nothing left in the cache (issue 64)."""
    from token_bombs import write_page_claim
    claim = tmp_path / "claim.parquet"
    claimed = write_page_claim(claim)
    message = refused_in_a_child(claim, tmp_path, cache, "the claim: 1.1 GiB")
    asked = int(message.split(" takes ")[1].split()[0]) if " takes " in message else 0
    assert claimed <= asked < claimed + 64, message  # Arrow's buffer: the claim, 64-byte padded
    assert message == (f"{claim}: row group 0: reading it takes {asked} bytes at once, more "
                       f"than the {1 << 30} stoker gives one read: a decompression bomb or a "
                       "damaged file (or write smaller pages)")


def test_an_arrow_batch_decompressing_to_more_than_a_gib_is_refused(tmp_path, cache):
    """An Arrow IPC file of a few KB whose one ZSTD record batch decompresses to 1 GiB + 8 MiB of
    ids (token_bombs.py): one line naming the file, the record batch, the bytes asked and the
    cap, in a process whose peak memory grows by far less; nothing left in the cache (issue
    64)."""
    from token_bombs import write_arrow_bomb
    bomb = tmp_path / "bomb.arrow"
    ids_bytes = write_arrow_bomb(bomb)
    message = refused_in_a_child(bomb, tmp_path, cache, "the ids: 1 GiB")
    assert message == (f"{bomb}: record batch 0: reading it takes {ids_bytes} bytes at once, more "
                       f"than the {1 << 30} stoker gives one read: a decompression bomb or a "
                       "damaged file (or write smaller record batches)")


def test_a_file_changed_after_the_loader_opened_fails_its_batch(tmp_path, cache):
    parquet = write_parquet(tmp_path / "t.parquet", documents(10, 40))
    folder = tmp_path / "arrow"
    folder.mkdir()
    write_stream(folder / "a.arrow", documents(10, 20))
    write_stream(folder / "b.arrow", documents(11, 20))
    for path, changed in ((parquet, parquet), (folder, folder / "b.arrow")):
        loader = stoker.Loader(stoker.Tokens(path, seq_len=L), batch_size=4,
                               batch_format="dict", shuffle=False)
        stat = os.stat(changed)
        os.utime(changed, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
        with pytest.raises(stoker.Error) as raised:
            next(iter(loader))
        assert f"{changed}: changed since it was opened" in str(raised.value)


def test_hugging_face_datasets_saved_to_disk_and_to_parquet(tmp_path, cache):
    datasets = pytest.importorskip("datasets")
    text = [f"document {i} " * (i % 7 + 1) for i in range(50)]
    tokenized = datasets.Dataset.from_dict({"text": text}).map(
        lambda rows: {"input_ids": [[ord(c) for c in t] for t in rows["text"]]},
        batched=True, remove_columns=["text"])
    tokenized.save_to_disk(tmp_path / "saved", num_shards=2)
    tokenized.to_parquet(tmp_path / "train.parquet")
    want = expected([np.array([ord(c) for c in t]) for t in text])
    same(loaded(stoker.Tokens(tmp_path / "saved", seq_len=L)), want)
    assert not cache.exists()  # save_to_disk's files read in place
    same(loaded(stoker.Tokens(tmp_path / "train.parquet", seq_len=L)), want)
    assert len(copies(cache)) == 1


OPEN = """
import os, sys, time
path, warm, ready, go = sys.argv[1:5]
sys.path[:0] = sys.argv[5:]
import stoker
stoker.Loader(stoker.Tokens(warm, seq_len=16))  # a process's first loader's setup done
open(ready, "w").close()
while not os.path.exists(go):  # all start decoding together
    time.sleep(0.001)
stoker.Loader(stoker.Tokens(path, seq_len=16))
"""


def test_processes_decoding_at_once_leave_one_whole_copy(tmp_path, cache):
    docs = documents(11, 30000)
    path = write_parquet(tmp_path / "t.parquet", docs, row_group_size=1000)
    warm, go = tmp_path / "warm.bin", tmp_path / "go"
    np.arange(4 * L, dtype=np.uint16).tofile(warm)
    ready = [tmp_path / f"ready-{i}" for i in range(3)]
    runs = [subprocess.Popen([sys.executable, "-c", OPEN, str(path), str(warm), str(r), str(go),
                              *sys.path], stderr=subprocess.PIPE, text=True) for r in ready]
    while not all(r.exists() for r in ready) and all(run.poll() is None for run in runs):
        time.sleep(0.01)
    go.touch()
    for run in runs:
        assert run.wait(timeout=120) == 0, run.stderr.read()
    assert len(copies(cache)) == 1  # and no temporary
    same(loaded(stoker.Tokens(path, seq_len=L)), expected(docs))
