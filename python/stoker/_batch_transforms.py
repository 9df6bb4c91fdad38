"""A Loader's ``batch_transform`` as a native batch operation (``stoker ops``, role "batch"):
torchvision v2's ``MixUp``, ``CutMix`` and a ``RandomChoice`` of one of each, and timm's
``Mixup``, run by the loader's workers on each finished batch, drawing from the batch's own
stream (seed, epoch, position, rank): the same for any number of workers and after a resume.
Their pixels and soft targets are torchvision's and timm's for the same draws (the native
operations' tests). Anything else (another callable, a MixUp without num_classes or with its
own labels_getter, a timm Mixup with multi_label or mixing switched off) runs in Python
(_python_steps.BatchTransform). A timm Mixup's ``mixup_enabled`` is read when the loader is made.
"""

from __future__ import annotations

from typing import Optional


def _torchvision_v2(t, *names: str) -> bool:
    return type(t).__name__ in names and \
        type(t).__module__.startswith("torchvision.transforms.v2")


def _default_labels(t) -> bool:
    getter = getattr(t, "_labels_getter", None)
    return getattr(getter, "__name__", "") == "_find_labels_default_heuristic"


def _mixing(t) -> Optional[dict]:
    """MixUp or CutMix with index labels over num_classes, as {"kind", "alpha", "num_classes"}."""
    if not (_torchvision_v2(t, "MixUp", "CutMix") and _default_labels(t) and
            isinstance(getattr(t, "num_classes", None), int)):
        return None
    return {"kind": type(t).__name__, "alpha": float(t.alpha), "num_classes": t.num_classes}


def _random_choice(t) -> Optional[dict]:
    steps = list(getattr(t, "transforms", []))
    if not _torchvision_v2(t, "RandomChoice") or len(steps) != 2:
        return None
    parts = {m["kind"]: (m, float(p)) for m, p in zip(map(_mixing, steps), t.p) if m}
    if sorted(parts) != ["CutMix", "MixUp"] or \
            parts["MixUp"][0]["num_classes"] != parts["CutMix"][0]["num_classes"]:
        return None
    (mixup, p_mixup), (cutmix, p_cutmix) = parts["MixUp"], parts["CutMix"]
    return {"op": "mixup_cutmix", "mixup_alpha": mixup["alpha"], "cutmix_alpha": cutmix["alpha"],
            "num_classes": mixup["num_classes"], "p": [p_mixup, p_cutmix]}


def _timm_mixup(t) -> Optional[dict]:
    if type(t).__name__ != "Mixup" or type(t).__module__ != "timm.data.mixup" or \
            t.multi_label or not t.mixup_enabled:
        return None
    return {"op": "timm_mixup", "mixup_alpha": float(t.mixup_alpha),
            "cutmix_alpha": float(t.cutmix_alpha),
            "cutmix_minmax": [float(v) for v in t.cutmix_minmax or []],
            "prob": float(t.mix_prob), "switch_prob": float(t.switch_prob), "mode": t.mode,
            "correct_lam": bool(t.correct_lam), "label_smoothing": float(t.label_smoothing),
            "num_classes": int(t.num_classes)}


def native_call(transform) -> Optional[dict]:
    """The native operation's call {"op": NAME, PARAM: value, ...} of `transform`, or None if
    it runs in Python."""
    mixing = _mixing(transform)
    if mixing:
        return {"op": mixing["kind"].lower(), "alpha": mixing["alpha"],
                "num_classes": mixing["num_classes"]}
    return _random_choice(transform) or _timm_mixup(transform)
