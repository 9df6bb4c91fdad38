"""A 2-D DeviceMesh on the CPU (gloo): data parallel (FSDP2's fully_shard) x tensor parallel.
Needs torch 2.6 or later (torch.distributed.fsdp.fully_shard; 2.4's FSDP2 runs on CUDA only).

    torchrun --nproc-per-node 4 -- examples/mesh_train.py DATA [--epochs 1] [--batch-size 64]

The loader shards by the mesh's "dp" dimension (mesh=mesh["dp"]): the two ranks of a
tensor-parallel group get the same batches, the data-parallel groups disjoint ones.
"""

import os

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

import stoker
from common import FIELDS, arguments, classifier, train_step


def main():
    args = arguments(__doc__)
    # torchrun's processes, two per tensor-parallel group.
    world_size = int(os.environ["WORLD_SIZE"])
    mesh = init_device_mesh("cpu", (world_size // 2, 2), mesh_dim_names=("dp", "tp"))
    loader = stoker.Loader(args.data, shuffle=True, batch_size=args.batch_size, mesh=mesh["dp"],
                           transforms={"image": stoker.transforms.ToTensor()}, batch_format=FIELDS)
    model = classifier(args.data)  # Flatten, Linear, ReLU, Linear
    parallelize_module(model, mesh["tp"], {"1": ColwiseParallel(), "3": RowwiseParallel()})
    fully_shard(model, mesh=mesh["dp"])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        loader.set_epoch(epoch)
        for image, label in loader:
            loss = train_step(model, optimizer, image, label)
        print(f"rank {dist.get_rank()} (dp {mesh['dp'].get_local_rank()}, tp "
              f"{mesh['tp'].get_local_rank()}): epoch {epoch}, {len(loader)} batches, "
              f"loss {loss.item():.3f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
