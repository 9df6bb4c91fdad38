"""Video where the extension has the video layer, and one RuntimeError naming the missing
FFmpeg where it has not (cmake/StokerVideo.cmake, stoker/_video.py): every video entry point
refuses in one line, and the flag agrees with the registries."""
import pytest

import stoker
from stoker import _stoker, _video

MESSAGE = (r"^stoker was built without video \(FFmpeg's libraries were not found at build "
           r"time\): {} needs it; install them and build stoker again \(INSTALL\.md\)$")


def test_the_flag_agrees_with_the_registries():
    operations = {op["name"]: op["python_class"] for op in _stoker.operations()}
    video = {name: operations.get(name) for name in ("clip_frame_indices", "decode_clip")}
    sources = [source["name"] for source in _stoker.sources()]
    assert ("videofolder" in sources) == _video.BUILT
    assert video == (dict(zip(video, _video.CLASSES)) if _video.BUILT else dict.fromkeys(video))


def test_the_transforms_hold_the_video_classes_in_every_build():
    for name in _video.CLASSES:
        assert name in stoker.transforms.__all__
        native = name in stoker.transforms._DECODING_CLASSES
        assert native == _video.BUILT, name


def test_without_video_each_entry_point_refuses_in_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr(_video, "BUILT", False)
    with pytest.raises(RuntimeError, match=MESSAGE.format(r"stoker\.VideoFolder")):
        stoker.VideoFolder(tmp_path)
    for name in _video.CLASSES:
        stand_in = _video.unavailable(name, "stoker.transforms")
        assert stand_in.__name__ == name and stand_in.__doc__
        with pytest.raises(RuntimeError, match=MESSAGE.format(rf"stoker\.transforms\.{name}")):
            stand_in(num_frames_per_clip=2)


@pytest.mark.skipif(_video.BUILT, reason="the extension has the video layer")
def test_a_build_without_video_refuses_its_classes():
    for name in _video.CLASSES:
        with pytest.raises(RuntimeError, match=MESSAGE.format(rf"stoker\.transforms\.{name}")):
            getattr(stoker.transforms, name)()
