"""A state_dict resumes only into a loader whose samples are made and ordered the same way:
another shuffle, or another parameter of the source that decides which tokens make each sample
(Tokens' seq_len, packing, eos_id, packing_bins; a Mixture's per source), is refused in one line
naming it, even where the sample count is the same, and the loader stays usable; a parameter
that changes only what a sample carries (return_position_ids, ...) may change; a state saved
before these were kept resumes as before."""

import json

import numpy as np
import pytest

import stoker

EOS = 1


@pytest.fixture
def path(tmp_path):
    """101 tokens: (101 - 1) // 30 == (101 - 1) // 33 == 3 samples; documents end every 7."""
    tokens = np.arange(101, dtype=np.uint16) + 2
    tokens[6::7] = EOS
    tokens.tofile(tmp_path / "t.bin")
    return tmp_path / "t.bin"


def loader(source, shuffle=False, **options):
    return stoker.Loader(source, batch_size=1, batch_format="dict", shuffle=shuffle, seed=1,
                         **options)


def starts(loader):
    return [int(batch["input_ids"][0, 0]) for batch in loader]


def state_after_one(source, shuffle=False):
    """The JSON round trip of the state after one batch, and that batch's first token."""
    first = loader(source, shuffle)
    head = int(next(iter(first))["input_ids"][0, 0])
    return json.loads(json.dumps(first.state_dict())), head


@pytest.mark.parametrize("before, after, message", [
    (dict(seq_len=30), dict(seq_len=33), "seq_len is 30; this loader's {} has 33"),
    (dict(seq_len=8, eos_id=EOS, packing="first_fit"),
     dict(seq_len=8, eos_id=EOS, packing="best_fit"), "packing is 'first_fit'; this loader's {} "
                                                      "has 'best_fit'"),
    (dict(seq_len=8, eos_id=EOS, packing="first_fit"),
     dict(seq_len=8, eos_id=2, packing="first_fit"), "eos_id is 1; this loader's {} has 2"),
    (dict(seq_len=8, eos_id=EOS, packing="best_fit"),
     dict(seq_len=8, eos_id=EOS, packing="best_fit", packing_bins=1),
     "packing_bins is 64; this loader's {} has 1"),
])
def test_a_state_of_other_token_samples_is_refused_naming_the_parameter(path, before, after,
                                                                        message):
    state, _ = state_after_one(stoker.Tokens(path, **before))
    source = stoker.Tokens(path, **after)
    other = loader(source)
    with pytest.raises(ValueError) as refused:
        other.load_state_dict(state)
    assert str(refused.value) == "state_dict['source'] " + message.format(repr(source))
    assert starts(other) == starts(loader(source))  # still usable, from its own start


def test_output_only_parameters_may_change_and_an_older_state_resumes(path):
    plain = stoker.Tokens(path, seq_len=30)
    whole = starts(loader(plain, shuffle=True))
    state, head = state_after_one(plain, shuffle=True)
    assert state["source"] == {"seq_len": 30, "dtype": "uint16", "packing": "none",
                             "column": "input_ids"}
    assert state["shuffle"] is True
    marked = stoker.Tokens(path, seq_len=30, eos_id=EOS, return_position_ids=True,
                           mask_boundary_labels=True, vocab_size=200)
    resumed = loader(marked, shuffle=True)
    resumed.load_state_dict(state)
    assert [head] + starts(resumed) == whole
    older = loader(plain, shuffle=True)
    older.load_state_dict({k: v for k, v in state.items() if k not in ("source", "shuffle")})
    assert [head] + starts(older) == whole
    packed = dict(seq_len=8, eos_id=EOS, packing="first_fit")
    state, head = state_after_one(stoker.Tokens(path, **packed))
    resumed = loader(stoker.Tokens(path, pad_id=3, return_attention_mask=True, prompt_end_id=4,
                                   **packed))
    resumed.load_state_dict(state)
    assert [head] + starts(resumed) == starts(loader(stoker.Tokens(path, **packed)))


@pytest.mark.parametrize("before", [True, False])
def test_a_state_of_the_other_shuffle_is_refused_naming_it(path, before):
    source = stoker.Tokens(path, seq_len=10)
    state, _ = state_after_one(source, shuffle=before)
    other = loader(source, shuffle=not before)
    with pytest.raises(ValueError) as refused:
        other.load_state_dict(state)
    assert str(refused.value) == (f"state_dict['shuffle'] is {before}; this loader's shuffle is "
                                  f"{not before} (its position counts in that order)")
    assert starts(other) == starts(loader(source, shuffle=not before))


@pytest.mark.parametrize("per_source", [False, True])
def test_a_mixture_checks_each_source_and_its_shuffle(path, per_source):
    """Two token sources, read as one (the same fields) or source by source (position_ids in
    the first only)."""
    def mixture(seq_len):
        fields = dict(eos_id=EOS, return_position_ids=True) if per_source else {}
        return stoker.Mixture([stoker.Tokens(path, seq_len=seq_len, **fields),
                               stoker.Tokens(path, seq_len=seq_len)])

    whole = starts(loader(mixture(30), shuffle=True))
    state, head = state_after_one(mixture(30), shuffle=True)
    shaping = {"seq_len": 30, "dtype": "uint16", "packing": "none", "column": "input_ids"}
    assert state["source"] == [shaping] * 2
    assert state["shuffle"] is True
    other = mixture(33)
    with pytest.raises(ValueError) as refused:
        loader(other, shuffle=True).load_state_dict(state)
    assert str(refused.value) == (f"state_dict['source'][0] seq_len is 30; this loader's source "
                                  f"0, {other.sources[0]!r}, has 33")
    with pytest.raises(ValueError, match=r"^state_dict\['shuffle'\] is True; this loader's "
                                         r"shuffle is False"):
        loader(mixture(30)).load_state_dict(state)
    resumed = loader(mixture(30), shuffle=True)
    resumed.load_state_dict({k: v for k, v in state.items() if k not in ("source", "shuffle")})
    assert [head] + starts(resumed) == whole
