"""stoker.Tokens' whole-document packing (packing="first_fit" / "best_fit", Grain's rules) and
its document_mask, each row against a reference packed here from where documents start, over
seq_len, packing bins, document layouts, file formats, worker counts, ranks and resume points:
every token of the file in exactly one row's input_ids; bad options refused in one line naming
the parameter."""

import numpy as np
import pytest

import stoker
from test_token_boundaries import eos_starts, reference
from token_files import (EOS, documents, eos_file, megatron_documents, resumed_epoch,
                         write_megatron)

PAD = 3
PROMPT_END = 5  # a token id eos_file's documents hold only where a test puts it


def mask_of(segments):
    """The document mask of a sample whose tokens have `segments` (one id per run): causal within
    each run."""
    position = np.arange(len(segments))
    return (segments[:, None] == segments[None, :]) & (position[None, :] <= position[:, None])


def prompt_targets(tokens, starts, end_id):
    """A bool per token and one past the last: whether it is in its document's prompt (from the
    document's first token up to its first `end_id` token), so that a label predicting it is
    masked: within the document, and the document before's last label."""
    masked = np.zeros(len(tokens) + 1, bool)
    bounds = np.flatnonzero(starts[:len(tokens)]).tolist() + [len(tokens)]
    for begin, end in zip(bounds, bounds[1:]):
        ends = np.flatnonzero(tokens[begin:end] == end_id)
        if len(ends):
            masked[begin:begin + ends[0] + 1] = True
    return masked


def packed_reference(tokens, starts, seq_len, bins, rule, prompts=None):
    """Each row's (input_ids, labels, position_ids, segment_ids, cu_seqlens, document_mask), by
    the rules of stoker.Tokens' docstring (Grain's first-fit and best-fit over `bins` rows), the
    labels predicting a token `prompts` marks masked."""
    bounds = np.flatnonzero(starts[:len(tokens)]).tolist() + [len(tokens)]
    pieces = [(s, min(s + seq_len, end), end) for begin, end in zip(bounds, bounds[1:])
              for s in range(begin, end, seq_len)]
    rows, open_rows = [], []
    for piece in pieces:
        size = piece[1] - piece[0]
        room = [seq_len - sum(e - s for s, e, _ in row) for row in open_rows]
        fits = [r for r in range(len(open_rows)) if room[r] >= size]
        if fits:
            r = fits[0] if rule == "first_fit" else min(fits, key=lambda r: (room[r], r))
        else:
            if len(open_rows) == bins:
                rows, open_rows = rows + open_rows, []
            open_rows.append([])
            r = len(open_rows) - 1
        open_rows[r].append(piece)
    padded = np.concatenate([tokens.astype(np.int64), [-1]])
    samples = []
    for row in rows + open_rows:
        ids, labels = np.full(seq_len, PAD), np.full(seq_len, -100)
        positions, segments, cu = np.zeros(seq_len, int), np.zeros(seq_len, int), [0]
        for k, (s, e, end) in enumerate(row):
            at, n = cu[-1], e - s
            ids[at:at + n] = tokens[s:e]
            after = np.arange(s + 1, e + 1)
            kept = (after < end) & ~(prompts[after] if prompts is not None else False)
            labels[at:at + n] = np.where(kept, padded[after], -100)
            positions[at:at + n] = np.arange(n)
            segments[at:at + n] = k + 1
            cu.append(at + n)
        samples.append((ids, labels, positions, segments,
                        np.array(cu + ([seq_len] if cu[-1] < seq_len else [])),
                        mask_of(segments)))
    return samples


def packed_source(path, seq_len, rule="first_fit", bins=3, **options):
    return stoker.Tokens(path, seq_len=seq_len, packing=rule, packing_bins=bins, pad_id=PAD,
                         return_cu_seqlens=True, **options)


def delivered(loader):
    """Every row the loader delivers, as packed_reference() gives them (the mask where asked)."""
    rows = []
    for batch in loader:
        masks = batch.get("document_mask")
        valid = batch.get("valid", [True] * len(batch["input_ids"]))  # last_batch="pad"'s
        for k in (k for k in range(len(batch["input_ids"])) if valid[k]):
            row = tuple(batch[f][k].numpy() for f in (
                "input_ids", "labels", "position_ids", "segment_ids", "cu_seqlens"))
            rows.append(row + ((masks[k].numpy(),) if masks is not None else ()))
    return rows


def loader(source, **options):
    """A loader of `source`; on several ranks, their last batches padded (the padding told by
    the batch's "valid")."""
    options.setdefault("shuffle", True)
    if options.get("world_size", 1) > 1:
        options["last_batch"] = "pad"
    return stoker.Loader(source, batch_size=options.pop("batch_size", 5), batch_format="dict",
                         seed=11, **options)


def keys(rows, fields=6):
    """The rows as sorted hashable keys (their first `fields` fields), for multisets."""
    return sorted(tuple(f.astype(np.int64).tobytes() for f in row[:fields]) for row in rows)


def same(got, want, fields=6):
    """The rows equal, in order, field by field."""
    assert len(got) == len(want)
    for row, (g, w) in enumerate(zip(got, want)):
        for f in range(fields):
            assert np.array_equal(g[f], w[f]), (row, f, g[f], w[f])


def assert_every_token_once(rows, tokens):
    dealt = np.concatenate([ids[segments > 0] for ids, _, _, segments, *_ in rows])
    assert np.array_equal(np.sort(dealt), np.sort(tokens.astype(np.int64)))


@pytest.mark.parametrize("rule", ["first_fit", "best_fit"])
@pytest.mark.parametrize("layout", ["short", "mixed", "long", "one"])
@pytest.mark.parametrize("seq_len, bins", [(1, 1), (4, 3), (16, 64)])
def test_rows_match_the_reference_and_every_token_is_in_one_row(tmp_path, rule, layout,
                                                                seq_len, bins):
    rng = np.random.default_rng(seq_len * 7 + len(layout) + len(rule))
    path = tmp_path / "train.bin"
    tokens = eos_file(path, documents(rng, 30 * seq_len + seq_len // 2 + 1, layout, seq_len),
                      rng)
    want = packed_reference(tokens, eos_starts(tokens), seq_len, bins, rule)
    source = packed_source(path, seq_len, rule, bins, eos_id=EOS, return_document_mask=True)
    assert len(source) == len(want)
    assert [f["name"] for f in source.fields] == [
        "input_ids", "labels", "position_ids", "segment_ids", "cu_seqlens", "document_mask"]
    got = delivered(loader(source, shuffle=False))
    same(got, want)
    assert got[0][5].dtype == np.bool_
    assert_every_token_once(got, tokens)
    # Shuffled, over workers and ranks: each row exactly once.
    for workers in (0, 2):
        for world in (1, 2):
            union = [row for r in range(world) for row in
                     delivered(loader(source, rank=r, world_size=world, workers=workers))]
            assert keys(union) == keys(want)


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("taken", [1, 4])
def test_a_resume_delivers_the_rest_of_the_epoch_also_on_more_ranks(tmp_path, workers, taken):
    rng = np.random.default_rng(taken)
    path = tmp_path / "train.bin"
    tokens = eos_file(path, documents(rng, 60 * 8 + 3, "mixed", 8), rng)
    source = packed_source(path, 8, "best_fit", 4, eos_id=EOS)
    want = packed_reference(tokens, eos_starts(tokens), 8, 4, "best_fit")
    whole, head, rest, state = resumed_epoch(lambda: loader(source, workers=workers), delivered,
                                             taken)
    same(head + rest, whole, 5)
    # The state taken on one rank, resumed on two: the rest of the epoch between them.
    rest = []
    for rank in range(2):
        elastic = loader(source, workers=workers, rank=rank, world_size=2)
        elastic.load_state_dict(state)
        rest += delivered(elastic)
    assert keys(head + rest, 5) == keys(want, 5)
    assert_every_token_once(head + rest, tokens)


@pytest.mark.parametrize("gap", [0, 3])
def test_megatron_documents_from_its_index(tmp_path, gap):
    # Documents from the index alone (token_files.megatron_documents); gap 3: the sequences are
    # no run of the file, read into memory.
    prefix, tokens, starts, offsets, index = megatron_documents(tmp_path, gap)
    for seq_len, rule in ((5, "first_fit"), (16, "best_fit"), (64, "first_fit")):
        want = packed_reference(tokens, starts, seq_len, 3, rule)
        source = packed_source(prefix, seq_len, rule, return_document_mask=True)
        same(delivered(loader(source, shuffle=False)), want)
        assert keys(delivered(loader(source, workers=2))) == keys(want)
    # eos_id given: its tokens say where documents end (the array scanned at open), not the index.
    with_eos = np.where(tokens % 5 == 0, EOS, tokens)
    write_megatron(tmp_path / "eos", np.split(with_eos, offsets[1:-1]), index, gap)
    want = packed_reference(with_eos, eos_starts(with_eos), 16, 3, "best_fit")
    got = delivered(loader(packed_source(tmp_path / "eos", 16, "best_fit", eos_id=EOS),
                           shuffle=False))
    same(got, want, 5)


def test_units_and_file_formats_uint32_and_npy(tmp_path):
    # About 2.5 units of rows (a unit: the rows of 2^20 tokens), documents across their edges.
    rng = np.random.default_rng(5)
    seq_len = 1000
    wide = eos_file(tmp_path / "wide.bin", documents(rng, 5 * 2**19 + 7, "mixed", seq_len), rng,
                    np.uint32)
    want = packed_reference(wide, eos_starts(wide), seq_len, 8, "first_fit")
    source = packed_source(tmp_path / "wide.bin", seq_len, bins=8, eos_id=EOS, dtype="uint32")
    got = delivered(loader(source, shuffle=False, batch_size=64, workers=2))
    same(got, want, 5)
    assert_every_token_once(got, wide)
    np.save(tmp_path / "t.npy", wide[:801].astype(np.int32))
    npy = delivered(loader(packed_source(tmp_path / "t.npy", 16, eos_id=EOS), shuffle=False))
    same(npy, packed_reference(wide[:801], eos_starts(wide[:801]), 16, 3, "first_fit"), 5)


@pytest.mark.parametrize("seq_len", [1, 8, 33])
def test_document_mask_of_concatenate_and_split_samples(tmp_path, seq_len):
    rng = np.random.default_rng(seq_len)
    path = tmp_path / "train.bin"
    tokens = eos_file(path, documents(rng, 20 * seq_len + 1, "mixed", seq_len), rng)
    want = reference(tokens, eos_starts(tokens), seq_len)
    source = stoker.Tokens(path, seq_len=seq_len, eos_id=EOS, return_document_mask=True)
    assert [f["name"] for f in source.fields] == ["input_ids", "labels", "document_mask"]
    masks = [m.numpy() for batch in loader(source, shuffle=False) for m in batch["document_mask"]]
    assert len(masks) == len(want)
    for mask, (_, _, _, cu) in zip(masks, want):
        assert mask.dtype == np.bool_
        assert np.array_equal(mask, mask_of(np.searchsorted(cu, np.arange(seq_len), "right")))


def test_bad_packing_options_are_one_line_errors_naming_the_parameter(tmp_path):
    path = tmp_path / "t.bin"
    (np.arange(100, dtype=np.uint16) % 9).tofile(path)

    def refused(words, error=ValueError, **options):
        with pytest.raises(error) as raised:
            stoker.Loader(stoker.Tokens(path, seq_len=4, **options))
        message = str(raised.value)
        assert "\n" not in message and all(w in message for w in words), message

    refused([str(path), "pad_id 65536", "uint16"], eos_id=EOS, packing="first_fit",
            pad_id=65536)
    for name in ("pad_id", "prompt_end_id"):
        for bad in (-1, 2.5, True):
            with pytest.raises(ValueError, match=f"{name} {bad!r} is not a token id"):
                stoker.Tokens(path, eos_id=EOS, packing="first_fit", **{name: bad})
    refused(["packing_bins"], eos_id=EOS, packing="best_fit", packing_bins=0)
    with pytest.raises(ValueError, match="packing_bins 2.5 is not an integer"):
        stoker.Tokens(path, eos_id=EOS, packing="best_fit", packing_bins=2.5)
    refused(["packing"], eos_id=EOS, packing="next_fit")
    refused([str(path), "packing", "eos_id"], packing="first_fit")
    with pytest.raises(ValueError, match="return_document_mask") as raised:
        stoker.Loader(stoker.Tokens(path, seq_len=9000, eos_id=EOS, packing="first_fit",
                                    return_document_mask=True))
    assert "\n" not in str(raised.value)
    refused([str(path), "prompt_end_id 7", "other than eos_id"], eos_id=EOS, prompt_end_id=EOS)
    refused(["prompt_end_id 65536"], eos_id=EOS, prompt_end_id=65536)
    refused([str(path), "prompt_end_id", "needs document boundaries"], prompt_end_id=5)
    with pytest.raises(ValueError, match="pad_id 0 given, but packing is 'none'"):
        stoker.Tokens(path, pad_id=0)


@pytest.mark.parametrize("packing", ["none", "first_fit", "best_fit"])
def test_prompt_labels_are_masked_in_samples_and_rows(tmp_path, packing):
    # Documents with 0 to 2 prompt-end tokens (PROMPT_END) each: only a document's first ends
    # its prompt; one without any has none.
    rng = np.random.default_rng(len(packing))
    path = tmp_path / "sft.bin"
    tokens = eos_file(path, documents(rng, 40 * 8 + 5, "mixed", 8), rng)
    marked = rng.random(len(tokens)) < 0.08
    tokens[marked & (tokens != EOS)] = PROMPT_END
    tokens.tofile(path)
    starts = eos_starts(tokens)
    prompts = prompt_targets(tokens, starts, PROMPT_END)
    assert prompts.any() and (~prompts[1:] & (tokens == PROMPT_END)).any()
    if packing == "none":
        def got(loader):
            return [(x.tolist(), y.tolist()) for batch in loader
                    for x, y in zip(batch["input_ids"], batch["labels"])]
        # Without the boundaries masked, a document's last label predicts the next one's first
        # token, a prompt token where that document has a prompt: masked too.
        for boundaries in (False, True):
            want = [(ids, [-100 if prompts[i * 8 + j + 1] else
                           y if boundaries else int(tokens[i * 8 + j + 1])
                           for j, y in enumerate(labels)])
                    for i, (ids, labels, _, _) in enumerate(reference(tokens, starts, 8))]
            source = stoker.Tokens(path, seq_len=8, eos_id=EOS, prompt_end_id=PROMPT_END,
                                   mask_boundary_labels=boundaries)
            assert got(loader(source, shuffle=False)) == want, boundaries
        union = [s for r in range(2) for s in got(loader(source, rank=r, world_size=2,
                                                           workers=2))]
        assert sorted(map(repr, union)) == sorted(map(repr, want))
        return
    want = packed_reference(tokens, starts, 8, 3, packing, prompts)
    source = packed_source(path, 8, packing, eos_id=EOS, prompt_end_id=PROMPT_END)
    same(delivered(loader(source, shuffle=False)), want, 5)
    union = [row for r in range(2) for row in
             delivered(loader(source, rank=r, world_size=2, workers=2))]
    assert keys(union, 5) == keys(want, 5)


def test_prompts_of_megatron_documents_read_into_memory(tmp_path):
    prefix, tokens, starts, offsets, index = megatron_documents(tmp_path, 3)
    tokens = np.where(tokens % 7 == 0, PROMPT_END, tokens)
    write_megatron(tmp_path / "sft", np.split(tokens, offsets[1:-1]), index, 3)
    prompts = prompt_targets(tokens, starts, PROMPT_END)
    want = packed_reference(tokens, starts, 16, 3, "best_fit", prompts)
    source = packed_source(tmp_path / "sft", 16, "best_fit", prompt_end_id=PROMPT_END)
    same(delivered(loader(source, shuffle=False)), want, 5)


def test_packed_sources_mix_as_any_sources(tmp_path):
    # Each row a mixture delivers is one of its source's rows, its mask bool as theirs.
    rng = np.random.default_rng(2)
    parts, want = [], []
    for k in range(2):
        tokens = eos_file(tmp_path / f"{k}.bin", documents(rng, 200, "mixed", 8), rng)
        parts.append(packed_source(tmp_path / f"{k}.bin", 8, eos_id=EOS,
                                   return_document_mask=True))
        want += packed_reference(tokens, eos_starts(tokens), 8, 3, "first_fit")
    rows = delivered(loader(stoker.Mixture(parts, weights=[1, 3])))
    assert rows and rows[0][5].dtype == np.bool_
    assert set(keys(rows)) <= set(keys(want))


def test_a_state_restores_only_into_the_same_rows(tmp_path):
    # Documents of 5, 6, 4 and 3 tokens in rows of 10: two rows either way, not the same ones.
    path = tmp_path / "t.bin"
    np.array([1, 2, 3, 4, EOS, 1, 2, 3, 4, 5, EOS, 1, 2, 3, EOS, 1, 2, EOS], np.uint16).tofile(path)
    first = loader(packed_source(path, 10, "first_fit", eos_id=EOS), batch_size=1)
    next(iter(first))
    again = loader(packed_source(path, 10, "first_fit", eos_id=EOS), batch_size=1)
    again.load_state_dict(first.state_dict())
    assert len(delivered(again)) == 1
    other = loader(packed_source(path, 10, "best_fit", eos_id=EOS), batch_size=1)
    with pytest.raises(ValueError, match=r"state_dict\['source'\] packing is 'first_fit'") \
            as raised:
        other.load_state_dict(first.state_dict())
    assert str(path) in str(raised.value) and "\n" not in str(raised.value)
    assert len(delivered(other)) == 2  # still usable, from its own start
