"""torchvision's PIL path with Pillow-SIMD in place of Pillow (its own environment, where
Pillow-SIMD's PIL comes first): the same code as peer_torchvision_pil."""
from peer_torchvision_pil import batches, eval_image, prepare, recipe_batches  # noqa: F401
