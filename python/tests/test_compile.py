"""torch.compile fed by stoker.Loader: with last_batch "drop" (drop_last=True) or "pad" every
batch has the same shape, so a compiled training step compiles once and never again; with
"short" (the default) the short last batch compiles a second graph once, in the first epoch,
and the second epoch compiles nothing."""

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
        losses = torch.nn.functional.cross_entropy(compiled(x), batch["label"] % 10,
                                                   reduction="none")
        # With last_batch="pad": the padding weighs nothing.
        valid = batch.get("valid", torch.ones_like(losses, dtype=torch.bool))
        loss = (losses * valid).sum() / valid.sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()

    return compiled, step


def train_two_epochs(loader, step, recompile_after):
    """Runs two epochs; from the `recompile_after`-th step on, any recompilation is an error
    (raised by dynamo). Returns the batch shapes seen, the losses and the labels trained on
    (the valid ones) per epoch."""
    shapes, losses, labels = set(), [], [[], []]
    for epoch in range(2):
        loader.set_epoch(epoch)
        for batch in loader:
            shapes.add(tuple(batch["image"].shape))
            losses.append(step(batch))
            valid = batch.get("valid", torch.ones(len(batch["label"]), dtype=torch.bool))
            labels[epoch] += batch["label"][valid].tolist()
            if len(losses) == recompile_after:
                dynamo.config.error_on_recompile = True
    return shapes, losses, labels


@pytest.fixture
def fresh_dynamo():
    dynamo.reset()
    dynamo.utils.counters.clear()
    yield
    dynamo.config.error_on_recompile = False


def test_fixed_shapes_compile_once(labelled, fresh_dynamo):
    compiled, step = model_and_step()
    loader = stoker.Loader(labelled, shuffle=True, batch_size=64, drop_last=True, workers=2, batch_format="dict")
    shapes, losses, _ = train_two_epochs(loader, step, recompile_after=1)
    assert shapes == {(64, 1, 4, 4)}
    assert len(losses) == 2 * len(loader) == 2 * 15
    assert all(loss == loss for loss in losses)  # no NaN
    assert dynamo.utils.counters["stats"]["unique_graphs"] == 1
    # The check can fail: a batch of another shape recompiles, which is now an error.
    with pytest.raises(dynamo.exc.RecompileError):
        compiled(torch.zeros(63, 1, 4, 4))


def test_a_short_last_batch_compiles_once_more_in_the_first_epoch_only(labelled, fresh_dynamo):
    _, step = model_and_step()
    loader = stoker.Loader(labelled, shuffle=True, batch_size=64, drop_last=False, workers=2, batch_format="dict")
    shapes, losses, _ = train_two_epochs(loader, step, recompile_after=len(loader))
    assert shapes == {(64, 1, 4, 4), (1003 - 15 * 64, 1, 4, 4)}
    assert len(losses) == 2 * len(loader) == 2 * 16
    assert dynamo.utils.counters["stats"]["unique_graphs"] == 2


def test_a_padded_last_batch_compiles_once_and_trains_on_every_sample_once(labelled,
                                                                          fresh_dynamo):
    _, step = model_and_step()
    loader = stoker.Loader(labelled, shuffle=True, batch_size=64, last_batch="pad", workers=2,
                           batch_format="dict")
    shapes, losses, labels = train_two_epochs(loader, step, recompile_after=1)
    assert shapes == {(64, 1, 4, 4)}
    assert len(losses) == 2 * len(loader) == 2 * 16
    assert all(loss == loss for loss in losses)
    assert dynamo.utils.counters["stats"]["unique_graphs"] == 1
    # The valid samples of each epoch are the dataset, once each (labels are record numbers).
    assert sorted(labels[0]) == sorted(labels[1]) == list(range(1003))
