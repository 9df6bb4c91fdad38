"""Every registered source (``_stoker.sources()``, access/source_registry.h) keeps the source
contract (source_contract.py) on 23 samples made for it: a source added without a case here
fails the first test."""

import pytest

import stoker
from stoker import _stoker, _video
from parquet_build import needs_parquet
from source_contract import check_source_contract
from test_arrow_source import write_hugging_face_arrow
from test_image_folder_source import make_folder
from test_parquet_source import write_parquet
from test_token_source import random_tokens, write_bin
from test_video_folder import video_classes
from test_webdataset_source import write_tars
from video_build import needs_video


def stoker_dataset(tmp_path, cache):
    stoker.convert("imagefolder", make_folder(tmp_path / "folder"), tmp_path / "converted",
                   keep_original=True)
    return tmp_path / "converted"


def image_folder(tmp_path, cache):
    return stoker.ImageFolder(make_folder(tmp_path / "folder"))


def webdataset(tmp_path, cache):
    return stoker.WebDataset(write_tars(make_folder(tmp_path / "folder"), tmp_path / "tars"))


def parquet(tmp_path, cache):
    folder = make_folder(tmp_path / "folder")
    return stoker.Parquet(write_parquet(folder, tmp_path / "train.parquet", cache))


def arrow(tmp_path, cache):
    folder = make_folder(tmp_path / "folder")
    return stoker.Arrow(write_hugging_face_arrow(folder, tmp_path / "train.arrow", cache))


def tokens(tmp_path, cache):
    # 23 samples of 8 tokens and their labels, the last sample's last label the file's last token.
    return stoker.Tokens(write_bin(tmp_path / "train.bin", random_tokens(23 * 8 + 1)), seq_len=8)


def video_folder(tmp_path, cache):
    # 23 classes of one video each: samples told apart by their labels, and their clips drawn
    # by sample.
    clip = stoker.transforms.DecodeClip(num_frames_per_clip=2, resize=[16], crop=[16])
    return stoker.VideoFolder(video_classes(tmp_path / "videos", 23), {"video": clip})


CASES = {"stoker": stoker_dataset, "imagefolder": image_folder, "webdataset": webdataset,
         "parquet": parquet, "arrow": arrow, "tokens": tokens, "videofolder": video_folder}


def test_every_registered_source_has_a_case():
    # A build without video registers no videofolder.
    built = [name for name in sorted(CASES) if name != "videofolder" or _video.BUILT]
    assert sorted(source["name"] for source in _stoker.sources()) == built


NEEDS = {"videofolder": needs_video, "parquet": needs_parquet, "arrow": needs_parquet}


@pytest.mark.parametrize("name", [pytest.param(name, marks=NEEDS.get(name, ()))
                                  for name in sorted(CASES)])
def test_source_contract_order_ranks_and_resume(name, tmp_path):
    cache = str(tmp_path / "cache")
    check_source_contract(CASES[name](tmp_path, cache), cache)


def test_tokens_with_document_boundaries_keep_the_contract(tmp_path):
    # Documents ending at each token 3 (a uint16 value in about 1 of 16 tokens here), with every
    # boundary field: a variable field (cu_seqlens) among the fixed ones.
    tokens = random_tokens(23 * 8 + 1) % 16
    source = stoker.Tokens(write_bin(tmp_path / "train.bin", tokens), seq_len=8, eos_id=3,
                           return_position_ids=True, return_cu_seqlens=True,
                           mask_boundary_labels=True)
    cache = str(tmp_path / "cache")
    check_source_contract(source, cache)
