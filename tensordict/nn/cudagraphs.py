"""``CudaGraphModule``: the interface of the well-known CUDA-graph wrapper, running eagerly.

This package does not record CUDA graphs. A :class:`CudaGraphModule` checks its
arguments and inputs as the recorded version does during its warm-up calls (inputs
are copied, tensors requiring gradients are refused) and calls the module eagerly:
what the well-known implementation does on a machine without CUDA.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils._pytree import tree_map

from tensordict._collection import is_tensor_collection
from tensordict.base import TensorDictBase
from tensordict.errors import InvalidArgumentError, NotDifferentiableError
from tensordict.nn.dispatch import dispatch
from tensordict.nn.functional_modules import _exclude_td_from_pytree
from tensordict.nn.utils import _fields_repr, _user_warn

__all__ = ["CudaGraphModule"]

_REQUIRES_GRAD = (
    "CudaGraphModule cannot take tensors that require gradients; pass them as constants "
    "of the wrapped function instead (def func(a, b, c=c): ...)"
)


def _copy_input(value):
    if isinstance(value, torch.Tensor) or is_tensor_collection(value):
        if value.requires_grad:
            raise NotDifferentiableError(_REQUIRES_GRAD)
        return value.clone()
    return value


class CudaGraphModule:
    """Wraps a function or a tensordict module as the CUDA-graph wrapper does, and runs it eagerly.

    A tensordict module (anything with ``in_keys``) is called with a tensordict,
    or with tensors by key (see :class:`~tensordict.nn.dispatch`); a function
    with any arguments. Each call copies the tensor inputs first and refuses
    tensors that require gradients. A warning at construction says that calls
    run eagerly.

    Args:
        module (Callable): the module or function.
        warmup (int, optional): the warm-up calls of a recorded graph (kept for
            the interface). Defaults to ``2``.
        in_keys (list of NestedKey, optional): the input keys of a function on
            tensordicts (a module's own ``in_keys`` win).
        out_keys (list of NestedKey, optional): its output keys.
        device (torch.device, optional): the device of the graph.

    Raises:
        ValueError: if ``warmup`` is not an integer of 1 or more.

    Examples:
        >>> import warnings
        >>> from tensordict.nn import CudaGraphModule, TensorDictModule
        >>> module = TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["y"])
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     graphed = CudaGraphModule(module)
        >>> graphed(TensorDict(x=torch.zeros(2)))["y"]
        tensor([1., 1.])
        >>> graphed(x=torch.ones(2))
        tensor([2., 2.])
    """

    def __init__(
        self,
        module: Callable,
        warmup: int = 2,
        in_keys: list | None = None,
        out_keys: list | None = None,
        device: torch.device | None = None,
    ) -> None:
        if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 1:
            msg = f"warmup must be an integer of 1 or more, got {warmup!r}"
            raise InvalidArgumentError(msg)
        if torch.cuda.is_available():
            reason = "this package does not record CUDA graphs"
        else:
            reason = "this machine has no CUDA device"
        _user_warn(f"CudaGraphModule: {reason}; calls run the wrapped module eagerly", UserWarning)
        self.module = module
        self.counter = 0
        self._warmup = warmup
        self.device = device
        for name, keys in (("in_keys", in_keys), ("out_keys", out_keys)):
            own = getattr(module, name, None)
            if own is not None and keys and list(keys) != list(own):
                _user_warn(
                    f"CudaGraphModule ignores {name}={keys}: the module has its own {name}={own}",
                    UserWarning,
                )
        self.in_keys = getattr(module, "in_keys", in_keys)
        if hasattr(module, "out_keys"):
            self.out_keys = module.out_keys
        else:
            self.out_keys = [] if out_keys is None and self.in_keys is not None else out_keys
        self._is_tensordict_module = self.in_keys is not None
        if self._is_tensordict_module:
            self._call_func = dispatch(
                source=self.in_keys, dest=self.out_keys, auto_batch_size=False
            )(self._call_td)
        else:
            self._call_func = self._call_plain

    def _call_td(
        self,
        tensordict: TensorDictBase,
        *args,
        tensordict_out: TensorDictBase | None = None,
        **kwargs: Any,
    ):
        tensordict.apply(_copy_input, out=tensordict)
        if tensordict_out is not None:
            kwargs["tensordict_out"] = tensordict_out
        return self.module(tensordict, *args, **kwargs)

    def _call_plain(self, *args, **kwargs):
        with _exclude_td_from_pytree():
            args, kwargs = tree_map(_copy_input, (args, kwargs))
        return self.module(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        return self._call_func(*args, **kwargs)

    def __repr__(self) -> str:
        fields = [
            f"module={self.module}",
            f"warmup={self._warmup}",
            f"in_keys={self.in_keys}",
            f"out_keys={self.out_keys}",
        ]
        return _fields_repr(self, fields)

    def state_dict(self) -> dict:
        """The wrapped module's ``state_dict()``, or ``{}`` if it has none.

        Examples:
            >>> import warnings
            >>> from tensordict.nn import CudaGraphModule
            >>> with warnings.catch_warnings():
            ...     warnings.simplefilter("ignore")
            ...     sorted(CudaGraphModule(torch.nn.Linear(1, 1)).state_dict())
            ['bias', 'weight']
        """
        state_dict = getattr(self.module, "state_dict", None)
        return state_dict() if state_dict is not None else {}

    def load_state_dict(self, state_dict: dict) -> None:
        """Loads ``state_dict`` into the wrapped module (nothing if it has no ``load_state_dict``).

        Examples:
            >>> import warnings
            >>> from tensordict.nn import CudaGraphModule
            >>> with warnings.catch_warnings():
            ...     warnings.simplefilter("ignore")
            ...     graphed = CudaGraphModule(torch.nn.Linear(1, 1))
            >>> graphed.load_state_dict({"weight": torch.ones(1, 1), "bias": torch.zeros(1)})
            >>> graphed.module.weight
            Parameter containing:
            tensor([[1.]], requires_grad=True)
        """
        load = getattr(self.module, "load_state_dict", None)
        if load is not None:
            load(state_dict)
