"""``EnsembleModule``: several copies of a module, each with its own parameters."""

from __future__ import annotations

import torch

from tensordict._lazy import LazyStackedTensorDict
from tensordict._td import TensorDict
from tensordict.base import TensorDictBase
from tensordict.errors import InvalidArgumentError
from tensordict.nn.common import TensorDictModuleBase
from tensordict.nn.params import TensorDictParams
from tensordict.nn.utils import _user_warn

__all__ = ["EnsembleModule"]


class EnsembleModule(TensorDictModuleBase):
    """Runs ``num_copies`` copies of a module, each with freshly reset parameters, on the same input.

    The parameters of the copies live in ``params_td`` (a
    :class:`~tensordict.nn.TensorDictParams` with a leading dimension of size
    ``num_copies``); the outputs are stacked along a new first dimension. The
    copies run one after the other, each through
    :meth:`~tensordict.TensorDictBase.to_module`.

    Args:
        module (TensorDictModuleBase): the module to copy.
        num_copies (int): the number of copies.
        expand_input (bool, optional): give every copy the whole input; ``False``
            gives copy ``i`` the row ``i`` of an input whose first dimension is
            ``num_copies``. Defaults to ``True``.

    Examples:
        >>> from tensordict.nn import TensorDictModule
        >>> from tensordict.nn.ensemble import EnsembleModule
        >>> module = TensorDictModule(torch.nn.Linear(2, 3), in_keys=["x"], out_keys=["y"])
        >>> ensemble = EnsembleModule(module, num_copies=4)
        >>> out = ensemble(TensorDict(x=torch.randn(5, 2), batch_size=[5]))
        >>> out.batch_size, out["y"].shape
        (torch.Size([4, 5]), torch.Size([4, 5, 3]))
    """

    def __init__(
        self, module: TensorDictModuleBase, num_copies: int, expand_input: bool = True
    ) -> None:
        super().__init__()
        self.in_keys = module.in_keys
        self.out_keys = module.out_keys
        self.module = module
        self.expand_input = expand_input
        params = TensorDict.from_module(module).expand(num_copies).to_tensordict()
        self.reset_parameters_recursive(params)
        self.params_td = TensorDictParams(params)

    def _call_copy(self, tensordict: TensorDictBase, params: TensorDictBase) -> TensorDictBase:
        previous = params.to_module(self.module, preserve_module_state=False)
        try:
            return self.module(tensordict)
        finally:
            previous.to_module(self.module, preserve_module_state=False)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Calls every copy and stacks the outputs along a new first dimension.

        Args:
            tensordict (TensorDictBase): the input (see ``expand_input``).

        Examples:
            >>> from tensordict.nn import TensorDictModule
            >>> from tensordict.nn.ensemble import EnsembleModule
            >>> ensemble = EnsembleModule(
            ...     TensorDictModule(torch.nn.Linear(1, 1), in_keys=["x"], out_keys=["y"]), num_copies=2)
            >>> ensemble.forward(TensorDict(x=torch.ones(1))).batch_size
            torch.Size([2])
        """
        params = self.params_td
        outputs = []
        for i in range(params.batch_size[0]):
            source = tensordict.copy() if self.expand_input else tensordict[i]
            outputs.append(self._call_copy(source, params[i]))
        return torch.stack(outputs, 0)

    def reset_parameters_recursive(
        self, parameters: TensorDictBase | None = None
    ) -> TensorDictBase:
        """Resets ``parameters`` in place, one fresh set of values per copy.

        Args:
            parameters (TensorDictBase): the parameters, with one leading dimension per copy.

        Returns:
            The reset parameters (a lazy stack of the copies for batched ones).

        Raises:
            ValueError: without ``parameters`` (an ensemble is functional).

        Examples:
            >>> from tensordict.nn import TensorDictModule
            >>> from tensordict.nn.ensemble import EnsembleModule
            >>> ensemble = EnsembleModule(
            ...     TensorDictModule(torch.nn.Linear(1, 1), in_keys=["x"], out_keys=["y"]), num_copies=2)
            >>> params = ensemble.params_td.data.clone()
            >>> _ = ensemble.reset_parameters_recursive(params)
            >>> params.batch_size
            torch.Size([2])
        """
        if parameters is None:
            msg = "an EnsembleModule resets parameters it is given: pass them to reset_parameters_recursive"
            raise InvalidArgumentError(msg)
        if parameters.ndim:
            copies = [parameters[i] for i in range(parameters.shape[0])]
            for one in copies:
                self.reset_parameters_recursive(one)
            return LazyStackedTensorDict.lazy_stack(copies, 0)
        others = [name for name, _ in self.named_children() if name not in ("module", "params_td")]
        if others:
            _user_warn(
                "EnsembleModule.reset_parameters_recursive() resets the parameters of self.module only; "
                f"those of {others} are left as they are",
                UserWarning,
            )
        return self.module.reset_parameters_recursive(parameters)
