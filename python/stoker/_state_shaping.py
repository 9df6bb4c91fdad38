"""What a state_dict records of how its samples are made, beyond the data's identity: the
loader's ``shuffle`` (the order its position counts in) and, as ``source``, the source's
parameters that decide which records or tokens make each sample (``Tokens``' seq_len, dtype,
packing, ...; a Mixture's per source: ``_Source._shaping()``). A state resumes only where they
are the same; one saved before they were kept resumes as before."""

import numbers

SHUFFLE = "shuffle"
SOURCE = "source"


def checked_ints(state: dict, keys) -> dict:
    """{key: int} of `state`'s entries `keys` ((key, maximum) pairs), each an int in [0,
    maximum]; ValueError in one line naming the first missing or another value."""
    values = {}
    for key, maximum in keys:
        if key not in state:
            raise ValueError(f"the state_dict lacks '{key}'")
        value = state[key]
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or \
                not 0 <= value <= maximum:
            raise ValueError(f"state_dict['{key}'] must be an int in [0, {maximum}], not "
                             f"{value!r}")
        values[key] = int(value)
    return values


def shaping_entries(shuffle: bool, source) -> dict:
    """The state_dict's entries for a loader of `shuffle` over `source`."""
    return {SHUFFLE: bool(shuffle), SOURCE: source._shaping()}


def check_shaping(state: dict, shuffle: bool, source) -> None:
    """ValueError in one line naming ``shuffle`` or the first source parameter where `state`
    differs from a loader of `shuffle` over `source`; a key the state lacks is not checked."""
    check_shuffle(state, shuffle)
    if SOURCE not in state:
        return
    saved, mine = state[SOURCE], source._shaping()
    if not isinstance(mine, list):
        _check_parameters(saved, mine, f"state_dict[{SOURCE!r}]", f"this loader's {source!r}")
        return
    if not isinstance(saved, list) or len(saved) != len(mine):
        raise ValueError(f"state_dict[{SOURCE!r}] is {saved!r}, not the parameters of this "
                         f"loader's {len(mine)} sources")
    for i, (part, theirs, ours) in enumerate(zip(source.sources, saved, mine)):
        _check_parameters(theirs, ours, f"state_dict[{SOURCE!r}][{i}]",
                          f"this loader's source {i}, {part!r},")


def check_shuffle(state: dict, shuffle: bool) -> None:
    """ValueError in one line where `state` is of the other ``shuffle`` (none: not checked)."""
    saved = state.get(SHUFFLE, shuffle)
    if not isinstance(saved, bool) or saved != shuffle:
        raise ValueError(f"state_dict[{SHUFFLE!r}] is {saved!r}; this loader's shuffle is "
                         f"{bool(shuffle)!r} (its position counts in that order)")


def _check_parameters(saved, mine: dict, where: str, whose: str) -> None:
    """ValueError naming each parameter whose value differs between `saved` and `mine` (one
    missing from either is none)."""
    if not isinstance(saved, dict):
        raise ValueError(f"{where} is {saved!r}, not a dict of parameters")
    names = [name for name in list(mine) + [name for name in saved if name not in mine]
             if saved.get(name) != mine.get(name)]
    if names:
        raise ValueError(f"{where} " + ", ".join(f"{name} is {saved.get(name)!r}"
                                                 for name in names)
                         + f"; {whose} has " + ", ".join(repr(mine.get(name)) for name in names))
