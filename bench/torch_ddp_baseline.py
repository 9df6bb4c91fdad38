#!/usr/bin/env python3
"""PyTorch's own DistributedDataParallel on the workload of bench/dist_scaling.py: the reference
that stoker's data-parallel scaling is compared with.

The classic MLP (bench/torch_train_baseline.py's model) on Fashion-MNIST train, batch 64 per
rank, Adam 1e-3, 1 thread per rank, Gloo over loopback, torch.nn.parallel.DistributedDataParallel
with its default buckets. The data is resident (the uint8 images normalised per batch, each
rank's shard by DistributedSampler's rule), so only compute and the all-reduce are timed, as
stoker's `--workers 0` runs build each batch on the training thread. Rank 0 prints one JSON
line per epoch: {"epoch", "seconds", "samples_per_second"}.

  /usr/bin/torchrun --standalone --nproc_per_node N --redirects 1 --tee 1 \\
      bench/torch_ddp_baseline.py [--epochs 4]

bench/dist_scaling.py --torch runs it beside stoker.
"""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_mnist_torchvision as fm  # noqa: E402
from torch_train_baseline import build_model  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--batch", type=int, default=64, help="per rank")
    args = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    images, labels = fm.load_uint8(train=True)
    model = torch.nn.parallel.DistributedDataParallel(build_model(torch, 0))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        order = torch.randperm(len(images), generator=torch.Generator().manual_seed(epoch))
        per_rank = len(order) // world  # DistributedSampler(drop_last=True)'s shard
        mine = order[rank * per_rank:(rank + 1) * per_rank]
        dist.barrier()
        start = time.perf_counter()
        for i in range(0, per_rank - args.batch + 1, args.batch):
            index = mine[i:i + args.batch]
            x = (images[index].float().div_(255).sub_(0.2860).div_(0.3530)).unsqueeze(1)
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(x), labels[index]).backward()
            optimizer.step()
        dist.barrier()
        seconds = time.perf_counter() - start
        if rank == 0:
            print(json.dumps({"epoch": epoch + 1, "seconds": seconds,
                              "samples_per_second": per_rank * world / seconds}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
