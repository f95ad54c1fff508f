"""One walk of a tensordict tree: describe it, and rebuild it from the description.

Consolidation, the transfers of :mod:`torch.distributed` and ``pack`` all go over a
tree level by level, say what each level is, and later build a tree of the same
classes again with leaves stored their own way (views of one buffer, received
tensors, columns of a packed tensor). This module is that walk, written once; each
of them supplies only its leaves.

The description of one level is a dict in the layout of the well-known TensorDict's
consolidated metadata (:mod:`tensordict._ops.consolidate` writes it to files as it is):

- ``"cls"``: the class of the level: the name of a built-in class (``"TensorDict"``,
  ``"LazyStackedTensorDict"``, ``"NonTensorStack"``), any other class itself
  (:func:`named_classes` replaces it by its stable name ``str(cls)``, under which
  every tensorclass is registered in :data:`~tensordict._ops.classes.CLASSES`);
- ``"non_tensors"``: key -> the record of each non-tensor entry, by default
  ``[value, batch_size, device]``;
- ``"leaves"``: key -> the record of each tensor, whatever the encoder's ``leaf``
  callback stores there;
- ``"cls_metadata"``: the fields of the level itself: for a dense level (a
  tensordict, a tensorclass) ``{"device", "names", "batch_size", "is_locked"}``; for
  a lazy stack ``{"stack_dim", "stack_dim_name", "is_locked"}``;
- then one item per sub-level, its key mapped to that level's description (the
  members of a stack under ``"0"``, ``"1"``, ...).

The walk reads no class flag: it asks each collection it meets through these hooks.
:class:`TreeMixin` gives every tensordict their behaviour for a dense level; a lazy
stack (``_lazy.py``), a tensorclass (``tensorclass.py``) and a non-tensor entry
(``_nontensor.py``) define their own.

- ``_tree_items(sort=False)``: the ``(key, value)`` pairs of the level, in order
  (sorted by key with ``sort``); a stack's members under their positions ``0``,
  ``1``, ... (ints, written as strings in a description);
- ``_tree_info()``: the level's ``"cls_metadata"``;
- ``_tree_value()``: ``None`` for a level; a non-tensor entry returns its record
  ``(value, batch_size, device)``;
- ``_tree_build(entries, info)`` (a class method): a new level of the class from its
  rebuilt entries and its ``"cls_metadata"``;
- ``_tree_like(entries, device=None)``: a new level like this one (its class, batch
  size, stack dim) holding ``entries``, keyed as ``_tree_items`` keys them;
- ``_tree_inner()``: the tensordict that holds the level's entries (a tensorclass's
  ``_tensordict``);
- ``_tree_write_back(key, value)``: ``None`` when ``value``, read at ``key``, is the
  stored leaf; a lazy stack returns a function that writes its stacked copy back
  into the members.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from tensordict._collection import TensorCollection, is_tensor_collection
from tensordict._nontensor import NonTensorData
from tensordict._ops._contract import Contract
from tensordict._ops.classes import CLASSES
from tensordict._typing import DeviceType
from tensordict.errors import ConsolidatedFormatError

LEVEL_FIELDS = ("cls", "non_tensors", "leaves", "cls_metadata")
"""The fields of a level's description; every other item is a sub-level."""

_Tensor = torch.Tensor


class TreeMixin(Contract):
    """The hooks of the walk, as a dense tensordict level answers them.

    Needs the primitives of :class:`~tensordict.TensorDictBase`: ``_items_level``,
    ``_keys_level``, ``_get_str``, ``_new_like``, and the ``device``, ``names``,
    ``batch_size`` and ``is_locked`` properties.

    Calls: ``_get_str``, ``_items_level``, ``_keys_level``, ``_new_like``.
    """

    __slots__ = ()

    def _tree_items(self, sort: bool = False) -> list:
        if sort:
            get = self._get_str
            return [(key, get(key, None)) for key in sorted(self._keys_level())]
        return list(self._items_level())

    def _tree_info(self) -> dict:
        device = self.device
        return {
            "device": str(device) if device is not None else None,
            "names": list(self.names),
            "batch_size": list(self.batch_size),
            "is_locked": self.is_locked,
        }

    def _tree_value(self):
        return None

    @classmethod
    def _tree_build(cls, entries: dict, info: dict):
        names = info.get("names")
        if names is not None and all(n is None for n in names):
            names = None
        return CLASSES["TensorDict"](
            entries, batch_size=info["batch_size"], device=info.get("device"), names=names
        )

    def _tree_like(self, entries: dict, device=None):
        if device is None:
            return self._new_like(entries, self.batch_size)
        return self._new_like(entries, self.batch_size, device=device)

    def _tree_inner(self):
        return self

    def _tree_write_back(self, key: str, value):
        return None


# ---------------------------------------------------------------------- classes by name
def class_name(cls: type) -> str | type:
    """The ``"cls"`` of a level: the name of a built-in class, any other class itself."""
    name = cls.__name__
    return name if CLASSES.get(name) is cls else cls


def named_classes(meta: dict, unknown: str | None = None) -> dict:
    """A copy of the description ``meta`` that names each class by its stable name ``str(cls)``.

    With ``unknown``, a class that is not registered under that name (a subclass of
    ``TensorDict`` defined elsewhere) is named ``unknown`` instead.
    """
    out = dict(meta)
    cls = out["cls"]
    if isinstance(cls, type):
        name = str(cls)
        out["cls"] = name if unknown is None or CLASSES.get(name) is cls else unknown
    for key, value in meta.items():
        if key not in LEVEL_FIELDS:
            out[key] = named_classes(value, unknown)
    return out


def lookup_class(name: str | type, where: str) -> type:
    """The class a description names (or holds), from the registry; never imported."""
    if isinstance(name, type):
        return name
    cls = CLASSES.get(name) if isinstance(name, str) else None
    if cls is None:
        shown = name.removeprefix("<class '").removesuffix("'>") if isinstance(name, str) else name
        msg = (
            f"{where}: cannot find the class {shown!r} among the classes defined in this "
            "process; import the module that defines it (or define it) before loading"
        )
        raise ConsolidatedFormatError(msg)
    return cls


# ---------------------------------------------------------------------- describing
def describe(
    obj: TensorCollection,
    leaf: Callable,
    *,
    sort: bool = False,
    non_tensor: Callable | None = None,
    path: tuple = (),
) -> dict:
    """The description of ``obj``'s tree (see the module docstring).

    Args:
        obj: a tensordict or a tensorclass instance.
        leaf: called as ``leaf(value, leaves, key, path)`` for every entry that is not
            a tensor collection, in the walk's order (depth first); it stores the
            record of ``value`` as ``leaves[key]`` (or raises).

    Keyword Args:
        sort (bool, optional): visit the keys of each dense level in sorted order
            instead of their own. Defaults to ``False``.
        non_tensor (callable, optional): makes the record of a non-tensor entry from
            the entry. Defaults to ``None``: ``(value, batch_size, device)``.
        path (tuple, optional): the key of ``obj`` in its tree, for ``leaf``.

    Returns:
        The description, a dict of dicts.

    Examples:
        >>> td = TensorDict(a=torch.zeros(3), b={"c": torch.ones(3, 2)}, label="x", batch_size=[3])
        >>> meta = describe(td, lambda value, leaves, key, path: leaves.update({key: list(value.shape)}))
        >>> meta["cls"], meta["leaves"], meta["non_tensors"], meta["b"]["leaves"]
        ('TensorDict', {'a': [3]}, {'label': ('x', [3], None)}, {'c': [3, 2]})
        >>> meta["cls_metadata"]
        {'device': None, 'names': [None], 'batch_size': [3], 'is_locked': False}
    """
    leaves: dict = {}
    non_tensors: dict = {}
    meta = {
        "cls": class_name(type(obj)),
        "non_tensors": non_tensors,
        "leaves": leaves,
        "cls_metadata": obj._tree_info(),
    }
    for key, value in obj._tree_items(sort):
        if isinstance(value, _Tensor) or not is_tensor_collection(value):
            leaf(value, leaves, key, path)
            continue
        record = value._tree_value()
        name = key if type(key) is str else str(key)
        if record is not None:
            non_tensors[name] = record if non_tensor is None else non_tensor(value)
        else:
            meta[name] = describe(value, leaf, sort=sort, non_tensor=non_tensor, path=(*path, name))
    return meta


def tensors(obj: TensorCollection, *, sort: bool = False, path: tuple = ()) -> list:
    """``(path, tensor)`` for every tensor of ``obj``'s tree, in the order of :func:`describe`.

    A path holds the keys down to the tensor, a stack's members by their positions
    (ints). Non-tensor entries are left out.

    Examples:
        >>> stack = lazy_stack([TensorDict(x=torch.zeros(2)), TensorDict(x=torch.ones(2))])
        >>> [path for path, _ in tensors(TensorDict(s=stack, a=torch.zeros(2, 2), batch_size=[2]))]
        [('s', 0, 'x'), ('s', 1, 'x'), ('a',)]
    """
    out = []
    for key, value in obj._tree_items(sort):
        if isinstance(value, _Tensor):
            out.append(((*path, key), value))
        elif is_tensor_collection(value) and value._tree_value() is None:
            out.extend(tensors(value, sort=sort, path=(*path, key)))
    return out


# ---------------------------------------------------------------------- rebuilding
def rebuild(
    meta: dict,
    values: Callable,
    *,
    non_tensor: Callable | None = None,
    lock: bool = True,
    sort: bool = False,
    device: DeviceType | None = None,
    on_level: Callable | None = None,
    path: tuple = (),
) -> TensorCollection:
    """The tree that the description ``meta`` describes.

    Args:
        meta (dict): a description, as :func:`describe` makes it or a file holds it.
        values: called as ``values(leaves, where)`` with the ``"leaves"`` of each level
            (and a phrase naming the level for messages); returns key -> tensor.

    Keyword Args:
        non_tensor (callable, optional): the entry of a ``"non_tensors"`` record.
            Defaults to ``None``: a :class:`NonTensorData` of ``[value, batch_size,
            device]``.
        lock (bool, optional): lock the levels recorded as locked. Defaults to ``True``.
        sort (bool, optional): put the entries of each dense level in sorted key order
            (else the non-tensor entries, the leaves, then the sub-levels).
            Defaults to ``False``.
        device (torch.device, optional): the device of every level that has one.
            Defaults to ``None``: the recorded devices.
        on_level (callable, optional): called as ``on_level(obj, meta)`` on each level
            once built (and locked), the sub-levels first.
        path (tuple, optional): the key of ``meta`` in its tree, for messages.

    Returns:
        The tree, of the classes the description names.

    Raises:
        ConsolidatedFormatError: if a level is malformed, names an unknown class, or
            cannot be built from its fields.

    Examples:
        >>> td = TensorDict(a=torch.zeros(3), b={"c": torch.ones(3, 2)}, batch_size=[3], names=["t"])
        >>> found = []
        >>> meta = describe(td, lambda value, leaves, key, path: leaves.update({key: len(found)}) or found.append(value))
        >>> out = rebuild(meta, lambda leaves, where: {key: found[i] for key, i in leaves.items()})
        >>> out.names, out["b", "c"] is td["b", "c"]
        (['t'], True)
    """
    where = f"the level {path!r}" if path else "the top level"
    if not isinstance(meta, dict) or not all(field in meta for field in LEVEL_FIELDS):
        msg = f"{where} of the consolidated metadata must be an object with the fields {list(LEVEL_FIELDS)}"
        raise ConsolidatedFormatError(msg)
    cls = lookup_class(meta["cls"], where)
    info, non_tensors, leaves = meta["cls_metadata"], meta["non_tensors"], meta["leaves"]
    if (
        not isinstance(info, dict)
        or not isinstance(non_tensors, dict)
        or not isinstance(leaves, dict)
    ):
        msg = f"{where}: 'cls_metadata', 'non_tensors' and 'leaves' must be objects"
        raise ConsolidatedFormatError(msg)
    entries: dict = {}
    for key, record in non_tensors.items():
        entries[key] = _non_tensor(record, where, key) if non_tensor is None else non_tensor(record)
    entries.update(values(leaves, where))
    for key, sub in meta.items():
        if key not in LEVEL_FIELDS and key != "size":
            entries[key] = rebuild(
                sub,
                values,
                non_tensor=non_tensor,
                lock=lock,
                sort=sort,
                device=device,
                on_level=on_level,
                path=(*path, key),
            )
    if sort:
        entries = dict(sorted(entries.items()))
    if device is not None and info.get("device") is not None:
        info = {**info, "device": device}
    try:
        obj = cls._tree_build(entries, info)
    except (KeyError, TypeError, ValueError, RuntimeError) as err:
        if isinstance(err, ConsolidatedFormatError):
            raise
        msg = f"{where}: cannot rebuild the {getattr(cls, '__name__', cls)} it describes: {err}"
        raise ConsolidatedFormatError(msg) from err
    if lock and info.get("is_locked"):
        obj.lock_()
    if on_level is not None:
        on_level(obj, meta)
    return obj


def _non_tensor(record, where: str, key: str) -> NonTensorData:
    if not isinstance(record, (list, tuple)) or len(record) != 3:
        msg = f"{where}: the non-tensor entry {key!r} has the record {record!r}; expected [value, batch_size, device]"
        raise ConsolidatedFormatError(msg)
    data, batch_size, device = record
    return NonTensorData(data, batch_size=batch_size, device=device)
