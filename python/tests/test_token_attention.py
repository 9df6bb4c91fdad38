"""What attention kernels take of stoker.Tokens' rows: return_cu_seqlens="batch" (the batch's
rows flattened, int32 cu_seqlens and max_seqlen, as FlashAttention's varlen kernels and torch's
varlen_attn take them), checked against each row's own cu_seqlens and fed to torch's jagged
nested attention, which must equal each row's dense attention under its document mask; and
attention_mask of packed rows (1 on tokens, 0 on padding, as Hugging Face's)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import stoker
from test_token_boundaries import eos_starts
from test_token_packing import PAD, packed_reference
from token_files import EOS, documents, eos_file

L = 16


def source(path, cu_seqlens, packing="none", **options):
    packed = {"packing": packing, "pad_id": PAD} if packing != "none" else {}
    return stoker.Tokens(path, seq_len=L, eos_id=EOS, return_cu_seqlens=cu_seqlens,
                         return_document_mask=True, **packed, **options)


def batches(source, **options):
    return list(stoker.Loader(source, batch_size=5, shuffle=True, seed=3, batch_format="dict",
                              **options))


@pytest.fixture
def docs(tmp_path):
    rng = np.random.default_rng(5)
    path = tmp_path / "docs.bin"
    eos_file(path, documents(rng, 40 * L + 3, "mixed", L), rng)
    return path


@pytest.mark.parametrize("packing", ["none", "first_fit"])
@pytest.mark.parametrize("workers", [0, 2])
def test_batch_cu_seqlens_are_the_flattened_rows_int32_and_jagged_attention_takes_them(
        docs, packing, workers):
    rows = batches(source(docs, True, packing), workers=workers)
    flat = batches(source(docs, "batch", packing), workers=workers)
    assert len(rows) == len(flat) > 1
    generator = torch.Generator().manual_seed(0)
    for per_row, batch in zip(rows, flat):
        size = len(batch["input_ids"])
        want = [int(c) + k * L for k, row in enumerate(per_row["cu_seqlens"]) for c in row[:-1]]
        cu = batch["cu_seqlens"]
        assert cu.dtype == torch.int32 and cu.tolist() == want + [size * L]
        assert type(batch["max_seqlen"]) is int
        assert batch["max_seqlen"] == max(np.diff(want + [size * L]))
        assert list(batch)[list(batch).index("cu_seqlens") + 1] == "max_seqlen"
        assert torch.equal(batch["input_ids"], per_row["input_ids"])
        # The flattened batch's documents, as a jagged nested tensor over these offsets,
        # attend each within itself: equal to each row's dense attention where a token attends
        # to the tokens of its segment (the document mask, either way round).
        x = torch.randn(size * L, 2, 8, generator=generator)
        nested = torch.nested.nested_tensor_from_jagged(x, offsets=cu).transpose(1, 2)
        jagged = F.scaled_dot_product_attention(nested, nested, nested)
        jagged = jagged.transpose(1, 2).values()
        dense_rows = x.view(size, L, 2, 8).transpose(1, 2)
        segments = batch["document_mask"] | batch["document_mask"].mT
        dense = F.scaled_dot_product_attention(dense_rows, dense_rows, dense_rows,
                                               attn_mask=segments[:, None])
        assert torch.allclose(jagged, dense.transpose(1, 2).reshape(size * L, 2, 8),
                              atol=1e-5)


def test_batch_cu_seqlens_in_tuples_and_refused_where_they_cannot_be(docs):
    loader = stoker.Loader(source(docs, "batch"), batch_size=4, batch_format="tuple",
                           shuffle=False)
    ids, labels, cu, longest, mask = next(iter(loader))
    assert cu.dtype == torch.int32 and cu[-1] == 4 * L and longest == int(cu.diff().max())
    named = stoker.Loader(source(docs, "batch"), batch_size=4, shuffle=False,
                          batch_format=("input_ids", "cu_seqlens", "max_seqlen"))
    assert [type(v) for v in next(iter(named))] == [torch.Tensor, torch.Tensor, int]
    with pytest.raises(ValueError, match="return_cu_seqlens must be False, True"):
        stoker.Tokens(docs, eos_id=EOS, return_cu_seqlens="flat")
    with pytest.raises(ValueError, match="batch_size 134217728 x seq_len 16 tokens pass int32"):
        stoker.Loader(source(docs, "batch"), batch_size=2**27)
    mixture = stoker.Mixture([stoker.Tokens(docs, seq_len=L), source(docs, "batch")])
    with pytest.raises(ValueError, match="source by source, which takes no "
                                         "return_cu_seqlens='batch'"):
        stoker.Loader(mixture, batch_size=4)


@pytest.mark.parametrize("rule", ["first_fit", "best_fit"])
def test_attention_mask_of_packed_rows_is_one_on_tokens_zero_on_padding(docs, rule):
    tokens = np.fromfile(docs, np.uint16)
    want = packed_reference(tokens, eos_starts(tokens), L, 64, rule)
    loader = stoker.Loader(source(docs, True, rule, return_attention_mask=True), batch_size=5,
                           shuffle=False, batch_format="dict")
    masks = [m for batch in loader for m in batch["attention_mask"]]
    assert len(masks) == len(want) and masks[0].dtype == torch.int64
    padded = 0
    for mask, (ids, _, _, segments, *_) in zip(masks, want):
        assert mask.tolist() == (segments > 0).astype(int).tolist()
        padded += int((mask == 0).sum())
    assert padded > 0  # some rows have padding


def test_attention_mask_without_packing_is_refused_in_one_line(docs):
    with pytest.raises(ValueError) as raised:
        stoker.Loader(stoker.Tokens(docs, seq_len=L, return_attention_mask=True))
    message = str(raised.value)
    assert str(docs) in message and "return_attention_mask" in message and \
        "no padding" in message and "\n" not in message


def test_max_seqlen_goes_to_a_device_as_the_int_it_is():
    # CudaEpoch copies each tensor of a batch (none here: the CPU stands in) and keeps ints.
    from stoker._device import _tensors, _to_device
    batch = {"cu_seqlens": torch.tensor([0, 3, 8], dtype=torch.int32), "max_seqlen": 5}
    moved = {name: _to_device(value, torch.device("cpu")) for name, value in batch.items()}
    assert moved["max_seqlen"] == 5 and type(moved["max_seqlen"]) is int
    assert [t.dtype for t in _tensors(moved)] == [torch.int32]


def test_a_mixture_of_both_forms_of_cu_seqlens_is_refused_in_one_line(docs):
    # A batch holds the field in one form: each sample's (int64) or the batch's (int32).
    with pytest.raises(ValueError, match=r"^Mixture: the sources give cu_seqlens as 'batch' "
                                         r"and True \(return_cu_seqlens\): give them one form$"):
        stoker.Mixture([source(docs, True), source(docs, "batch")])
    stoker.Mixture([source(docs, "batch"), source(docs, "batch"), source(docs, False)])
