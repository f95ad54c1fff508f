"""Conversions and printing: nested dicts, numpy, lists, state dicts and the ``repr``."""

from __future__ import annotations

from collections import OrderedDict

import torch

from tensordict._collection import NO_DEFAULT, is_non_tensor
from tensordict._nontensor import NonTensorDataBase
from tensordict._printing import collection_repr, compact_fields, dtype_short  # noqa: F401


def _is_tensordict(value) -> bool:
    """True for a tensordict (a tensor collection that is neither a tensorclass nor a non-tensor)."""
    cls = type(value)
    return (
        getattr(cls, "_is_tensor_collection", False) is True
        and not cls._is_tensorclass
        and not getattr(cls, "_is_non_tensor", False)
    )


def shape_of(value) -> torch.Size:
    """The shape of a tensor (a nested tensor's ragged dims read -1) or a collection's batch size."""
    if not isinstance(value, torch.Tensor):
        return value.batch_size
    if value.is_nested:
        if value.layout is torch.jagged:
            return value.shape  # its ragged dim is a symbolic size, printed j1, j2, ...
        sizes = value._nested_tensor_size()
        inner = (
            [int(col[0]) if bool((col == col[0]).all()) else -1 for col in sizes.unbind(1)]
            if sizes.numel()
            else []
        )
        return torch.Size([value.size(0), *inner])
    return value.shape


class ConvertMixin:
    """Conversions and printing of every tensordict class (see ``TensorDictBase``)."""

    __slots__ = ()

    def to_dict(self, *, retain_none: bool = True, convert_tensors: bool = False) -> dict:
        """Returns a nested ``dict`` of the entries (sharing tensors; non-tensors give their value).

        Keyword Args:
            retain_none (bool, optional): accepted for compatibility; ignored.
            convert_tensors (bool, optional): turn tensors into Python lists. Defaults to False.

        Returns:
            A dict keyed like this level, with a dict per sub-tensordict.

        Examples:
            >>> td = TensorDict({"a": torch.arange(2), "b": {"c": "x"}}, [2])
            >>> td.to_dict(convert_tensors=True)
            {'a': [0, 1], 'b': {'c': 'x'}}
        """
        out = {}
        for key, value in self._items_level():
            if _is_tensordict(value):
                out[key] = value.to_dict(convert_tensors=convert_tensors)
            elif getattr(type(value), "_is_tensorclass", False):
                out[key] = value.to_dict(convert_tensors=convert_tensors)
            elif isinstance(value, NonTensorDataBase):
                out[key] = value.data
            elif is_non_tensor(value):
                out[key] = value.tolist()
            else:
                out[key] = value.tolist() if convert_tensors else value
        return out

    def numpy(self) -> dict:
        """Returns a nested ``dict`` of numpy arrays of the detached tensors, moved to the CPU.

        Returns:
            A dict keyed like this level; CPU tensors' arrays share memory, non-tensors give values.

        Raises:
            TypeError: if a tensor's dtype has no numpy equivalent, such as bfloat16.

        Examples:
            >>> TensorDict({"a": torch.arange(2)}, [2]).numpy()
            {'a': array([0, 1])}
        """
        out = {}
        for key, value in self._items_level():
            if _is_tensordict(value):
                out[key] = value.numpy()
            elif isinstance(value, NonTensorDataBase):
                out[key] = value.data
            elif is_non_tensor(value):
                out[key] = value.tolist()
            else:
                out[key] = value.detach().cpu().numpy()
        return out

    def tolist(self, *, convert_tensors: bool = False) -> list | dict:
        """Returns nested lists (one level per batch dimension) of dicts of the entries.

        Keyword Args:
            convert_tensors (bool, optional): turn tensors into Python values. Defaults to False.

        Returns:
            A list nested once per batch dimension, or the :meth:`to_dict` dict without any.

        Examples:
            >>> TensorDict({"a": torch.arange(2)}, [2]).tolist(convert_tensors=True)
            [{'a': 0}, {'a': 1}]
        """
        if not self.batch_size:
            return self.to_dict(convert_tensors=convert_tensors)
        return [self[i].tolist(convert_tensors=convert_tensors) for i in range(self.batch_size[0])]

    def state_dict(
        self, destination=None, prefix: str = "", keep_vars: bool = False, flatten: bool = True
    ) -> dict:
        """Returns the leaf tensors keyed by ``"."``-joined keys, like ``nn.Module.state_dict``.

        Args:
            destination (dict, optional): the dict to fill. Defaults to a new OrderedDict.
            prefix (str, optional): prepended to every key. Defaults to ``""``.
            keep_vars (bool, optional): keep tensors as they are, not detached. Defaults to False.
            flatten (bool, optional): accepted for compatibility; the keys are always flattened.

        Returns:
            The filled dict (non-tensor entries are left out).

        Examples:
            >>> list(TensorDict({"a": 0, "b": {"c": 0}}, []).state_dict())
            ['a', 'b.c']
        """
        out = OrderedDict() if destination is None else destination
        for key in self.keys(True, True):
            value = self.get(key, NO_DEFAULT)
            if isinstance(value, torch.Tensor):
                name = key if isinstance(key, str) else ".".join(key)
                out[prefix + name] = value if keep_vars else value.detach()
        return out

    def load_state_dict(
        self, state_dict: dict, strict: bool = True, assign: bool = False, from_flatten: bool = True
    ):
        """Copies the tensors of a :meth:`state_dict` into this tensordict, and returns it.

        Keys starting with ``"__"`` are skipped. Existing tensors are copied into; others are set.

        Args:
            state_dict (dict): the tensors, keyed by ``"."``-joined keys.
            strict (bool, optional): require every leaf of this tensordict in ``state_dict`` (extra
                keys are still added). Defaults to True.
            assign (bool, optional): rebind existing tensors instead of copying. Defaults to False.
            from_flatten (bool, optional): split the keys at ``"."``. Defaults to True.

        Returns:
            The tensordict itself.

        Raises:
            RuntimeError: if ``strict`` and a leaf is missing from ``state_dict``; if a tensor does
                not fit its entry or the batch size; if locked and a key would be added or rebound.
            KeyError: if a key's path goes through an entry that is not a tensordict.

        Examples:
            >>> td = TensorDict({"a": {"b": torch.zeros(2)}}, [2])
            >>> td.load_state_dict({"a.b": torch.ones(2)})["a", "b"]
            tensor([1., 1.])
        """
        wanted = {}
        for key, value in state_dict.items():
            if key.startswith("__"):
                continue
            parts = tuple(key.split(".")) if from_flatten else (key,)
            wanted[parts[0] if len(parts) == 1 else parts] = value
        if strict:
            mine = {k if isinstance(k, tuple) else (k,) for k in self.keys(True, True)}
            theirs = {k if isinstance(k, tuple) else (k,) for k in wanted}
            missing = sorted(mine - theirs)
            if missing:
                msg = f"the state dict lacks the entries {missing} of the tensordict"
                raise RuntimeError(msg)
        for key, value in wanted.items():
            current = self.get(key, None)
            if isinstance(current, torch.Tensor) and not assign:
                current.copy_(value)
            else:
                self.set(key, value)
        return self

    # ------------------------------------------------------------------ printing
    def _repr_items(self):
        """The ``(key, value)`` pairs that the ``repr`` shows."""
        return self._items_level()

    def _repr_detail_extra(self) -> dict:
        """Extra blocks and trailing parts of the detailed ``repr`` (a lazy stack has some)."""
        return {}

    def _repr_level(self):
        """Hook of the ``repr``: the tensordict whose batch size and device it shows, this one."""
        return self

    def _repr_names_class(self) -> bool:
        """Hook of the compact ``repr``: False, a nested tensordict shows as braces without its class name."""
        return False

    def _fields_repr(self) -> str:
        return compact_fields(self)

    def __repr__(self) -> str:
        return collection_repr(self)
