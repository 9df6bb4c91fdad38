"""A small GPT trained for a few steps from a mixture of two token sources, packed to 256 tokens:
stoker.Tokens (nanoGPT's .bin, a .npy) mixed 3:1 by stoker.Mixture, batches of
(input_ids, labels) as nanoGPT's get_batch gives them.

    python examples/lm_train.py OUT_DIR [--steps 30] [--threads 1]

It writes its two token files into OUT_DIR (sequences a model learns in a few steps) and prints
"step k: loss X" for each step.
"""

import argparse
import pathlib

import numpy as np
import torch

import stoker
from common import train_steps

VOCAB = 128
SEQ_LEN = 256


def write_tokens(out: pathlib.Path) -> tuple:
    """Two token sources: a counting cycle as nanoGPT's uint16 .bin, strides of 7 as a .npy."""
    out.mkdir(parents=True, exist_ok=True)
    counting = (np.arange(100_000) % 64).astype(np.uint16)
    counting.tofile(out / "counting.bin")
    strides = ((np.arange(50_000) * 7) % VOCAB).astype(np.int32)
    np.save(out / "strides.npy", strides)
    return out / "counting.bin", out / "strides.npy"


class TinyGPT(torch.nn.Module):
    """Token and position embeddings, two causal self-attention layers, a linear head."""

    def __init__(self, width: int = 64):
        super().__init__()
        self.tokens = torch.nn.Embedding(VOCAB, width)
        self.positions = torch.nn.Embedding(SEQ_LEN, width)
        layer = torch.nn.TransformerEncoderLayer(width, 4, 4 * width, dropout=0.0,
                                                 batch_first=True)
        self.blocks = torch.nn.TransformerEncoder(layer, 2)
        self.head = torch.nn.Linear(width, VOCAB)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))
        mask = torch.nn.Transformer.generate_square_subsequent_mask(ids.shape[1])
        return self.head(self.blocks(x, mask=mask, is_causal=True))


def train(out: pathlib.Path, steps: int) -> list:
    """Trains TinyGPT for `steps` steps of 8 sequences; returns each step's loss."""
    counting, strides = write_tokens(out)
    mixture = stoker.Mixture([stoker.Tokens(counting, seq_len=SEQ_LEN),
                              stoker.Tokens(strides, seq_len=SEQ_LEN)], weights=[3, 1])
    loader = stoker.Loader(mixture, batch_size=8, shuffle=True,
                           order=stoker.Order(seed=1), batches=stoker.Batches(
                               batch_format=("input_ids", "labels")))
    torch.manual_seed(0)
    model = TinyGPT()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)

    def loss_of(batch):
        ids, labels = batch
        return torch.nn.functional.cross_entropy(model(ids).reshape(-1, VOCAB),
                                                 labels.reshape(-1))

    return train_steps(loader, optimizer, steps, loss_of)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    train(args.out, args.steps)
