"""WebDataset tars and Parquet files over http:// (nginx) and s3:// (SeaweedFS) on loopback, read
through the shard cache: the local files' samples, the source contract (order, exactly once
across ranks, resume), an s3:// folder listed, an http:// folder listed from its index page, a
later run served by the cache, a file changed on the server between runs read as it is now, and
a missing tar one line naming its URL without its secrets, and a remote Parquet file's relative
image paths refused."""
import os
import shutil

import pytest

import stoker
from parquet_build import needs_parquet
from source_contract import NO_IMAGE, check_source_contract, checksums
from test_image_folder_source import make_folder
from test_webdataset_source import PER_TAR, write_tars


@pytest.fixture
def tars(tmp_path):
    return write_tars(make_folder(tmp_path / "folder"), tmp_path / "tars")


@pytest.fixture
def served(tars, nginx_server):
    """The tars under nginx's /tars/, and the brace pattern of their URLs."""
    shutil.copytree(os.path.dirname(tars[0]), nginx_server.root / "tars")
    return f"{nginx_server.url}/tars/data-{{000..{len(tars) - 1:03d}}}.tar"


def in_order(source, cache):
    return checksums(stoker.Loader(source, batch_size=4, shuffle=False, batch_format="dict",
                                   cache_dir=cache, transforms=NO_IMAGE))


def tar_gets(tmp_path):
    """The tar GETs in the access log of nginx_server (its work folder: tmp_path/nginx)."""
    with open(tmp_path / "nginx" / "access.log") as log:
        return sum(line.startswith("GET /tars/") for line in log)


def test_tars_over_http_keep_the_source_contract(tars, served, tmp_path):
    cache = str(tmp_path / "cache")
    assert in_order(stoker.WebDataset(served), cache) == in_order(stoker.WebDataset(tars), cache)
    check_source_contract(stoker.WebDataset(served), cache)
    check_source_contract(served, cache)  # a URL pattern found out as tars


def test_a_later_run_reads_the_cache(tars, served, nginx_server, tmp_path):
    cache = str(tmp_path / "cache")
    first = in_order(stoker.WebDataset(served), cache)
    gets = tar_gets(tmp_path)
    assert gets == len(tars)  # each tar once, for its index and its samples
    assert in_order(stoker.WebDataset(served), cache) == first
    assert tar_gets(tmp_path) == gets


def test_a_tar_changed_on_the_server_is_read_as_it_is_now(tars, served, nginx_server, tmp_path):
    cache = str(tmp_path / "cache")
    assert len(in_order(stoker.WebDataset(served), cache)) == 23
    # The first tar rewritten with its last sample left out (another size and time).
    changed = nginx_server.root / "tars" / os.path.basename(tars[0])
    shorter = write_tars(make_folder(tmp_path / "again"), tmp_path / "again-tars")
    shutil.copy(shorter[1], changed)
    os.utime(changed, (os.path.getmtime(changed) + 10,) * 2)
    now = in_order(stoker.WebDataset(served), cache)
    assert len(now) == 23 and now[:PER_TAR] == now[PER_TAR:2 * PER_TAR]


def test_a_missing_tar_is_one_line_naming_its_url_without_secrets(served, nginx_server,
                                                                  tmp_path):
    secret = "SENTINEL-remote-sources-3f9a"
    url = f"{nginx_server.url}/tars/data-{{000..009}}.tar?sig={secret}"
    with pytest.raises(FileNotFoundError) as error:
        stoker.Loader(stoker.WebDataset(url), batch_size=256, shuffle=True, cache_dir=tmp_path / "cache")
    message = str(error.value)
    assert f"{nginx_server.url}/tars/data-005.tar" in message
    assert secret not in message and "\n" not in message


def test_a_bad_member_of_a_remote_tar_is_named_by_url_and_member(tars, served, nginx_server,
                                                                 tmp_path):
    import tarfile
    from batches import epochs
    from test_webdataset_source import crop_loader, truncate
    served_tar = nginx_server.root / "tars" / os.path.basename(tars[1])
    with tarfile.open(served_tar) as tar:
        image = tar.getmember("s/0005.jpg").offset_data
    truncate(served_tar, image + 100)  # inside the first sample's image
    url = f"{nginx_server.url}/tars/{os.path.basename(tars[1])}"
    cache = str(tmp_path / "cache")
    with pytest.raises(stoker.Error, match=f"^{url}: member s/0005.jpg: cut short"):
        epochs(crop_loader(stoker.WebDataset(served), cache, shuffle=False), 1)
    kept = epochs(crop_loader(stoker.WebDataset(served), cache, shuffle=False, on_error="skip"), 1)
    assert sum(len(labels) for _, labels in kept) == 23 - PER_TAR


def test_tars_in_an_http_folder_are_listed_from_its_index_page(served, nginx_server, tmp_path):
    cache = str(tmp_path / "cache")
    for index in ("_index", "_index_json"):  # nginx's autoindex, HTML and JSON
        folder = stoker.WebDataset(f"{nginx_server.url}/{index}/tars/")
        assert in_order(folder, cache) == in_order(stoker.WebDataset(served), cache)
    check_source_contract(folder, cache)


def test_tars_in_an_s3_folder_are_listed(tars, s3_env, tmp_path):
    for path in tars:
        with open(path, "rb") as f:
            status, _ = s3_env.request("PUT", f"/{s3_env.bucket}/wds/{os.path.basename(path)}",
                                       f.read())
        assert status == 200
    cache = str(tmp_path / "cache")
    folder = stoker.WebDataset(f"s3://{s3_env.bucket}/wds/")
    assert in_order(folder, cache) == in_order(stoker.WebDataset(tars), cache)
    check_source_contract(folder, cache)


@pytest.fixture
def parquet_file(tmp_path):
    from test_parquet_source import write_parquet
    return str(write_parquet(make_folder(tmp_path / "pq-folder"), tmp_path / "train.parquet",
                             str(tmp_path / "cache")))


@needs_parquet
def test_parquet_over_http_keeps_the_source_contract(parquet_file, nginx_server, tmp_path):
    import pyarrow.parquet as pq

    (nginx_server.root / "pq").mkdir()
    shutil.copy(parquet_file, nginx_server.root / "pq" / "train.parquet")
    url = f"{nginx_server.url}/pq/train.parquet"
    cache = str(tmp_path / "cache")
    assert in_order(stoker.Parquet(url), cache) == in_order(stoker.Parquet(parquet_file), cache)
    remote = stoker.Loader(stoker.Parquet(url), batch_size=256, shuffle=True, cache_dir=cache, transforms=NO_IMAGE)
    assert remote.dataset.classes == stoker.Loader(stoker.Parquet(parquet_file), batch_size=256, shuffle=True, cache_dir=cache,
                                                   transforms=NO_IMAGE).dataset.classes
    check_source_contract(stoker.Parquet(url), cache)
    check_source_contract(url, cache)  # a URL ending in .parquet found out
    # Rewritten on the server between runs (its first 10 rows): read as it is now.
    served = nginx_server.root / "pq" / "train.parquet"
    pq.write_table(pq.read_table(parquet_file).slice(0, 10), served)
    os.utime(served, (os.path.getmtime(served) + 10,) * 2)
    assert in_order(stoker.Parquet(url), cache) == in_order(stoker.Parquet(parquet_file), cache)[:10]


@needs_parquet
def test_parquet_files_in_an_s3_folder_are_listed(parquet_file, s3_env, tmp_path):
    with open(parquet_file, "rb") as f:
        status, _ = s3_env.request("PUT", f"/{s3_env.bucket}/pq/train-0.parquet", f.read())
    assert status == 200
    cache = str(tmp_path / "cache")
    assert (in_order(stoker.Parquet(f"s3://{s3_env.bucket}/pq/"), cache)
            == in_order(stoker.Parquet(parquet_file), cache))


@needs_parquet
def test_a_remote_parquet_files_relative_image_paths_are_refused(parquet_file, nginx_server,
                                                                  tmp_path):
    from batches import epochs
    from test_image_folder_source import crop_loader
    from test_parquet_source import write_paths_parquet
    paths_file = write_paths_parquet(parquet_file, tmp_path / "data")
    (nginx_server.root / "pq").mkdir()
    shutil.copy(paths_file, nginx_server.root / "pq" / "train.parquet")
    url = f"{nginx_server.url}/pq/train.parquet"
    cache = str(tmp_path / "cache")
    with pytest.raises(stoker.Error, match=rf"^{url}: row 0 \(row group 0\): its image's path "
                                           r"'img/0.jpg': relative to a remote Parquet file: not "
                                           r"supported"):
        epochs(crop_loader(stoker.Parquet(url), cache, shuffle=False), 1)
    # Its absolute paths are local files, read.
    kept = epochs(crop_loader(stoker.Parquet(url), cache, shuffle=False, on_error="skip"), 1)
    assert sum(len(labels) for _, labels in kept) == 11
