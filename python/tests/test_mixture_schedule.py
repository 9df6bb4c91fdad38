"""stoker.Mixture's weight schedule (docs/DESIGN.md contract 13): the weights change at given
samples (or steps) of the run, each piece of an epoch between changes holds exactly its share,
and a state resumes exactly, only into the same schedule; weights as shares of tokens; each
source's samples and tokens delivered in loader.stats()."""

import numpy as np
import pytest

import stoker
from test_mixture import labels, write_source
from token_files import EOS


@pytest.fixture
def parts(tmp_path):
    return (write_source(tmp_path / "a", 40, 0), write_source(tmp_path / "b", 100, 1000))


# Weights 3:1 from the start, 1:3 from the run's sample 50; epochs of 40.
def scheduled(parts, schedule=((50, [1, 3]),), schedule_in="samples", **options):
    options.setdefault("batch_size", 5)
    return stoker.Loader(stoker.Mixture(list(parts), weights=[3, 1], samples_per_epoch=40,
                                        schedule=list(schedule), schedule_in=schedule_in),
                         seed=4, batch_format="dict", **options)


def run(loader, epochs=3):
    """The labels of `epochs` epochs, one after another."""
    got = []
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        got += labels(loader)
    return got


def test_the_proportions_change_where_the_schedule_says(parts):
    got = run(scheduled(parts))
    # (from, to, samples of a): a piece per segment and epoch; 10 at 3:1 is 7.5 and 2.5, the
    # tie to the first source, whose half sample over is carried into the epoch's next piece:
    # 30 at 1:3 is 7.5 - 0.5 and 22.5 + 0.5.
    for start, end, of_a in ((0, 40, 30), (40, 50, 8), (50, 80, 7), (80, 120, 10)):
        piece = got[start:end]
        assert sum(x < 1000 for x in piece) == of_a, (start, end)
    # Each source goes on through its own epochs across the change: a's 40 once each, then
    # its next epoch.
    a = [x for x in got if x < 1000]
    assert sorted(a[:40]) == list(range(40)) and len(set(a[40:])) == len(a) - 40
    assert len(set(x for x in got if x >= 1000)) == len(got) - len(a)  # b's 100 not spent


def test_a_schedule_in_steps_is_in_the_loaders_global_batch(parts):
    # Step 5 of batches of 5 on each of 2 ranks is the run's sample 50.
    steps = scheduled(parts, schedule=((5, [1, 3]),), schedule_in="steps", world_size=2)
    assert "change_at=[50]" in steps.state_dict()["order"]
    samples = scheduled(parts, world_size=2)
    assert run(steps) == run(samples)


def test_a_state_mid_segment_resumes_exactly_and_another_schedule_is_refused(parts):
    whole = run(scheduled(parts))
    first = scheduled(parts, workers=0)
    first.set_epoch(0)
    taken = labels(first)
    first.set_epoch(1)
    iterator = iter(first)
    taken += [int(x) for _ in range(3) for x in next(iterator)["label"]]  # to sample 55
    state = first.state_dict()
    resumed = scheduled(parts, workers=3)
    resumed.load_state_dict(state)
    rest = labels(resumed)
    resumed.set_epoch(2)
    assert taken + rest + labels(resumed) == whole
    other = scheduled(parts, schedule=((60, [1, 3]),))
    with pytest.raises(ValueError, match=r"^state_dict\['order'\] is .*change_at=\[50\]"):
        other.load_state_dict(state)
    other.set_epoch(0)
    assert len(labels(other)) == 40  # the refused state left it usable


@pytest.mark.parametrize("resume", [(3, 2), (1, 4)])
def test_ranks_resumed_on_another_world_size_deliver_the_rest_once(parts, resume):
    """N ranks take 2 batches of 2 of epoch 1 (to its sample 52, past the change at 50, or
    44, before it) and checkpoint; M ranks deliver the rest of the epoch, each sample once."""
    whole = scheduled(parts, batch_size=2)
    whole.set_epoch(1)
    whole = labels(whole)
    before, after = [], []
    for rank in range(resume[0]):
        loader = scheduled(parts, batch_size=2, rank=rank, world_size=resume[0])
        loader.set_epoch(1)
        batches = iter(loader)
        before += [int(x) for _ in range(2) for x in next(batches)["label"]]
        state = loader.state_dict()
    for rank in range(resume[1]):
        loader = scheduled(parts, batch_size=2, rank=rank, world_size=resume[1])
        loader.load_state_dict(state)
        after += labels(loader)
    position = state["position"]
    assert position == 4 * resume[0]
    assert sorted(before) == sorted(whole[:position])
    assert sorted(after) == sorted(whole[position:])


@pytest.mark.parametrize("schedule, message", [
    (((50, [1, 3]), (50, [1, 1])), "Mixture: schedule[1]'s at 50 must come after schedule[0] "
                                   "(50)"),
    (((50, [1, 3]), (20, [1, 1])), "Mixture: schedule[1]'s at 20 must come after schedule[0] "
                                   "(50)"),
    (((0, [1, 3]),), "Mixture: schedule[0]'s at 0 must come after the start (0)"),
    (((50, [1, 0]),), "Mixture: schedule[0]'s weights [1.0, 0.0] must be finite numbers above 0"),
    (((50, [1, float("nan")]),), "Mixture: schedule[0]'s weights [1.0, nan] must be finite"),
])
def test_bad_schedules_are_one_line_naming_the_argument(parts, schedule, message):
    with pytest.raises(ValueError) as error:
        scheduled(parts, schedule=schedule)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_change_without_a_weight_per_source_is_refused(parts):
    for bad in ((50, [1, 2, 3]), (50,), ("50", [1, 1])):
        with pytest.raises(ValueError, match=r"^Mixture: schedule\[0\] must be \(at, weights\)"):
            stoker.Mixture(list(parts), schedule=[bad])


def packed(path, document, documents):
    """Tokens packed in rows of 8 from `documents` documents of `document` tokens each (the
    last EOS): rows of 8 // document documents, every row as full as the others."""
    tokens = np.arange(document * documents) % 50 + EOS + 1
    tokens[document - 1::document] = EOS
    tokens.astype(np.uint16).tofile(path)
    return stoker.Tokens(path, seq_len=8, eos_id=EOS, packing="first_fit")


def test_shares_of_tokens_and_each_sources_tokens_in_stats(tmp_path):
    # a: rows of one document of 8 tokens; b: rows of two of 3 (6 tokens), 100 rows each.
    sources = [packed(tmp_path / "a.bin", 8, 100), packed(tmp_path / "b.bin", 3, 200)]
    loader = stoker.Loader(stoker.Mixture(sources, samples_per_epoch=70, share_of="tokens"),
                           batch_size=7, seed=1, batch_format="dict")
    tokens, samples = [0, 0], [0, 0]
    for batch in loader:
        for source, segments in zip(batch["source"].tolist(), batch["segment_ids"]):
            samples[source] += 1
            tokens[source] += int((segments != 0).sum())
    # Equal shares of tokens: 1/8 and 1/6 of a sample each, so 30 rows of a and 40 of b.
    assert samples == [30, 40] and tokens == [240, 240]
    stats = loader.stats()
    assert stats["source_samples"] == samples and stats["source_tokens"] == tokens
    # By samples, as many of each.
    even = stoker.Loader(stoker.Mixture(sources, samples_per_epoch=70), batch_size=7,
                         batch_format="dict")
    list(even)
    assert even.stats()["source_samples"] == [35, 35]


def test_stats_count_the_samples_delivered_by_the_plan(parts):
    loader = scheduled(parts, batch_size=4, rank=1, world_size=3, drop_last=True)
    got = run(loader, epochs=2)
    stats = loader.stats()
    # This rank's samples, by their source (labels from 1000 are b's).
    assert stats["source_samples"] == [sum(x < 1000 for x in got), sum(x >= 1000 for x in got)]
    assert sum(stats["source_samples"]) == 2 * 12 and stats["source_tokens"] == [None, None]
    padded = scheduled(parts, batch_size=4, rank=2, world_size=3, last_batch="pad")
    counts = [0, 0]
    for batch in padded:  # 4 batches of 4, the last padded
        for label, valid in zip(batch["label"].tolist(), batch["valid"].tolist()):
            counts[label >= 1000] += valid
    assert padded.stats()["source_samples"] == counts and sum(counts) < 16
    with pytest.raises(ValueError, match="share_of=tokens, but source 0 is not a token source"):
        stoker.Loader(stoker.Mixture(list(parts), share_of="tokens"))


def test_sources_of_different_fields_take_the_schedule_and_shares_of_tokens(tmp_path):
    # a: samples of 8 tokens (input_ids, labels); b: packed rows of 6 (and their segment_ids):
    # read source by source. Equal shares of tokens, then 1:3 from sample 35.
    tokens = np.arange(801) % 50 + EOS + 1
    tokens.astype(np.uint16).tofile(tmp_path / "a.bin")
    sources = [stoker.Tokens(tmp_path / "a.bin", seq_len=8), packed(tmp_path / "b.bin", 3, 200)]
    loader = stoker.Loader(stoker.Mixture(sources, samples_per_epoch=70, share_of="tokens",
                                          schedule=[(35, [1, 3])]),
                           batch_size=7, seed=1, batch_format="dict")
    source, b_tokens = [], 0
    for batch in loader:
        source += batch["source"].tolist()
        b_tokens += int((batch["segment_ids"] != 0).sum())
    # 35 at 1/8 : 1/6 is 15 and 20; 35 at 1/8 : 3/6 is 7 and 28.
    assert source[:35].count(0) == 15 and source[35:].count(0) == 7
    stats = loader.stats()
    assert stats["source_samples"] == [22, 48]
    assert stats["source_tokens"] == [22 * 8, 48 * 6] == [22 * 8, b_tokens]
