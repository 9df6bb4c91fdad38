"""How a torchvision step turns uint8 images into float32 in [0, 1]: the native operations'
``unit_scale`` parameter (``image/float_pixel.h``), so their values are torchvision's bit for
bit."""


def unit_scale(step) -> str:
    """``"multiply"`` (x * float32(1 / 255)) for torchvision v2's ToDtype(float32, scale=True)
    and ConvertImageDtype; ``"divide"`` (x / 255) for ToTensor (v1's and v2's, which is v1's),
    v1's ConvertImageDtype and the references' own; a stoker ToTensor's own ``unit_scale``."""
    module = type(step).__module__
    if module == "stoker.transforms":
        return step.unit_scale
    v2 = module.startswith("torchvision.transforms.v2")
    return "multiply" if v2 and type(step).__name__ != "ToTensor" else "divide"
