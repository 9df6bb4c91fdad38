"""A tiny CLIP trained for a few steps from image-text tars (LAION/DataComp-style: KEY.jpg +
KEY.txt), as bench/make_image_text_set.py writes them: images cropped and normalised by
stoker's native pipeline, captions tokenized by a Hugging Face tokenizer in threads
(stoker.transforms.Tokenize), the contrastive loss of both towers. With --packed the captions
come packed (Tokenize(packed=True): no padding, cu_seqlens and position_ids), and the text tower
attends within each caption (a block-diagonal mask) and averages each caption's tokens: the same
model as on padded ids.

    python bench/make_image_text_set.py pairs --samples 400
    python examples/clip_train.py pairs [--steps 30] [--threads 1] [--packed]

The tokenizer is a small BPE trained here on the tars' captions (read by stoker too); it prints
"step k: loss X" for each step.
"""

import argparse
import math
import pathlib

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

import stoker
from common import train_steps

CONTEXT = 16
WIDTH = 64
T = stoker.transforms


def train_tokenizer(tars: list) -> Tokenizer:
    """A BPE tokenizer (padding id 0) trained on every caption of `tars`."""
    captions = stoker.Loader(stoker.WebDataset(tars, label=None, transforms={
        "image": None, "txt": T.RawBytes()}), batch_size=256, batch_format=("txt",))
    texts = [bytes(t.numpy()).decode() for (batch,) in captions for t in batch]
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=256, special_tokens=["[PAD]", "[UNK]"], show_progress=False))
    return tokenizer


class TinyCLIP(torch.nn.Module):
    """A small CNN image tower, a one-layer transformer text tower (mean of its non-padding
    tokens), both projected to WIDTH, and CLIP's learned temperature."""

    def __init__(self, vocab: int):
        super().__init__()
        layers = []
        for c_in, c_out in ((3, 16), (16, 32), (32, 64)):
            layers += [torch.nn.Conv2d(c_in, c_out, 3, stride=2, padding=1),
                       torch.nn.BatchNorm2d(c_out), torch.nn.ReLU()]
        self.image = torch.nn.Sequential(*layers, torch.nn.AdaptiveAvgPool2d(1),
                                         torch.nn.Flatten(), torch.nn.Linear(64, WIDTH))
        self.tokens = torch.nn.Embedding(vocab, WIDTH, padding_idx=0)
        self.positions = torch.nn.Parameter(torch.zeros(CONTEXT, WIDTH))
        self.text = torch.nn.TransformerEncoderLayer(WIDTH, 4, 2 * WIDTH, dropout=0.0,
                                                     batch_first=True)
        self.text_projection = torch.nn.Linear(WIDTH, WIDTH)
        self.logit_scale = torch.nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    def encode_text(self, ids: torch.Tensor) -> torch.Tensor:
        padding = ids == 0
        x = self.text(self.tokens(ids) + self.positions, src_key_padding_mask=padding)
        keep = (~padding).unsqueeze(-1).float()
        return self.text_projection((x * keep).sum(1) / keep.sum(1).clamp(min=1))

    def encode_packed(self, ids, cu_seqlens, positions) -> torch.Tensor:
        """encode_text of packed captions: ids [total], caption k at cu_seqlens[k:k + 2]."""
        lengths = (cu_seqlens[1:] - cu_seqlens[:-1]).long()
        caption = torch.repeat_interleave(torch.arange(len(lengths)), lengths)
        apart = caption[:, None] != caption[None, :]
        x = self.text((self.tokens(ids) + self.positions[positions])[None], src_mask=apart)[0]
        sums = torch.zeros(len(lengths), WIDTH).index_add_(0, caption, x)
        return self.text_projection(sums / lengths.clamp(min=1)[:, None])

    def forward(self, images: torch.Tensor, *text) -> torch.Tensor:
        """The symmetric contrastive loss of a batch of pairs; `text`: the ids [B, CONTEXT], or
        packed (ids, cu_seqlens, max_seqlen, position_ids)."""
        image = torch.nn.functional.normalize(self.image(images), dim=-1)
        text = self.encode_text(*text) if len(text) == 1 else \
            self.encode_packed(text[0], text[1], text[3])
        text = torch.nn.functional.normalize(text, dim=-1)
        logits = self.logit_scale.exp() * image @ text.T
        targets = torch.arange(len(images))
        return (torch.nn.functional.cross_entropy(logits, targets) +
                torch.nn.functional.cross_entropy(logits.T, targets)) / 2


def train(folder: pathlib.Path, steps: int, batch_size: int, packed: bool = False) -> list:
    """Trains TinyCLIP for `steps` steps; returns each step's loss."""
    tars = sorted(str(p) for p in folder.glob("*.tar"))
    tokenizer = train_tokenizer(tars)
    pairs = stoker.WebDataset(tars, label=None, transforms={
        "image": T.Compose([T.RandomResizedCrop(64, scale=(0.5, 1.0)), T.ToTensor(),
                            T.Normalize([0.48, 0.46, 0.41], [0.27, 0.26, 0.28])]),
        "txt": T.Tokenize(tokenizer, context_length=CONTEXT, pad_id=0, packed=packed)})
    fields = ("image", "txt") + (("cu_seqlens", "max_seqlen", "position_ids") if packed else ())
    loader = stoker.Loader(pairs, batch_size=batch_size, shuffle=True, drop_last=True,
                           order=stoker.Order(seed=1),
                           batches=stoker.Batches(batch_format=fields),
                           feed=stoker.Feed(python_parallel="threads", python_workers=2))
    torch.manual_seed(0)
    model = TinyCLIP(tokenizer.get_vocab_size())
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)
    return train_steps(loader, optimizer, steps, lambda batch: model(*batch))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tars", type=pathlib.Path, help="a folder of image-text tars")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's)")
    parser.add_argument("--packed", action="store_true", help="captions packed, no padding")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    train(args.tars, args.steps, args.batch_size, args.packed)
