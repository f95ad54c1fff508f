"""``parse_tensor_dict_string``: a zero-filled tensordict rebuilt from its printed form.

A debugging tool: a tensordict printed in a log (compact or detailed layout, see
:mod:`tensordict._printing`) is rebuilt with its keys, shapes, dtypes, devices and
batch sizes. A small recursive-descent reader walks the text; each reader returns
the position after what it read.
"""

from __future__ import annotations

import re

import torch

from tensordict._printing import dtype_short
from tensordict._td import TensorDict

_DTYPES = {
    dtype_short(d): d
    for d in (getattr(torch, name) for name in dir(torch))
    if isinstance(d, torch.dtype)
}
_TORCH_DTYPES = {str(d): d for d in _DTYPES.values()}
_INT_LIST = re.compile(r"\[\s*(-?\d+(?:\s*,\s*-?\d+)*)?\s*\]")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text

    def fail(self, pos: int, what: str):
        near = self.text[pos : pos + 40].replace("\n", " ")
        msg = f"parse_tensor_dict_string: {what} at character {pos} (near {near!r})"
        raise ValueError(msg)

    def skip(self, pos: int) -> int:
        while pos < len(self.text) and self.text[pos].isspace():
            pos += 1
        return pos

    def expect(self, pos: int, token: str) -> int:
        pos = self.skip(pos)
        if not self.text.startswith(token, pos):
            self.fail(pos, f"expected {token!r}")
        return pos + len(token)

    def maybe(self, pos: int, token: str) -> tuple[bool, int]:
        at = self.skip(pos)
        if self.text.startswith(token, at):
            return True, at + len(token)
        return False, pos

    def name(self, pos: int) -> tuple[str, int]:
        pos = self.skip(pos)
        match = _NAME.match(self.text, pos)
        if match is None:
            self.fail(pos, "expected a name")
        return match.group(), match.end()

    def ints(self, pos: int) -> tuple[list[int], int]:
        pos = self.skip(pos)
        match = _INT_LIST.match(self.text, pos)
        if match is None:
            self.fail(pos, "expected a list of ints")
        body = match.group(1)
        return ([int(x) for x in body.split(",")] if body else []), match.end()

    def until(self, pos: int, stops: str) -> tuple[str, int]:
        """The text up to the first of ``stops`` outside brackets."""
        depth, start = 0, pos
        while pos < len(self.text):
            char = self.text[pos]
            if char in "([{":
                depth += 1
            elif char in ")]}":
                if depth == 0 and char in stops:
                    break
                depth -= 1
            elif depth == 0 and char in stops:
                break
            pos += 1
        return self.text[start:pos].strip(), pos

    # ------------------------------------------------------------------ a tensordict
    def tensordict(self, pos: int) -> tuple[dict, int]:
        """``Name(...)``: returns ``{"batch_size", "device", "fields"}`` and the end."""
        cls, pos = self.name(pos)
        pos = self.expect(pos, "(")
        info: dict = {"class": cls, "batch_size": [], "device": None, "fields": {}}
        while True:
            done, pos = self.maybe(pos, ")")
            if done:
                return info, pos
            field, pos = self.name(pos)
            pos = self.expect(pos, "=")
            if field == "fields":
                info["fields"], pos = self.fields(pos, info)
            elif field == "batch_size":
                is_size, pos = self.maybe(pos, "torch.Size(")
                info["batch_size"], pos = self.ints(pos)
                if is_size:
                    pos = self.expect(pos, ")")
            elif field == "device":
                text, pos = self.until(pos, ",)")
                info["device"] = None if text == "None" else text
            elif field == "exclusive_fields":
                self.fail(pos, "a lazy stack with exclusive keys has no single structure")
            else:
                _, pos = self.until(pos, ",)")  # stack_dim, is_shared: not needed
            _, pos = self.maybe(pos, ",")

    def fields(self, pos: int, parent: dict) -> tuple[dict, int]:
        pos = self.expect(pos, "{")
        out: dict = {}
        while True:
            done, pos = self.maybe(pos, "}")
            if done:
                return out, pos
            key, pos = self.until(self.skip(pos), ":")
            pos = self.expect(pos, ":")
            out[key], pos = self.value(pos, key, parent)
            _, pos = self.maybe(pos, ",")

    def value(self, pos: int, key: str, parent: dict):
        pos = self.skip(pos)
        text = self.text
        if text.startswith("{", pos):  # a nested level with the parent's batch size
            fields, pos = self.fields(pos, parent)
            return {
                "batch_size": None,
                "extra": [],
                "device": parent["device"],
                "fields": fields,
            }, pos
        if text.startswith("[", pos):  # a nested level with more batch dims: [3]{...}
            extra, pos = self.ints(pos)
            fields, pos = self.fields(pos, parent)
            return {
                "batch_size": None,
                "extra": extra,
                "device": parent["device"],
                "fields": fields,
            }, pos
        name, end = self.name(pos)
        after = self.skip(end)
        if text.startswith("(", after):
            if name == "Tensor":
                return self.detailed_tensor(after)
            if name.endswith("TensorDict"):
                info, pos = self.tensordict(pos)
                info["extra"] = None
                return info, pos
            self.fail(pos, f"cannot rebuild the field {key!r} of type {name}")
        if text.startswith("[", after) and name in _DTYPES:
            dims, pos = self.ints(after)
            return ("leaf", _DTYPES[name], dims, None), pos
        self.fail(pos, f"cannot rebuild the field '{key}: {name}' (only tensors and tensordicts)")
        return None, pos  # unreachable

    def detailed_tensor(self, pos: int):
        pos = self.expect(pos, "(")
        shape = dtype = device = None
        while True:
            done, pos = self.maybe(pos, ")")
            if done:
                break
            field, pos = self.name(pos)
            pos = self.expect(pos, "=")
            if field == "shape":
                pos = self.expect(pos, "torch.Size(")
                shape, pos = self.ints(pos)
                pos = self.expect(pos, ")")
            else:
                text, pos = self.until(pos, ",)")
                if field == "dtype":
                    if text not in _TORCH_DTYPES:
                        self.fail(pos, f"unknown dtype {text}")
                    dtype = _TORCH_DTYPES[text]
                elif field == "device":
                    device = None if text == "None" else text
            _, pos = self.maybe(pos, ",")
        if shape is None or dtype is None:
            self.fail(pos, "a Tensor(...) without shape or dtype")
        return ("full", dtype, shape, device), pos


def _build(info: dict, batch: list) -> TensorDict:
    """The zero-filled TensorDict that ``info`` describes, with batch size ``batch``."""
    device = info.get("device")
    source = {}
    for key, value in info["fields"].items():
        if isinstance(value, tuple):
            kind, dtype, dims, leaf_device = value
            shape = dims if kind == "full" else batch + dims
            source[key] = torch.zeros(shape, dtype=dtype, device=leaf_device or device)
            continue
        if value.get("extra") is None:  # detailed layout: its own batch size
            sub_batch = list(value["batch_size"])
        else:
            sub_batch = batch + list(value["extra"])
        source[key] = _build(value, sub_batch)
    return TensorDict(source, batch_size=batch, device=device)


def parse_tensor_dict_string(s: str) -> TensorDict:
    """Builds a zero-filled :class:`TensorDict` from its printed form.

    A debugging tool: it rebuilds a tensordict with the keys, shapes, dtypes, devices
    and batch sizes of a printed one (the compact layout, the default, or the one
    printed with ``set_printoptions(compact=False)``), so that a tensordict from a log
    can be reproduced. The values are not in the repr: every tensor is zeros. A lazy
    stack without exclusive keys comes back as a dense TensorDict. Keys holding
    ``:``, ``,`` or brackets cannot be read back.

    Args:
        s (str): the printed tensordict.

    Returns:
        A new :class:`TensorDict`.

    Raises:
        ValueError: if a field is neither a tensor nor a tensordict (a non-tensor
            value, say), the text is not a printed tensordict, or it is a lazy stack
            with exclusive keys; the message says where.

    Examples:
        >>> td = TensorDict(obs=torch.ones(3, 4), next=TensorDict(done=torch.ones(3, 1, dtype=torch.bool)), batch_size=[3])
        >>> rebuilt = parse_tensor_dict_string(repr(td))
        >>> rebuilt["next", "done"].dtype, rebuilt.batch_size, rebuilt["obs"].sum()
        (torch.bool, torch.Size([3]), tensor(0.))
    """
    if not isinstance(s, str):
        msg = f"parse_tensor_dict_string takes a str, got {type(s).__name__}"
        raise TypeError(msg)
    reader = _Reader(s)
    info, pos = reader.tensordict(0)
    if reader.skip(pos) != len(s):
        reader.fail(reader.skip(pos), "unexpected text after the tensordict")
    return _build(info, list(info["batch_size"]))
