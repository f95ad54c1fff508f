"""How a tensorclass is memory-mapped, loaded and refreshed: the hooks the storage layer calls.

On disk a tensorclass is a folder holding ``meta.json`` with only ``"_type"``
(``str(cls)``, e.g. ``"<class 'mymodule.Frame'>"``) and its tensordict in the
sub-folder ``_tensordict/`` (:data:`tensordict.memmap.format.TENSORCLASS_DATA`).
:class:`MemmapHooks` holds what every tensorclass gets for this: the ``_memmap_*``
hooks that :mod:`tensordict.memmap._io` and the base's public memmap methods call
(each passes the work to the instance's tensordict, one folder down), and those
public methods themselves (``memmap``, ``memmap_``, ``load_memmap``, ...), shared
with the base. :func:`register` makes a decorated class loadable by its ``_type``
string, from a folder and from a ``.tdz`` archive, without importing anything.

The names without a leading underscore are this module's protocol with the other
modules of :mod:`tensordict._tensorclass`.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from tensordict._ops.memmap import SHARED_WITH_TENSORCLASS, MemmapMixin
from tensordict._tensorclass.forwarding import is_tc
from tensordict.base import TensorDictBase
from tensordict.errors import MemmapFormatError, MemmapNotFoundError
from tensordict.memmap import _archive, _fs, _io
from tensordict.memmap import format as fmt


class MemmapHooks:
    """The memory-mapping members every tensorclass gets, copied onto the methods' holder."""

    @property
    def _mm(self):
        return self._tensordict._mm

    def _tensordict_of(self):
        return self._tensordict

    def _memmap_folder(self) -> str | None:
        """The folder this instance was memory-mapped to or loaded from, or ``None``."""
        level = self._mm
        if level is None or level.path is None:
            return None
        head, tail = os.path.split(level.path)
        return head if tail == fmt.TENSORCLASS_DATA else None

    @classmethod
    def _memmap_record_type(cls) -> str:
        return cls.__name__

    @classmethod
    def _memmap_load_as(cls, folder: str, meta: dict, stat, options):
        """Loads a tensorclass folder (whatever class it names) or a TensorDict folder as ``cls``."""
        if fmt.level_kind(folder, meta) == fmt.KIND_TENSORCLASS:
            return load_as(cls, folder, meta, stat, options)
        loaded = _io.load_folder(folder, meta, stat, options)
        if is_tc(loaded):
            loaded = loaded._tensordict
        if not isinstance(loaded, TensorDictBase):
            msg = f"cannot load {folder!r} as {cls.__name__}: it holds a {type(loaded).__name__}, not a tensordict"
            raise MemmapFormatError(msg)
        return cls.from_tensordict(loaded)

    def _memmap_load_into(self, loaded) -> None:
        self.__dict__["_tensordict"] = loaded._tensordict

    def _memmap_plan(self, folder, plan, robust_key, existsok: bool, like: bool) -> None:
        inner = None if folder is None else os.path.join(folder, fmt.TENSORCLASS_DATA)
        self._tensordict._memmap_plan(inner, plan, robust_key, existsok, like)
        plan.folders.append((folder, self))

    def _memmap_rebuild(self, folder, replacement: dict, inplace: bool, robust_key):
        inner = None if folder is None else os.path.join(folder, fmt.TENSORCLASS_DATA)
        td = self._tensordict._memmap_rebuild(inner, replacement, inplace, robust_key)
        if inplace:
            self.__dict__["_tensordict"] = td
            return self
        return type(self)._from_tensordict(td)

    def _memmap_write_meta(self, folder: str, robust_key) -> None:
        inner = os.path.join(folder, fmt.TENSORCLASS_DATA)
        self._tensordict._memmap_write_meta(inner, robust_key)
        _fs.write_meta_dict(folder, {"_type": str(type(self))})

    def _memmap_refresh(self, options) -> None:
        self._tensordict._memmap_refresh(options)

    def _memmap_missing(self, robust_key) -> None:
        self._tensordict._memmap_missing(robust_key)

    def _memmap_refresh_from(self, meta: dict, stat, options) -> bool:
        if meta.get("_type") != str(type(self)) or self._memmap_folder() is None:
            return False
        self._tensordict._memmap_refresh(options)
        return True


# The public memmap methods are the base's own: they call the hooks above.
for _name in SHARED_WITH_TENSORCLASS:
    setattr(MemmapHooks, _name, vars(MemmapMixin)[_name])
del _name


def load_as(
    cls: type, folder: str, meta: dict, stat: os.stat_result | None, options: _io.Options
) -> Any:
    """Loads the tensorclass folder ``folder`` as an instance of ``cls``."""
    inner_folder = fmt.child_path(folder, fmt.TENSORCLASS_DATA)
    try:
        inner = _io.load_child(inner_folder, options)
    except FileNotFoundError as err:
        msg = (
            f"cannot load {folder!r} as {cls.__name__}: a tensorclass folder holds its data in "
            f"{fmt.TENSORCLASS_DATA}/, which is missing or has no meta.json"
        )
        raise MemmapNotFoundError(msg) from err
    return wrap_loaded(cls, inner_folder, inner)


def wrap_loaded(cls: type, inner_folder: str, inner: TensorDictBase) -> Any:
    """The instance of ``cls`` over the tensordict loaded from ``inner_folder``, checked."""
    if not isinstance(inner, TensorDictBase):
        msg = f"{inner_folder!r} must hold a tensordict, got a {type(inner).__name__}"
        raise MemmapFormatError(msg)
    return cls._from_tensordict(inner)


def register(cls: type, key: str) -> None:
    """Makes folders and archive members whose ``_type`` is ``key`` load as the tensorclass ``cls``."""
    _io.LOADERS[key] = functools.partial(load_as, cls)
    _archive.BUILDERS[key] = functools.partial(wrap_loaded, cls)
