#!/usr/bin/env python3
"""The fewest frames a decoder must decode for exact clips of H.264 videos, from their packets
(PyAV's demuxer: run in bench/peers/setup.sh's pyav environment; nothing is decoded).

A decoder that decodes whole frames and can tell reference frames from the rest (H.264's
nal_ref_idc, what FFmpeg's skip_frame=nonref acts on) must decode, in each GOP holding an asked
frame, every reference frame from the keyframe up to the last asked frame in decoding order, and
the asked frames that are no reference. A decoder that decodes every frame from the keyframe
decodes the GOP's prefix: its frames up to the last asked one in presentation order. Frames are
counted per decode of a video: the clips asked of it together, each GOP decoded once.

  video_gop_bound.py ASKED   ASKED: a JSON list of [path, [frame index, ...]] (one decode each)

prints one JSON object: {"asked": frames asked (with repeats), "bound": the fewest decoded,
"prefix": the GOP prefixes' frames}, summed over the list.
"""
import json
import sys


def frame_table(path):
    """Per packet in decoding order: (presentation index, keyframe, reference)."""
    import av
    with av.open(path) as container:
        stream = container.streams.video[0]
        if stream.codec_context.name != "h264":
            raise ValueError(f"{path}: {stream.codec_context.name}, not H.264")
        packets = [(p.pts, p.is_keyframe, _is_reference(bytes(p))) for p in
                   container.demux(stream) if p.size]
    order = {pts: i for i, pts in enumerate(sorted(pts for pts, _, _ in packets))}
    return [(order[pts], key, ref) for pts, key, ref in packets]


def _is_reference(data):
    """True if a length-prefixed (4 bytes, as mp4 stores H.264) access unit holds a slice with
    nal_ref_idc other than 0."""
    at = 0
    while at + 5 <= len(data):
        size = int.from_bytes(data[at:at + 4], "big")
        header = data[at + 4]
        if header & 0x1F in (1, 5):  # a slice (5: of an IDR picture)
            return header >> 5 != 0
        at += 4 + size
    raise ValueError("an access unit without a slice")


def costs(table, asked):
    """(bound, prefix) for one decode of the frames `asked` (presentation indices)."""
    wanted = set(asked)
    starts = [at for at, (_, key, _) in enumerate(table) if key] + [len(table)]
    bound = prefix = 0
    for begin, end in zip(starts, starts[1:]):
        gop = table[begin:end]
        asked_at = [at for at, (index, _, _) in enumerate(gop) if index in wanted]
        if asked_at:
            run = gop[:max(asked_at) + 1]  # decoding order, up to the last asked frame
            bound += sum(ref or index in wanted for index, _, ref in run)
            last = max(gop[at][0] for at in asked_at)  # presentation order, up to it
            prefix += sum(index <= last for index, _, _ in gop)
    return bound, prefix


def main(argv):
    with open(argv[0]) as f:
        decodes = json.load(f)
    tables = {}
    total = {"asked": 0, "bound": 0, "prefix": 0}
    for path, asked in decodes:
        if path not in tables:
            tables[path] = frame_table(path)
        bound, prefix = costs(tables[path], asked)
        total["asked"] += len(asked)
        total["bound"] += bound
        total["prefix"] += prefix
    print(json.dumps(total))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
