"""Tensordicts over :mod:`torch.distributed`: point-to-point transfers and collectives.

Two kinds of transfer:

* **Into a known structure** (``send``/``recv``, ``isend``/``irecv``, ``all_reduce``,
  ``reduce``). Both sides hold a tensordict with the same keys, shapes and dtypes;
  the values travel, one message per leaf, the leaves taken in sorted-key order
  (a lazy stack: each member in turn, in stack order), so both sides agree on the
  order without talking about it. With ``consolidated=True`` every leaf is packed
  into one ``uint8`` buffer (:func:`~tensordict._ops._packed.pack`) and travels as one message.
* **Into an unknown structure** (``broadcast``, ``all_gather``, ``scatter``,
  ``gather_and_stack``, ``init_remote``/``from_remote_init``). The sender describes
  its tree with the walk of :mod:`tensordict._ops.tree` (classes by their stable
  names, batch sizes, keys, and for each leaf its offset, shape and dtype in one
  packed buffer: :func:`~tensordict._ops._packed.serialize`); the description goes as a pickled object, then
  the buffer as one tensor; the receiver rebuilds the tree (its classes found in the
  registry, never imported) with leaves that are views of the buffer
  (:func:`~tensordict._ops._packed.deserialize`), so that a later ``recv(consolidated=True)`` into it writes
  the buffer directly.

The point-to-point protocol. Before the values, the sender sends a header: an
``int64`` tensor ``[MAGIC, mode, fingerprint, description length]``, where the
fingerprint is a hash of the description of the leaves (their paths, shapes and
dtypes) and ``mode`` says whether one packed message or one message per leaf
follows. The description itself (a JSON list, as bytes) follows the header the
first time a sender sends that fingerprint to a peer; both sides keep what they
sent and saw. The receiver compares the fingerprint with its own before it
receives any value: on a mismatch it raises :class:`StructureMismatchError`
naming the first leaf that differs, instead of waiting for messages that never
come or writing bytes into the wrong leaves. The header travels with the tag of
the first leaf (messages of one tag between two ranks arrive in order).

After the values, the sender sends a trailer (one ``int64``, ``MAGIC``) on the tag
of the header. The receiver posts its receive after those of the values and waits
for it first (:class:`_Transfer`): once it is in, so is every value. A peer that
dies: gloo fails every receive posted from a peer whose connection closes, except
the one whose bytes it is reading at that moment, which waits for ever. The trailer
is never that one while values are in flight, so the call raises
:class:`PeerFailedError` naming the peer's rank at once, and the value cut in the
middle is not waited for.

The one-buffer form (packing, describing and rebuilding a tree) lives in
:mod:`tensordict._ops._packed`.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import time
from types import ModuleType
from typing import Any

import numpy as np
import torch

from tensordict._collection import TensorCollection, is_tensor_collection
from tensordict._ops import tree
from tensordict._ops._packed import (
    deserialize,
    device_of,
    layout,
    pack,
    packed_view,
    serialize,
    unpack_into,
)
from tensordict._typing import DeviceType, T
from tensordict.errors import (
    PeerFailedError,
    ProcessGroupNotInitializedError,
    StructureMismatchError,
    TransferTimeoutError,
)

MAGIC = 0x7444_6973
"""The first word of every point-to-point header ("tDis")."""

_MODE_LEAVES, _MODE_PACKED = 0, 1

_SENT: set = set()
"""``(peer, fingerprint)`` pairs whose description this process has sent."""
_SEEN: dict[int, bytes] = {}
"""Fingerprint -> description, for every description this process has received."""


# ====================================================================== checks
def _dist():
    return torch.distributed


def _require(method: str, direct: bool = False) -> ModuleType:
    """Returns :mod:`torch.distributed`, with a clear error when no process group is there to carry ``method``.

    ``direct``: the call goes straight through a given group's backend (``group_dst``
    or ``group_src``), which may be a standalone group with no default group around.
    """
    dist = _dist()
    if direct:
        return dist
    if not dist.is_available() or not dist.is_initialized():
        msg = (
            f"{method}() needs a torch.distributed process group: call "
            "torch.distributed.init_process_group first (every rank calls it)"
        )
        raise ProcessGroupNotInitializedError(msg)
    return dist


def _check_peer(peer, group_peer, group, name: str, group_name: str) -> None:
    """``dst``/``src`` (a global rank) or ``group_dst``/``group_src`` (a rank in ``group``): exactly one."""
    if group_peer is not None:
        if group is None:
            msg = f"`{group_name}` requires `group` to be passed."
            raise ValueError(msg)
        if peer is not None:
            msg = f"`{name}` and `{group_name}` are mutually exclusive."
            raise ValueError(msg)
    elif peer is None:
        msg = f"Exactly one of `{name}` and `{group_name}` must be provided."
        raise ValueError(msg)


def _next_tag(tag: int, pseudo_rand: bool) -> int:
    """The tag after ``tag``: the next integer, or a number of a seeded pseudo-random chain."""
    if not pseudo_rand:
        return tag + 1
    rng = np.random.default_rng(tag + 1)
    return int.from_bytes(rng.bytes(8), "big") % 10_000


# ====================================================================== walking the leaves
def _leaves(td) -> list:
    """``(path, tensor)`` for every tensor leaf, in the order both sides of a transfer use.

    Keys sorted at each level; a lazy stack gives its members' leaves in stack order
    (paths ``("#0", ...)``); non-tensor entries carry no message and are skipped.
    """
    return [
        (tuple(k if type(k) is str else f"#{k}" for k in path), t)
        for path, t in tree.tensors(td, sort=True)
    ]


def _description(leaves: list) -> bytes:
    return json.dumps(
        [[list(path), list(t.shape), str(t.dtype).removeprefix("torch.")] for path, t in leaves],
        separators=(",", ":"),
    ).encode()


def _fingerprint(desc: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(desc, digest_size=8).digest(), "little", signed=True)


def _first_difference(ours: bytes, theirs: bytes | None) -> str:
    """A sentence naming the first leaf where the two descriptions differ."""
    if theirs is None:
        return "the sender's structure is unknown here (its description was sent to an earlier receiver)"
    mine, other = json.loads(ours), json.loads(theirs)
    for (key, shape, dtype), (their_key, their_shape, their_dtype) in zip(mine, other):
        if key != their_key:
            return f"first differing key {tuple(key)!r}: the sender has {tuple(their_key)!r} there"
        if shape != their_shape:
            return f"first differing key {tuple(key)!r}: shape {their_shape} sent, {shape} here"
        if dtype != their_dtype:
            return f"first differing key {tuple(key)!r}: dtype {their_dtype} sent, {dtype} here"
    if len(mine) > len(other):
        return f"first differing key {tuple(mine[len(other)][0])!r}: not sent (the sender has {len(other)} leaves, this tensordict {len(mine)})"
    if len(other) > len(mine):
        return f"first differing key {tuple(other[len(mine)][0])!r}: sent but not here (the sender has {len(other)} leaves, this tensordict {len(mine)})"
    return "the descriptions differ"


# ====================================================================== the wire, point to point
def _p2p(op: str, tensor, peer, tag: int, group, group_peer, wait: bool):
    """One send or receive; with ``group_peer``, straight through the backend of ``group``."""
    dist = _dist()
    if group_peer is not None:
        work = getattr(group, op)([tensor], group_peer, tag)
    elif op == "send":
        work = dist.isend(tensor, dst=peer, tag=tag, group=group)
    else:
        work = dist.irecv(tensor, src=peer, tag=tag, group=group)
    if wait:
        work.wait()
        return None
    return work


# ====================================================================== a peer that dies
_ABANDONED: list = []
"""Receives of failed transfers, never waited for again: gloo may still hold their buffers."""


def _peer_failed(method: str, peer, cause: BaseException, when: str) -> PeerFailedError:
    msg = (
        f"{method}(): rank {peer} failed (its process died or its connection broke) {when}; "
        f"every pending receive from it fails. Destroy the process group and start a new "
        f"one to go on. Backend error: {cause}"
    )
    return PeerFailedError(msg)


class _Transfer:
    """The receives of one call from one peer, and its trailer, sent after every value.

    The trailer is waited for first: once it is in, every value sent before it is too
    (one connection per pair of ranks, in order). When the peer dies, gloo fails the
    trailer at once, as every receive that is posted but not being read; only the
    receive whose bytes were being read would wait for ever, and it is not waited for.
    """

    def __init__(self, method: str, peer, trailer, works: list) -> None:
        self.method, self.peer, self.trailer, self.works = method, peer, trailer, works
        self.error: BaseException | None = None
        self.arrived = False

    def wait_trailer(self, timeout: datetime.timedelta | None = None) -> None:
        """Returns once every value has arrived; raises :class:`PeerFailedError` when the peer died."""
        if self.arrived:
            return
        if self.error is not None:
            raise _peer_failed(self.method, self.peer, self.error, "earlier") from self.error
        start = time.monotonic()
        try:
            self.trailer.wait(*(() if timeout is None else (timeout,)))
        except RuntimeError as exc:
            if timeout is not None and time.monotonic() - start >= timeout.total_seconds():
                msg = (
                    f"{self.method}(): the transfer from rank {self.peer} is still pending after "
                    f"{timeout}; gloo closes the connection on a timeout, so later receives "
                    "from that rank fail"
                )
                self.error = exc
                _ABANDONED.append(self)
                raise TransferTimeoutError(msg) from exc
            self.error = exc
            _ABANDONED.append(self)
            raise _peer_failed(self.method, self.peer, exc, "during the transfer") from exc
        self.arrived = True

    def wait(self) -> None:
        """Waits for the trailer, then for every value (each already in)."""
        self.wait_trailer()
        _finish(self.works)


def _post(method: str, tensor, peer, tag: int, group, group_peer):
    """Posts one receive; a connection already broken raises :class:`PeerFailedError`."""
    try:
        return _p2p("recv", tensor, peer, tag, group, group_peer, wait=False)
    except RuntimeError as exc:
        who = peer if group_peer is None else group_peer
        raise _peer_failed(method, who, exc, "before this receive was posted") from exc


def _receive(method: str, tensor, peer, tag: int, group, group_peer) -> None:
    """Receives one message (a header, a description) and waits for it."""
    work = _post(method, tensor, peer, tag, group, group_peer)
    try:
        work.wait()
    except RuntimeError as exc:
        who = peer if group_peer is None else group_peer
        _ABANDONED.append(work)
        if "Timed out" in str(exc):  # gloo's words for the process group's timeout
            msg = f"{method}(): rank {who} sent nothing within the process group's timeout; did it call send()/isend()?"
            raise TransferTimeoutError(msg) from exc
        raise _peer_failed(method, who, exc, "before the values were sent") from exc


def _peer_id(peer, group, group_peer) -> tuple:
    return (peer, None) if group_peer is None else (group_peer, id(group))


def _send_header(leaves, mode, peer, tag, group, group_peer, works: list) -> None:
    desc = _description(leaves)
    fingerprint = _fingerprint(desc)
    pid = _peer_id(peer, group, group_peer)
    first = (pid, fingerprint) not in _SENT
    words = [MAGIC, mode, fingerprint, len(desc) if first else 0]
    header = torch.tensor(words, dtype=torch.int64, device=device_of(leaves))
    works.append((_p2p("send", header, peer, tag, group, group_peer, wait=False), header))
    if first:
        payload = torch.frombuffer(bytearray(desc), dtype=torch.uint8).to(header.device, copy=True)
        works.append((_p2p("send", payload, peer, tag, group, group_peer, wait=False), payload))
        _SENT.add((pid, fingerprint))


def _recv_header(method, leaves, mode, peer, tag, group, group_peer) -> None:
    """Receives the header (and description) and raises on any structure mismatch."""
    # on the leaves' device: nccl carries no CPU tensor
    header = torch.empty(4, dtype=torch.int64, device=device_of(leaves))
    _receive(method, header, peer, tag, group, group_peer)
    magic, their_mode, fingerprint, desc_len = header.tolist()
    if magic != MAGIC:
        msg = f"{method}(): the first message from the sender is not a tensordict header; did it call send()/isend()?"
        raise StructureMismatchError(msg)
    if desc_len:
        payload = torch.empty(desc_len, dtype=torch.uint8, device=header.device)
        _receive(method, payload, peer, tag, group, group_peer)
        _SEEN[fingerprint] = payload.cpu().numpy().tobytes()
    if their_mode != mode:
        sent = "one packed message" if their_mode == _MODE_PACKED else "one message per leaf"
        msg = f"{method}(): the sender sent {sent}; pass the same consolidated= on both sides"
        raise StructureMismatchError(msg)
    desc = _description(leaves)
    if _fingerprint(desc) != fingerprint:
        where = _first_difference(desc, _SEEN.get(fingerprint))
        msg = f"{method}(): the sender's tensordict does not have the keys, shapes and dtypes of this one; {where}"
        raise StructureMismatchError(msg)


def _recv_leaf(method, t, peer, tag, group, group_peer):
    """Posts the receive into ``t``, in place; a non-contiguous leaf gets the value copied in when it is waited for."""
    if t.is_contiguous():
        return _post(method, _as_plain(t), peer, tag, group, group_peer)
    target = torch.empty(t.shape, dtype=t.dtype, device=t.device)
    work = _post(method, target, peer, tag, group, group_peer)

    def finish(_=None):
        with torch.no_grad():
            t.copy_(target)

    return _Pending(work, finish)


def _seconds(timeout) -> datetime.timedelta | None:
    """``timeout`` as a ``timedelta`` (``Work.wait`` takes one; a number is seconds)."""
    if timeout is None or isinstance(timeout, datetime.timedelta):
        return timeout
    return datetime.timedelta(seconds=timeout)


class _Pending:
    """A transfer as a ``Work``: ``wait(timeout=None)``, ``is_completed()``.

    ``finish`` runs once the transfer is done (a receive copied into a leaf that is
    not contiguous). With a ``transfer``, the wait first waits for its trailer, so
    that it fails at once when the peer dies (see :class:`_Transfer`).
    """

    def __init__(self, work, finish=None, transfer: _Transfer | None = None) -> None:
        self.work, self.finish, self.transfer = work, finish, transfer

    def wait(self, timeout: datetime.timedelta | float | None = None) -> bool:
        timeout = _seconds(timeout)
        if self.transfer is not None:
            self.transfer.wait_trailer(timeout)
            self.work.wait()  # its bytes came before the trailer
        else:
            self.work.wait(*(() if timeout is None else (timeout,)))
        if self.finish is not None:
            self.finish()
        return True

    def is_completed(self) -> bool:
        return self.work.is_completed()


def _as_plain(t):
    return t.as_subclass(torch.Tensor) if type(t) is not torch.Tensor else t


def _send_all(td, method, peer, group, group_peer, init_tag, pseudo_rand, consolidated, wait):
    """Sends the header then the values; returns ``(last tag, works)``."""
    leaves = _leaves(td)
    works: list = []
    first = _next_tag(init_tag - 1, pseudo_rand)
    _send_header(
        leaves,
        _MODE_PACKED if consolidated else _MODE_LEAVES,
        peer,
        first,
        group,
        group_peer,
        works,
    )
    tag = init_tag - 1
    if consolidated:
        buffer = pack(leaves)
        works.append((_p2p("send", buffer, peer, first, group, group_peer, wait=False), buffer))
    else:
        for _, t in leaves:
            tag = _next_tag(tag, pseudo_rand)
            value = _as_plain(t.detach())
            if not value.is_contiguous():
                value = value.contiguous()
            works.append((_p2p("send", value, peer, tag, group, group_peer, wait=False), value))
    trailer = torch.tensor([MAGIC], dtype=torch.int64, device=device_of(leaves))
    works.append((_p2p("send", trailer, peer, first, group, group_peer, wait=False), trailer))
    if wait:
        for work, _ in works:
            work.wait()
    return tag, [work for work, _ in works]


def _recv_all(td, method, peer, group, group_peer, init_tag, pseudo_rand, consolidated):
    """Checks the header then posts the receives of the values into ``td``, and of the trailer.

    Returns ``(last tag, transfer)``. Nothing is waited for but the header; ``finish``
    steps (unpacking, copies into leaves that are not contiguous) run when each work
    is waited for.
    """
    leaves = _leaves(td)
    works = []
    first = _next_tag(init_tag - 1, pseudo_rand)
    _recv_header(
        method,
        leaves,
        _MODE_PACKED if consolidated else _MODE_LEAVES,
        peer,
        first,
        group,
        group_peer,
    )
    tag = init_tag - 1
    if consolidated:
        offsets, size = layout(leaves)
        view = packed_view(leaves, offsets, size)
        buffer = (
            view
            if view is not None
            else torch.empty(size, dtype=torch.uint8, device=device_of(leaves))
        )
        work = _post(method, buffer, peer, first, group, group_peer)
        if view is None:
            work = _Pending(work, lambda: unpack_into(buffer, leaves))
        works.append(work)
    else:
        for _, t in leaves:
            tag = _next_tag(tag, pseudo_rand)
            works.append(_recv_leaf(method, t, peer, tag, group, group_peer))
    # after the values on the first tag: the messages of one tag arrive in order
    trailer = torch.empty(1, dtype=torch.int64, device=device_of(leaves))
    posted = _post(method, trailer, peer, first, group, group_peer)
    return tag, _Transfer(method, peer if group_peer is None else group_peer, posted, works)


# ====================================================================== reductions
def _stacked_items(td, write_back: bool) -> list:
    """``(tensor, write_back)`` per leaf for :meth:`reduce`, in sorted-key order.

    A lazy stack gives each key's stacked leaf, as a dense tensordict of the same keys
    and shapes would (one collective per key, not per member). That leaf is a copy:
    with ``write_back`` (rank ``dst``), the result is written into the members after
    the collective.
    """
    td = td._tree_inner()
    items = []
    for key in sorted(td._keys_level()):
        value = td._get_str(key, None)
        if isinstance(value, torch.Tensor):
            items.append((value, td._tree_write_back(key, value) if write_back else None))
        elif is_tensor_collection(value) and value._tree_value() is None:
            items.extend(_stacked_items(value, write_back))
    return items


def _reduce_leaves(items: list, collective, bucket_bytes: int | None) -> list:
    """Issues the asynchronous ``collective(tensor)`` of each leaf (or bucket of leaves); returns the works.

    ``items`` holds ``(tensor, write_back)`` pairs. A leaf that is not contiguous is
    reduced as a contiguous copy, and a bucket as the concatenation of its leaves,
    copied back when its work is waited for; then the write-backs run.
    """
    if bucket_bytes is not None and bucket_bytes <= 0:
        msg = f"bucket_bytes must be a positive number of bytes, got {bucket_bytes}."
        raise ValueError(msg)
    buckets: list = []
    groups: dict = {}
    for item in items:
        t = item[0]
        if (
            bucket_bytes is None
            or not t.is_contiguous()
            or t.numel() * t.element_size() >= bucket_bytes
        ):
            buckets.append([item])
            continue
        groups.setdefault((t.device, t.dtype), []).append(item)
    for members in groups.values():
        bucket, size = [], 0
        for item in members:
            nbytes = item[0].numel() * item[0].element_size()
            if bucket and size + nbytes > bucket_bytes:
                buckets.append(bucket)
                bucket, size = [], 0
            bucket.append(item)
            size += nbytes
        if bucket:
            buckets.append(bucket)
    works = []
    for bucket in buckets:
        tensors = [t for t, _ in bucket]
        backs = [back for _, back in bucket if back is not None]
        if len(tensors) == 1 and tensors[0].is_contiguous():
            flat, tensors = _as_plain(tensors[0]), []
        else:
            with torch.no_grad():
                flat = torch.cat([t.reshape(-1) for t in tensors]).as_subclass(torch.Tensor)
        work = collective(flat)
        if not tensors and not backs:
            works.append(work)
            continue

        def finish(flat=flat, tensors=tensors, backs=backs):
            if tensors:
                with torch.no_grad():
                    for t, chunk in zip(tensors, flat.split([t.numel() for t in tensors])):
                        t.copy_(chunk.view(t.shape))
            for back in backs:
                back()

        works.append(_Pending(work, finish))
    return works


def _finish(works: list) -> None:
    """Waits for every work, then raises the first error."""
    error = None
    for work in works:
        try:
            work.wait()
        except Exception as exc:  # keep waiting: the others still write into the tensordict
            error = error or exc
    if error is not None:
        raise error


# ====================================================================== object collectives
def _padded(buffer: torch.Tensor, size: int) -> torch.Tensor:
    if buffer.numel() == size:
        return buffer
    out = torch.zeros(size, dtype=torch.uint8, device=buffer.device)
    out[: buffer.numel()] = buffer
    return out


def _rank(group) -> int:
    dist = _dist()
    return dist.get_rank() if group is None else dist.get_rank(group)


def _from_remote_init(src, group, device, use_broadcast: bool):
    _require("from_remote_init")
    if use_broadcast:
        return _broadcast_impl(None, src, group, device, None)
    dist = _dist()
    box = [None]
    dist.recv_object_list(box, src=src, group=group, device=device)
    meta = box[0]
    buffer = torch.empty(meta["nbytes"], dtype=torch.uint8, device=device or "cpu")
    dist.recv(buffer, src=src, group=group)
    return deserialize(meta, buffer)


def _broadcast_impl(td, src, group, device, tensorclass_type):
    dist = _dist()
    if _rank(group) == src:
        meta, buffer, own = serialize(td, tensorclass_type, device)
        dist.broadcast_object_list([meta], src=src, group=group)
        dist.broadcast(buffer, src=src, group=group)
        return td if own else deserialize(meta, buffer)
    box = [None]
    dist.broadcast_object_list(box, src=src, group=group)
    meta = box[0]
    where = device if device is not None else meta["device"]
    buffer = torch.empty(meta["nbytes"], dtype=torch.uint8, device=where)
    dist.broadcast(buffer, src=src, group=group)
    return deserialize(meta, buffer)


# ====================================================================== the methods
class DistributedMixin(tree.TreeMixin):
    """Sending, receiving and reducing tensordicts over :mod:`torch.distributed`.

    Calls: ``_from_tensordict``, ``_get_str``, ``_keys_level``, ``_tensordict``,
        ``_tree_inner``, ``_tree_value``, ``_tree_write_back``, ``_wrap``.
    """

    __slots__ = ()

    # ------------------------------------------------------------------ point to point
    def send(
        self,
        dst: int | None = None,
        *,
        group: torch.distributed.ProcessGroup | None = None,
        group_dst: int | None = None,
        init_tag: int = 0,
        pseudo_rand: bool = False,
        consolidated: bool = False,
    ) -> None:
        """Sends the leaves to another rank; it receives them with :meth:`recv` into the same structure.

        The receiver holds a tensordict with the same keys, shapes and dtypes (any
        class: the leaves go in sorted-key order, a lazy stack member by member); a
        receiver that does not know the structure uses :meth:`from_remote_init`.
        A small header goes first, so that a receiver with another structure raises
        :class:`~tensordict.errors.StructureMismatchError` naming the first
        differing key instead of hanging.

        Args:
            dst (int, optional): the global rank of the receiver. Exclusive with
                ``group_dst``: pass exactly one of them.

        Keyword Args:
            group (ProcessGroup, optional): the process group; ``None`` is the default group.
            group_dst (int, optional): the rank of the receiver in ``group`` (which is then
                required): the messages go straight through the backend of ``group``,
                which may be a standalone process group.
            init_tag (int, optional): the tag of the first leaf; the next ones use the next
                tags. Both sides pass the same value; concurrent transfers use ranges that
                do not overlap. Defaults to ``0``.
            pseudo_rand (bool, optional): tags from a pseudo-random chain seeded by
                ``init_tag`` instead of consecutive ones. Defaults to ``False``.
            consolidated (bool, optional): pack every leaf into one buffer and send one
                message; the receiver passes ``consolidated=True`` too. Defaults to ``False``.

        Raises:
            ValueError: if both or neither of ``dst`` and ``group_dst`` are given, or
                ``group_dst`` without ``group``.
            ProcessGroupNotInitializedError: (a ``RuntimeError``) before
                ``torch.distributed.init_process_group``.

        Examples:
            Between two processes (see "Across processes and machines" in the README):

            .. code-block:: python

                if rank == 0:
                    TensorDict(a=torch.ones(4), batch_size=[4]).send(dst=1)
                else:
                    td = TensorDict(a=torch.zeros(4), batch_size=[4])
                    td.recv(src=0)  # td["a"] is now all ones

            Without a process group, the call says what to do:

            >>> TensorDict(a=torch.zeros(4), batch_size=[4]).send(dst=1)
            Traceback (most recent call last):
            ...
            tensordict.errors.ProcessGroupNotInitializedError: send() needs a torch.distributed process group: call torch.distributed.init_process_group first ...
        """
        _check_peer(dst, group_dst, group, "dst", "group_dst")
        _require("send", group_dst is not None)
        _send_all(
            self, "send", dst, group, group_dst, init_tag, pseudo_rand, consolidated, wait=True
        )

    def recv(
        self,
        src: int | None = None,
        *,
        group: torch.distributed.ProcessGroup | None = None,
        group_src: int | None = None,
        init_tag: int = 0,
        pseudo_rand: bool = False,
        consolidated: bool = False,
    ) -> int | None:
        """Receives what :meth:`send` sends into this tensordict, in place.

        The leaves are written where they are: a memory-mapped leaf writes its file,
        a view writes its base. The tensordict must have the sender's keys, shapes and
        dtypes; the header sent first is checked before any value arrives.

        Args:
            src (int, optional): the global rank of the sender. Exclusive with ``group_src``.

        Keyword Args:
            group (ProcessGroup, optional): the process group; ``None`` is the default group.
            group_src (int, optional): the rank of the sender in ``group``, as in :meth:`send`.
            init_tag (int, optional): the sender's ``init_tag``. Defaults to ``0``.
            pseudo_rand (bool, optional): the sender's ``pseudo_rand``. Defaults to ``False``.
            consolidated (bool, optional): receive one packed message, as sent by
                ``send(consolidated=True)``. A tensordict built by :meth:`from_remote_init`
                or :meth:`broadcast` receives it with no copy. Defaults to ``False``.

        Returns:
            The tag of the last leaf received, or ``None`` with ``consolidated=True``.

        Raises:
            StructureMismatchError: (a ``RuntimeError``) if the sender's keys, shapes or
                dtypes differ, naming the first differing key.
            PeerFailedError: (a ``RuntimeError``) at once, naming the sender's rank, if its
                process dies or its connection breaks before every value is in; the values
                that arrived are written, the others not.
            ValueError: if both or neither of ``src`` and ``group_src`` are given.
            ProcessGroupNotInitializedError: before ``init_process_group``.

        Examples:
            .. code-block:: python

                td = TensorDict(a=torch.zeros(4), batch_size=[4])
                td.recv(src=0)

            >>> TensorDict(a=torch.zeros(4), batch_size=[4]).recv(src=0)
            Traceback (most recent call last):
            ...
            tensordict.errors.ProcessGroupNotInitializedError: recv() needs a torch.distributed process group: ...
        """
        _check_peer(src, group_src, group, "src", "group_src")
        _require("recv", group_src is not None)
        tag, transfer = _recv_all(
            self, "recv", src, group, group_src, init_tag, pseudo_rand, consolidated
        )
        transfer.wait()
        return None if consolidated else tag

    def isend(
        self,
        dst: int | None = None,
        *,
        group: torch.distributed.ProcessGroup | None = None,
        group_dst: int | None = None,
        init_tag: int = 0,
        pseudo_rand: bool = False,
        return_early: bool = False,
        consolidated: bool = False,
    ) -> list[torch.distributed.Work] | int | None:
        """Sends the leaves as asynchronous transfers that all run at once.

        As :meth:`send`; the receiver calls :meth:`irecv` or :meth:`recv`.

        Args:
            dst (int, optional): the global rank of the receiver. Exclusive with ``group_dst``.

        Keyword Args:
            group (ProcessGroup, optional): the process group; ``None`` is the default group.
            group_dst (int, optional): the rank of the receiver in ``group``.
            init_tag (int, optional): the tag of the first leaf. Defaults to ``0``.
            pseudo_rand (bool, optional): pseudo-random tags. Defaults to ``False``.
            return_early (bool, optional): return the ``Work`` objects at once instead of
                waiting; call ``wait()`` on each before changing the tensordict.
                Defaults to ``False``.
            consolidated (bool, optional): one packed message. Defaults to ``False``.

        Returns:
            With ``return_early=True``, the list of ``Work`` objects; otherwise the tag of
            the last leaf (``None`` with ``consolidated=True``).

        Raises:
            ValueError: if both or neither of ``dst`` and ``group_dst`` are given.
            ProcessGroupNotInitializedError: before ``init_process_group``.

        Examples:
            .. code-block:: python

                works = td.isend(dst=1, return_early=True)
                for work in works:
                    work.wait()

            >>> TensorDict(a=torch.zeros(4), batch_size=[4]).isend(dst=1)
            Traceback (most recent call last):
            ...
            tensordict.errors.ProcessGroupNotInitializedError: isend() needs a torch.distributed process group: ...
        """
        _check_peer(dst, group_dst, group, "dst", "group_dst")
        _require("isend", group_dst is not None)
        tag, works = _send_all(
            self,
            "isend",
            dst,
            group,
            group_dst,
            init_tag,
            pseudo_rand,
            consolidated,
            wait=not return_early,
        )
        if return_early:
            return works
        return None if consolidated else tag

    def irecv(
        self,
        src: int | None = None,
        *,
        group: torch.distributed.ProcessGroup | None = None,
        group_src: int | None = None,
        return_premature: bool = False,
        init_tag: int = 0,
        pseudo_rand: bool = False,
        consolidated: bool = False,
    ) -> list[torch.distributed.Work] | None:
        """Receives what :meth:`isend` or :meth:`send` sends, as asynchronous transfers, in place.

        The header is received and checked first (this waits for the sender to
        start); the values then arrive in parallel.

        Args:
            src (int, optional): the global rank of the sender. Exclusive with ``group_src``.

        Keyword Args:
            group (ProcessGroup, optional): the process group; ``None`` is the default group.
            group_src (int, optional): the rank of the sender in ``group``.
            return_premature (bool, optional): return the ``Work`` objects at once; call
                ``wait(timeout=None)`` on each before reading the tensordict (``timeout``: a
                ``timedelta`` or seconds). Defaults to ``False``.
            init_tag (int, optional): the sender's ``init_tag``. Defaults to ``0``.
            pseudo_rand (bool, optional): the sender's ``pseudo_rand``. Defaults to ``False``.
            consolidated (bool, optional): one packed message. Defaults to ``False``.

        Returns:
            With ``return_premature=True``, the list of ``Work`` objects; otherwise ``None``.

        Raises:
            StructureMismatchError: if the sender's structure differs.
            PeerFailedError: at once, naming the sender's rank, if its process dies or its
                connection breaks; every pending ``Work`` of the call raises it when waited for.
            TransferTimeoutError: from a ``Work``'s ``wait(timeout)`` when the values are
                not in by then.
            ValueError: if both or neither of ``src`` and ``group_src`` are given.
            ProcessGroupNotInitializedError: before ``init_process_group``.

        Examples:
            .. code-block:: python

                works = td.irecv(src=0, return_premature=True)
                for work in works:
                    work.wait()

            >>> TensorDict(a=torch.zeros(4), batch_size=[4]).irecv(src=0)
            Traceback (most recent call last):
            ...
            tensordict.errors.ProcessGroupNotInitializedError: irecv() needs a torch.distributed process group: ...
        """
        _check_peer(src, group_src, group, "src", "group_src")
        _require("irecv", group_src is not None)
        _, transfer = _recv_all(
            self, "irecv", src, group, group_src, init_tag, pseudo_rand, consolidated
        )
        if return_premature:
            return [_Pending(work, None, transfer) for work in transfer.works]
        transfer.wait()
        return None

    def asend(self, dst: Any) -> None:
        """Would send through a UCX pipe, as the well-known API does; not supported here.

        Args:
            dst (TensorDictPipe): the pipe.

        Raises:
            NotImplementedError: always; use :meth:`send` or :meth:`isend`.

        Examples:
            >>> TensorDict().asend(None)
            Traceback (most recent call last):
            ...
            NotImplementedError: asend(): UCX pipes are not supported; use send() or isend() over torch.distributed
        """
        msg = "asend(): UCX pipes are not supported; use send() or isend() over torch.distributed"
        raise NotImplementedError(msg)

    def arecv(self, src: Any, *, device: DeviceType | None = None) -> TensorCollection:
        """Would receive from a UCX pipe, as the well-known API does; not supported here.

        Args:
            src (TensorDictPipe): the pipe.

        Keyword Args:
            device (torch.device, optional): the device of the result.

        Raises:
            NotImplementedError: always; use :meth:`recv` or :meth:`irecv`.

        Examples:
            >>> TensorDict().arecv(None)
            Traceback (most recent call last):
            ...
            NotImplementedError: arecv(): UCX pipes are not supported; use recv() or irecv() over torch.distributed
        """
        msg = "arecv(): UCX pipes are not supported; use recv() or irecv() over torch.distributed"
        raise NotImplementedError(msg)

    # ------------------------------------------------------------------ cold start
    def init_remote(
        self,
        dst: int | None = None,
        group: torch.distributed.ProcessGroup | None = None,
        device: DeviceType | None = None,
        use_broadcast: bool = False,
        _tensorclass_type: str | None = None,
    ) -> None:
        """Sends the structure and the values to a rank that does not know them.

        The receiver calls :meth:`from_remote_init`, which returns a new tensordict
        of the same classes whose leaves are views of one buffer; the next batches go
        with ``send(consolidated=True)`` into it, with no copy on arrival. The
        description is pickled (``send_object_list``): use it only between ranks you
        trust.

        Args:
            dst (int, optional): the rank of the receiver; ignored with ``use_broadcast``.
            group (ProcessGroup, optional): the process group; ``None`` is the default group.
            device (torch.device, optional): the device the description travels through
                (with ``nccl``, a CUDA device); with ``use_broadcast``, the device of the
                packed buffer.
            use_broadcast (bool, optional): send to every rank with :meth:`broadcast`; the
                others call ``from_remote_init(src=..., use_broadcast=True)``.
                Defaults to ``False``.

        Raises:
            ProcessGroupNotInitializedError: before ``init_process_group``.

        Examples:
            .. code-block:: python

                if rank == 0:
                    td.init_remote(dst=1)
                    td.send(dst=1, consolidated=True)
                else:
                    td = TensorDict.from_remote_init(src=0)
                    td.recv(src=0, consolidated=True)

            >>> TensorDict(a=torch.zeros(4), batch_size=[4]).init_remote(dst=1)
            Traceback (most recent call last):
            ...
            tensordict.errors.ProcessGroupNotInitializedError: init_remote() needs a torch.distributed process group: ...
        """
        dist = _require("init_remote")
        if use_broadcast:
            _broadcast_impl(self, _rank(group), group, device, _tensorclass_type)
            return
        if dst is None:
            msg = "init_remote() needs dst (the rank of the receiver) unless use_broadcast=True"
            raise ValueError(msg)
        meta, buffer, _ = serialize(self, _tensorclass_type)
        dist.send_object_list([meta], dst=dst, group=group, device=device)
        dist.send(buffer, dst=dst, group=group)

    @classmethod
    def from_remote_init(
        cls,
        src: int,
        group: torch.distributed.ProcessGroup | None = None,
        device: DeviceType | None = None,
        use_broadcast: bool = False,
    ) -> TensorCollection:
        """Receives a tensordict that :meth:`init_remote` sends, and returns it.

        The receiving side learns the structure (keys, classes, batch sizes, shapes,
        dtypes), then the values; the result's leaves are views of one buffer, which
        ``recv(consolidated=True)`` fills in place. A tensorclass arrives as its class,
        which this process must define (import its module first): classes are found
        by name among those defined, never imported. The description is unpickled:
        use it only between ranks you trust.

        Args:
            src (int): the rank of the sender.
            group (ProcessGroup, optional): the process group; ``None`` is the default group.
            device (torch.device, optional): the device of the result (and that the
                description travels through). Defaults to the CPU, or with
                ``use_broadcast`` the sender's device.
            use_broadcast (bool, optional): receive with :meth:`broadcast`; it must match
                the sender's. Defaults to ``False``.

        Returns:
            A new tensordict of the classes that were sent.

        Raises:
            ProcessGroupNotInitializedError: before ``init_process_group``.
            ConsolidatedFormatError: if the sender's tensorclass is not defined in this
                process (a ``RuntimeError``).

        Examples:
            .. code-block:: python

                td = TensorDict.from_remote_init(src=0)

            >>> TensorDict.from_remote_init(src=0)
            Traceback (most recent call last):
            ...
            tensordict.errors.ProcessGroupNotInitializedError: from_remote_init() needs a torch.distributed process group: ...
        """
        return _from_remote_init(src, group, device, use_broadcast)

    # ------------------------------------------------------------------ collectives
    def broadcast(
        self: T,
        src: int,
        *,
        group: torch.distributed.ProcessGroup | None = None,
        device: DeviceType | None = None,
        _tensorclass_type: str | None = None,
    ) -> T:
        """Sends the tensordict of rank ``src`` to every rank of the group, and returns it on each.

        Every rank calls it; the others need not know the structure (call it on an
        empty ``TensorDict()``). The description is pickled
        (``broadcast_object_list``), then the packed leaves go as one tensor; each
        other rank builds a new tensordict of the same classes from them. Use it only
        between ranks you trust.

        Args:
            src (int): the rank whose tensordict is sent.

        Keyword Args:
            group (ProcessGroup, optional): the process group; ``None`` is the default group.
            device (torch.device, optional): on ``src``, the device of the packed buffer;
                elsewhere, the device of the result (with ``nccl``, a CUDA device).
                Defaults to the device of the leaves of ``src``.

        Returns:
            On ``src``, the tensordict itself if its leaves are already packed in one
            buffer (as after :meth:`from_remote_init`), else a packed copy; elsewhere a
            new tensordict.

        Raises:
            ProcessGroupNotInitializedError: before ``init_process_group``.

        Examples:
            .. code-block:: python

                td = TensorDict(a=torch.arange(3.0), batch_size=[3]) if rank == 0 else TensorDict()
                td = td.broadcast(src=0)  # td["a"] is tensor([0., 1., 2.]) on every rank

            >>> TensorDict().broadcast(src=0)
            Traceback (most recent call last):
            ...
            tensordict.errors.ProcessGroupNotInitializedError: broadcast() needs a torch.distributed process group: ...
        """
        _require("broadcast")
        return _broadcast_impl(self, src, group, device, _tensorclass_type)

    def all_reduce(
        self,
        op: torch.distributed.ReduceOp | None = None,
        *,
        group: torch.distributed.ProcessGroup | None = None,
        async_op: bool = False,
        bucket_bytes: int | None = None,
    ) -> list[torch.distributed.Work] | None:
        """Reduces each leaf over every rank of the group, in place, so that every rank holds the result.

        Every rank calls it with a tensordict of the same structure; the leaves go in
        sorted-key order.

        Args:
            op (ReduceOp, optional): the reduction. Defaults to ``ReduceOp.SUM``.

        Keyword Args:
            group (ProcessGroup, optional): the process group; ``None`` is the default group.
            async_op (bool, optional): return the ``Work`` objects without waiting; call
                ``wait()`` on each before using the tensordict. Defaults to ``False``.
            bucket_bytes (int, optional): pack the leaves of each device and dtype into
                buckets of at most this many bytes and reduce one bucket at a time (faster
                with many small leaves; a larger leaf is a bucket of its own). Defaults to
                ``None``: one reduction per leaf.

        Returns:
            With ``async_op=True``, the list of ``Work`` objects (one per bucket); else ``None``.

        Raises:
            ValueError: if ``bucket_bytes`` is not positive.
            ProcessGroupNotInitializedError: before ``init_process_group``.

        Examples:
            .. code-block:: python

                td = TensorDict(a=torch.ones(3) * rank, batch_size=[3])
                td.all_reduce()  # with 2 ranks: td["a"] is tensor([1., 1., 1.]) everywhere

            >>> TensorDict(a=torch.ones(3), batch_size=[3]).all_reduce()
            Traceback (most recent call last):
            ...
            tensordict.errors.ProcessGroupNotInitializedError: all_reduce() needs a torch.distributed process group: ...
        """
        dist = _require("all_reduce")
        op = dist.ReduceOp.SUM if op is None else op
        # Every reduction is issued at once, then waited for: the backend overlaps them.
        works = _reduce_leaves(
            [(t, None) for _, t in _leaves(self)],
            lambda t: dist.all_reduce(t, op=op, group=group, async_op=True),
            bucket_bytes,
        )
        if async_op:
            return works
        _finish(works)
        return None

    def reduce(
        self,
        dst: int,
        op: torch.distributed.ReduceOp | None = None,
        async_op: bool = False,
        return_premature: bool = False,
        group: torch.distributed.ProcessGroup | None = None,
        *,
        bucket_bytes: int | None = None,
    ) -> list[torch.distributed.Work] | None:
        """Reduces each leaf over every rank of the group into the tensordict of rank ``dst``, in place.

        Every rank calls it with a tensordict of the same structure. Afterwards rank
        ``dst`` holds the result; the values on the other ranks are not defined (with
        ``gloo`` they may hold partial sums): clone first if you need them.
        A lazy stack reduces each key's stacked leaf, as a dense tensordict of the same
        keys and shapes does (so the two can meet), and rank ``dst`` writes the result
        back into its members.

        Args:
            dst (int): the rank that receives the result.
            op (ReduceOp, optional): the reduction. Defaults to ``ReduceOp.SUM``.
            async_op (bool, optional): run the reductions of all leaves at once; the call
                waits for them unless ``return_premature``. Defaults to ``False``.
            return_premature (bool, optional): with ``async_op``, return the ``Work``
                objects without waiting. Defaults to ``False``.
            group (ProcessGroup, optional): the process group; ``None`` is the default group.

        Keyword Args:
            bucket_bytes (int, optional): as in :meth:`all_reduce`. Defaults to ``None``.

        Returns:
            With ``async_op`` and ``return_premature``, the list of ``Work`` objects; else ``None``.

        Raises:
            ValueError: if ``bucket_bytes`` is not positive.
            ProcessGroupNotInitializedError: before ``init_process_group``.

        Examples:
            .. code-block:: python

                td = TensorDict(a=torch.ones(3) * (rank + 1), batch_size=[3])
                td.reduce(dst=0)  # with 2 ranks: td["a"] is tensor([3., 3., 3.]) on rank 0

            >>> TensorDict(a=torch.ones(3), batch_size=[3]).reduce(dst=0)
            Traceback (most recent call last):
            ...
            tensordict.errors.ProcessGroupNotInitializedError: reduce() needs a torch.distributed process group: ...
        """
        dist = _require("reduce")
        op = dist.ReduceOp.SUM if op is None else op
        works = _reduce_leaves(
            _stacked_items(self, write_back=dist.get_rank() == dst),
            lambda t: dist.reduce(t, dst=dst, op=op, group=group, async_op=True),
            bucket_bytes,
        )
        if async_op and return_premature:
            return works
        _finish(works)  # issued at once, waited for together
        return None

    def all_gather(self, *, group: torch.distributed.ProcessGroup | None = None) -> list:
        """Returns the tensordicts of every rank of the group, in rank order, on every rank.

        Every rank calls it; the tensordicts may have different structures. The
        descriptions are pickled (``all_gather_object``) and the packed leaves gathered
        as one tensor per rank. Use it only between ranks you trust.

        Keyword Args:
            group (ProcessGroup, optional): the process group; ``None`` is the default group.

        Returns:
            A list of new tensordicts, one per rank (this rank's as a copy).

        Raises:
            ProcessGroupNotInitializedError: before ``init_process_group``.

        Examples:
            .. code-block:: python

                tds = TensorDict(a=torch.full((3,), float(rank)), batch_size=[3]).all_gather()
                [td["a"][0].item() for td in tds]  # [0.0, 1.0] on every rank of 2

            >>> TensorDict().all_gather()
            Traceback (most recent call last):
            ...
            tensordict.errors.ProcessGroupNotInitializedError: all_gather() needs a torch.distributed process group: ...
        """
        dist = _require("all_gather")
        world = dist.get_world_size(group)
        meta, buffer, _ = serialize(self)
        metas = [None] * world
        dist.all_gather_object(metas, meta, group=group)
        size = max(m["nbytes"] for m in metas)
        gathered = [
            torch.empty(size, dtype=torch.uint8, device=buffer.device) for _ in range(world)
        ]
        dist.all_gather(gathered, _padded(buffer, size), group=group)
        return [deserialize(m, b[: m["nbytes"]]) for m, b in zip(metas, gathered)]

    def gather_and_stack(
        self: T, dst: int, group: torch.distributed.ProcessGroup | None = None
    ) -> T | None:
        """Stacks the tensordicts of the other ranks into the tensordict of rank ``dst``, in place.

        Every rank calls it. On ``dst``, the tensordict has one row per other rank (its
        first batch dimension is ``world_size - 1``), and row ``i`` receives the
        tensordict of the ``i``-th other rank, in rank order; its own data is not part
        of the result. A memory-mapped destination is written in its files.

        Args:
            dst (int): the rank that receives the stack.
            group (ProcessGroup, optional): the process group; ``None`` is the default group.

        Returns:
            ``self`` on rank ``dst``, ``None`` elsewhere.

        Raises:
            ProcessGroupNotInitializedError: before ``init_process_group``.

        Examples:
            .. code-block:: python

                if rank == 0:
                    out = TensorDict(a=torch.zeros(world_size - 1, 3), batch_size=[world_size - 1])
                    out.gather_and_stack(dst=0)  # out["a"][i] comes from rank i + 1
                else:
                    TensorDict(a=torch.full((3,), float(rank)), batch_size=[3]).gather_and_stack(dst=0)

            >>> TensorDict().gather_and_stack(dst=0)
            Traceback (most recent call last):
            ...
            tensordict.errors.ProcessGroupNotInitializedError: gather_and_stack() needs a torch.distributed process group: ...
        """
        dist = _require("gather_and_stack")
        world = dist.get_world_size(group)
        rank = _rank(group)
        if rank == dst:
            device = device_of(_leaves(self))
            meta, buffer = {"nbytes": 0}, torch.empty(0, dtype=torch.uint8, device=device)
        else:
            meta, buffer, _ = serialize(self)
        metas = [None] * world
        dist.all_gather_object(metas, meta, group=group)
        size = max(m["nbytes"] for m in metas)
        padded = _padded(buffer, size)
        gathered = [torch.empty_like(padded) for _ in range(world)] if rank == dst else None
        dist.gather(padded, gathered, dst=dst, group=group)
        if rank != dst:
            return None
        received = [
            deserialize(m, b[: m["nbytes"]])
            for i, (m, b) in enumerate(zip(metas, gathered))
            if i != dst
        ]
        with torch.no_grad():
            self.update(torch.stack(received, 0), inplace=True)
        return self

    def scatter(
        self: T,
        src: int,
        tensordicts: list | None = None,
        *,
        group: torch.distributed.ProcessGroup | None = None,
        device: DeviceType | None = None,
    ) -> T:
        """Sends one tensordict of the list on ``src`` to each rank, and returns the one this rank gets.

        Every rank calls it; the tensordict it is called on is not used. On ``src``,
        ``tensordicts`` holds one tensordict per rank, in rank order; each is packed and
        sent as one buffer, with its pickled description.

        Args:
            src (int): the rank that holds the list.
            tensordicts (list, optional): on ``src``, the tensordicts, one per rank;
                ignored elsewhere.

        Keyword Args:
            group (ProcessGroup, optional): the process group; ``None`` is the default group.
            device (torch.device, optional): on the other ranks, the device of the result.

        Returns:
            The tensordict for this rank (a new one, on ``src`` too).

        Raises:
            ValueError: on ``src``, if ``tensordicts`` does not hold one tensordict per rank.
            ProcessGroupNotInitializedError: before ``init_process_group``.

        Examples:
            .. code-block:: python

                parts = [TensorDict(a=torch.full((2,), float(i)), batch_size=[2]) for i in range(world_size)]
                mine = TensorDict().scatter(src=0, tensordicts=parts if rank == 0 else None)

            >>> TensorDict().scatter(src=0)
            Traceback (most recent call last):
            ...
            tensordict.errors.ProcessGroupNotInitializedError: scatter() needs a torch.distributed process group: ...
        """
        dist = _require("scatter")
        world = dist.get_world_size(group)
        rank = _rank(group)
        box = [None]
        if rank == src:
            if tensordicts is None or len(tensordicts) != world:
                count = "None" if tensordicts is None else len(tensordicts)
                msg = f"scatter(): rank {src} needs one tensordict per rank ({world}), got {count}"
                raise ValueError(msg)
            packed = [serialize(td)[:2] for td in tensordicts]
            size = max(m["nbytes"] for m, _ in packed)
            metas = [dict(m, padded=size) for m, _ in packed]
            dist.scatter_object_list(box, metas, src=src, group=group)
            buffers = [_padded(b, size) for _, b in packed]
            out = torch.empty(size, dtype=torch.uint8, device=buffers[0].device)
            dist.scatter(out, buffers, src=src, group=group)
        else:
            dist.scatter_object_list(box, None, src=src, group=group)
            where = device if device is not None else box[0]["device"]
            out = torch.empty(box[0]["padded"], dtype=torch.uint8, device=where)
            dist.scatter(out, None, src=src, group=group)
        return deserialize(box[0], out[: box[0]["nbytes"]])


# ====================================================================== tensorclass forms
def _tc_broadcast(self, src: int, *, group=None, device=None):
    """Broadcasts the instance of rank ``src`` (see :meth:`TensorDictBase.broadcast`); it arrives as this class."""
    result = self._tensordict.broadcast(
        src, group=group, device=device, _tensorclass_type=str(type(self))
    )
    # a tensordict arrives as this class; another rank's tensorclass instance as its own class
    return self._wrap(result)


def _tc_init_remote(self, dst=None, group=None, device=None, use_broadcast=False) -> None:
    """Sends the instance to a rank that does not know it (see :meth:`TensorDictBase.init_remote`)."""
    self._tensordict.init_remote(
        dst=dst,
        group=group,
        device=device,
        use_broadcast=use_broadcast,
        _tensorclass_type=str(type(self)),
    )


@classmethod
def _tc_from_remote_init(cls, src: int, group=None, device=None, use_broadcast: bool = False):
    """Receives what :meth:`TensorDictBase.init_remote` sends; a tensordict arrives as this class."""
    result = _from_remote_init(src, group, device, use_broadcast)
    # another rank's tensorclass instance (no tensordict) arrives as its own class
    return cls._from_tensordict(result) if isinstance(result, tree.TreeMixin) else result


TENSORCLASS_METHODS = {
    "broadcast": _tc_broadcast,
    "init_remote": _tc_init_remote,
    "from_remote_init": _tc_from_remote_init,
}
"""The methods that :mod:`tensordict.tensorclass` copies onto every tensorclass: they carry the class."""
