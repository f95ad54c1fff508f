"""The ``repr`` of tensordicts: the compact layout and the detailed one, as the print options say.

The compact layout (the default) is one line, ``Name(batch_size=[...], fields={key: f32[4],
...})``, each entry shown by its dtype and feature dimensions. The detailed layout
(``set_printoptions(compact=False)``) gives each entry a line of its own, a tensor as
``Tensor(shape=..., device=..., dtype=..., is_shared=...)``, and each nested tensordict an
indented block; the ``show_*`` options choose the parts of each line.

The printed object answers four hooks: ``_repr_items()`` (the ``(key, value)``
pairs shown), ``_repr_level()`` (the tensordict whose batch size and device are
shown), ``_repr_names_class()`` (whether its compact layout inside another names
its class) and ``_repr_detail_extra()`` (a dict: ``"exclusive"``, a lazy stack's
keys that only some members hold; ``"tail"``, more trailing parts;
``"fields_as_arguments"``, the detailed layout shows ``key=value`` rows instead of
a ``fields={...}`` block, as a tensorclass does).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from tensordict._collection import TensorCollection, is_non_tensor
from tensordict._nontensor import NonTensorData, NonTensorDataBase
from tensordict._options import get_printoptions
from tensordict._unbatched import is_unbatched

_INDENT = "    "

_DTYPE_SHORT = {
    torch.float32: "f32",
    torch.float64: "f64",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.int16: "i16",
    torch.int8: "i8",
    torch.uint8: "u8",
    torch.bool: "bool",
    torch.complex64: "c64",
    torch.complex128: "c128",
}


def dtype_short(dtype: torch.dtype) -> str:
    """``f32`` for ``torch.float32``, and so on; the dtype's own name for the rare ones."""
    return _DTYPE_SHORT.get(dtype, str(dtype).replace("torch.", ""))


def sorted_items(items: Iterable[tuple[str, Any]], options: dict) -> list:
    """The ``(key, value)`` pairs of a level in the order the ``sort_keys`` option says."""
    items = list(items)
    if options["sort_keys"] == "alphabetical":
        items.sort(key=lambda item: item[0])
    return items


class RaggedLeaf:
    """Stands, in a lazy stack's ``repr``, for members' tensors that differ in shape."""

    def __init__(self, values: list[torch.Tensor], stack_dim: int) -> None:
        first = values[0]
        dims = [
            size if all(v.shape[i] == size for v in values) else -1
            for i, size in enumerate(first.shape)
        ]
        dims.insert(stack_dim, len(values))
        self.shape = torch.Size(dims) if -1 not in dims else _RaggedSize(dims)
        self.dtype = first.dtype
        self.device = first.device
        self.is_nested = False


class _RaggedSize(tuple):
    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    __str__ = __repr__


def _number(value) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


# (print option, label, value): the fields a line shows, in order, each when its option is on
_TENSOR_FIELDS = (
    ("show_shape", "shape", lambda t: t.shape),
    ("show_field_device", "device", lambda t: t.device),
    ("show_dtype", "dtype", lambda t: t.dtype),
    ("show_field_is_shared", "is_shared", lambda t: t.is_shared()),
    ("show_grad", "requires_grad", lambda t: t.requires_grad),
    ("show_is_contiguous", "is_contiguous", lambda t: t.is_contiguous()),
    ("show_is_view", "is_view", lambda t: t._is_view()),
    ("show_storage_size", "storage_size", lambda t: t.untyped_storage().nbytes()),
)
_RAGGED_FIELDS = (*_TENSOR_FIELDS[:3], ("show_field_is_shared", "is_shared", lambda t: False))
_LEVEL_FIELDS = (
    ("show_batch_size", "batch_size", lambda td: td.batch_size),
    ("show_device", "device", lambda td: td.device),
    ("show_is_shared", "is_shared", lambda td: td.is_shared()),
)


def _shown(value: Any, options: dict, fields: tuple) -> list[str]:
    return [f"{label}={get(value)}" for option, label, get in fields if options[option]]


def _tensor_line(value: torch.Tensor, options: dict) -> str:
    if value.is_nested:
        name = "NestedTensor"
    elif type(value) is torch.Tensor or isinstance(value, torch.nn.Parameter):
        name = "Tensor"
    else:
        name = type(value).__name__
    parts = _shown(value, options, _TENSOR_FIELDS)
    if options["plain"] and not value.is_nested and value.numel():
        parts.extend(_summary(value))
    return f"{name}({', '.join(parts)})"


def _summary(value: torch.Tensor) -> list[str]:
    # The mean and spread of a floating tensor, the range of any other.
    data = value.detach()
    if data.is_floating_point() or data.is_complex():
        std = data.std().item() if data.numel() > 1 else 0.0
        return [f"mean={_number(data.mean().item())}", f"std={_number(std)}"]
    return [f"min={_number(data.min().item())}", f"max={_number(data.max().item())}"]


def _block(name: str, fields: list[tuple[str, str]], tail: list[str], depth: int) -> str:
    inner = _INDENT * (depth + 1)
    lines = [f"{name}("]
    for label, body in fields:
        lines.append(f"{inner}{label}{body},")
    for part in tail:
        lines.append(f"{inner}{part},")
    lines[-1] = lines[-1][:-1] + ")"
    return "\n".join(lines)


def _fields_block(items: list, options: dict, depth: int) -> str:
    inner = _INDENT * (depth + 2)
    if not items:
        return "{\n" + _INDENT * (depth + 1) + "}"
    rows = [f"{inner}{key}: {detailed_entry(value, options, depth + 2)}" for key, value in items]
    return "{\n" + ",\n".join(rows) + "}"


def _exclusive_block(members: list, options: dict, depth: int) -> str:
    # A lazy stack's keys that only some members hold, member by member.
    if not members:
        return "{\n" + _INDENT * (depth + 1) + "}"
    rows = []
    for index, items in members:
        body = ",\n".join(
            f"{_INDENT * (depth + 3)}{key}: {detailed_entry(value, options, depth + 3)}"
            for key, value in sorted_items(items, options)
        )
        rows.append(f"{_INDENT * (depth + 2)}{index} ->\n{body}")
    return "{\n" + ",\n".join(rows) + "}"


def _level_tail(obj, options: dict) -> list[str]:
    return _shown(obj, options, _LEVEL_FIELDS)


def detailed_entry(value: Any, options: dict, depth: int) -> str:
    """One entry in the detailed layout, indented for ``depth``."""
    if value is None:
        return "None"
    if isinstance(value, NonTensorDataBase):
        return repr(value)
    if is_non_tensor(value):  # a stack of values: the values, then the batch size
        inner = _INDENT * (depth + 1)
        return (
            f"{type(value).__name__}(\n{inner}{value.tolist()!r},\n"
            f"{inner}batch_size={value.batch_size},\n{inner}device={value.device})"
        )
    if isinstance(value, RaggedLeaf):
        return f"Tensor({', '.join(_shown(value, options, _RAGGED_FIELDS))})"
    if isinstance(value, torch.Tensor):
        return _tensor_line(value, options)
    return detailed_repr(value, options, depth)


def detailed_repr(obj: TensorCollection, options: dict | None = None, depth: int = 0) -> str:
    """The detailed, multi-line ``repr`` of a tensordict, lazy stack or tensorclass instance."""
    options = get_printoptions() if options is None else options
    name = type(obj).__name__
    extra = obj._repr_detail_extra()
    if extra.get("fields_as_arguments"):
        inner = _INDENT * (depth + 1)
        rows = [
            f"{inner}{key}={detailed_entry(value, options, depth + 1)},"
            for key, value in sorted_items(obj._repr_items(), options)
        ]
        tail = [f"{inner}{part}," for part in _level_tail(obj._repr_level(), options)]
        lines = [f"{name}(", *rows, *tail]
        lines[-1] = lines[-1][:-1] + ")"
        return "\n".join(lines)
    items = sorted_items(obj._repr_items(), options)
    fields = [("fields=", _fields_block(items, options, depth))]
    if "exclusive" in extra:
        fields.append(("exclusive_fields=", _exclusive_block(extra["exclusive"], options, depth)))
    tail = _level_tail(obj, options) + list(extra.get("tail", ()))
    return _block(name, fields, tail, depth)


_WIDTH = 80
# Passed as the width already used, it keeps a block on one line whatever its length.
_ONE_LINE = -(10**9)


def _compact_leaf(value, batch_dims: int, options: dict) -> str:
    if value is None:
        return "None"
    if type(value) is NonTensorData:
        return type(value.data).__name__
    if is_non_tensor(value):
        return type(value).__name__
    if is_unbatched(value):
        batch_dims = 0  # its whole shape is its own
    if value.is_nested:
        feature = _nested_feature(value, batch_dims)
    else:
        feature = ",".join(str(s) for s in value.shape[batch_dims:])
    if not options["show_dtype"]:
        return f"[{feature}]"
    return f"{dtype_short(value.dtype)}[{feature}]"


def _compact_head(value, batch_dims: int) -> str:
    # ``[3]`` for a sub-tensordict's own batch dims, ``C[3]`` for a tensorclass, and the
    # class name for a lazy stack.
    extra = ",".join(str(s) for s in value.batch_size[batch_dims:])
    dims = f"[{extra}]" if extra else ""
    if value._repr_names_class():
        return f"{type(value).__name__}{dims}"
    return dims


def _compact_value(value, batch_dims: int, options: dict, indent: int, used: int) -> str:
    """An entry's value: a leaf's ``f32[4]``, or a collection's braces, wrapped if too wide."""
    if value is None or isinstance(value, (torch.Tensor, RaggedLeaf)) or is_non_tensor(value):
        return _compact_leaf(value, batch_dims, options)
    head = _compact_head(value, batch_dims)
    body = _compact_block(value._repr_items(), value.batch_dims, options, indent, used + len(head))
    return head + body


def _compact_block(items, batch_dims: int, options: dict, indent: int, used: int) -> str:
    """``{key: value, ...}`` on one line when it fits in the width, else one entry a line."""
    items = list(items)
    if options["sort_keys"] == "alphabetical":
        items.sort(key=lambda item: f"{item[0]}:")
    flat = [f"{k}: {_compact_value(v, batch_dims, options, indent, _ONE_LINE)}" for k, v in items]
    line = "{" + ", ".join(flat) + "}"
    if used + len(line) <= _WIDTH and "\n" not in line:
        return line
    inner = indent + len(_INDENT)
    rows = [
        f"{' ' * inner}{k}: " + _compact_value(v, batch_dims, options, inner, inner + len(k) + 3)
        for k, v in items
    ]
    return "{\n" + ",\n".join(rows) + "}"


def _nested_feature(value: torch.Tensor, batch_dims: int) -> str:
    sizes = value._nested_tensor_size() if value.layout is torch.strided else None
    if sizes is None:
        return ",".join(str(s) for s in value.shape[batch_dims:])
    inner = (
        [int(col[0]) if bool((col == col[0]).all()) else -1 for col in sizes.unbind(1)]
        if sizes.numel()
        else []
    )
    shape = [value.size(0), *inner]
    return ",".join(str(s) for s in shape[batch_dims:])


def compact_fields(obj: TensorCollection, options: dict | None = None) -> str:
    """The ``{key: f32[4], ...}`` part of the compact layout, on one line."""
    options = get_printoptions() if options is None else options
    return _compact_block(obj._repr_items(), obj.batch_dims, options, 0, _ONE_LINE)


def compact_repr(obj: TensorCollection, options: dict | None = None, tail: str = "") -> str:
    """``Name(batch_size=[...], device=..., fields={...})``, wrapped past 80 characters."""
    options = get_printoptions() if options is None else options
    td = obj._repr_level()
    parts = []
    if options["show_batch_size"]:
        parts.append(f"batch_size=[{','.join(str(s) for s in td.batch_size)}]")
    if options["show_device"] and td.device is not None:
        parts.append(f"device={td.device}")
    if tail:
        parts.append(tail)
    after = ""
    exclusive = obj._repr_detail_extra().get("exclusive")
    if exclusive:
        # A member's own keys; its batch dims are the stack's minus the stacked one.
        bd = td.batch_dims - 1
        rows = ", ".join(
            f"{i}: {_compact_block(items, bd, options, 0, _ONE_LINE)}" for i, items in exclusive
        )
        after = f", exclusive_fields={{{rows}}}"
    head = f"{type(obj).__name__}({', '.join([*parts, 'fields='])}"
    fields = _compact_block(
        obj._repr_items(), td.batch_dims, options, 0, len(head) + len(after) + 1
    )
    return f"{head}{fields}{after})"


def collection_repr(obj: TensorCollection, tail: str = "") -> str:
    """The ``repr`` of a tensordict-like object, in the layout the print options choose."""
    options = get_printoptions()
    if options["compact"]:
        return compact_repr(obj, options, tail)
    return detailed_repr(obj, options)
