"""examples/ run as a user runs them, on a tiny dataset (203 records, batches of 16)."""

import pathlib
import re
import subprocess
import sys

import pytest
import torch.distributed.fsdp

from torchrun import torchrun
from video_build import needs_video

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def succeeded(done):
    """The standard output of a finished process that succeeded."""
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize("arch", ["mlp", "cnn"])
@pytest.mark.parametrize("name", ["plain", "lightning"])
def test_one_process_examples_train(classes, name, arch):
    out = succeeded(subprocess.run([sys.executable, EXAMPLES / f"{name}_train.py", classes,
                                    "--epochs", "2", "--batch-size", "16", "--arch", arch],
                                   capture_output=True, text=True, timeout=180))
    assert out.strip().endswith("images/s"), out


def test_the_ddp_example_trains_under_torchrun(classes):
    out = succeeded(torchrun(2, EXAMPLES / "ddp_train.py", classes, "--batch-size", "16"))
    # 203 records on 2 ranks: 102 each (one repeated), 7 batches of 16 on every rank.
    for rank in range(2):
        assert f"rank {rank}/2: epoch 0, 7 batches, loss" in out, out


def test_the_accelerate_example_trains_under_torchrun(classes):
    out = succeeded(torchrun(2, EXAMPLES / "accelerate_train.py", classes, "--batch-size", "16"))
    assert out.count("images/s") == 2, out  # one line a rank


@pytest.mark.skipif(not hasattr(torch.distributed.fsdp, "fully_shard"),
                    reason="FSDP2 on the CPU needs torch 2.6 or later (2.4's runs on CUDA only)")
def test_the_mesh_example_trains_fsdp_and_tensor_parallel(classes):
    out = succeeded(torchrun(4, EXAMPLES / "mesh_train.py", classes, "--batch-size", "16"))
    lines = sorted(re.findall(r"rank \d .*", out))  # after torchrun's "[defaultN]:"
    assert len(lines) == 4, out
    # A tensor-parallel group's two ranks train on the same batches: the same loss.
    losses = [line.rsplit(" ", 1)[1] for line in lines]
    assert losses[0] == losses[1] and losses[2] == losses[3], out
    assert "(dp 1, tp 1): epoch 0, 7 batches" in lines[3], out


def step_losses(out):
    """The losses of a detection or segmentation example's "step k: loss X" lines."""
    return [float(x) for x in re.findall(r"^step \d+: loss ([\d.]+)$", out, re.MULTILINE)]


@pytest.mark.parametrize("name", ["detection", "segmentation"])
def test_detection_and_segmentation_examples_lower_their_loss(coco_dataset, name):
    """Faster R-CNN and DeepLabV3 (MobileNetV3, no weights) on the converted COCO-shaped set,
    8 steps of 2 images at 128 px, one torch thread (much faster on a busy machine)."""
    out = succeeded(subprocess.run([sys.executable, EXAMPLES / f"{name}_train.py",
                                    coco_dataset, "--steps", "8", "--threads", "1"],
                                   capture_output=True, text=True, timeout=300))
    losses = step_losses(out)
    assert len(losses) == 8, out
    assert sum(losses[-3:]) < sum(losses[:3]), out


def test_the_lm_example_lowers_its_loss_from_mixed_token_sources(tmp_path):
    """A small GPT from nanoGPT's .bin and a .npy of tokens mixed 3:1, packed to 256 tokens
    (stoker.Tokens, stoker.Mixture): 30 steps of 8 sequences, one torch thread."""
    out = succeeded(subprocess.run([sys.executable, EXAMPLES / "lm_train.py", tmp_path,
                                    "--steps", "30", "--threads", "1"],
                                   capture_output=True, text=True, timeout=300))
    losses = step_losses(out)
    assert len(losses) == 30, out
    assert sum(losses[-5:]) < sum(losses[:5]) / 2, out


@needs_video
def test_the_video_example_lowers_its_loss(tmp_path):
    """r3d_18 from Kinetics-shaped class folders (bench/make_kinetics_set.py: 8 clips of 2 s,
    2 classes), clips through DecodeClip and torchvision v2's steps: 16 steps of 4 clips."""
    videos = tmp_path / "videos"
    succeeded(subprocess.run([sys.executable, EXAMPLES.parent / "bench" / "make_kinetics_set.py",
                              videos, "--clips", "8", "--classes", "2", "--seconds", "2"],
                             capture_output=True, text=True, timeout=300))
    out = succeeded(subprocess.run([sys.executable, EXAMPLES / "video_train.py", videos,
                                    "--steps", "16", "--threads", "1"],
                                   capture_output=True, text=True, timeout=300))
    losses = step_losses(out)
    assert len(losses) == 16, out
    assert sum(losses[-4:]) < sum(losses[:4]), out


def test_the_clip_example_lowers_its_loss_from_image_text_tars(tmp_path):
    """A tiny CLIP from 400 image-text pairs (bench/make_image_text_set.py: jpg + txt tars),
    captions tokenized in threads (stoker.transforms.Tokenize): 30 steps of 32 pairs; with
    --packed (no padding) the same model, so the same losses."""
    pairs = tmp_path / "pairs"
    succeeded(subprocess.run([sys.executable, EXAMPLES.parent / "bench" /
                              "make_image_text_set.py", pairs, "--samples", "400"],
                             capture_output=True, text=True, timeout=300))
    runs = {}
    for flags in ([], ["--packed"]):
        out = succeeded(subprocess.run([sys.executable, EXAMPLES / "clip_train.py", pairs,
                                        "--steps", "30", "--threads", "1", *flags],
                                       capture_output=True, text=True, timeout=300))
        losses = runs[tuple(flags)] = step_losses(out)
        assert len(losses) == 30, out
        assert sum(losses[-5:]) < sum(losses[:5]) * 0.7, out
    assert runs[("--packed",)][:5] == pytest.approx(runs[()][:5], abs=1e-3)
