"""Conversions between tensordicts and other containers (see ``TensorDictBase``).

The containers are dicts and lists, numpy arrays, state dicts, named tuples and
tuples, numpy structured arrays, dataclasses, pytrees (nested lists, tuples and
dicts) and the parameters and buffers of an ``nn.Module``.

The ``from_*`` class methods build a :class:`~tensordict.TensorDict` (or a
tensorclass), classes this layer may not import. Their implementations live in
:mod:`tensordict._from`, which puts each one in :data:`CONVERTERS` under the
method's name when it is imported (``import tensordict`` imports it); the class
methods here only look them up. The ``to_*`` methods read a tensordict through
its public API and live here.

A pytree stored in a tensordict keeps the Python type of each container level
as a :class:`NonTensorData` entry named :data:`PYTREE_TYPE`; a dict key that is
not a string is stored as a sub-tensordict ``{"key": <the key>, "value": ...}``
under a name that starts with :data:`NON_STRING_KEY`. Both spellings are those
of the well-known TensorDict library, so that tensordicts built by either
convert back in the other.
"""

from __future__ import annotations

import os
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from tensordict._collection import NO_DEFAULT, TensorCollection, is_non_tensor, is_tensor_collection
from tensordict._nontensor import NonTensorDataBase
from tensordict._ops._contract import Contract
from tensordict._typing import DeviceType, ShapeType, T
from tensordict.errors import (
    ConflictingArgumentsError,
    EntryTypeError,
    InvalidArgumentError,
    MissingKeyError,
    UnsupportedConversionError,
)

CONVERTERS: dict[str, Callable] = {}
"""Method name -> implementation, filled by :mod:`tensordict._from` when it is imported."""

STATE_DICT_METADATA = "_metadata"
"""The attribute of a state dict that records each level's batch size and device."""

PYTREE_TYPE = "_pytree_type"
"""The key of the entry that records the container type of a pytree level."""

NON_STRING_KEY = "<NON_NESTED>"
"""The prefix of the key under which a pytree dict entry with a non-string key is stored."""


def _level_metadata(td) -> dict:
    return {"batch_size": td.batch_size, "device": td.device}


def _nest_state(out: dict, prefix: str) -> None:
    """Turns the ``"."``-joined keys of ``out`` that start with ``prefix`` into nested dicts, in place."""
    names = [k for k in out if k.startswith(prefix)]
    values = [out.pop(k) for k in names]
    for name, value in zip(names, values):
        *parents, last = name[len(prefix) :].split(".")
        node, at = out, prefix
        for part in parents:
            node = node.setdefault(at + part, OrderedDict())
            at = ""
        node[at + last] = value


def _flat_state(state: Mapping, key: tuple):
    """The ``(key tuple, value)`` pairs of a flat or nested state dict, nested dicts walked."""
    for name, value in state.items():
        if isinstance(value, Mapping) and not is_tensor_collection(value):
            yield from _flat_state(value, (*key, name))
        else:
            yield (*key, name), value


def _is_not_tensordict(cls: type) -> bool:
    return not (is_tensor_collection(cls) and not getattr(cls, "_is_non_tensor", False))


def _converter(name: str) -> Callable:
    try:
        return CONVERTERS[name]
    except KeyError:
        msg = f"{name} is not available: import tensordict, which registers the converters"
        raise UnsupportedConversionError(msg) from None


def _unwrap(value):
    return value.data if isinstance(value, NonTensorDataBase) else value


def _is_nested(value) -> bool:
    return is_tensor_collection(value) and not isinstance(value, NonTensorDataBase)


def _field_dtype(key: str, value, batch_dims: int, batch_size: torch.Size):
    """The structured-array field of one leaf: ``(dtype, feature shape, numpy values)``."""
    if isinstance(value, NonTensorDataBase):
        array = np.asarray(value.data)
        if isinstance(value.data, np.ndarray) and array.shape[:batch_dims] == tuple(batch_size):
            # an array of one value per batch element (as from_struct_array stores a string field)
            return array.dtype, array.shape[batch_dims:], array
        return array.dtype, array.shape, array
    if is_non_tensor(value):  # a stack of values: one per batch element
        array = np.asarray(value.tolist())
        return array.dtype, array.shape[batch_dims:], array
    try:
        array = value.detach().cpu().numpy()
    except TypeError as err:
        msg = f"the entry {key!r} has dtype {value.dtype}, which numpy cannot hold: {err}"
        raise EntryTypeError(msg) from err
    return array.dtype, tuple(array.shape[batch_dims:]), array


class ConvertMixin(Contract):
    """Conversions between every tensordict class and other containers (see ``TensorDictBase``).

    Calls: ``_items_level``, ``_new_like``, ``_tensordict``.
    """

    __slots__ = ()

    def attrs(
        self,
        *,
        fields: Sequence[str] = ("device", "dtype", "shape"),
        num_threads: int | None = None,
    ) -> TensorCollection:
        """Returns a tensordict that describes each tensor leaf with a :class:`~tensordict.TensorAttrs`.

        The result has an empty batch size; pass it to :meth:`to` to move and cast another
        tensordict leaf by leaf to the recorded devices and dtypes.

        Keyword Args:
            fields (sequence of str, optional): what to record, a subset of
                ``("device", "dtype", "shape")``; the others are None.
            num_threads (int, optional): accepted for compatibility; the walk is cheap.

        Returns:
            TensorDict: one TensorAttrs per tensor leaf, under the same keys.

        Raises:
            ValueError: if a field is not one of the three.

        Examples:
            >>> td = TensorDict(a=torch.zeros(3), b=torch.zeros(3, dtype=torch.int32), batch_size=[3])
            >>> target = TensorDict(a=torch.zeros(3), b=torch.zeros(3), batch_size=[3])
            >>> target.to(td.attrs(fields=("dtype",)))["b"].dtype
            torch.int32
        """
        return _converter("attrs")(self, fields, num_threads)

    # ------------------------------------------------------------------ into a tensordict
    @classmethod
    def from_any(
        cls,
        obj: Any,
        *,
        auto_batch_size: bool = False,
        batch_dims: int | None = None,
        device: torch.device | None = None,
        batch_size: torch.Size | None = None,
    ) -> Any:
        """Converts a dict, tuple, named tuple, dataclass or structured array to a tensordict.

        A mapping, a tuple, a named tuple or a dataclass becomes a :class:`TensorDict`
        whose values are converted the same way at every depth (a tuple becomes a
        sub-tensordict keyed ``"0"``, ``"1"``, ...; a named tuple, a dataclass or a
        structured array one keyed by its fields). A list becomes one tensor when
        ``torch.tensor`` takes it (numbers of a regular shape), else a
        ``NonTensorStack`` of its elements. A tensor collection is returned as it
        is. Any other object (a tensor, a number, a string, a module, an array that
        is not structured) is returned unchanged.

        Args:
            obj: the object to convert.

        Keyword Args:
            auto_batch_size (bool, optional): infer the batch size, the longest
                leading shape every entry shares. Defaults to ``False``.
            batch_dims (int, optional): with ``auto_batch_size``, keep at most this
                many dimensions. Ignored (with a ``FutureWarning``) without it.
            device (torch.device, optional): the device of the result.
            batch_size (torch.Size, optional): the batch size of the result. It wins over
                ``auto_batch_size`` when both are given.

        Returns:
            A tensordict, or ``obj`` itself when it is not a container.

        Examples:
            >>> td = TensorDict.from_any({"a": torch.zeros(3), "b": (torch.ones(3),)}, auto_batch_size=True)
            >>> td.batch_size, list(td.keys(include_nested=True, leaves_only=True))
            (torch.Size([3]), ['a', ('b', '0')])
            >>> TensorDict.from_any([[1, 2], [3, 4]]).shape, type(TensorDict.from_any(["a", "b"])).__name__
            (torch.Size([2, 2]), 'NonTensorStack')
        """
        return _converter("from_any")(
            obj,
            auto_batch_size=auto_batch_size,
            batch_dims=batch_dims,
            device=device,
            batch_size=batch_size,
        )

    @classmethod
    def from_list(
        cls,
        input: list,
        *,
        auto_batch_size: bool | None = None,
        batch_size: ShapeType | None = None,
        device: DeviceType | None = None,
        batch_dims: int | None = None,
        names: Sequence[str | None] | None = None,
        lazy: bool | None = None,
    ) -> TensorCollection:
        """Builds a tensordict by stacking a list of dicts or tensor collections on a new first dim.

        Each dict goes through :meth:`from_dict` with ``batch_size[1:]``; tensordicts and
        tensorclasses are stacked as they are.

        Args:
            input (list): the dicts or tensor collections.

        Keyword Args:
            auto_batch_size (bool, optional): infer each element's batch size.
            batch_size (list of int, optional): the result's batch size, the list length first.
            device (torch.device, optional): the device of the result.
            batch_dims (int, optional): with auto batch size, the most dims of the result.
            names (list of str, optional): the dimension names of the result.
            lazy (bool, optional): True: a lazy stack; False: a dense one; None: dense when the
                elements have the same shapes, else lazy.

        Returns:
            A tensordict with ``len(input)`` as first batch dim.

        Raises:
            ValueError: if ``batch_size[0]`` is not the length of the list, or both
                ``batch_size`` and ``batch_dims`` are given.

        Examples:
            >>> td = TensorDict.from_list([{"a": torch.zeros(3)}, {"a": torch.ones(3)}], batch_size=[2, 3])
            >>> td.batch_size
            torch.Size([2, 3])
        """
        return _converter("from_list")(
            cls, input, auto_batch_size, batch_size, device, batch_dims, names, lazy
        )

    @classmethod
    def from_schema(
        cls,
        schema: dict,
        *,
        batch_size: ShapeType | None = None,
        storage: str | None = None,
        device: DeviceType | None = None,
        **kwargs: Any,
    ) -> TensorCollection:
        """Allocates a zero-filled tensordict from ``{key: (element_shape, dtype)}``.

        Each entry gets the shape ``[*batch_size, *element_shape]``.

        Args:
            schema (dict): maps each key to a pair ``(element_shape, dtype)``.

        Keyword Args:
            batch_size (list of int, optional): the batch size. Defaults to ``[]``.
            storage (str, optional): ``None`` (regular tensors), ``"memmap"`` (memory-mapped, in
                ``prefix=`` or a temporary folder; the other keywords go to :meth:`memmap_`) or
                ``"shared"`` (shared memory).
            device (torch.device, optional): the device (ignored by ``"memmap"``).
            **kwargs: with ``storage="memmap"``, passed to :meth:`memmap_` (``prefix``,
                ``num_threads``, ...); otherwise ignored.

        Returns:
            A new tensordict of zeros.

        Raises:
            ValueError: if ``storage`` is not one of the values above, or a schema entry is not
                a pair (UnknownStorageError).

        Examples:
            >>> td = TensorDict.from_schema({"obs": ([4, 4], torch.uint8), "r": ([], torch.float32)}, batch_size=[10])
            >>> td["obs"].shape, td["r"].dtype
            (torch.Size([10, 4, 4]), torch.float32)
        """
        return _converter("from_schema")(cls, schema, batch_size, storage, device, kwargs)

    def from_dict_instance(
        self: T,
        input_dict: Mapping,
        *,
        auto_batch_size: bool | None = None,
        batch_size: ShapeType | None = None,
        device: DeviceType | None = None,
        batch_dims: int | None = None,
        names: Sequence[str | None] | None = None,
    ) -> T:
        """Builds a tensordict from a dict, giving nested dicts the classes of this one's entries.

        Like :meth:`from_dict`, except that a nested dict under a key that is a tensorclass (or a
        nested tensordict holding one) here becomes that class, its fields cast as the class's
        constructor casts them (an ``autocast`` class turns a number back into its annotated
        type). The values of this tensordict are not used.

        Args:
            input_dict (dict): the entries; nested dicts become nested entries.

        Keyword Args:
            auto_batch_size (bool, optional): infer the batch size: the longest leading
                shape that every entry shares. Defaults to ``None`` (no).
            batch_size (torch.Size or sequence of int, optional): the batch size.
                Defaults to ``None``: ``torch.Size([])``, unless it is inferred.
            device (torch.device, str or int, optional): the device of every tensor.
                Defaults to ``None``.
            batch_dims (int, optional): infer the batch size, keeping at most this many
                dimensions. Defaults to ``None``.
            names (list of str, optional): the names of the batch dimensions. Defaults to
                ``None``.

        Returns:
            A new tensordict.

        Raises:
            ValueError: if both ``batch_size`` and ``batch_dims`` are given.

        Examples:
            >>> @tensorclass
            ... class Point:
            ...     x: torch.Tensor
            >>> td = TensorDict(a=torch.zeros(()), b=Point(x=torch.zeros(())))
            >>> out = td.from_dict_instance({"a": torch.ones(()), "b": {"x": torch.ones(())}})
            >>> type(out["b"]).__name__
            'Point'
        """
        return _converter("from_dict_instance")(
            self, input_dict, auto_batch_size, batch_size, device, batch_dims, names
        )

    @classmethod
    def from_tuple(
        cls,
        obj: Sequence,
        *,
        auto_batch_size: bool = False,
        batch_dims: int | None = None,
        device: torch.device | None = None,
        batch_size: torch.Size | None = None,
    ) -> TensorCollection:
        """Converts a tuple (or any sequence) to a :class:`TensorDict` keyed ``"0"``, ``"1"``, ...

        A tuple element becomes a sub-tensordict keyed the same way, a named tuple
        one keyed by its fields; every other element is stored as the
        :class:`TensorDict` constructor stores it (numbers and arrays become
        tensors, strings :class:`NonTensorData`, dicts sub-tensordicts).

        Args:
            obj (tuple or sequence): the elements.

        Keyword Args:
            auto_batch_size (bool, optional): infer the batch size. Defaults to ``False``.
            batch_dims (int, optional): with ``auto_batch_size``, keep at most this
                many dimensions. Ignored (with a ``FutureWarning``) without it.
            device (torch.device, optional): the device of the result.
            batch_size (torch.Size, optional): the batch size of the result.

        Returns:
            A new :class:`TensorDict`.

        Raises:
            ConflictingArgumentsError: (a ``TypeError``) if ``batch_size`` and
                ``auto_batch_size`` are both given.
            BatchSizeError: (a ``RuntimeError``) if an element does not start with
                ``batch_size``.

        Examples:
            >>> td = TensorDict.from_tuple((torch.zeros(3, 4), (torch.ones(3), "x")), auto_batch_size=True)
            >>> td.batch_size, td["1", "1"]
            (torch.Size([3]), 'x')
        """
        return _converter("from_tuple")(
            obj,
            auto_batch_size=auto_batch_size,
            batch_dims=batch_dims,
            device=device,
            batch_size=batch_size,
        )

    @classmethod
    def from_namedtuple(
        cls,
        named_tuple: tuple | Mapping,
        *,
        auto_batch_size: bool = False,
        batch_dims: int | None = None,
        device: torch.device | None = None,
        batch_size: torch.Size | None = None,
    ) -> TensorCollection:
        """Converts a named tuple (or a mapping) to a :class:`TensorDict` keyed by its fields.

        A named tuple, tuple or dict field becomes a sub-tensordict; every other
        value is stored as the :class:`TensorDict` constructor stores it.

        Args:
            named_tuple (namedtuple or Mapping): the fields.

        Keyword Args:
            auto_batch_size (bool, optional): infer the batch size. Defaults to ``False``.
            batch_dims (int, optional): with ``auto_batch_size``, keep at most this
                many dimensions. Ignored (with a ``FutureWarning``) without it.
            device (torch.device, optional): the device of the result.
            batch_size (torch.Size, optional): the batch size of the result.

        Returns:
            A new :class:`TensorDict`.

        Raises:
            ConversionInputError: (a ``TypeError`` and an ``AttributeError``) if
                ``named_tuple`` is neither a named tuple nor a mapping.
            ConflictingArgumentsError: (a ``TypeError``) if ``batch_size`` and
                ``auto_batch_size`` are both given.

        Examples:
            >>> from collections import namedtuple
            >>> Point = namedtuple("Point", ["x", "y"])
            >>> td = TensorDict.from_namedtuple(Point(torch.zeros(3), torch.ones(3, 2)), auto_batch_size=True)
            >>> td.batch_size, sorted(td.keys())
            (torch.Size([3]), ['x', 'y'])
        """
        return _converter("from_namedtuple")(
            named_tuple,
            auto_batch_size=auto_batch_size,
            batch_dims=batch_dims,
            device=device,
            batch_size=batch_size,
        )

    @classmethod
    def from_struct_array(
        cls,
        struct_array: np.ndarray,
        *,
        auto_batch_size: bool = False,
        batch_dims: int | None = None,
        device: torch.device | None = None,
        batch_size: torch.Size | None = None,
    ) -> TensorCollection:
        """Converts a numpy structured array to a :class:`TensorDict` keyed by its fields.

        The batch size is the array's shape unless told otherwise. Numeric fields
        become tensors that share the array's memory when their strides allow it
        (a copy otherwise); a nested structured field becomes a sub-tensordict; a
        string or object field becomes one :class:`NonTensorData` holding the
        field's array.

        Args:
            struct_array (np.ndarray): an array with a structured dtype.

        Keyword Args:
            auto_batch_size (bool, optional): infer the batch size from the entries
                instead. Defaults to ``False``.
            batch_dims (int, optional): with ``auto_batch_size``, keep at most this
                many dimensions. Ignored (with a ``FutureWarning``) without it.
            device (torch.device, optional): the device of the result.
            batch_size (torch.Size, optional): the batch size of the result.
                Defaults to the array's shape.

        Returns:
            A new :class:`TensorDict`.

        Raises:
            ConversionInputError: (a ``TypeError`` and an ``AttributeError``) if
                ``struct_array`` is not a numpy array with named fields.
            ConflictingArgumentsError: (a ``TypeError``) if ``batch_size`` and
                ``auto_batch_size`` are both given.

        Examples:
            >>> import numpy as np
            >>> x = np.array([(1, 2.0), (3, 4.0)], dtype=[("n", "i8"), ("w", "f4")])
            >>> td = TensorDict.from_struct_array(x)
            >>> td.batch_size, td["w"]
            (torch.Size([2]), tensor([2., 4.]))
        """
        return _converter("from_struct_array")(
            struct_array,
            auto_batch_size=auto_batch_size,
            batch_dims=batch_dims,
            device=device,
            batch_size=batch_size,
        )

    @classmethod
    def from_dataclass(
        cls,
        dataclass: Any,
        *,
        dest_cls: type | None = None,
        auto_batch_size: bool = False,
        batch_dims: int | None = None,
        as_tensorclass: bool = False,
        device: torch.device | None = None,
        batch_size: torch.Size | None = None,
    ) -> Any:
        """Converts a dataclass instance to a :class:`TensorDict` keyed by its fields.

        The field values are stored as they are (tensors are shared, not copied),
        a dataclass field becomes a sub-tensordict, and every other value is
        stored as the :class:`TensorDict` constructor stores it. With
        ``as_tensorclass=True`` the result is a tensorclass instance instead, as
        :func:`tensordict.from_dataclass` makes it.

        Args:
            dataclass: a dataclass instance (or, with ``as_tensorclass``, a
                dataclass type, which gives a tensorclass type).

        Keyword Args:
            dest_cls (type, optional): with ``as_tensorclass``, the tensorclass to
                build. Defaults to ``None``: a new class named ``<name>_tc``.
            auto_batch_size (bool, optional): infer the batch size. Defaults to ``False``.
            batch_dims (int, optional): with ``auto_batch_size``, keep at most this
                many dimensions. Ignored (with a ``FutureWarning``) without it.
            as_tensorclass (bool, optional): return a tensorclass instance.
                Defaults to ``False``.
            device (torch.device, optional): the device of the result.
            batch_size (torch.Size, optional): the batch size of the result. It wins over
                ``auto_batch_size`` when both are given.

        Returns:
            A new :class:`TensorDict` (or tensorclass instance or type).

        Raises:
            ConversionInputError: (a ``TypeError``) if ``dataclass`` is not a
                dataclass instance, or is a type without ``as_tensorclass``.

        Examples:
            >>> from dataclasses import dataclass
            >>> @dataclass
            ... class Sample:
            ...     obs: torch.Tensor
            ...     label: str
            >>> td = TensorDict.from_dataclass(Sample(torch.zeros(3, 2), "cat"), auto_batch_size=True)
            >>> td.batch_size, td["label"]
            (torch.Size([3, 2]), 'cat')
        """
        return _converter("from_dataclass")(
            dataclass,
            dest_cls=dest_cls,
            auto_batch_size=auto_batch_size,
            batch_dims=batch_dims,
            as_tensorclass=as_tensorclass,
            device=device,
            batch_size=batch_size,
        )

    @classmethod
    def from_pytree(
        cls,
        pytree: Any,
        *,
        batch_size: torch.Size | None = None,
        auto_batch_size: bool = False,
        batch_dims: int | None = None,
    ) -> TensorCollection | torch.Tensor:
        """Converts nested lists, tuples, named tuples and dicts of tensors to a :class:`TensorDict`.

        Each container becomes a tensordict level: a sequence keyed ``"0"``,
        ``"1"``, ..., a named tuple by its fields, a dict by its keys. Each level
        records its container type in an entry ``"_pytree_type"``, so that
        :meth:`to_pytree` rebuilds the same structure; a dict key that is not a
        string is kept too. A tensor or a tensor collection given as the whole
        pytree is returned as it is, and a Python number becomes a tensor.

        Args:
            pytree: the nested containers of tensors and numbers.

        Keyword Args:
            batch_size (torch.Size, optional): the batch size of the result. It wins over
                ``auto_batch_size`` when both are given.
            auto_batch_size (bool, optional): infer the batch size. Defaults to ``False``.
            batch_dims (int, optional): with ``auto_batch_size``, keep at most this
                many dimensions. Ignored (with a ``FutureWarning``) without it.

        Returns:
            A new :class:`TensorDict` (or the tensor given).

        Raises:
            UnsupportedConversionError: (a ``NotImplementedError``) if a leaf is
                neither a tensor, a number, an array nor a tensor collection.

        Examples:
            >>> tree = {"a": torch.zeros(3), "b": [torch.ones(3), (torch.ones(3), 2)]}
            >>> td = TensorDict.from_pytree(tree)
            >>> td["b", "1", "1"], td.to_pytree()["b"][1][1]
            (tensor(2), tensor(2))
        """
        return _converter("from_pytree")(
            pytree, batch_size=batch_size, auto_batch_size=auto_batch_size, batch_dims=batch_dims
        )

    @classmethod
    def from_module(
        cls,
        module: torch.nn.Module,
        as_module: bool = False,
        lock: bool = False,
        use_state_dict: bool = False,
        filter_empty: bool = True,
    ) -> TensorCollection:
        """Collects the parameters and buffers of a module in a :class:`TensorDict`, nested by sub-module.

        The values are the module's own :class:`torch.nn.Parameter` and buffer
        objects (not copies), so that writing into them in place changes the
        module. ``None`` parameters and buffers are left out.

        Args:
            module (torch.nn.Module): the module.
            as_module (bool, optional): return a :class:`~tensordict.nn.TensorDictParams`,
                whose leaves are parameters and buffers of it. Defaults to ``False``.
            lock (bool, optional): lock the result. Defaults to ``False``.
            use_state_dict (bool, optional): read ``module.state_dict()`` instead,
                so that its hooks run (the values are then detached tensors, and
                non-persistent buffers are left out). Defaults to ``False``.
            filter_empty (bool, optional): leave out sub-modules without any
                parameter or buffer. Defaults to ``True``.

        Returns:
            A new :class:`TensorDict` with an empty batch size.

        Raises:
            ConversionInputError: (a ``TypeError`` and an ``AttributeError``) if
                ``module`` is not an ``nn.Module``.

        Examples:
            >>> module = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU())
            >>> params = TensorDict.from_module(module)
            >>> sorted(params.keys(include_nested=True, leaves_only=True))
            [('0', 'bias'), ('0', 'weight')]
            >>> params["0", "weight"] is module[0].weight
            True
        """
        return _converter("from_module")(
            module,
            as_module=as_module,
            lock=lock,
            use_state_dict=use_state_dict,
            filter_empty=filter_empty,
        )

    @classmethod
    def from_modules(
        cls,
        *modules: torch.nn.Module,
        as_module: bool = False,
        lock: bool = True,
        use_state_dict: bool = False,
        lazy_stack: bool = False,
        expand_identical: bool = False,
    ) -> TensorCollection:
        """Stacks the parameters and buffers of several modules in one tensordict, one row per module.

        The dense result holds new parameters (the stacks of the modules' ones,
        with the same ``requires_grad``) and stacked buffers: gradients reach them,
        not the modules. With ``lazy_stack=True`` it is a lazy stack of
        :meth:`from_module` of each module, which shares the modules' own
        parameters and allows different shapes.

        Args:
            *modules (torch.nn.Module): the modules, with the same parameter and
                buffer names (and, for a dense stack, shapes).

        Keyword Args:
            as_module (bool, optional): return a :class:`~tensordict.nn.TensorDictParams`.
                Defaults to ``False``.
            lock (bool, optional): lock the result. Defaults to ``True``.
            use_state_dict (bool, optional): read each module's ``state_dict()``.
                Defaults to ``False``.
            lazy_stack (bool, optional): return a lazy stack. Defaults to ``False``.
            expand_identical (bool, optional): for a dense stack, an entry that is the
                same tensor in every module is expanded (a view, no copy) instead of
                stacked. Defaults to ``False``.

        Returns:
            A tensordict with batch size ``[len(modules)]``.

        Raises:
            TooFewInputsError: (a ``RuntimeError``) if no module is given.
            KeyMismatchError: if the modules hold different names.
            ShapeMismatchError: (a ``RuntimeError``) if a dense stack meets tensors of
                different shapes under one name.
            ConversionInputError: if an argument is not an ``nn.Module``.

        Examples:
            >>> params = TensorDict.from_modules(torch.nn.Linear(2, 3), torch.nn.Linear(2, 3))
            >>> params.batch_size, params["weight"].shape, params.is_locked
            (torch.Size([2]), torch.Size([2, 3, 2]), True)
        """
        return _converter("from_modules")(
            *modules,
            as_module=as_module,
            lock=lock,
            use_state_dict=use_state_dict,
            lazy_stack=lazy_stack,
            expand_identical=expand_identical,
        )

    # ------------------------------------------------------------------ out of a tensordict
    @classmethod
    def from_h5(
        cls,
        filename: str | os.PathLike,
        *,
        mode: str = "r",
        auto_batch_size: bool = False,
        batch_dims: int | None = None,
        batch_size: torch.Size | None = None,
    ) -> Any:
        """Opens an HDF5 file as a :class:`~tensordict.PersistentTensorDict` (needs h5py).

        Args:
            filename (str or Path): the file.

        Keyword Args:
            mode (str, optional): h5py's file mode. Defaults to ``"r"``.
            auto_batch_size (bool, optional): use the longest leading shape every entry
                shares. Defaults to False (the batch size the file records, else ``[]``).
            batch_dims (int, optional): with ``auto_batch_size``, keep at most this many dims.
            batch_size (torch.Size, optional): the batch size.

        Returns:
            A PersistentTensorDict reading the file lazily.

        Raises:
            ImportError: if h5py (the extra ``tensordict[h5]``) is not installed.

        Examples:
            >>> TensorDict({"a": torch.zeros(2)}, [2]).to_h5("x.h5").close()
            >>> TensorDict.from_h5("x.h5")["a"]
            tensor([0., 0.])
        """
        return _converter("from_h5")(
            filename,
            mode=mode,
            auto_batch_size=auto_batch_size,
            batch_dims=batch_dims,
            batch_size=batch_size,
        )

    def to_h5(self, filename: str | os.PathLike, **kwargs: Any) -> Any:
        """Writes the tensordict into a new HDF5 file; returns it as a PersistentTensorDict.

        Args:
            filename (str or Path): the new file (an existing one is replaced).
            **kwargs: passed to h5py's ``create_dataset`` for every tensor
                (``compression="gzip"``, ...).

        Returns:
            A :class:`~tensordict.PersistentTensorDict` over the file, open for writing.

        Raises:
            ImportError: if h5py (the extra ``tensordict[h5]``) is not installed.

        Examples:
            >>> h5 = TensorDict({"a": torch.ones(2)}, [2]).to_h5("y.h5")
            >>> h5.batch_size, h5["a"]
            (torch.Size([2]), tensor([1., 1.]))
        """
        return _converter("to_h5")(self, filename, **kwargs)

    def to_dict(
        self, *, retain_none: bool = True, convert_tensors: bool = False, tolist_first: bool = False
    ) -> dict:
        """Returns a nested ``dict`` of the entries (sharing tensors; non-tensors give their value).

        Keyword Args:
            retain_none (bool, optional): accepted for compatibility; ignored.
            convert_tensors (bool, optional): turn tensors into Python lists. Defaults to False.
            tolist_first (bool, optional): give each sub-tensordict as its :meth:`tolist`
                (a list of dicts per batch element) rather than as one dict. Defaults to False.

        Returns:
            A dict keyed like this level, with a dict (or a list) per sub-tensordict.

        Examples:
            >>> td = TensorDict({"a": torch.arange(2), "b": {"c": "x"}}, [2])
            >>> td.to_dict(convert_tensors=True)
            {'a': [0, 1], 'b': {'c': 'x'}}
            >>> td.to_dict(convert_tensors=True, tolist_first=True)
            {'a': [0, 1], 'b': [{'c': 'x'}, {'c': 'x'}]}
        """
        out = {}
        for key, value in self._items_level():
            if is_tensor_collection(value):
                if tolist_first:
                    # a non-tensor entry lists its value per element and has nothing to convert
                    out[key] = (
                        value.tolist()
                        if is_non_tensor(value)
                        else value.tolist(convert_tensors=convert_tensors)
                    )
                else:
                    out[key] = value._dict_entry(convert_tensors)
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
            if is_tensor_collection(value):
                out[key] = value._numpy_entry()
            else:
                out[key] = value.detach().cpu().numpy()
        return out

    def tolist(
        self,
        *,
        convert_nodes: bool = True,
        convert_tensors: bool = False,
        tolist_first: bool = False,
        as_linked_list: bool = False,
    ) -> list | dict:
        """Returns nested lists (one level per batch dimension) of the elements, each as a dict.

        Keyword Args:
            convert_nodes (bool, optional): give each element as its :meth:`to_dict`; with
                False, as the tensordict ``td[i, j, ...]`` itself. Defaults to True.
            convert_tensors (bool, optional): turn tensors into Python values. Needs
                ``convert_nodes``. Defaults to False.
            tolist_first (bool, optional): passed to :meth:`to_dict`: a sub-tensordict with
                batch dims becomes a list of dicts too. Defaults to False.
            as_linked_list (bool, optional): return a :class:`~tensordict.utils.LinkedList`:
                assigning an item of the outer list (``out[0] = {...}``) writes it into this
                tensordict as well. Defaults to False.

        Returns:
            A list nested once per batch dimension; without batch dimensions, the
            :meth:`to_dict` dict (this tensordict itself with ``convert_nodes=False``).

        Raises:
            TypeError: if ``convert_tensors`` is set with ``convert_nodes=False``
                (ConflictingArgumentsError).

        Examples:
            >>> td = TensorDict({"a": torch.arange(2)}, [2])
            >>> td.tolist(convert_tensors=True)
            [{'a': 0}, {'a': 1}]
            >>> type(td.tolist(convert_nodes=False)[0]).__name__
            'TensorDict'
            >>> rows = td.tolist(as_linked_list=True)
            >>> rows[1] = {"a": torch.tensor(7)}
            >>> td["a"]
            tensor([0, 7])
        """
        if convert_tensors and not convert_nodes:
            msg = "tolist(convert_tensors=...) converts the elements' dicts: it needs convert_nodes=True"
            raise ConflictingArgumentsError(msg)
        if not self.batch_size:
            if not convert_nodes:
                return self
            return self.to_dict(convert_tensors=convert_tensors, tolist_first=tolist_first)
        rows = [
            self[i].tolist(
                convert_nodes=convert_nodes,
                convert_tensors=convert_tensors,
                tolist_first=tolist_first,
            )
            for i in range(self.batch_size[0])
        ]
        if as_linked_list:
            return _converter("linked_list")(rows, stack=self)
        return rows

    def state_dict(
        self,
        destination: dict | None = None,
        prefix: str = "",
        keep_vars: bool = False,
        flatten: bool = True,
    ) -> dict:
        """Returns the leaf tensors keyed by ``"."``-joined keys, like ``nn.Module.state_dict``.

        Args:
            destination (dict, optional): the dict to fill. Defaults to a new OrderedDict.
            prefix (str, optional): prepended to every key. Defaults to ``""``.
            keep_vars (bool, optional): keep tensors as they are, not detached. Defaults to False.
            flatten (bool, optional): key the nested leaves by ``"."``-joined keys; with
                False, each sub-tensordict gives a nested dict under its key. Defaults to True.

        Returns:
            The filled dict (non-tensor entries are left out). Its ``_metadata`` attribute
            (as ``nn.Module.state_dict`` has one) gives the batch size and device of every
            level, keyed by the level's ``"."``-joined key (``""`` for the top), which
            :meth:`load_state_dict` adopts.

        Examples:
            >>> sd = TensorDict({"a": 0, "b": {"c": 0}}, []).state_dict()
            >>> list(sd), list(sd._metadata)
            (['a', 'b.c'], ['', 'b'])
        """
        out = OrderedDict() if destination is None else destination
        # the dict's own attribute, named as nn.Module.state_dict names it
        metadata = getattr(out, STATE_DICT_METADATA, None)
        if metadata is None and isinstance(out, OrderedDict):
            metadata = OrderedDict()
            setattr(out, STATE_DICT_METADATA, metadata)
        if metadata is not None:
            metadata[prefix[:-1] if prefix.endswith(".") else prefix] = _level_metadata(self)
        for key in self.keys(True, True):
            value = self.get(key, NO_DEFAULT)
            if isinstance(value, torch.Tensor):
                name = key if isinstance(key, str) else ".".join(key)
                out[prefix + name] = value if keep_vars else value.detach()
        if metadata is not None:
            for key in self.keys(True, False, is_leaf=_is_not_tensordict):
                value = self.get(key, NO_DEFAULT)
                if is_tensor_collection(value) and not is_non_tensor(value):
                    name = key if isinstance(key, str) else ".".join(key)
                    metadata[prefix + name] = _level_metadata(value)
        if not flatten:
            _nest_state(out, prefix)
        return out

    def load_state_dict(
        self: T,
        state_dict: dict,
        strict: bool = True,
        assign: bool = False,
        from_flatten: bool = True,
    ) -> T:
        """Copies the tensors of a :meth:`state_dict` into this tensordict, and returns it.

        Keys starting with ``"__"`` are skipped. Existing tensors are copied into; others are set.
        A nested dict (``state_dict(flatten=False)``) stands for the entries under its key.

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
        # the batch size of each level, which a state dict made by state_dict() records:
        # an empty tensordict (TensorDict().load_state_dict(sd)) takes them
        levels = getattr(state_dict, STATE_DICT_METADATA, {}).items()
        for level, meta in sorted(levels, key=lambda item: item[0].count(".") + bool(item[0])):
            if not isinstance(meta, dict) or "batch_size" not in meta:
                continue
            key = tuple(level.split(".")) if level else ()
            node = self if not key else self.get(key, None)
            size = torch.Size(meta["batch_size"])
            if node is None:
                self.set(key, self._new_like({}, size))
            elif is_tensor_collection(node) and node.batch_size != size:
                node.batch_size = size
        wanted = {}
        for key, value in _flat_state(state_dict, ()):
            if key[-1].startswith("__"):
                continue
            parts = tuple(p for k in key for p in k.split(".")) if from_flatten else key
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
                self.set_(key, value)  # into the stored tensor (a lazy stack's members' own)
            else:
                self.set(key, value)
        return self

    def to_namedtuple(self, dest_cls: type | None = None) -> Any:
        """Returns the entries as a named tuple, with a named tuple per sub-tensordict.

        Each level becomes an instance of a new named tuple class ``GenericDict``
        whose fields are the keys; non-tensor entries give their value.

        Args:
            dest_cls (type, optional): the class of the outer level, called with one
                keyword argument per key (a named tuple class, ``dict``, ...).
                Defaults to ``None``: ``GenericDict``.

        Returns:
            The named tuple (or ``dest_cls`` instance).

        Raises:
            InvalidArgumentError: (a ``ValueError``) if a key is not a valid field
                name (not an identifier, or starting with an underscore).

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.ones(2)}}, [2])
            >>> nt = td.to_namedtuple()
            >>> type(nt).__name__, nt.b.c
            ('GenericDict', tensor([1., 1.]))
        """
        values = {}
        for key, value in self.items():
            values[key] = value.to_namedtuple() if _is_nested(value) else _unwrap(value)
        if dest_cls is not None:
            return dest_cls(**values)
        try:
            generic = namedtuple("GenericDict", list(values))  # noqa: PYI024
        except ValueError as err:
            msg = f"cannot make a named tuple of the keys {list(values)}: {err}"
            raise InvalidArgumentError(msg) from err
        return generic(**values)

    def to_struct_array(self) -> np.ndarray:
        """Returns the entries as a numpy structured array of shape ``batch_size`` (a copy).

        Each leaf is a field, whose shape is the leaf's feature shape (the
        dimensions after the batch dimensions); a sub-tensordict is a nested
        structured field; a non-tensor entry fills its field with its value.

        Returns:
            A new ``np.ndarray`` with a structured dtype.

        Raises:
            InvalidArgumentError: (a ``ValueError``) if the tensordict (or a
                sub-tensordict) has no entry.
            EntryTypeError: (a ``TypeError``) if a tensor's dtype has no numpy
                equivalent, such as ``bfloat16``.

        Examples:
            >>> td = TensorDict({"a": torch.zeros(2, 3), "b": torch.arange(2)}, [2])
            >>> array = td.to_struct_array()
            >>> array.shape, array.dtype.names, array["a"].shape
            ((2,), ('a', 'b'), (2, 3))
        """
        dtype, fill = self._struct_fields(())
        out = np.empty(tuple(self.batch_size), dtype=dtype)
        for path, values in fill:
            target = out
            for part in path[:-1]:
                target = target[part]
            target[path[-1]] = values
        return out

    def _struct_fields(self, prefix: tuple):
        fields, fill = [], []
        batch_dims = self.batch_dims
        for key, value in self.items():
            path = (*prefix, key)
            if _is_nested(value) and not is_non_tensor(value):
                if getattr(type(value), "_is_tensorclass", False):
                    value = value._tensordict
                sub_dtype, sub_fill = value._struct_fields(path)
                fields.append((key, sub_dtype))
                fill.extend(sub_fill)
                continue
            dtype, shape, array = _field_dtype(key, value, batch_dims, self.batch_size)
            fields.append((key, dtype, shape) if shape else (key, dtype))
            fill.append((path, array))
        if not fields:
            where = f"the sub-tensordict {prefix!r}" if prefix else "the tensordict"
            msg = f"{where} has no entry: a structured array needs at least one field"
            raise InvalidArgumentError(msg)
        return np.dtype(fields), fill

    def to_pytree(self) -> Any:
        """Rebuilds the nested containers that :meth:`from_pytree` stored.

        A level that records its container type (an entry ``"_pytree_type"``)
        becomes that container again (list, tuple, named tuple, dict or dict
        subclass, with non-string dict keys restored); a level without one is
        returned as the tensordict it is. Non-tensor entries give their value.

        Returns:
            The pytree, or the tensordict itself if it records no type.

        Raises:
            MissingKeyError: (a ``KeyError``) if a sequence level lacks one of the
                keys ``"0"``, ``"1"``, ...

        Examples:
            >>> td = TensorDict.from_pytree([torch.zeros(2), {"x": torch.ones(1)}])
            >>> td.to_pytree()
            [tensor([0., 0.]), {'x': tensor([1.])}]
        """
        if PYTREE_TYPE not in self.keys():
            return self
        kind = _unwrap(self.get(PYTREE_TYPE))
        items = {}
        for key, value in self.items():
            if key == PYTREE_TYPE:
                continue
            value = value.to_pytree() if _is_nested(value) else _unwrap(value)
            if key.startswith(NON_STRING_KEY) and isinstance(value, dict):
                items[value["key"]] = value["value"]
            elif key.startswith(NON_STRING_KEY) and _is_nested(value):
                items[_unwrap(value.get("key"))] = _unwrap(value.get("value"))
            else:
                items[key] = value
        if issubclass(kind, tuple) and hasattr(kind, "_fields"):
            return kind(**items)
        if issubclass(kind, (list, tuple)):
            ordered = []
            for i in range(len(items)):
                if str(i) not in items:
                    msg = f"the pytree level of type {kind.__name__} has no entry {str(i)!r}"
                    raise MissingKeyError(msg)
                ordered.append(items[str(i)])
            return kind(ordered)
        return kind(items)

    def to_module(
        self,
        module: torch.nn.Module,
        *,
        inplace: bool | None = None,
        return_swap: bool = True,
        swap_dest: TensorCollection | None = None,
        use_state_dict: bool = False,
        non_blocking: bool = False,
        preserve_module_state: bool = True,
        memo: Any = None,
    ) -> TensorCollection | None:
        """Writes the entries into the parameters and buffers of a module, a sub-tensordict per sub-module.

        Every key is checked before anything is written, so a failed call leaves
        the module as it was. By default a leaf replaces the module's tensor: a
        :class:`torch.nn.Parameter` is registered as it is; with
        ``preserve_module_state`` a plain tensor written over a parameter becomes
        a parameter sharing the tensor's memory (with the old ``requires_grad``),
        unless it requires gradients itself, in which case it is registered as it
        is so that gradients reach it. With ``inplace=True`` the values are copied
        into the module's own tensors instead.

        Args:
            module (torch.nn.Module): the module to write into.

        Keyword Args:
            inplace (bool, optional): copy into the existing tensors. Defaults to
                ``None`` (no).
            return_swap (bool, optional): return the values the module held before.
                Defaults to ``True``.
            swap_dest (TensorDictBase, optional): a tensordict to write the old
                values into and return. Defaults to ``None``: a new one.
            use_state_dict (bool, optional): write through
                ``module.load_state_dict`` (non-strict), so that its hooks run.
                Defaults to ``False``.
            non_blocking (bool, optional): with ``inplace``, copy asynchronously.
                Defaults to ``False``.
            preserve_module_state (bool, optional): keep parameters registered as
                parameters (see above); if ``False``, a plain tensor replaces a
                parameter as a plain attribute. Defaults to ``True``.
            memo: no longer accepted.

        Returns:
            A :class:`TensorDict` of the previous values (or ``swap_dest``) if
            ``return_swap``, else ``None``.

        Raises:
            ConversionInputError: (a ``TypeError``) if ``module`` is not an ``nn.Module``.
            MissingKeyError: (a ``KeyError``) if a key names no attribute or
                sub-module of the module.
            InvalidArgumentError: (a ``ValueError``) if ``memo`` is given, or
                ``inplace`` together with ``use_state_dict``.

        Examples:
            >>> module = torch.nn.Linear(2, 3)
            >>> zeros = TensorDict({"weight": torch.zeros(3, 2), "bias": torch.zeros(3)})
            >>> old = zeros.to_module(module)
            >>> module(torch.ones(1, 2))
            tensor([[0., 0., 0.]], grad_fn=<AddmmBackward0>)
            >>> _ = old.to_module(module)  # puts the previous parameters back
            >>> module.weight is old["weight"]
            True
        """
        return _converter("to_module")(
            self,
            module,
            inplace=inplace,
            return_swap=return_swap,
            swap_dest=swap_dest,
            use_state_dict=use_state_dict,
            non_blocking=non_blocking,
            preserve_module_state=preserve_module_state,
            memo=memo,
        )

    # ------------------------------------------------------------------ hooks of the classes
    def _dict_entry(self, convert_tensors: bool):
        """What :meth:`to_dict` of a parent gives for this entry: this tensordict's own ``to_dict``.

        A tensorclass gives the same; a non-tensor entry gives its value, a stack of them a list.
        """
        return self.to_dict(convert_tensors=convert_tensors)

    def _numpy_entry(self):
        """What :meth:`numpy` of a parent gives for this entry: this tensordict's own ``numpy``.

        A tensorclass gives the same; a non-tensor entry gives its value, a stack of them a list.
        """
        return self.numpy()
