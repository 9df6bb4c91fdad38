"""timm's own loader, on the CPU: `timm.data.create_loader` with its transforms
(create_transform: RandomResizedCropAndInterpolation, its RandAugment, RandomErasing) and
`use_prefetcher=False` (its prefetcher needs a GPU), over the same file list as the DataLoader
peers (read as timm's ImageDataset reads: PIL, RGB); its Mixup on each batch in the training
process, as its train.py does without the prefetcher. The recipe works only (recipes.py)."""
import torch
from timm.data import create_loader

import peer_torchvision_pil
import recipes
import work

prepare = peer_torchvision_pil.prepare


def recipe_batches(store, cores, w, seed):
    files = work.read_file_list(store)
    torch.manual_seed(seed)  # the loader's shuffle
    dataset = peer_torchvision_pil.Files(files, None)
    loader = create_loader(dataset, input_size=(3, w.size, w.size), batch_size=recipes.BATCH,
                           num_workers=0 if cores == 1 else cores, use_prefetcher=False,
                           device=torch.device("cpu"), persistent_workers=True,
                           **recipes.timm_transform_args(w))
    mix = recipes.timm_mix(w, recipes.num_classes(files))
    for images, labels in loader:
        yield mix(images, labels)
