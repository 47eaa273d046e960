"""The fake CUDA device of tests/fake_cuda.py is itself a claim: it raises where CUDA raises and
nowhere else (a checker that raised on sound code would send people chasing ghosts; one that let a
mix through would pass the crashes a first GPU run had). Each rule is checked here on plain torch code."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tests import fake_cuda

pytestmark = pytest.mark.unit


def test_mixes_and_numpy_raise_as_cuda_does():
    with fake_cuda.install():
        x = torch.randn(3, 4, device="cuda")
        assert x.device == torch.device("cuda", 0) and x.is_cuda and fake_cuda.is_fake(x)
        with pytest.raises(RuntimeError, match="same device"):
            x + torch.ones(3, 4)
        with pytest.raises(RuntimeError, match="same device"):
            torch.zeros(4, 4) @ x.T  # cross_layer.py:45 at 86af2d6
        with pytest.raises(RuntimeError, match="same device"):
            x.index_select(1, torch.tensor([0, 2]))  # field.py:245
        with pytest.raises(RuntimeError, match="same device"):
            torch.nn.Embedding(5, 2)(torch.tensor([1, 2], device="cuda"))  # residual.py:168
        with pytest.raises(RuntimeError, match="same device"):
            torch.stack([x, torch.zeros(3, 4)])
        with pytest.raises(TypeError, match="numpy"):
            x.numpy()  # factored.py:117
        with pytest.raises(TypeError, match="numpy"):
            np.asarray(x)


def test_what_cuda_allows_passes():
    with fake_cuda.install():
        x = torch.randn(3, 4, device="cuda")
        y = x * torch.tensor(2.0) + 1.0  # 0-dim CPU tensors and Python scalars
        assert fake_cuda.is_fake(y)
        assert fake_cuda.is_fake(x[torch.tensor([0, 2])])  # CPU indices into a CUDA tensor
        z = torch.zeros(2, 2, device=x.device)  # a factory on the input's device
        assert fake_cuda.is_fake(z) and fake_cuda.is_fake(z + x[:2, :2])
        c = x.cpu()
        assert not fake_cuda.is_fake(c) and fake_cuda.is_fake(x) and c.numpy().shape == (3, 4)
        assert not fake_cuda.is_fake(x.to("cpu")) and fake_cuda.is_fake(x.double())
        assert float(x.sum()) == pytest.approx(float(c.sum())) and len(x.tolist()) == 3
        assert fake_cuda.is_fake(x.new_tensor([1.0, 2.0])) and fake_cuda.is_fake(torch.ones(2).cuda())
        ev = torch.linalg.eigh(z + torch.eye(2, device="cuda"))
        assert fake_cuda.is_fake(ev.eigenvalues) and fake_cuda.is_fake(ev.eigenvectors)
        assert torch.cuda.is_available()
    assert not fake_cuda.is_fake(torch.zeros(2))


def test_modules_move_train_and_build_on_the_device():
    with fake_cuda.install():
        lin = torch.nn.Linear(4, 2).to("cuda")
        assert all(fake_cuda.is_fake(p) for p in lin.parameters())
        assert all(fake_cuda.is_fake(p) for p in torch.nn.Linear(4, 2).to(device=torch.device("cuda")).parameters())
        assert all(v.device.type == "cuda" for v in lin.state_dict().values())
        with pytest.raises(RuntimeError, match="same device"):
            lin(torch.randn(3, 4))
        opt = torch.optim.Adam(lin.parameters(), lr=0.1)
        lin(torch.randn(3, 4, device="cuda")).square().sum().backward()
        assert fake_cuda.is_fake(lin.weight.grad)
        opt.step()
        assert fake_cuda.is_fake(lin.weight)
        with torch.device("cuda"):  # random-init twins are built so
            built = torch.nn.Linear(4, 2)
        assert all(fake_cuda.is_fake(p) for p in built.parameters())
        back = lin.to("cpu")
        assert not any(fake_cuda.is_fake(p) for p in back.parameters())


def test_torch_cuda_is_restored_after_the_block():
    real = torch.cuda.is_available()
    with fake_cuda.install():
        assert torch.cuda.is_available() and torch.cuda.device_count() == 1
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        assert torch.cuda.max_memory_allocated() >= 0
    assert torch.cuda.is_available() == real


def test_notebook_source_injects_parameters_after_the_parameters_cell(tmp_path):
    nb = tmp_path / "nb.py"
    nb.write_text('# %% [markdown]\n# x\n\n# %% tags=["parameters"]\nA = 1\nB = "x"\n\n# %%\nC = A * 2\n')
    ns = fake_cuda.run_notebook(nb, {"A": 5})
    assert ns["A"] == 5 and ns["B"] == "x" and ns["C"] == 10
    nb.write_text("A = 1\n")
    with pytest.raises(ValueError, match="no parameters cell"):
        fake_cuda.notebook_source(nb, {})
