"""The mark of the tests that need the video layer: skipped, with the package's own one-line
reason, where the extension was built without it (no FFmpeg: cmake/StokerVideo.cmake)."""
import pytest

from stoker import _video

needs_video = pytest.mark.skipif(not _video.BUILT, reason=_video.missing("this test"))
