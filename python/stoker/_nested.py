"""variable="nested": a field whose samples vary in their first dimension only (rows: boxes
[N, 4], labels [N], token ids [T], bytes) delivered as torch's jagged nested tensor
[batch, j, ...] (``torch.nested.nested_tensor_from_jagged``) that views the padded batch the
workers made, no copy: sample k's values start at slot k (the padded tensor's first stride
apart), its length its NAME_sizes' first column, which the batch then drops."""

from stoker._wrapped import ChangedFields


def jagged(torch, padded, sizes):
    """The nested tensor of `padded` [batch, longest, row...] whose sample k is its first
    sizes[k, 0] rows, viewing `padded`'s memory (on any device)."""
    batch, longest, row = padded.shape[0], padded.shape[1], tuple(padded.shape[2:])
    offsets = torch.zeros(batch + 1, dtype=torch.int64, device=padded.device)
    if longest == 0:  # every sample empty: no memory to view
        values = padded.new_empty((0, *row))
    else:
        pitch = padded.stride(0) // padded.stride(1)  # the slots' capacity (or longest)
        values = padded.as_strided(((batch - 1) * pitch + longest, *row), padded.stride()[1:])
        offsets[:batch] = torch.arange(batch, dtype=torch.int64, device=padded.device) * pitch
        offsets[batch] = (batch - 1) * pitch + longest
    return torch.nested.nested_tensor_from_jagged(values, offsets=offsets, lengths=sizes[:, 0])


def nested_fields(torch, inner, names):
    """The iteration `inner` whose fields `names`, padded with NAME_sizes, become jagged nested
    tensors (NAME_sizes dropped)."""
    return ChangedFields(inner, names, lambda batch, name: jagged(
        torch, batch[name], batch.pop(name + "_sizes")))
