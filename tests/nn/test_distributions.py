"""tensordict.nn.distributions: Delta, one-hot categorical, truncated normal, parameter modules, composite."""

from __future__ import annotations

import math

import pytest
import torch
from torch import distributions as D

from tensordict import TensorDict
from tensordict.nn import (
    AddStateIndependentNormalScale,
    CompositeDistribution,
    NormalParamExtractor,
    OneHotCategorical,
    TruncatedNormal,
    rand_one_hot,
    set_composite_lp_aggregate,
)
from tensordict.nn.distributions import Delta


def test_delta_shapes_samples_and_log_prob():
    """Delta's last dim is the event; it samples its value; log_prob is +inf on it, -inf elsewhere."""
    param = torch.randn(2, 3)
    dist = Delta(param)
    assert (dist.batch_shape, dist.event_shape) == ((2,), (3,))
    assert dist.sample((4,)).shape == (4, 2, 3)
    torch.testing.assert_close(dist.mode, param)
    torch.testing.assert_close(dist.mean, param)
    torch.testing.assert_close(dist.deterministic_sample, param)
    other = param.clone()
    other[1, 0] += 1
    assert dist.log_prob(other).tolist() == [math.inf, -math.inf]


def test_delta_rsample_keeps_the_gradient():
    """rsample is differentiable with respect to the value."""
    param = torch.zeros(3, requires_grad=True)
    Delta(param).rsample((2,)).sum().backward()
    torch.testing.assert_close(param.grad, torch.full((3,), 2.0))


def test_normal_param_extractor_splits_and_maps():
    """The last dim splits in loc and a positive scale; extra inputs pass through."""
    loc, scale, extra = NormalParamExtractor()(torch.zeros(3, 4), torch.ones(1))
    assert loc.shape == scale.shape == (3, 2)
    torch.testing.assert_close(scale, torch.ones(3, 2))
    torch.testing.assert_close(extra, torch.ones(1))
    _, clamped = NormalParamExtractor(scale_mapping="relu", scale_lb=0.1)(torch.full((2,), -5.0))
    torch.testing.assert_close(clamped, torch.full((1,), 0.1))


def test_state_independent_scale():
    """The scale is a learned parameter expanded to loc; mismatched trailing shapes raise."""
    module = AddStateIndependentNormalScale(3)
    loc, scale = module(torch.randn(5, 3))
    assert scale.shape == (5, 3)
    assert torch.allclose(scale, torch.ones(5, 3))
    assert [n for n, _ in module.named_parameters()] == ["state_independent_scale"]
    with pytest.raises(RuntimeError):
        module(torch.randn(5, 4))
    buffer = AddStateIndependentNormalScale((2,), make_param=False, init_value=1.0)
    assert list(buffer.parameters()) == [] and [n for n, _ in buffer.named_buffers()] == [
        "state_independent_scale"
    ]


def test_one_hot_categorical():
    """Samples and modes are one-hot longs; log_prob reads the marked class."""
    dist = OneHotCategorical(logits=torch.tensor([0.0, 5.0, 0.0]))
    torch.testing.assert_close(dist.mode, torch.tensor([0, 1, 0]))
    sample = dist.sample((6,))
    assert sample.dtype == torch.long and (sample.sum(-1) == 1).all()
    torch.testing.assert_close(
        dist.log_prob(torch.tensor([0, 1, 0])),
        D.Categorical(logits=torch.tensor([0.0, 5.0, 0.0])).log_prob(torch.tensor(1)),
    )
    logits = torch.zeros(4, requires_grad=True)
    hard = OneHotCategorical(logits=logits).rsample()
    assert hard.sum().item() == 1.0 and hard.requires_grad


def test_rand_one_hot():
    """One 1 per row, at the weight's mass."""
    out = rand_one_hot(torch.tensor([[0.0, 100.0, 0.0], [100.0, 0.0, 0.0]]))
    assert out.tolist() == [[0, 1, 0], [1, 0, 0]]


def test_truncated_normal_stays_in_its_interval():
    """Samples lie in [a, b]; the mean of a symmetric interval is the location."""
    dist = TruncatedNormal(torch.zeros(3), torch.ones(3), -0.5, 0.5)
    sample = dist.rsample((500,))
    assert ((sample >= -0.5) & (sample <= 0.5)).all()
    assert dist.mean.abs().max() < 1e-5
    assert (dist.variance < 1).all()
    one_sided = TruncatedNormal(0.0, 1.0, 0.0, 50.0)
    assert one_sided.mean.item() == pytest.approx(math.sqrt(2 / math.pi), rel=1e-4)
    assert one_sided.log_prob(torch.tensor(0.0)).item() == pytest.approx(
        math.log(2 / math.sqrt(2 * math.pi)), rel=1e-4
    )
    with pytest.raises(ValueError):
        TruncatedNormal(0.0, 1.0, 1.0, 0.0)


def _composite():
    params = TensorDict(
        {
            "cont": {"loc": torch.zeros(3, 4), "scale": torch.ones(3, 4)},
            ("nested", "disc"): {"logits": torch.zeros(3, 10)},
        },
        [3],
    )
    return CompositeDistribution(
        params, distribution_map={"cont": D.Normal, ("nested", "disc"): D.Categorical}
    )


def test_composite_is_a_mapping_of_components():
    """Names map to the component distributions; the batch shape is that of the parameters."""
    dist = _composite()
    assert list(dist) == ["cont", ("nested", "disc")] and len(dist) == 2
    assert isinstance(dist["cont"], D.Normal) and dist.batch_shape == (3,)


def test_composite_sample_mode_mean():
    """Sample, mode, mean and deterministic_sample are tensordicts of the components."""
    dist = _composite()
    sample = dist.sample((4,))
    assert sample.batch_size == (4, 3) and sample["cont"].shape == (4, 3, 4)
    assert dist.mode["nested", "disc"].shape == (3,)
    torch.testing.assert_close(dist.mean["cont"], torch.zeros(3, 4))
    torch.testing.assert_close(dist.deterministic_sample["cont"], torch.zeros(3, 4))


def test_composite_log_prob_per_key_and_aggregated():
    """Without aggregation per-key log-probabilities; with it, their sum over event dims."""
    dist = _composite()
    sample = dist.sample()
    per_key = dist.log_prob(sample)
    assert set(per_key.keys(True, True)) == {"cont_log_prob", ("nested", "disc_log_prob")}
    with set_composite_lp_aggregate(True):
        total = dist.log_prob(sample)
    torch.testing.assert_close(
        total, per_key["cont_log_prob"].sum(-1) + per_key["nested", "disc_log_prob"]
    )


def test_composite_log_prob_composite_with_sum():
    """include_sum adds the total at log_prob_key."""
    dist = _composite()
    out = dist.log_prob_composite(dist.sample(), include_sum=True)
    assert "sample_log_prob" in out.keys()
    with pytest.raises(RuntimeError):
        dist.log_prob_composite(torch.zeros(3))


def test_composite_entropy():
    """Entropies per key, or summed with aggregation."""
    dist = _composite()
    entropy = dist.entropy()
    assert set(entropy.keys(True, True)) == {"cont_entropy", ("nested", "disc_entropy")}
    with set_composite_lp_aggregate(True):
        assert dist.entropy().shape == (3,)


def test_composite_name_map_and_missing_params():
    """name_map writes a component elsewhere; a name without parameters raises KeyError."""
    params = TensorDict(a={"loc": torch.zeros(2), "scale": torch.ones(2)}, batch_size=[2])
    dist = CompositeDistribution(params, {"a": D.Normal}, name_map={"a": ("out", "a")})
    assert list(dist) == [("out", "a")]
    assert dist.sample()["out", "a"].shape == (2,)
    with pytest.raises(KeyError):
        CompositeDistribution(params, {"b": D.Normal})


def test_composite_sample_and_log_prob_scores_the_same_draw():
    """sample_and_log_prob returns a draw and its log-probability."""
    dist = _composite()
    sample, log_prob = dist.sample_and_log_prob()
    torch.testing.assert_close(log_prob["cont_log_prob"], dist["cont"].log_prob(sample["cont"]))


def test_composite_from_distributions_and_cdf():
    """from_distributions takes instances; cdf and icdf write '<name>_cdf' / '<name>_icdf'."""
    dist = CompositeDistribution.from_distributions(
        TensorDict(batch_size=[2]), {"x": D.Normal(torch.zeros(2), 1.0)}
    )
    sample = dist.cdf(TensorDict(x=torch.zeros(2), batch_size=[2]))
    torch.testing.assert_close(sample["x_cdf"], torch.full((2,), 0.5))
    torch.testing.assert_close(dist.icdf(sample)["x_icdf"], torch.zeros(2))
