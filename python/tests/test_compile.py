"""torch.compile fed by stoker.Loader: every batch has the same shape (the last one is padded by
wrapping around, or dropped), so a compiled training step compiles once and never again."""

import pytest

import stoker

torch = pytest.importorskip("torch")
dynamo = pytest.importorskip("torch._dynamo")


def model_and_step():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 10))
    compiled = torch.compile(model)  # inductor, the default backend, on the CPU
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(batch):
        x = batch["image"].to(torch.float32) / 255
        loss = torch.nn.functional.cross_entropy(compiled(x), batch["label"] % 10)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()

    return compiled, step


@pytest.mark.parametrize("drop_last", [False, True])
def test_two_epochs_compile_once(labelled, drop_last):
    dynamo.reset()
    dynamo.utils.counters.clear()
    compiled, step = model_and_step()
    loader = stoker.Loader(labelled, batch_size=64, drop_last=drop_last, workers=2)
    shapes = set()
    losses = []
    for epoch in range(2):
        loader.set_epoch(epoch)
        for batch in loader:
            shapes.add(tuple(batch["image"].shape))
            losses.append(step(batch))
            # From the second step on, any recompilation is an error (raised by dynamo).
            dynamo.config.error_on_recompile = True
    try:
        assert shapes == {(64, 1, 4, 4)}
        assert len(losses) == 2 * len(loader) == 2 * (15 if drop_last else 16)
        assert all(loss == loss for loss in losses)  # no NaN
        assert dynamo.utils.counters["stats"]["unique_graphs"] == 1
        # The check can fail: a batch of another shape recompiles, which is now an error.
        with pytest.raises(Exception, match="[Rr]ecompil"):
            compiled(torch.zeros(63, 1, 4, 4))
    finally:
        dynamo.config.error_on_recompile = False
