"""torchrun + DistributedDataParallel on the CPU (gloo).

    torchrun --nproc-per-node 2 -- examples/ddp_train.py DATA [--epochs 1] [--batch-size 64]

Each rank's stoker.Loader takes its rank and world size from torch.distributed and reads its
own share of every epoch; every rank gets len(loader) batches, so no rank waits at an epoch's
end for another (the default last_batch="short" repeats up to world_size - 1 samples from the
epoch's start; "drop" drops the tail instead, "pad" masks the repeats).
"""

from datetime import timedelta

import torch
import torch.distributed as dist

import stoker
from common import FIELDS, arguments, classifier, train_step


def main():
    args = arguments(__doc__)
    # A rank that dies fails the others' next collective within this timeout, never a hang.
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    loader = stoker.Loader(args.data, shuffle=True, batch_size=args.batch_size,
                           transforms={"image": stoker.transforms.ToTensor()}, batch_format=FIELDS)
    model = torch.nn.parallel.DistributedDataParallel(classifier(args.data))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        loader.set_epoch(epoch)
        for image, label in loader:
            loss = train_step(model, optimizer, image, label)
        print(f"rank {dist.get_rank()}/{dist.get_world_size()}: epoch {epoch}, "
              f"{len(loader)} batches, loss {loss.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
