"""What torchrl users do with tensordict: policies, parameters in optimizers, replay buffers, losses.

torchrl (PyPI ``torchrl==0.14.1``, installed by ``make test`` with ``--no-deps``) is the
largest real user of tensordict, and must run on this package unchanged: ``torchrl.data``,
``torchrl.envs``, ``torchrl.modules`` and ``torchrl.objectives`` import on it (they need
``PersistentTensorDict`` and the private names kept for torchrl, see
``tensordict/_torchrl_names.py``).
"""

from __future__ import annotations

import importlib
import multiprocessing
import subprocess
import sys
import textwrap

import pytest
import torch
from torch import distributions as D
from torch import nn

_START_METHOD = multiprocessing.get_start_method(allow_none=True)
pytest.importorskip("torchrl", reason="torchrl is a client of tensordict installed by `make test`")
# importing torchrl sets the start method of the whole process to "spawn"; the other test
# files start their workers with the default one (a spawned pool that replaces its workers,
# max_tasks_per_child, never finishes, with the reference too)
multiprocessing.set_start_method(_START_METHOD, force=True)

from tensordict import TensorDict  # noqa: E402
from tensordict.nn import (  # noqa: E402
    InteractionType,
    NormalParamExtractor,
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
    TensorDictModule,
    TensorDictParams,
    TensorDictSequential,
    set_interaction_type,
)


def _torchrl(name: str):
    """Imports ``torchrl.<name>`` (an import error fails the test)."""
    return importlib.import_module(f"torchrl.{name}")


def _policy(obs_dim=3, act_dim=2):
    backbone = TensorDictSequential(
        TensorDictModule(
            nn.Sequential(nn.Linear(obs_dim, 16), nn.Tanh()),
            in_keys=["observation"],
            out_keys=["hidden"],
        ),
        TensorDictModule(nn.Linear(16, 2 * act_dim), in_keys=["hidden"], out_keys=["params"]),
    )
    return ProbabilisticTensorDictSequential(
        backbone,
        TensorDictModule(NormalParamExtractor(), in_keys=["params"], out_keys=["loc", "scale"]),
        ProbabilisticTensorDictModule(
            in_keys=["loc", "scale"],
            out_keys=["action"],
            distribution_class=D.Normal,
            return_log_prob=True,
            default_interaction_type=InteractionType.RANDOM,
        ),
    )


def test_probabilistic_policy_over_a_batch_of_observations():
    """A policy samples actions with log-probabilities; deterministic mode gives the mean."""
    policy = _policy()
    td = TensorDict(observation=torch.randn(8, 3), batch_size=[8])
    out = policy(td)
    assert out is td and td["action"].shape == (8, 2) and td["action_log_prob"].shape == (8, 2)
    torch.testing.assert_close(policy.log_prob(td), td["action_log_prob"])
    with set_interaction_type(InteractionType.DETERMINISTIC):
        torch.testing.assert_close(policy(td.exclude("action"))["action"], td["loc"])
    dist = policy.get_dist(td)
    assert isinstance(dist, D.Normal) and dist.batch_shape == (8, 2)


def test_policy_gradients_reach_every_network():
    """A loss on the log-probabilities trains the backbone through the sequence."""
    policy = _policy()
    td = policy(TensorDict(observation=torch.randn(8, 3), batch_size=[8]))
    (-policy.log_prob(td).sum()).backward()
    assert all(p.grad is not None for p in policy.parameters())


def test_policy_subsequence_and_keyword_call():
    """select_subsequence keeps what computes the parameters; keyword calls return tensors."""
    policy = _policy()
    features = policy[0].select_subsequence(out_keys=["hidden"])
    assert features.in_keys == ["observation"] and features.out_keys == ["hidden"]
    assert features(observation=torch.randn(4, 3)).shape == (4, 16)


def test_tensordict_params_in_an_optimizer():
    """An optimizer built from a TensorDictParams trains its entries, seen by the holding module."""
    net = nn.Linear(3, 1)
    holder = nn.Module()
    holder.params = TensorDict.from_module(net, as_module=True)
    assert isinstance(holder.params, TensorDictParams)
    optim = torch.optim.Adam(holder.parameters(), lr=0.1)
    x, y = torch.randn(16, 3), torch.randn(16, 1)
    for _ in range(3):
        optim.zero_grad()
        with holder.params.to_module(net):
            loss = (net(x) - y).pow(2).mean()
        loss.backward()
        optim.step()
    assert net.weight is holder.params["weight"]
    assert sorted(holder.state_dict()) == ["params.bias", "params.weight"]


def test_functional_call_with_detached_target_parameters():
    """A target copy of the parameters (as torchrl's losses keep) runs the network without touching it."""
    net = nn.Linear(3, 2)
    params = TensorDict.from_module(net, as_module=True)
    target = params.data.clone()
    target.zero_()
    x = torch.randn(5, 3)
    with target.to_module(net):
        assert net(x).abs().sum() == 0
    assert net(x).abs().sum() > 0 and net.weight is params["weight"]


def test_replay_buffer_on_memmap_storage(tmp_path):
    """TensorDictReplayBuffer over LazyMemmapStorage: extend with nested data, sample rows of it."""
    data = _torchrl("data")
    rb = data.TensorDictReplayBuffer(
        storage=data.LazyMemmapStorage(10_000, scratch_dir=tmp_path / "rb"), batch_size=32
    )
    batch = TensorDict(
        observation=torch.arange(100.0).unsqueeze(-1).expand(100, 3),
        next=TensorDict(reward=torch.arange(100.0).unsqueeze(-1), batch_size=[100]),
        batch_size=[100],
    )
    rb.extend(batch)
    assert len(rb) == 100
    sample = rb.sample()
    assert sample.batch_size == (32,)
    rows = sample["observation"][:, 0].long()
    torch.testing.assert_close(sample["next", "reward"][:, 0], rows.float())
    assert sample["observation"].is_shared() or isinstance(
        rb.storage._storage["observation"], torch.Tensor
    )


def test_replay_buffer_dumps_and_loads_in_another_process(tmp_path):
    """A buffer written with dumps() is read back by another process, entry for entry."""
    data = _torchrl("data")
    rb = data.TensorDictReplayBuffer(
        storage=data.LazyMemmapStorage(50, scratch_dir=tmp_path / "rb"), batch_size=4
    )
    rb.extend(
        TensorDict(
            a=torch.arange(20.0),
            nested=TensorDict(b=torch.arange(20) * 2, batch_size=[20]),
            batch_size=[20],
        )
    )
    rb.dumps(tmp_path / "ckpt")
    script = textwrap.dedent(
        f"""
        import torch
        from torchrl.data import LazyMemmapStorage, TensorDictReplayBuffer
        rb = TensorDictReplayBuffer(storage=LazyMemmapStorage(50, scratch_dir={str(tmp_path / "other")!r}), batch_size=4)
        rb.loads({str(tmp_path / "ckpt")!r})
        content = rb[:]
        assert len(rb) == 20
        assert torch.equal(content["a"], torch.arange(20.0))
        assert torch.equal(content["nested", "b"], torch.arange(20) * 2)
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok")


def test_replay_buffer_state_dict_round_trip():
    """A buffer's state_dict loads into a new buffer, whose storage adopts the batch and keys."""
    data = _torchrl("data")
    rb = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(100), batch_size=4)
    rb.extend(
        TensorDict(
            a=torch.arange(10.0),
            nested=TensorDict(b=torch.arange(10), batch_size=[10]),
            batch_size=[10],
        )
    )
    other = data.TensorDictReplayBuffer(storage=data.LazyTensorStorage(100), batch_size=4)
    other.load_state_dict(rb.state_dict())
    assert len(other) == 10
    assert torch.equal(other[:]["a"], torch.arange(10.0))
    assert torch.equal(other[:]["nested", "b"], torch.arange(10))


@pytest.mark.parametrize("storage", ["LazyTensorStorage", "ListStorage"])
def test_replay_buffer_in_memory_storages(storage):
    """LazyTensorStorage and ListStorage hold and sample tensordicts."""
    data = _torchrl("data")
    rb = data.TensorDictReplayBuffer(storage=getattr(data, storage)(100), batch_size=8)
    rb.extend(TensorDict(obs=torch.randn(30, 2), batch_size=[30]))
    assert len(rb) == 30 and rb.sample().batch_size == (8,)


def test_replay_buffer_slice_sampler():
    """A SliceSampler returns whole sub-trajectories of one episode each."""
    data = _torchrl("data")
    episode = torch.arange(4).repeat_interleave(10)
    step = torch.arange(10).repeat(4)
    rb = data.TensorDictReplayBuffer(
        storage=data.LazyTensorStorage(100),
        sampler=data.SliceSampler(slice_len=5, traj_key="episode"),
        batch_size=20,
    )
    rb.extend(TensorDict(episode=episode, step=step, batch_size=[40]))
    sample = rb.sample().reshape(4, 5)
    assert (sample["episode"] == sample["episode"][:, :1]).all()
    assert (sample["step"].diff(dim=1) == 1).all()


def _tanh_actor(modules):
    """A torchrl ProbabilisticActor: a TanhNormal over 2 actions from a 3-feature observation."""
    return modules.ProbabilisticActor(
        TensorDictModule(
            nn.Sequential(nn.Linear(3, 4), NormalParamExtractor()),
            in_keys=["observation"],
            out_keys=["loc", "scale"],
        ),
        in_keys=["loc", "scale"],
        distribution_class=modules.TanhNormal,
        return_log_prob=True,
    )


def test_torchrl_actor_and_value_operator():
    """torchrl's ProbabilisticActor (TanhNormal) and ValueOperator run over a tensordict."""
    modules = _torchrl("modules")
    actor = _tanh_actor(modules)
    value = modules.ValueOperator(nn.Linear(3, 1), in_keys=["observation"])
    td = TensorDict(observation=torch.randn(6, 3), batch_size=[6])
    actor(td)
    value(td)
    assert td["action"].shape == (6, 2) and (td["action"].abs() <= 1).all()
    assert td["state_value"].shape == (6, 1)


def test_ppo_loss_forward_and_backward():
    """ClipPPOLoss with GAE computes its losses and trains actor and critic."""
    modules = _torchrl("modules")
    objectives = _torchrl("objectives")
    value_mod = _torchrl("objectives.value")
    actor = _tanh_actor(modules)
    critic = modules.ValueOperator(nn.Linear(3, 1), in_keys=["observation"])
    n = 8
    td = TensorDict(
        observation=torch.randn(n, 3),
        next=TensorDict(
            observation=torch.randn(n, 3),
            reward=torch.randn(n, 1),
            done=torch.zeros(n, 1, dtype=torch.bool),
            terminated=torch.zeros(n, 1, dtype=torch.bool),
            batch_size=[n],
        ),
        batch_size=[n],
    )
    with torch.no_grad():
        actor(td)
        value_mod.GAE(gamma=0.99, lmbda=0.95, value_network=critic)(td)
    loss = objectives.ClipPPOLoss(actor, critic)
    out = loss(td)
    total = sum(v for k, v in out.items() if k.startswith("loss"))
    total.backward()
    assert all(p.grad is not None for p in loss.actor_network_params.values(True, True))
