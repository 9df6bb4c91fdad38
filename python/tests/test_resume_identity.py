"""A state_dict of data read in place (an image folder, WebDataset tars, Parquet files) restores
only into the same files, unchanged: another folder of as many images, or a file rewritten since
(its size or modification time), is refused in one line naming the file; the same files moved
elsewhere (sizes and times kept) restore."""

import os
import shutil

import pytest

import stoker
from parquet_build import needs_parquet
from source_contract import NO_IMAGE
from test_image_folder_source import make_folder
from test_webdataset_source import write_tars

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def loader(source, cache):
    return stoker.Loader(source, batch_size=4, shuffle=True, seed=1, transforms=NO_IMAGE,
                         cache_dir=cache)


def state_after_one_batch(source, cache):
    first = loader(source, cache)
    next(iter(first))
    return first.state_dict()


def touch(path, seconds=1_000_000_000):
    """`path`'s modification time set to `seconds` (not the clock's: no test of timing)."""
    os.utime(path, ns=(seconds * 10**9, seconds * 10**9))


def test_another_image_folder_of_as_many_images_is_refused(tmp_path):
    a, b = make_folder(tmp_path / "a"), make_folder(tmp_path / "b")
    for path in [*a.rglob("*.*"), *b.rglob("*.*")]:
        touch(path)
    (b / "cat" / "00.jpg").write_bytes((a / "dog" / "01.jpg").read_bytes())
    touch(b / "cat" / "00.jpg")
    state = state_after_one_batch(stoker.ImageFolder(a), str(tmp_path / "cache"))
    assert state["files"]
    with pytest.raises(ValueError, match=r"^the state_dict is of other data than .*: "
                                         r".*/a/cat/00\.jpg is not this data's \(its file there: "
                                         r".*/b/cat/00\.jpg\)$"):
        loader(stoker.ImageFolder(b), str(tmp_path / "cache")).load_state_dict(state)
    # The same files moved elsewhere restore.
    shutil.move(str(a), str(tmp_path / "moved"))
    loader(stoker.ImageFolder(tmp_path / "moved"), str(tmp_path / "cache")).load_state_dict(state)


def test_an_image_changed_in_place_is_named(tmp_path):
    folder = make_folder(tmp_path / "folder")
    state = state_after_one_batch(stoker.ImageFolder(folder), str(tmp_path / "cache"))
    changed = folder / "dog" / "01.jpg"
    changed.write_bytes((folder / "cat" / "00.jpg").read_bytes())
    touch(changed)
    with pytest.raises(ValueError, match=r"other data than .*: .*/dog/01\.jpg changed \(its size "
                                         r"or modification time differs\)$"):
        loader(stoker.ImageFolder(folder), str(tmp_path / "cache")).load_state_dict(state)


def test_a_replaced_tar_is_named(tmp_path):
    tars = write_tars(make_folder(tmp_path / "folder"), tmp_path / "tars")
    spec = str(tmp_path / "tars" / "data-{000..004}.tar")
    state = state_after_one_batch(spec, str(tmp_path / "cache"))
    touch(tars[2])
    with pytest.raises(ValueError, match=r"other data than .*: .*/data-002\.tar changed"):
        loader(spec, str(tmp_path / "cache")).load_state_dict(state)
    loader(spec, str(tmp_path / "other-cache")).load_state_dict(
        state_after_one_batch(spec, str(tmp_path / "cache")))


@needs_parquet
def test_a_rewritten_parquet_file_is_named(tmp_path):
    from test_parquet_source import write_parquet
    cache = str(tmp_path / "cache")
    path = write_parquet(make_folder(tmp_path / "folder"), tmp_path / "train.parquet", cache)
    state = state_after_one_batch(stoker.Parquet(path), cache)
    touch(path)
    with pytest.raises(ValueError, match=r"other data than .*: .*/train\.parquet changed"):
        loader(stoker.Parquet(path), cache).load_state_dict(state)


def test_a_stoker_datasets_state_keeps_no_files(labelled):
    state = state_after_one_batch(labelled, None)
    assert "files" not in state
    loader(labelled, None).load_state_dict(state)
