"""The manifest's pixel statistics of datasets written from Python: encoded images' against
numpy over PIL's RGB pixels, the same for any workers and as `stoker convert imagefolder`'s;
DatasetWriter.append decoding the images itself or taking their statistics; uint8 arrays."""

import io

import numpy as np
import pytest
from PIL import Image

import stoker
from stoker import _stoker
from stored_records import read_manifest, read_records


def encoded(pixels, mode, format, **options):
    buffer = io.BytesIO()
    image = Image.fromarray(pixels)
    image.convert(mode).save(buffer, format=format, **options)
    return buffer.getvalue()


def image_files():
    """Encoded images of every kind the decoder converts to RGB as PIL does, of various sizes."""
    rng = np.random.default_rng(7)
    files = []
    for i in range(12):
        height, width = 9 + 5 * i, 31 - 2 * i
        pixels = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
        kind = i % 6
        if kind == 0:
            files.append(encoded(pixels, "RGB", "JPEG", quality=90))
        elif kind == 1:
            files.append(encoded(pixels, "L", "JPEG"))
        elif kind == 2:
            files.append(encoded(pixels, "CMYK", "JPEG"))
        elif kind == 3:
            files.append(encoded(pixels, "RGB", "JPEG", progressive=True))
        elif kind == 4:
            files.append(encoded(pixels, "RGBA", "PNG"))
        else:
            files.append(encoded(pixels, "L", "PNG"))
    return files


def numpy_statistics(files):
    """{"mean", "std", "pixels"} of the images' RGB pixels as PIL decodes them, in [0, 1]."""
    pixels = np.concatenate([np.asarray(Image.open(io.BytesIO(f)).convert("RGB")).reshape(-1, 3)
                             for f in files]).astype(np.float64)
    return {"mean": pixels.mean(axis=0) / 255, "std": pixels.std(axis=0) / 255,
            "pixels": len(pixels)}


def assert_statistics(stored, expected):
    assert stored["pixels"] == expected["pixels"]
    np.testing.assert_allclose(stored["mean"], expected["mean"], rtol=1e-13, atol=0)
    np.testing.assert_allclose(stored["std"], expected["std"], rtol=1e-12, atol=0)


FILES = image_files()
# A JPEG cut in its scan data: its header reads, its pixels do not decode.
TRUNCATED = encoded(np.random.default_rng(8).integers(0, 256, (80, 120, 3), dtype=np.uint8),
                    "RGB", "JPEG")[:-2000]


def test_image_info_gives_the_exact_sums_of_the_decoded_pixels():
    for data in FILES:
        rgb = np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).reshape(-1, 3)
        rgb = rgb.astype(np.int64)
        pixels, sums, squares = _stoker.image_info(data, check=True)["statistics"]
        assert pixels == len(rgb)
        assert sums == tuple(rgb.sum(axis=0).tolist())
        assert squares == tuple((rgb * rgb).sum(axis=0).tolist())
    assert "statistics" not in _stoker.image_info(FILES[0], check=False)


@pytest.mark.parametrize("workers, parallel", [(0, "processes"), (2, "processes"),
                                               (3, "threads")])
def test_written_images_statistics_are_numpys_and_the_importers(tmp_path, monkeypatch, workers,
                                                                parallel):
    # Each image is decoded once, where it is prepared: the writer is given its statistics.
    given = []
    append = stoker.DatasetWriter.append

    def recording_append(self, sample, *, statistics=None):
        given.append(statistics)
        append(self, sample, statistics=statistics)

    monkeypatch.setattr(stoker.DatasetWriter, "append", recording_append)
    samples = [(data, i % 2) for i, data in enumerate(FILES)]
    stoker.write_dataset(tmp_path / "ds", samples, workers=workers, parallel=parallel)
    assert given == [_stoker.image_info(data, check=True)["statistics"] for data in FILES]
    statistics = read_manifest(tmp_path / "ds")["statistics"]
    assert list(statistics) == ["image"]
    assert_statistics(statistics["image"], numpy_statistics(FILES))
    # The importer's, to the last bit: the same sums, whether it transcodes the JPEGs or not.
    for i, data in enumerate(FILES):
        extension = "png" if data.startswith(b"\x89PNG") else "jpg"
        path = tmp_path / "src" / ("a", "b")[i % 2] / f"{i:02d}.{extension}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    stoker.convert("imagefolder", tmp_path / "src", tmp_path / "imported", workers=2)
    stoker.convert("imagefolder", tmp_path / "src", tmp_path / "original", keep_original=True)
    assert read_manifest(tmp_path / "imported")["statistics"] == statistics
    assert read_manifest(tmp_path / "original")["statistics"] == statistics


def test_image_records_with_their_fields_get_statistics_too(tmp_path):
    # Samples that are image records already: the workers decode them for the statistics.
    samples = [stoker.image_sample(data, i % 3) for i, data in enumerate(FILES)]
    stoker.write_dataset(tmp_path / "ds", samples, workers=2)
    assert_statistics(read_manifest(tmp_path / "ds")["statistics"]["image"],
                      numpy_statistics(FILES))


def test_without_check_images_no_image_is_decoded_and_no_statistics_are_kept(tmp_path):
    stoker.write_dataset(tmp_path / "ds", [(FILES[1], 0), (TRUNCATED, 1)], workers=0,
                         check_images=False)
    manifest = read_manifest(tmp_path / "ds")
    assert manifest["records"] == 2
    assert "statistics" not in manifest


def test_append_decodes_an_image_whose_statistics_it_is_not_given(tmp_path):
    with stoker.DatasetWriter(tmp_path / "ds", stoker.IMAGE_SCHEMA) as writer:
        for i, data in enumerate(FILES):
            sample = stoker.image_sample(data, i)
            if i % 2:
                writer.append(sample)
            else:
                writer.append(sample,
                              statistics=_stoker.image_info(data, check=True)["statistics"])
    assert_statistics(read_manifest(tmp_path / "ds")["statistics"]["image"],
                      numpy_statistics(FILES))
    # image_statistics=False: nothing decoded (a truncated image goes in), no statistics.
    with stoker.DatasetWriter(tmp_path / "plain", stoker.IMAGE_SCHEMA,
                              image_statistics=False) as writer:
        writer.append(stoker.image_sample(TRUNCATED, 0))
    assert "statistics" not in read_manifest(tmp_path / "plain")


def test_append_refuses_a_bad_image_and_stays_usable(tmp_path):
    with stoker.DatasetWriter(tmp_path / "ds", stoker.IMAGE_SCHEMA) as writer:
        writer.append(stoker.image_sample(FILES[0], 0))
        with pytest.raises(stoker.Error, match="sample 1, field 'image': .*truncated"):
            writer.append(stoker.image_sample(TRUNCATED, 1))
        assert writer.records == 1
        writer.append(stoker.image_sample(FILES[1], 1))
    assert [r["label"] for r in read_records(tmp_path / "ds")] == [0, 1]
    assert_statistics(read_manifest(tmp_path / "ds")["statistics"]["image"],
                      numpy_statistics(FILES[:2]))


def test_append_refuses_bad_statistics(tmp_path):
    good = _stoker.image_info(FILES[0], check=True)["statistics"]
    pixels, sums, squares = good
    bad = [
        ((pixels, sums), "a tuple \\(pixels, sums, squares\\)"),
        ((pixels, sums[:2], squares[:2]), "3 sums and 3 squares"),
        ((-1, sums, squares), "non-negative"),
        ((pixels, ("a", 1, 2), squares), "of non-negative"),
        ((pixels, (255 * pixels + 1,) + sums[1:], squares), "channel 0 are not those of"),
        ((pixels, sums, squares[:2] + (0,)), "channel 2 are not those of"),
        ((pixels, sums, (sums[0] * sums[0],) + squares[1:]), "channel 0 are not those of"),
    ]
    with stoker.DatasetWriter(tmp_path / "ds", stoker.IMAGE_SCHEMA) as writer:
        for statistics, message in bad:
            with pytest.raises(ValueError, match="sample 0, field 'image': .*" + message):
                writer.append(stoker.image_sample(FILES[0], 0), statistics=statistics)
            assert writer.records == 0
        writer.append(stoker.image_sample(FILES[0], 0), statistics=good)
    assert_statistics(read_manifest(tmp_path / "ds")["statistics"]["image"],
                      numpy_statistics(FILES[:1]))
    # Writers that keep no image statistics take none.
    for schema, options in (({"jpeg": "bytes", "label": "int64"}, {}),
                            (stoker.IMAGE_SCHEMA, {"image_statistics": False})):
        with stoker.DatasetWriter(tmp_path / "other", schema, **options) as writer:
            with pytest.raises(ValueError, match="sample 0: statistics given, but this writer "
                                                 "keeps none"):
                writer.append({"jpeg": FILES[0], "label": 0} if "jpeg" in schema else
                              stoker.image_sample(FILES[0], 0), statistics=good)
            writer.abort()


def test_uint8_arrays_get_statistics_from_the_writer(tmp_path):
    rng = np.random.default_rng(3)
    rgb = rng.integers(0, 256, (40, 3, 6, 5), dtype=np.uint8)
    gray = rng.integers(10, 200, (40, 7, 4), dtype=np.uint8)
    stoker.write_dataset(tmp_path / "rgb", {"image": rgb, "label": np.arange(40)})
    stoker.write_dataset(tmp_path / "gray", [(Image.fromarray(g), 0) for g in gray], workers=2)
    with stoker.DatasetWriter(tmp_path / "plain", {"mask": ("uint8", (7, 4))}) as writer:
        for g in gray:
            writer.append({"mask": g})
    channels = rgb.transpose(1, 0, 2, 3).reshape(3, -1).astype(np.float64)
    assert_statistics(read_manifest(tmp_path / "rgb")["statistics"]["image"],
                      {"mean": channels.mean(axis=1) / 255, "std": channels.std(axis=1) / 255,
                       "pixels": 40 * 6 * 5})
    values = gray.reshape(1, -1).astype(np.float64)
    expected = {"mean": values.mean(axis=1) / 255, "std": values.std(axis=1) / 255,
                "pixels": 40 * 7 * 4}
    assert_statistics(read_manifest(tmp_path / "gray")["statistics"]["image"], expected)
    assert_statistics(read_manifest(tmp_path / "plain")["statistics"]["mask"], expected)
