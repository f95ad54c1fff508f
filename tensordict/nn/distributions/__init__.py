"""Distributions and parameter modules for probabilistic tensordict modules."""

from tensordict.nn.distributions import continuous, discrete
from tensordict.nn.distributions.composite import CompositeDistribution
from tensordict.nn.distributions.continuous import (
    AddStateIndependentNormalScale,
    Delta,
    NormalParamExtractor,
)
from tensordict.nn.distributions.discrete import OneHotCategorical, rand_one_hot
from tensordict.nn.distributions.truncated_normal import TruncatedNormal, TruncatedStandardNormal
from tensordict.nn.interaction import InteractionType, set_interaction_type
from tensordict.nn.utils import add_custom_mapping, mappings

# The classes a ProbabilisticTensorDictModule accepts by name (distribution_class="delta").
_distributions_maps = {
    cls.__name__.lower(): cls
    for cls in (NormalParamExtractor, AddStateIndependentNormalScale, Delta, OneHotCategorical)
}

__all__ = [
    "AddStateIndependentNormalScale",
    "CompositeDistribution",
    "Delta",
    "InteractionType",
    "NormalParamExtractor",
    "OneHotCategorical",
    "TruncatedNormal",
    "TruncatedStandardNormal",
    "add_custom_mapping",
    "continuous",
    "discrete",
    "mappings",
    "rand_one_hot",
    "set_interaction_type",
]
