"""tensordict.nn.probabilistic: probabilistic modules, sequences and interaction types."""

from __future__ import annotations

import pytest
import torch
from torch import distributions as D
from torch import nn

from tensordict import TensorDict
from tensordict.nn import (
    CompositeDistribution,
    InteractionType,
    NormalParamExtractor,
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
    TensorDictModule,
    TensorDictSequential,
    interaction_type,
    set_composite_lp_aggregate,
    set_interaction_type,
)
from tensordict.nn.probabilistic import _use_generator


def _normal(**kwargs):
    return ProbabilisticTensorDictModule(
        in_keys=["loc", "scale"], out_keys=["a"], distribution_class=D.Normal, **kwargs
    )


def _params(n=3):
    return TensorDict(loc=torch.zeros(n), scale=torch.ones(n), batch_size=[n])


def test_interaction_type_members_and_lookup():
    """Members compare to their names and are found in any case."""
    assert InteractionType.RANDOM == "random"
    assert str(InteractionType.MEAN) == "mean"
    assert InteractionType("MODE") is InteractionType.MODE
    assert InteractionType.from_str("Deterministic") is InteractionType.DETERMINISTIC


def test_set_interaction_type_block_and_decorator():
    """interaction_type() is None outside a block; a block and a decorator set it; names are accepted."""
    assert interaction_type() is None
    with set_interaction_type("RANDOM"):
        assert interaction_type() is InteractionType.RANDOM

    @set_interaction_type(InteractionType.MODE)
    def read():
        return interaction_type()

    assert read() is InteractionType.MODE
    assert interaction_type() is None
    with pytest.raises(ValueError):
        set_interaction_type(3)


def test_deterministic_default_writes_the_mean_of_a_normal():
    """By default (DETERMINISTIC) a normal module writes its mean."""
    td = _normal()(_params())
    torch.testing.assert_close(td["a"], torch.zeros(3))


@pytest.mark.parametrize("rule", ["mode", "mean", "deterministic"])
def test_statistics_under_a_block(rule):
    """MODE, MEAN and DETERMINISTIC all give the location of a normal."""
    with set_interaction_type(rule):
        td = _normal()(TensorDict(loc=torch.full((2,), 3.0), scale=torch.ones(2)))
    torch.testing.assert_close(td["a"], torch.full((2,), 3.0))


def test_missing_statistic_raises_not_implemented():
    """A statistic the distribution lacks raises NotImplementedError."""
    with set_interaction_type("median"), pytest.raises(NotImplementedError):
        _normal()(_params())


def test_random_draws_differ_and_follow_the_global_seed():
    """RANDOM samples; the same global seed gives the same sample."""
    module = _normal(default_interaction_type="random")
    torch.manual_seed(0)
    first = module(_params())["a"].clone()
    torch.manual_seed(0)
    torch.testing.assert_close(module(_params())["a"], first)
    assert not torch.equal(module(_params())["a"], first)


def test_discrete_deterministic_value_is_the_mode():
    """DETERMINISTIC of a categorical is its most likely class; of a Bernoulli its mode."""
    cat = ProbabilisticTensorDictModule(
        in_keys=["logits"], out_keys=["a"], distribution_class=D.Categorical
    )
    assert cat(TensorDict(logits=torch.tensor([0.0, 3.0, 1.0])))["a"] == 1
    bern = ProbabilisticTensorDictModule(
        in_keys=["probs"], out_keys=["a"], distribution_class=D.Bernoulli
    )
    assert bern(TensorDict(probs=torch.tensor([0.9])))["a"] == 1


def test_log_prob_keys_without_aggregation():
    """One sampled key writes '<key>_log_prob', the suffix on the last part of a nested key."""
    module = ProbabilisticTensorDictModule(
        in_keys=["loc", "scale"],
        out_keys=[("agent", "action")],
        distribution_class=D.Normal,
        return_log_prob=True,
    )
    assert module.out_keys == [("agent", "action"), ("agent", "action_log_prob")]
    assert module.log_prob_key == ("agent", "action_log_prob")
    td = module(_params())
    expected = D.Normal(torch.zeros(3), 1.0).log_prob(td["agent", "action"])
    torch.testing.assert_close(td["agent", "action_log_prob"], expected)
    torch.testing.assert_close(module.log_prob(td), expected)


def test_log_prob_key_with_aggregation_and_a_changed_mode():
    """With aggregation the key is 'sample_log_prob'; reading it after the mode changed raises."""
    with set_composite_lp_aggregate(True):
        module = _normal(return_log_prob=True)
        assert module.log_prob_key == "sample_log_prob"
        assert module.out_keys == ["a", "sample_log_prob"]
        assert "sample_log_prob" in module(_params()).keys()
    with pytest.raises(RuntimeError):
        _ = module.log_prob_key


def test_custom_log_prob_key():
    """log_prob_key names where the log-probability goes; one over a sample key is refused."""
    module = _normal(return_log_prob=True, log_prob_key="lp")
    assert "lp" in module(_params()).keys()
    with pytest.raises(ValueError):
        _normal(return_log_prob=True, log_prob_key="a")


def test_dict_in_keys_map_distribution_arguments():
    """A dict in_keys maps argument names to keys; non-string names are refused."""
    module = ProbabilisticTensorDictModule(
        in_keys={"loc": "mu", "scale": ("s", "sigma")}, out_keys=["a"], distribution_class=D.Normal
    )
    assert module.dist_params_keys == ["mu", ("s", "sigma")]
    td = module(TensorDict({"mu": torch.ones(2), ("s", "sigma"): torch.ones(2)}))
    torch.testing.assert_close(td["a"], torch.ones(2))
    with pytest.raises(ValueError):
        ProbabilisticTensorDictModule(in_keys={("a",): "x"}, out_keys=["y"])


def test_nested_in_keys_use_their_last_part():
    """("agent", "loc") feeds the argument loc."""
    module = ProbabilisticTensorDictModule(
        in_keys=[("agent", "loc"), ("agent", "scale")], out_keys=["a"], distribution_class=D.Normal
    )
    td = module(TensorDict({("agent", "loc"): torch.ones(1), ("agent", "scale"): torch.ones(1)}))
    assert td["a"] == 1


def test_default_out_key_warns_once():
    """Without out_keys the value is written at '_' with a FutureWarning."""
    module = ProbabilisticTensorDictModule(in_keys=["param"])
    with pytest.warns(FutureWarning):
        td = module(TensorDict(param=torch.ones(2)))
    assert "_" in td.keys()


def test_num_samples_adds_leading_dimensions():
    """num_samples expands the output; RANDOM draws that many values."""
    module = _normal(num_samples=4, default_interaction_type="random", return_log_prob=True)
    td = module(_params())
    assert td.batch_size == (4, 3) and td["a"].shape == (4, 3) and td["a_log_prob"].shape == (4, 3)
    assert not torch.equal(td["a"][0], td["a"][1])
    repeated = _normal(num_samples=2)(_params())
    torch.testing.assert_close(repeated["a"][0], repeated["a"][1])


def test_integer_generator_makes_draws_repeatable():
    """generator=<seed> gives the same first draw for two modules, without touching the global state."""
    torch.manual_seed(1)
    state = torch.get_rng_state()
    first = _normal(default_interaction_type="random", generator=5)(_params())["a"]
    second = _normal(default_interaction_type="random", generator=5)(_params())["a"]
    torch.testing.assert_close(first, second)
    assert torch.equal(torch.get_rng_state(), state)


def test_generator_key_reads_a_seed_and_writes_the_next():
    """generator=<key> seeds from the input entry and replaces it with a new seed."""
    module = _normal(default_interaction_type="random", generator="seed")
    td = TensorDict(loc=torch.zeros(3), scale=torch.ones(3), seed=torch.tensor(7))
    first = module(td)["a"].clone()
    assert td["seed"].item() != 7
    again = module(TensorDict(loc=torch.zeros(3), scale=torch.ones(3), seed=torch.tensor(7)))["a"]
    torch.testing.assert_close(first, again)


def test_use_generator_kept_for_torchrl():
    """_use_generator routes the global random state through a generator for the block."""
    gen = torch.Generator().manual_seed(0)
    with _use_generator(gen):
        a = torch.rand(3)
    torch.testing.assert_close(a, torch.rand(3, generator=torch.Generator().manual_seed(0)))
    with _use_generator(None):
        torch.rand(1)


def test_composite_module_samples_tensordicts():
    """A CompositeDistribution module writes every component and per-key log-probabilities."""
    params = TensorDict(
        {
            "cont": {"loc": torch.zeros(3, 4), "scale": torch.ones(3, 4)},
            ("nested", "disc"): {"logits": torch.zeros(3, 10)},
        },
        [3],
    )
    module = ProbabilisticTensorDictModule(
        in_keys=["params"],
        distribution_class=CompositeDistribution,
        distribution_kwargs={
            "distribution_map": {"cont": D.Normal, ("nested", "disc"): D.Categorical}
        },
        return_log_prob=True,
        default_interaction_type="random",
    )
    assert module.log_prob_keys == ["cont_log_prob", ("nested", "disc_log_prob")]
    td = module(TensorDict(params=params, batch_size=[3]))
    assert td["cont"].shape == (3, 4) and td["nested", "disc"].shape == (3,)
    assert td["nested", "disc_log_prob"].shape == (3,)
    log_prob = module.log_prob(td)
    torch.testing.assert_close(log_prob["cont_log_prob"], td["cont_log_prob"])


def test_composite_module_with_aggregation_writes_the_sum():
    """With aggregation, the summed log-probability is one tensor of the batch shape."""
    params = TensorDict(
        {
            "cont": {"loc": torch.zeros(3, 4), "scale": torch.ones(3, 4)},
            "disc": {"logits": torch.zeros(3, 10)},
        },
        [3],
    )
    with set_composite_lp_aggregate(True):
        module = ProbabilisticTensorDictModule(
            in_keys=["params"],
            distribution_class=CompositeDistribution,
            distribution_kwargs={"distribution_map": {"cont": D.Normal, "disc": D.Categorical}},
            return_log_prob=True,
            default_interaction_type="random",
        )
        td = module(TensorDict(params=params, batch_size=[3]))
        expected = td["cont_log_prob"].sum(-1) + td["disc_log_prob"]
        torch.testing.assert_close(td["sample_log_prob"], expected)
        torch.testing.assert_close(module.log_prob(td), expected)


def _policy():
    return ProbabilisticTensorDictSequential(
        TensorDictModule(nn.Linear(3, 4), in_keys=["obs"], out_keys=["params"]),
        TensorDictModule(NormalParamExtractor(), in_keys=["params"], out_keys=["loc", "scale"]),
        ProbabilisticTensorDictModule(
            in_keys=["loc", "scale"],
            out_keys=["action"],
            distribution_class=D.Normal,
            return_log_prob=True,
        ),
    )


def test_sequence_keys_and_call():
    """A probabilistic sequence chains the parameter modules and the sampler."""
    policy = _policy()
    assert policy.in_keys == ["obs"]
    assert policy.out_keys == ["params", "loc", "scale", "action", "action_log_prob"]
    assert policy.return_composite is False
    td = policy(TensorDict(obs=torch.randn(5, 3), batch_size=[5]))
    torch.testing.assert_close(td["action"], td["loc"])
    assert td["action_log_prob"].shape == (5, 2)


def test_sequence_distribution_and_log_prob():
    """get_dist runs the parameter modules; log_prob scores the stored action."""
    policy = _policy()
    td = policy(TensorDict(obs=torch.randn(5, 3), batch_size=[5]))
    dist = policy.get_dist(td)
    assert isinstance(dist, D.Normal) and dist.batch_shape == (5, 2)
    torch.testing.assert_close(policy.log_prob(td), dist.log_prob(td["action"]))
    params = policy.get_dist_params(TensorDict(obs=torch.randn(5, 3), batch_size=[5]))
    assert "action" not in params.keys() and "loc" in params.keys()


def test_sequence_keyword_call_and_gradients():
    """Called with tensors it returns the outputs; gradients reach the network."""
    policy = _policy()
    with set_interaction_type("random"):
        outputs = policy(obs=torch.randn(5, 3))
    assert len(outputs) == 5
    outputs[-1].sum().backward()
    assert policy[0].module.weight.grad is not None


def test_sequence_of_two_samplers_is_composite():
    """Two probabilistic modules make return_composite; get_dist is a composite of both."""
    seq = ProbabilisticTensorDictSequential(
        ProbabilisticTensorDictModule(
            in_keys=["loc", "scale"],
            out_keys=["x"],
            distribution_class=D.Normal,
            return_log_prob=True,
            default_interaction_type="random",
        ),
        TensorDictModule(
            lambda x: (x, torch.ones_like(x)), in_keys=["x"], out_keys=["loc2", "scale2"]
        ),
        ProbabilisticTensorDictModule(
            in_keys={"loc": "loc2", "scale": "scale2"},
            out_keys=["y"],
            distribution_class=D.Normal,
            return_log_prob=True,
            default_interaction_type="random",
        ),
    )
    assert seq.return_composite is True
    assert seq.log_prob_keys == ["y_log_prob", "x_log_prob"]
    td = seq(_params())
    dist = seq.get_dist(td)
    assert isinstance(dist, CompositeDistribution) and list(dist) == ["x", "y"]
    log_prob = seq.log_prob(td)
    assert sorted(log_prob.keys()) == ["x_log_prob", "y_log_prob"]


def test_sequence_requires_a_probabilistic_last_module():
    """return_composite=False with a deterministic last module raises TypeError; no module raises ValueError."""
    with pytest.raises(TypeError):
        ProbabilisticTensorDictSequential(
            TensorDictModule(lambda x: x, in_keys=["x"], out_keys=["y"]), return_composite=False
        )
    with pytest.raises(ValueError):
        ProbabilisticTensorDictSequential()


def test_sequence_slices_keep_their_kind():
    """A slice ending with the sampler stays probabilistic; one without it is a plain sequence."""
    policy = _policy()
    assert isinstance(policy[:2], TensorDictSequential) and not isinstance(
        policy[:2], ProbabilisticTensorDictSequential
    )
    assert isinstance(policy[1:], ProbabilisticTensorDictSequential)


def test_sequence_subclass_without_selected_out_keys_argument():
    """A class between the probabilistic sequence and TensorDictSequential may not take selected_out_keys."""

    class Middle(TensorDictSequential):
        def __init__(self, *modules, partial_tolerant=False, inplace=None):
            super().__init__(*modules, partial_tolerant=partial_tolerant, inplace=inplace)

    class Custom(ProbabilisticTensorDictSequential, Middle):
        def __init__(self, *modules):
            super().__init__(*modules)

    seq = Custom(
        TensorDictModule(lambda x: x, in_keys=["x"], out_keys=["param"]),
        ProbabilisticTensorDictModule(in_keys=["param"], out_keys=["y"]),
    )
    assert seq(TensorDict(x=torch.ones(1)))["y"] == 1


def test_repr_names_the_distribution():
    """The repr of a probabilistic module shows its keys and distribution class."""
    text = repr(_normal())
    assert "in_keys=['loc', 'scale']" in text and "Normal" in text
