#!/usr/bin/env python3
"""Builds the video test set: small videos made with Debian's `ffmpeg` from the photographs of
Debian's `mate-backgrounds` (pans and zooms over a photo, cuts between two). Nothing is downloaded.

Every codec, container and GOP structure the video decoder must handle, a few seconds each and a
few tens of kilobytes: H.264 in mp4 and mkv (GOP 1, 12 and 250; B-frames on and off), H.265 in
mp4 (B-frames), AV1 in mkv, VP9 in webm, MPEG-4 part 2 in avi (B-frames on and off), odd sizes (99x75, 98x74), a variable frame
rate and rotation metadata. Widths that are multiples of 32 and widths that are not both occur:
torchcodec converts the two through different FFmpeg paths (swscale, filtergraph). Deterministic:
single-threaded encoders with bit-exact flags make the same bytes for the same arguments.

Usage: .venv/bin/python bench/make_video_set.py OUT [--only NAME ...] [--photos DIR]
"""
import argparse
import os
import subprocess
import sys

# mate-backgrounds' nature photos, or STOKER_PHOTOS (as bench/make_image_set.py).
PHOTOS = os.environ.get("STOKER_PHOTOS", "/usr/share/backgrounds/mate/nature")

# Motions over a photo: ffmpeg filters from the looped still to a W x H, 25 fps stream.
# The stills are the photos cut to 480x360 once (_still), so that no frame rescales a whole photo.
PAN = ("crop={w}*2:{h}*2:x='(in_w-out_w)*t/{seconds}':y='(in_h-out_h)/2',scale={w}:{h}")
ZOOM = ("zoompan=z='1+0.02*on':x='iw/2-(iw/zoom/2)':y='ih/2-(ih/zoom/2)':d=1:s={w}x{h}:fps=25")

_H264 = ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-threads", "1"]
_MPEG4 = ["-c:v", "mpeg4", "-q:v", "5", "-pix_fmt", "yuv420p", "-threads", "1"]
_VP9 = ["-c:v", "libvpx-vp9", "-b:v", "200k", "-deadline", "realtime", "-cpu-used", "8",
        "-pix_fmt", "yuv420p", "-threads", "1", "-row-mt", "0"]
_H265 = ["-c:v", "libx265", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-x265-params",
         "pools=none:frame-threads=1:log-level=error"]
_AV1 = ["-c:v", "libaom-av1", "-usage", "realtime", "-cpu-used", "8", "-b:v", "150k",
        "-pix_fmt", "yuv420p", "-threads", "1", "-row-mt", "0"]

# name: (photo, motion, width, height, seconds, encoder arguments, extra output arguments).
VIDEOS = {
    "h264_gop12_bframes.mp4": ("Aqua", PAN, 160, 120, 3, _H264 + ["-g", "12", "-bf", "3"], []),
    "h264_gop12_no_bframes.mp4": ("Dune", ZOOM, 160, 120, 3, _H264 + ["-g", "12", "-bf", "0"], []),
    "h264_gop1.mp4": ("Garden", PAN, 128, 96, 2, _H264 + ["-g", "1"], []),
    "h264_gop250_bframes.mkv": ("Storm", ZOOM, 192, 108, 4,
                                _H264 + ["-g", "250", "-bf", "2", "-sc_threshold", "0"], []),
    "h264_odd_98x74.mp4": ("LadyBird", PAN, 98, 74, 2, _H264 + ["-g", "12", "-bf", "2"], []),
    "vp9_gop12.webm": ("TwoWings", PAN, 160, 120, 3, _VP9 + ["-g", "12"], []),
    "hevc_gop12_bframes.mp4": ("Dune", PAN, 160, 120, 2, _H265 + ["-g", "12", "-bf", "3"], []),
    "av1_gop12.mkv": ("Garden", ZOOM, 128, 96, 2, _AV1 + ["-g", "12"], []),
    "vp9_odd_99x75.webm": ("RainDrops", ZOOM, 99, 75, 2, _VP9 + ["-g", "25"], []),
    "mpeg4_gop12_bframes.avi": ("Blinds", PAN, 160, 120, 3, _MPEG4 + ["-g", "12", "-bf", "2"], []),
    "mpeg4_gop250_no_bframes.avi": ("FreshFlower", ZOOM, 128, 96, 3,
                                    _MPEG4 + ["-g", "250", "-bf", "0"], []),
    # Irregular gaps between frames: 1.3, 1.3, 0.4 frame periods, and every fifth a half longer.
    "h264_vfr.mkv": ("GreenMeadow", PAN, 160, 120, 3, _H264 + ["-g", "12", "-bf", "2"],
                     ["-vf", "settb=1/1000,setpts='(N+floor(N/5)*0.5+mod(N,3)*0.3)/25/TB'",
                      "-fps_mode", "passthrough", "-enc_time_base", "1/1000"]),
    # Given a display matrix that turns it 90 degrees when remuxed (ROTATED).
    "h264_rotated_90.mp4": ("Aqua", ZOOM, 128, 96, 2, _H264 + ["-g", "12", "-bf", "0"], []),
}

# A cut: the second half of the clip is another photograph (h264_cut.mp4).
CUTS = {"h264_cut.mp4": ("Storm", "Garden", 160, 120, 2, _H264 + ["-g", "25", "-bf", "2"])}

# Videos remuxed with a display matrix (the mp4 muxer's `rotate` tag; FFmpeg 5.1 drops the tag
# when it encodes, so it is added by a copy).
ROTATED = {"h264_rotated_90.mp4": "90"}

_BITEXACT = ["-fflags", "+bitexact", "-flags:v", "+bitexact", "-map_metadata", "-1"]


def _ffmpeg(args):
    """Runs Debian's ffmpeg quietly; raises with its message on failure."""
    result = subprocess.run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y"]
                            + args, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"ffmpeg {' '.join(args)}: {result.stderr.strip()}")


def _still(photos, photo, folder):
    """The photograph `photo` cut to 480x360 (its centre), as a PNG in `folder`; made once."""
    path = os.path.join(folder, f".still_{photo}.png")
    if not os.path.exists(path):
        _ffmpeg(["-i", os.path.join(photos, photo + ".jpg"), "-vf",
                 "scale=480:360:force_original_aspect_ratio=increase,crop=480:360", *_BITEXACT,
                 path])
    return path


def make_video(out, name, photos=None):
    """Writes the video `name` (a key of VIDEOS or CUTS) into the folder `out`; returns its path."""
    photos = photos or PHOTOS
    path = os.path.join(out, name)
    if name in CUTS:
        first, second, w, h, seconds, codec = CUTS[name]
        half = seconds / 2
        motion = PAN.format(w=w, h=h, seconds=half)
        graph = (f"[0:v]{motion},trim=duration={half},setsar=1[a];"
                 f"[1:v]{motion},trim=duration={half},setsar=1[b];[a][b]concat=n=2:v=1[v]")
        _ffmpeg(["-loop", "1", "-framerate", "25", "-i", _still(photos, first, out),
                 "-loop", "1", "-framerate", "25", "-i", _still(photos, second, out),
                 "-filter_complex", graph, "-map", "[v]", *codec, *_BITEXACT, path])
        return path
    photo, motion, w, h, seconds, codec, extra = VIDEOS[name]
    graph = motion.format(w=w, h=h, seconds=seconds) + ",setsar=1"
    extra = list(extra)
    if "-vf" in extra:  # a second filter (the variable frame rate's timestamps) goes after
        at = extra.index("-vf")
        graph += "," + extra[at + 1]
        del extra[at:at + 2]
    encoded = path + ".unrotated.mp4" if name in ROTATED else path
    _ffmpeg(["-loop", "1", "-framerate", "25", "-i", _still(photos, photo, out),
             "-vf", graph, "-t", str(seconds), *codec, *extra, *_BITEXACT, encoded])
    if name in ROTATED:
        _ffmpeg(["-i", encoded, "-c", "copy", "-metadata:s:v:0", "rotate=" + ROTATED[name],
                 *_BITEXACT, path])
        os.remove(encoded)
    return path


def names():
    """Every video of the set, in a fixed order."""
    return list(VIDEOS) + list(CUTS)


def make_video_set(out, only=None, photos=None):
    """Writes the set (or the videos named in `only`) into `out`; returns {name: path}."""
    os.makedirs(out, exist_ok=True)
    made = {name: make_video(out, name, photos) for name in (only or names())}
    for still in os.listdir(out):
        if still.startswith(".still_"):
            os.remove(os.path.join(out, still))
    return made


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--only", nargs="*", choices=names())
    parser.add_argument("--photos", default=PHOTOS)
    args = parser.parse_args()
    for name, path in make_video_set(args.out, args.only, args.photos).items():
        print(f"{name}\t{os.path.getsize(path)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
