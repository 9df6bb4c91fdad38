"""bench/peers/run.py, the side-by-side benchmark, on a tiny image set with the peers that live
in the project's environment (torchvision's two paths): it measures them, compares their
evaluation pixels, and lists a peer that is not installed with its reason instead of failing."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_peers_benchmark_measures_and_names_what_it_cannot_run(tmp_path):
    images = tmp_path / "images"
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_image_set.py"), str(images),
                    "--per-class", "3", "--val-per-class", "1"], check=True, capture_output=True)
    env = dict(os.environ, STOKER_PEERS=str(tmp_path / "no-peers"), STOKER_PEERS_BATCH="8")
    run = subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", "peers", "run.py"), str(images / "train"),
         "--out", str(tmp_path / "out"), "--work", str(tmp_path / "work"), "--rounds", "1",
         "--cores", "1", "--dtypes", "uint8", "--peers",
         "torchvision_pil,torchvision_tensor,dali,webdataset"],
        env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    peers = json.loads((tmp_path / "out" / "results.json").read_text())["peers"]
    for name in ("torchvision_pil", "torchvision_tensor"):
        (only_run,) = peers[name]["runs"]["1c_uint8"]
        assert only_run["images"] == 30 and only_run["batches"] == 4
        assert only_run["images_per_s"] > 0 and only_run["peak_rss_bytes"] > 0
    # The reference against itself, and torchvision's tensor path within a grey level of it.
    assert peers["torchvision_pil"]["eval"]["worst_abs_diff"] == 0
    assert peers["torchvision_tensor"]["eval"]["compared"] == 30
    assert peers["torchvision_tensor"]["eval"]["worst_abs_diff"] <= 1
    assert peers["dali"]["error"].startswith("not installed")
    # The data-in-place peers are the textbook work's too (issue 50's table).
    assert peers["webdataset"]["error"].startswith("not installed")
    table = (tmp_path / "out" / "table.md").read_text()
    assert "dali (DALI, CPU pipeline) — not installed" in table
    assert (tmp_path / "out" / "chart.svg").read_text().startswith("<svg")


def test_the_second_table_reads_reduced_copies_and_measures_their_pixel_cost(tmp_path):
    images = tmp_path / "images"
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_image_set.py"), str(images),
                    "--per-class", "2", "--val-per-class", "1"], check=True, capture_output=True)
    env = dict(os.environ, STOKER_PEERS=str(tmp_path / "no-peers"), STOKER_PEERS_BATCH="8")
    run = subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", "peers", "run.py"), str(images / "train"),
         "--out", str(tmp_path / "out"), "--work", str(tmp_path / "work"), "--rounds", "1",
         "--cores", "1", "--dtypes", "uint8", "--peers", "torchvision_pil", "--max-side", "96"],
        env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    from PIL import Image
    copies = sorted((tmp_path / "work" / "images-max96").rglob("*.*"))
    assert len(copies) == 20
    assert all(max(Image.open(f).size) <= 96 for f in copies)
    peer = json.loads((tmp_path / "out" / "results.json").read_text())["peers"]["torchvision_pil"]
    assert peer["runs"]["1c_uint8"][0]["images"] == 20
    # Compared with the original files, not with the copies: the reduction shows.
    assert peer["eval"]["compared"] == 20 and peer["eval"]["worst_abs_diff"] > 0
    assert "largest side 96" in (tmp_path / "out" / "table.md").read_text()


def test_a_reduced_copy_keeps_the_aspect_and_leaves_images_that_fit():
    sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
    try:
        from reduced_copy import reduced_size
    finally:
        sys.path.pop(0)
    assert reduced_size(300, 200, 100) == (100, 67)
    assert reduced_size(150, 400, 100) == (38, 100)  # as stoker's --max-side (FORMAT.md)
    assert reduced_size(1000, 1, 100) == (100, 1)
    assert reduced_size(100, 100, 100) is None


def test_the_memory_profile_measures_every_row(tmp_path):
    images = tmp_path / "images"
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_image_set.py"), str(images),
                    "--per-class", "3", "--val-per-class", "1"], check=True, capture_output=True)
    out = tmp_path / "memory.json"
    run = subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", "peers", "memory_profile.py"),
         str(images / "train"), "--work", str(tmp_path / "work"), "--json", str(out),
         "--dtypes", "uint8", "--prefetch", "1,default"],
        env=dict(os.environ, STOKER_PEERS_BATCH="8"), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    rows = json.loads(out.read_text())
    assert list(rows) == ["torch alone (import torch)", "DataLoader + PIL, uint8",
                          "stoker, prefetch 1, uint8", "stoker, prefetch default, uint8"]
    torch_alone = rows.pop("torch alone (import torch)")
    assert torch_alone["result"] is None
    for name, row in rows.items():
        snaps = row["snapshots"]
        assert row["result"]["images"] == 30, name
        assert row["peak"]["rss"] >= snaps["last batch"]["VmRSS"] > 0
        assert snaps["import torch"]["VmRSS"] > snaps["python"]["VmRSS"]
        # stoker reads its shards mapped; the DataLoader reads files.
        assert (snaps["last batch"]["store"] > 0) == name.startswith("stoker"), name
    assert "| stoker, prefetch default, uint8 |" in run.stdout


def test_store_bytes_splits_a_reduced_store_from_its_reduced_copy(tmp_path):
    import stoker
    images = tmp_path / "images"
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_image_set.py"), str(images),
                    "--per-class", "2", "--val-per-class", "1"], check=True, capture_output=True)
    sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
    try:
        import reduced_copy
        import store_bytes
    finally:
        sys.path.pop(0)
    copy = reduced_copy.make(str(images / "train"), str(tmp_path / "copy"), 96)
    store = str(tmp_path / "store")
    stoker.convert("imagefolder", str(images / "train"), store, max_side=96)
    result = store_bytes.breakdown(store, copy)
    ((kind, counts),), fmt = result["images"].items(), result["format"]
    assert kind == "re-encoded by both" and counts["images"] == counts["jpegs"] == 20
    # Both are quality 90 of the same pixels: only stoker's restart markers differ.
    assert counts["stored, no restarts"] == counts["file, no restarts"]
    assert counts["restart markers"] > 0 and counts["stored"] > counts["file"]
    assert fmt["images"] == counts["stored"]
    assert fmt["index (offset, length, xxh3 per record)"] == 20 * 24
    assert 0 < fmt["header, footer, padding, manifest"] < 4096


def test_the_recipe_pipelines_give_soft_targets_and_the_ratio_to_the_fastest_peer(tmp_path):
    images = tmp_path / "images"
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_image_set.py"), str(images),
                    "--per-class", "3", "--val-per-class", "1"], check=True, capture_output=True)
    env = dict(os.environ, STOKER_PEERS=str(tmp_path / "no-peers"), STOKER_PEERS_BATCH="8")
    command = [sys.executable, os.path.join(ROOT, "bench", "peers", "run.py"),
               str(images / "train"), "--out", str(tmp_path / "out"), "--work",
               str(tmp_path / "work"), "--rounds", "1", "--cores", "1"]
    for pipeline in ("recipe", "timm-ra"):
        run = subprocess.run(command + ["--pipeline", pipeline, "--peers",
                                        "torchvision_pil,torchvision_tensor,timm,dali"],
                             env=env, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-2000:]
        peers = json.loads((tmp_path / "out" / f"results-{pipeline}.json").read_text())["peers"]
        for name in ("torchvision_pil", "torchvision_tensor", "timm"):
            (only_run,) = peers[name]["runs"]["1c_float32"]
            # 30 images, batches of 8, the partial one dropped (timm's Mixup needs pairs); the
            # worker refused anything but float32 [B, 3, size, size] and soft targets.
            assert only_run["images"] == 24 and only_run["batches"] == 3, name
        assert peers["dali"]["error"].startswith("not installed")
        assert "eval" not in peers["torchvision_pil"]
        table = (tmp_path / "out" / f"table-{pipeline}.md").read_text()
        assert f"### Work {pipeline} (float32" in table and "× fastest peer, 1c" in table
        assert "Fastest peer (stoker's rows aside): 1 core: " in table
        assert "timm (timm's create_loader" in table
        assert (tmp_path / "out" / f"chart-{pipeline}.svg").read_text().startswith("<svg")
    assert not (tmp_path / "out" / "table.md").exists()  # the textbook table is not touched
    refused = subprocess.run(command + ["--pipeline", "recipe", "--dtypes", "uint8"], env=env,
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1].endswith(
        "--dtypes uint8: the pipeline recipe is float32 only")


def test_the_recipe_table_and_chart_give_each_core_count_its_ratio():
    sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
    try:
        import peers_report
    finally:
        sys.path.pop(0)

    def peer(what, one, two, note=None):
        median = {"1c_float32": {"images_per_s": one, "cpu_s_per_image": 0.01,
                                 "peak_rss_bytes": 2 ** 30, "first_batch_s": 1.0},
                  "2c_float32": {"images_per_s": two, "cpu_s_per_image": 0.01,
                                 "peak_rss_bytes": 2 ** 30, "first_batch_s": 1.0}}
        return dict(what=what, median=median, **({"note": note} if note else {}))
    report = {"torchvision_pil": peer("PIL", 100, 300), "dali": peer("DALI", 150, 200),
              "stoker": peer("stoker", 450, 1200, note="loader.plan: every step native"),
              "timm": {"what": "timm", "error": "not installed"}}
    table = peers_report.recipe_table(report, [1, 2], "float32")
    rows = {line.split(" (")[0].strip("| "): line for line in table.splitlines()}
    # Per core: 2 cores halve the rate; the ratio is to the fastest other peer at that count.
    assert "| 450 | 600 | 3.00 | 4.00 |" in rows["stoker"]
    assert "— loader.plan: every step native" in rows["stoker"]
    assert "| 100 | 150 | 0.67 | 1.00 |" in rows["torchvision_pil"]
    assert "| 150 | 100 | 1.00 | 0.67 |" in rows["dali"]
    assert "— not installed | - |" in rows["timm"]
    assert table.endswith("1 core: dali; 2 cores: torchvision_pil.")
    svg = peers_report.chart(report, ["1c_float32", "2c_float32"], "recipe")
    assert svg.count("<rect") == 6  # two bars for each measured peer
    assert "3.0× fastest peer" in svg and "4.0× fastest peer" in svg


def test_stoker_runs_each_recipe_with_its_batch_step_and_names_its_python_steps(tmp_path):
    import stoker
    import torch
    images = tmp_path / "images"
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_image_set.py"), str(images),
                    "--per-class", "2", "--val-per-class", "1"], check=True, capture_output=True)
    store = str(tmp_path / "store")
    stoker.convert("imagefolder", str(images / "train"), store)
    sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
    try:
        import peer_stoker
        import recipes
    finally:
        sys.path.pop(0)
    batch, recipes.BATCH = recipes.BATCH, 8
    try:
        for name, size in (("recipe", 176), ("timm-ra", 224)):
            w = recipes.WORKS[name]
            got = list(peer_stoker.recipe_batches(store, 2, w, 0))
            assert len(got) == 2  # 20 images, the partial batch dropped
            for image, target in got:
                assert image.dtype == torch.float32 and image.shape == (8, 3, size, size)
                # MixUp/CutMix's soft targets over the 10 classes, each row summing to 1.
                assert target.dtype == torch.float32 and target.shape == (8, 10)
                assert torch.allclose(target.sum(1), torch.ones(8))
                assert (target > 0).sum(1).max() >= 2
            assert peer_stoker.recipe_note(store, w).startswith("loader.plan")
    finally:
        recipes.BATCH = batch


def make_coco_set(out, images):
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_coco_set.py"), str(out),
                    "--images", str(images)], check=True, capture_output=True)
    return out


def test_the_detection_works_run_the_reference_loader_on_its_train_split(tmp_path):
    coco = make_coco_set(tmp_path / "coco", 20)
    env = dict(os.environ, STOKER_PEERS=str(tmp_path / "no-peers"), STOKER_PEERS_BATCH="4")
    command = [sys.executable, os.path.join(ROOT, "bench", "peers", "run.py"), str(coco),
               "--out", str(tmp_path / "out"), "--work", str(tmp_path / "work"), "--rounds", "1",
               "--cores", "1", "--peers", "torchvision_pil,dali"]
    data = json.loads((coco / "annotations" / "instances.json").read_text())
    usable = {a["image_id"] for a in data["annotations"] if min(a["bbox"][2:]) > 1}
    for pipeline in ("det-hflip", "det-lsj"):
        run = subprocess.run(command + ["--pipeline", pipeline], env=env, capture_output=True,
                             text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-2000:]
        peers = json.loads((tmp_path / "out" / f"results-{pipeline}.json").read_text())["peers"]
        (only_run,) = peers["torchvision_pil"]["runs"]["1c_float32"]
        # The train split (images with a usable object) in whole batches of 4; the worker
        # refused anything but float32 images and targets of boxes [N, 4] and labels [N] (lsj's
        # images 1024 x 1024).
        assert only_run["images"] == len(usable) // 4 * 4, pipeline
        assert only_run["batches"] == len(usable) // 4
        assert peers["dali"]["error"].startswith("not installed")
        table = (tmp_path / "out" / f"table-{pipeline}.md").read_text()
        assert f"### Work {pipeline} (float32, bench/peers/detection.py)" in table
        assert "torchvision_pil (DataLoader + torchvision v2 as the detection reference" in table
        assert (tmp_path / "out" / f"chart-{pipeline}.svg").read_text().startswith("<svg")
    train = json.loads((tmp_path / "work" / "store-torchvision_pil-coco" /
                        "instances-train.json").read_text())
    assert {i["id"] for i in train["images"]} == usable


@pytest.mark.parametrize("height, width", [(12, 30), (24, 40), (30, 12)])
def test_the_lsj_fixed_size_crop_crops_at_one_draw_and_pads_right_and_bottom(height, width):
    """The reference's FixedSizeCrop(16): a crop where a side is longer, at both offsets of
    one draw, then padding to 16 x 16 at the right and bottom (fill; masks 0)."""
    import numpy as np
    import torch
    from PIL import Image
    from torchvision import tv_tensors
    sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
    try:
        from fixed_size_crop import FixedSizeCrop
    finally:
        sys.path.pop(0)
    pixels = torch.randint(0, 256, (height, width, 3), dtype=torch.uint8)
    stored = torch.tensor([[0, 0, 10, 5], [width - 10, 2, width - 1, 10],
                           [2, 1, width - 4, height - 1]], dtype=torch.float32)
    boxes = tv_tensors.BoundingBoxes(stored, format="XYXY", canvas_size=(height, width))
    masks = tv_tensors.Mask(torch.ones((3, height, width), dtype=torch.uint8))
    crop = FixedSizeCrop(size=(16, 16), fill=(7, 8, 9))
    torch.manual_seed(5)
    r = torch.rand(1)  # the one draw
    top, left = int(max(height - 16, 0) * r), int(max(width - 16, 0) * r)
    h, w = min(height, 16), min(width, 16)
    torch.manual_seed(5)
    out, target = crop(Image.fromarray(pixels.numpy()), {"boxes": boxes, "masks": masks})
    got = torch.from_numpy(np.asarray(out).copy())
    want = torch.tensor([7, 8, 9], dtype=torch.uint8).expand(16, 16, 3).clone()
    want[:h, :w] = pixels[top:top + h, left:left + w]
    assert torch.equal(got, want)
    # The boxes moved by the crop and clamped to it (the empty ones SanitizeBoundingBoxes drops).
    moved = stored - torch.tensor([left, top, left, top])
    want_boxes = torch.stack([moved[:, 0].clamp(0, w), moved[:, 1].clamp(0, h),
                              moved[:, 2].clamp(0, w), moved[:, 3].clamp(0, h)], dim=1)
    assert torch.equal(target["boxes"].as_subclass(torch.Tensor), want_boxes)
    assert target["boxes"].canvas_size == (16, 16)
    want_masks = torch.zeros((3, 16, 16), dtype=torch.uint8)
    want_masks[:, :h, :w] = 1
    assert torch.equal(target["masks"].as_subclass(torch.Tensor), want_masks)


def test_stoker_runs_the_hflip_preset_natively_on_the_converted_train_split(tmp_path):
    coco = make_coco_set(tmp_path / "coco", 14)
    sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))  # the presets import from there
    import detection
    import peer_stoker
    store = str(tmp_path / "store")
    peer_stoker.prepare_coco(str(coco), store)
    train = json.loads((tmp_path / "store" / "instances-train.json").read_text())
    sizes = {i["id"]: (i["height"], i["width"]) for i in train["images"]}
    assert len(sizes) % 4  # a partial batch, which the reference's drop_last drops
    batch, detection.BATCH = detection.BATCH, 4
    try:
        w = detection.WORKS["det-hflip"]
        seen = []
        for k, (images, targets) in enumerate(peer_stoker.detection_batches(store, 1, w, 0)):
            assert detection.check(k, (images, targets), w) == 4
            for image, target in zip(images, targets):
                assert tuple(image.shape[1:]) == sizes[target["image_id"]]
                seen.append(target["image_id"])
        # One epoch of the split in whole batches, each image once, at its own size.
        assert len(seen) == len(sizes) // 4 * 4 and len(set(seen)) == len(seen)
        assert peer_stoker.detection_note(store, w) == "loader.plan: every step native"
        lsj = detection.WORKS["det-lsj"]
        try:
            first = next(peer_stoker.detection_batches(store, 1, lsj, 0))
        except ValueError as e:  # refused, naming the step, until stoker runs lsj
            assert "ScaleJitter" in str(e)
        else:
            assert detection.check(0, first, lsj) == 4
    finally:
        detection.BATCH = batch
        sys.path.remove(os.path.join(ROOT, "bench", "peers"))


def make_voc_set(tmp_path, images):
    out = tmp_path / "voc"
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_voc_set.py"),
                    str(make_coco_set(tmp_path / "coco", images)), str(out)], check=True,
                   capture_output=True)
    return out


def test_the_segmentation_work_runs_the_reference_preset_on_the_voc_split(tmp_path):
    voc = make_voc_set(tmp_path, 16)
    env = dict(os.environ, STOKER_PEERS=str(tmp_path / "no-peers"), STOKER_PEERS_BATCH="4")
    run = subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", "peers", "run.py"), str(voc), "--out",
         str(tmp_path / "out"), "--work", str(tmp_path / "work"), "--rounds", "1", "--cores",
         "1", "--peers", "torchvision_pil,dali", "--pipeline", "seg"],
        env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    peers = json.loads((tmp_path / "out" / "results-seg.json").read_text())["peers"]
    (only_run,) = peers["torchvision_pil"]["runs"]["1c_float32"]
    # The 12 images of the train split in batches of 4: float32 [4, 3, 480, 480] and int64
    # [4, 480, 480], or the worker refused them.
    assert only_run["images"] == 12 and only_run["batches"] == 3
    assert peers["dali"]["error"].startswith("not installed")
    table = (tmp_path / "out" / "table-seg.md").read_text()
    assert "### Work seg (float32, bench/peers/segmentation.py)" in table


def test_stoker_runs_the_segmentation_preset_natively_on_the_converted_split(tmp_path):
    import torch
    voc = make_voc_set(tmp_path, 16)
    sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
    import peer_stoker
    import segmentation
    store = str(tmp_path / "store")
    batch, segmentation.BATCH = segmentation.BATCH, 5
    try:
        peer_stoker.prepare_voc(str(voc), store)
        w = segmentation.WORKS["seg"]
        got = list(peer_stoker.segmentation_batches(store, 1, w, 0))
        assert len(got) == 2  # 12 images, the partial batch dropped
        for k, (images, masks) in enumerate(got):
            assert segmentation.check(k, (images, masks), w) == 5
            # Classes 0 to 20, 255 on the objects' borders and where the crop padded.
            assert set(masks.unique().tolist()) <= set(range(21)) | {255}
        assert peer_stoker.segmentation_note(store, w) == "loader.plan: every step native"
    finally:
        segmentation.BATCH = batch
        sys.path.remove(os.path.join(ROOT, "bench", "peers"))
