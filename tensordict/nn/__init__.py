"""Modules that read from and write to tensordicts: the ``tensordict.nn`` package.

:class:`TensorDictModule` wraps a callable on tensors so that it reads ``in_keys``
from a tensordict and writes ``out_keys``; :class:`TensorDictSequential` chains
such modules; the probabilistic modules build distributions from entries and
write values drawn from them; :class:`TensorDictParams` makes a tensordict's
leaves the parameters of an ``nn.Module``.
"""

from tensordict.functional import make_tensordict
from tensordict.nn import functional_modules  # noqa: F401 - teaches torch.vmap about tensordicts
from tensordict.nn.common import (
    TensorDictModule,
    TensorDictModuleBase,
    TensorDictModuleWrapper,
    WrapModule,
    as_tensordict_module,
)
from tensordict.nn.cudagraphs import CudaGraphModule
from tensordict.nn.dispatch import dispatch
from tensordict.nn.distributions import (
    AddStateIndependentNormalScale,
    CompositeDistribution,
    Delta,
    NormalParamExtractor,
    OneHotCategorical,
    TruncatedNormal,
    rand_one_hot,
)
from tensordict.nn.ensemble import EnsembleModule
from tensordict.nn.interaction import InteractionType, interaction_type, set_interaction_type
from tensordict.nn.params import TensorDictParams
from tensordict.nn.probabilistic import (
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
)
from tensordict.nn.sequence import TensorDictSequential
from tensordict.nn.tensorclass_module import TensorClassModuleBase, TensorClassModuleWrapper
from tensordict.nn.utils import (
    add_custom_mapping,
    biased_softplus,
    composite_lp_aggregate,
    expln,
    inv_softplus,
    mappings,
    set_composite_lp_aggregate,
    set_skip_existing,
    skip_existing,
)

__all__ = [
    "AddStateIndependentNormalScale",
    "CompositeDistribution",
    "CudaGraphModule",
    "Delta",
    "EnsembleModule",
    "InteractionType",
    "NormalParamExtractor",
    "OneHotCategorical",
    "ProbabilisticTensorDictModule",
    "ProbabilisticTensorDictSequential",
    "TensorClassModuleBase",
    "TensorClassModuleWrapper",
    "TensorDictModule",
    "TensorDictModuleBase",
    "TensorDictModuleWrapper",
    "TensorDictParams",
    "TensorDictSequential",
    "TruncatedNormal",
    "WrapModule",
    "add_custom_mapping",
    "as_tensordict_module",
    "biased_softplus",
    "composite_lp_aggregate",
    "dispatch",
    "expln",
    "interaction_type",
    "inv_softplus",
    "make_tensordict",
    "mappings",
    "rand_one_hot",
    "set_composite_lp_aggregate",
    "set_interaction_type",
    "set_skip_existing",
    "skip_existing",
]
