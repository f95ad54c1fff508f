"""One contract, every kind of tensordict: a base class of tests and one small subclass per kind.

``ContractTests`` holds every test and uses only the public API that all kinds share
(``get``, ``keys``, indexing, ``torch.stack``, ``apply``, ...): a tensorclass has no
``td["key"]`` string indexing and no undeclared keys, so neither is used here. Each
subclass says how to build its object and, through class attributes, where its kind
legitimately differs (``locked``, ``memmapped``, ``new_key_error``, ...); a case that a
kind cannot honour is overridden in its subclass by a test of what it does instead.

The kinds: TensorDict, lazy stack, tensorclass and TypedTensorDict, each as built,
memory-mapped (``memmap(dir)``) and loaded from that folder; TensorDict, lazy stack and
tensorclass also consolidated (in memory and into a file) and loaded from a ``.tdz``
archive. ``tests/test_contract_nontensor.py`` runs the same contract over NonTensorStack.

Every object holds the same content, batch size [4]: ``obs`` float [4, 3], ``done``
bool [4, 1], a nested ``("next", "obs")`` float [4, 3] and a non-tensor ``name``.
The ``...Indexed`` kinds are ``x[1:3]`` of their kind (batch size [2]), and must behave
like an object holding those rows.
"""

from __future__ import annotations

import pickle

import pytest
import torch

from tensordict import (
    LazyStackedTensorDict,
    TensorDict,
    TypedTensorDict,
    is_tensor_collection,
    lazy_stack,
    tensorclass,
)

OBS = torch.arange(12, dtype=torch.float32).reshape(4, 3)
DONE = torch.tensor([[True], [False], [False], [True]])
NEXT = OBS + 100
NAME = "cart"
LEAVES = {"obs", "done", ("next", "obs")}


@tensorclass
class Step:
    obs: torch.Tensor
    done: torch.Tensor
    next: TensorDict
    name: str


def _row(i: int) -> TensorDict:
    content = {"obs": OBS[i].clone(), "done": DONE[i].clone(), "next": {"obs": NEXT[i].clone()}}
    return TensorDict({**content, "name": NAME}, [])


def build_tensordict() -> TensorDict:
    content = {"obs": OBS.clone(), "done": DONE.clone(), "next": {"obs": NEXT.clone()}}
    return TensorDict({**content, "name": NAME}, [4])


def build_lazy_stack() -> LazyStackedTensorDict:
    return lazy_stack([_row(i) for i in range(4)], 0)


def build_tensorclass() -> Step:
    nxt = TensorDict({"obs": NEXT.clone()}, [4])
    return Step(obs=OBS.clone(), done=DONE.clone(), next=nxt, name=NAME, batch_size=[4])


class TypedStep(TypedTensorDict):
    obs: torch.Tensor
    done: torch.Tensor
    next: TensorDict
    name: str


def build_typed() -> TypedStep:
    nxt = TensorDict({"obs": NEXT.clone()}, [4])
    return TypedStep(obs=OBS.clone(), done=DONE.clone(), next=nxt, name=NAME, batch_size=[4])


def leaf_keys(obj) -> set:
    return set(obj.keys(include_nested=True, leaves_only=True))


class ContractTests:
    """The contract. Subclasses set ``build`` and the attributes below."""

    @staticmethod
    def build():
        """A fresh object of the kind, batch size [4], holding the content above."""
        raise NotImplementedError("each kind sets build")

    form = "plain"  # how the built object is stored: one of FORMS below
    stacked_name = False  # True: the name entry is a stack of the members' values
    indexed = False  # True: the object is x[1:3] of the built one
    memmapped = False  # what is_memmap() says
    locked = False  # what is_locked says
    consolidated = False  # what is_consolidated() says
    views_locked = None  # what is_locked says for x[0] and x[:1] (None: what it says for x)
    new_key_error = None  # (exception, match) when set() of a new key is refused
    has_folder = False  # load_memmap(its folder) sees what make_memmap* add to the object

    # "plain": as built; "memmap": x.memmap(dir) (locked); "loaded": load(dir) of that folder;
    # "archive": load(path) of x.save(path.tdz); "consolidated": x.consolidate();
    # "consolidated-file": x.consolidate(filename=path).
    FORMS = ("plain", "memmap", "loaded", "archive", "consolidated", "consolidated-file")

    @staticmethod
    def load(path):
        """Loads a folder or archive that an object of the kind was written to."""
        return TensorDict.load_memmap(path)

    # ------------------------------------------------------------------ fixtures
    def make(self, tmp_path):
        """A fresh object of the kind; keeps its un-indexed source, its folder and its file."""
        obj = type(self).build()
        self.folder = self.file = None
        if self.form in ("memmap", "loaded"):
            self.folder = tmp_path / "m"
            mapped = obj.memmap(self.folder)
            obj = mapped if self.form == "memmap" else self.load(self.folder)
        elif self.form == "archive":
            self.file = tmp_path / "m.tdz"
            obj.save(self.file)
            obj = self.load(self.file)
        elif self.form == "consolidated":
            obj = obj.consolidate()
        elif self.form == "consolidated-file":
            self.file = tmp_path / "m.bin"
            obj = obj.consolidate(filename=self.file)
        else:
            assert self.form == "plain", f"unknown form {self.form!r}: one of {self.FORMS}"
        self.source = obj
        return obj[1:3] if self.indexed else obj

    @pytest.fixture
    def x(self, tmp_path):
        return self.make(tmp_path)

    @property
    def rows(self) -> slice:
        return slice(1, 3) if self.indexed else slice(0, 4)

    @property
    def n(self) -> int:
        return 2 if self.indexed else 4

    @property
    def name_value(self):
        """What the name entry reads as: a lazy stack's members' values form a list of them."""
        return [NAME] * self.n if self.stacked_name else NAME

    def assert_content(self, obj, rows=None, *, name=True):
        rows = self.rows if rows is None else rows
        assert torch.equal(obj.get("obs"), OBS[rows])
        assert torch.equal(obj.get("done"), DONE[rows])
        assert torch.equal(obj.get(("next", "obs")), NEXT[rows])
        if name:
            assert obj.get_non_tensor("name") == self.name_value

    def assert_written(self, key, rows, value):
        """The write reached the source of an indexed view and the files on disk."""
        if self.indexed:
            assert torch.equal(self.source.get(key)[self.rows][rows], value)
        if self.folder is not None:
            assert torch.equal(TensorDict.load_memmap(self.folder).get(key)[self.rows][rows], value)

    # ------------------------------------------------------------------ keys and values
    def test_batch_size(self, x):
        """batch_size, shape, batch_dims, len and numel describe the one batch dim."""
        assert x.batch_size == torch.Size([self.n]) and x.shape == torch.Size([self.n])
        assert x.batch_dims == 1 and len(x) == self.n and x.numel() == self.n
        assert x.get("next").batch_size == torch.Size([self.n])

    def test_keys(self, x):
        """keys() lists the top level; nested leaves are the tensors, nested keys are tuples."""
        assert set(x.keys()) == {"obs", "done", "next", "name"}
        assert leaf_keys(x) == LEAVES
        assert ("next", "obs") in x.keys(include_nested=True)
        assert "obs" in x.keys() and "missing" not in x.keys()

    def test_get_reads_the_content(self, x):
        """get() returns each leaf, nested ones by tuple key, and None for a missing key."""
        self.assert_content(x)
        assert x.get("done").dtype == torch.bool
        assert x.get("missing") is None
        assert x.get(("next", "missing")) is None

    def test_non_tensor_entry(self, x):
        """The string entry reads back as the string, also through to_dict()."""
        assert x.get_non_tensor("name") == self.name_value
        assert x.to_dict()["name"] == self.name_value

    def test_to_dict(self, x):
        """to_dict() gives nested plain dicts of tensors."""
        out = x.to_dict()
        assert set(out) == {"obs", "done", "next", "name"} and set(out["next"]) == {"obs"}
        assert torch.equal(out["obs"], OBS[self.rows])
        assert torch.equal(out["next"]["obs"], NEXT[self.rows])

    def test_to_dict_round_trip(self, x):
        """TensorDict.from_dict(x.to_dict(), batch_size=...) rebuilds the same content and keys."""
        out = TensorDict.from_dict(x.to_dict(), batch_size=x.batch_size)
        assert out.batch_size == x.batch_size
        assert leaf_keys(out) == LEAVES and set(out.keys()) == set(x.keys())
        self.assert_content(out)

    def test_to_tensordict(self, x):
        """to_tensordict() is an unlocked, in-memory TensorDict copy with the same content."""
        out = x.to_tensordict()
        assert isinstance(out, TensorDict) and out.batch_size == x.batch_size
        assert not out.is_locked and not out.is_memmap()
        self.assert_content(out)
        out.get("obs").zero_()
        self.assert_content(x)

    # ------------------------------------------------------------------ indexing
    def test_int_index(self, x):
        """An int drops the batch dim; a negative int counts from the end."""
        row = x[0]
        assert isinstance(row, Step) == isinstance(x, Step)
        assert row.batch_size == torch.Size([])
        assert torch.equal(row.get("obs"), OBS[self.rows][0])
        assert torch.equal(x[-1].get(("next", "obs")), NEXT[self.rows][-1])
        assert row.get_non_tensor("name") == NAME

    def test_slice_index(self, x):
        """A slice keeps the batch dim and selects those rows."""
        part = x[1:]
        assert part.batch_size == torch.Size([self.n - 1])
        assert torch.equal(part.get(("next", "obs")), NEXT[self.rows][1:])
        assert torch.equal(part.get("done"), DONE[self.rows][1:])

    def test_mask_index(self, x):
        """A bool mask over the batch dim selects the True rows."""
        mask = torch.zeros(self.n, dtype=torch.bool)
        mask[-1] = True
        out = x[mask]
        assert out.batch_size == torch.Size([1])
        assert torch.equal(out.get("obs"), OBS[self.rows][-1:])

    def test_tensor_index(self, x):
        """A long tensor picks rows in its order, repeats allowed."""
        idx = torch.tensor([self.n - 1, 0, 0])
        out = x[idx]
        assert out.batch_size == torch.Size([3])
        assert torch.equal(out.get("obs"), OBS[self.rows][idx])
        assert torch.equal(out.get(("next", "obs")), NEXT[self.rows][idx])

    def test_unbind(self, x):
        """unbind(0) gives one batch-less object per row."""
        parts = x.unbind(0)
        assert len(parts) == self.n
        for i, part in enumerate(parts):
            assert part.batch_size == torch.Size([])
            assert torch.equal(part.get("obs"), OBS[self.rows][i])
            assert torch.equal(part.get("done"), DONE[self.rows][i])

    def test_unbind_stack_round_trip(self, x):
        """torch.stack(x.unbind(0)) and torch.stack(list(x)) give x's content back."""
        rows = x.unbind(0)
        for i, row in enumerate(x):
            assert torch.equal(row.get(("next", "obs")), rows[i].get(("next", "obs")))
        for out in (torch.stack(rows, 0), torch.stack(list(x), 0)):
            assert isinstance(out, Step) == isinstance(x, Step)
            assert out.batch_size == x.batch_size and leaf_keys(out) == LEAVES
            self.assert_content(out, name=False)
            assert out[0].get_non_tensor("name") == NAME

    def test_split_cat_round_trip(self, x):
        """torch.cat(x.split(1, 0)) gives x's content back; each part is one row."""
        parts = x.split(1, 0)
        assert [part.batch_size for part in parts] == [torch.Size([1])] * self.n
        out = torch.cat(parts, 0)
        assert out.batch_size == x.batch_size and leaf_keys(out) == LEAVES
        self.assert_content(out, name=False)

    # ------------------------------------------------------------------ stack, cat, shape
    def test_stack(self, x):
        """torch.stack of two copies adds a leading dim and keeps the kind's class."""
        out = torch.stack([x, x.clone()], 0)
        assert out.batch_size == torch.Size([2, self.n])
        assert torch.equal(out.get("obs")[1], OBS[self.rows])
        assert torch.equal(out.get(("next", "obs"))[0], NEXT[self.rows])
        if isinstance(x, Step):
            assert isinstance(out, Step)

    def test_cat(self, x):
        """torch.cat of two copies doubles the batch dim."""
        out = torch.cat([x, x.clone()], 0)
        assert out.batch_size == torch.Size([2 * self.n])
        assert torch.equal(out.get("obs"), torch.cat([OBS[self.rows]] * 2))
        assert torch.equal(out.get("done"), torch.cat([DONE[self.rows]] * 2))

    def test_unsqueeze_squeeze(self, x):
        """unsqueeze adds a batch dim of size 1 to every leaf; squeeze removes it."""
        out = x.unsqueeze(-1)
        assert out.batch_size == torch.Size([self.n, 1])
        assert out.get("obs").shape == torch.Size([self.n, 1, 3])
        back = out.squeeze(-1)
        assert back.batch_size == torch.Size([self.n])
        self.assert_content(back, name=False)
        assert x.unsqueeze(0).batch_size == torch.Size([1, self.n])

    def test_reshape(self, x):
        """reshape changes the batch dims only."""
        out = x.reshape(1, self.n)
        assert out.batch_size == torch.Size([1, self.n])
        assert torch.equal(out.get(("next", "obs")), NEXT[self.rows].reshape(1, self.n, 3))
        assert x.reshape(-1).batch_size == torch.Size([self.n])

    # ------------------------------------------------------------------ values
    def test_apply(self, x):
        """apply maps every tensor leaf, nested ones included, into a new object."""
        out = x.apply(lambda t: t * 2 if t.is_floating_point() else ~t)
        assert type(out) is type(x)
        assert leaf_keys(out) == LEAVES and out.batch_size == x.batch_size
        assert torch.equal(out.get("obs"), OBS[self.rows] * 2)
        assert torch.equal(out.get("done"), ~DONE[self.rows])
        assert torch.equal(out.get(("next", "obs")), NEXT[self.rows] * 2)
        self.assert_content(x)

    def test_arithmetic(self, x):
        """Operators work leaf-wise on the float leaves of a selection."""
        floats = x.select("obs", ("next", "obs"))
        out = floats * 2 + 1
        assert torch.equal(out.get("obs"), OBS[self.rows] * 2 + 1)
        assert torch.equal(out.get(("next", "obs")), NEXT[self.rows] * 2 + 1)
        assert torch.equal((out - floats).get("obs"), OBS[self.rows] + 1)

    def test_to_dtype(self, x):
        """to(dtype) casts the float leaves and keeps the batch size."""
        out = x.to(torch.float64)
        assert out.get("obs").dtype == torch.float64
        assert out.get(("next", "obs")).dtype == torch.float64
        assert out.batch_size == x.batch_size

    def test_clone(self, x):
        """clone() is an unlocked, independent copy with the same content and class."""
        out = x.clone()
        assert type(out) is type(x) and not out.is_locked
        self.assert_content(out)
        out.get("obs").fill_(-1)
        out.set("obs", torch.zeros(self.n, 3))
        self.assert_content(x)

    def test_clone_is_independent(self, x):
        """After clone(), writes and new keys on either side, nested ones included, stay there."""
        out = x.clone()
        out.set_(("next", "obs"), torch.full((self.n, 3), -1.0))
        out.set(("next", "extra"), torch.ones(self.n))
        self.assert_content(x)
        assert ("next", "extra") not in x.keys(include_nested=True)
        x.set_(("next", "obs"), torch.zeros(self.n, 3))
        x.set_("done", torch.ones(self.n, 1, dtype=torch.bool))
        assert torch.equal(out.get(("next", "obs")), torch.full((self.n, 3), -1.0))
        assert torch.equal(out.get("done"), DONE[self.rows])

    def test_equality(self, x):
        """== compares leaf-wise and returns an object of booleans."""
        same = x == x.clone()
        assert same.batch_size == x.batch_size
        assert same.get("obs").dtype == torch.bool and same.get("obs").all()
        assert same.get(("next", "obs")).all()
        other = x.clone()
        other.set_("obs", OBS[self.rows] + torch.tensor([[1.0]] + [[0.0]] * (self.n - 1)))
        diff = x == other
        assert not diff.get("obs")[0].any() and diff.get("obs")[1:].all()
        assert diff.get("done").all()

    def test_equality_is_a_tensor_collection(self, x):
        """== and != give tensor collections of x's batch size; all() and any() reduce them."""
        same, differ = x == x.clone(), x != x.clone()
        assert is_tensor_collection(same) and is_tensor_collection(differ)
        assert LEAVES <= leaf_keys(same) and differ.batch_size == x.batch_size
        assert same.all() and not differ.any()
        other = x.clone()
        other[-1] = x[0]
        assert not (x == other).all() and (x != other).any()

    def test_select_and_exclude(self, x):
        """select keeps only the given keys, exclude drops them; neither changes x."""
        sel = x.select("obs", ("next", "obs"))
        assert leaf_keys(sel) == {"obs", ("next", "obs")}
        assert torch.equal(sel.get("obs"), OBS[self.rows])
        out = x.exclude("done", "name")
        assert set(out.keys()) == {"obs", "next"}
        assert torch.equal(out.get(("next", "obs")), NEXT[self.rows])
        assert set(x.keys()) == {"obs", "done", "next", "name"}
        if isinstance(x, Step):
            assert isinstance(sel, Step) and isinstance(out, Step)

    def test_select_and_exclude_nested_keys(self, x):
        """select/exclude take nested keys; a sub-tensordict key selects or drops all below it."""
        sel = x.select(("next", "obs"))
        assert leaf_keys(sel) == {("next", "obs")} and set(sel.keys()) == {"next"}
        assert torch.equal(sel.get(("next", "obs")), NEXT[self.rows])
        assert leaf_keys(x.select("next")) == {("next", "obs")}
        out = x.exclude(("next", "obs"))
        assert leaf_keys(out) == {"obs", "done"} and "next" in out.keys()
        assert leaf_keys(x.exclude("next")) == {"obs", "done"}
        assert leaf_keys(x) == LEAVES
        with pytest.raises(KeyError, match="missing"):
            x.select("missing")
        assert leaf_keys(x.select("obs", "missing", strict=False)) == {"obs"}

    # ------------------------------------------------------------------ writes
    def test_set_in_place(self, x):
        """set_() writes into the existing storage, also when locked, and reaches the source."""
        value = torch.full((self.n, 3), -1.0)
        was_locked = x.is_locked
        x.set_("obs", value)
        assert torch.equal(x.get("obs"), value)
        x.set_(("next", "obs"), value - 1)
        assert torch.equal(x.get(("next", "obs")), value - 1)
        assert x.is_locked == was_locked
        self.assert_written("obs", slice(None), value)
        self.assert_written(("next", "obs"), slice(None), value - 1)

    def test_row_assignment(self, x):
        """x[0] = x[1] copies row 1 into row 0 and leaves the other rows alone."""
        x[0] = x[1]
        assert torch.equal(x.get("obs")[0], OBS[self.rows][1])
        assert torch.equal(x.get("done")[0], DONE[self.rows][1])
        assert torch.equal(x.get(("next", "obs"))[0], NEXT[self.rows][1])
        assert torch.equal(x.get("obs")[1:], OBS[self.rows][1:])
        self.assert_written("obs", 0, OBS[self.rows][1])

    def test_update_in_place(self, x):
        """update_() writes the given leaves in place, nested ones included."""
        zeros, ones = torch.zeros(self.n, 3), torch.ones(self.n, 3)
        x.update_({"obs": zeros, "next": {"obs": ones}})
        assert torch.equal(x.get("obs"), zeros)
        assert torch.equal(x.get(("next", "obs")), ones)
        assert torch.equal(x.get("done"), DONE[self.rows])
        self.assert_written(("next", "obs"), slice(None), ones)

    def test_set_a_new_key(self, x):
        """set() adds a key where the kind accepts one; else it refuses and changes nothing."""
        value = torch.ones(self.n, 2)
        if self.new_key_error is None:
            x.set("extra", value)
            assert torch.equal(x.get("extra"), value)
            with pytest.raises(RuntimeError, match="extra2"):
                x.set("extra2", torch.ones(self.n + 1, 2))
        else:
            error, match = self.new_key_error
            with pytest.raises(error, match=match):
                x.set("extra", value)
        assert "extra2" not in x.keys()

    def test_set_a_nested_new_key(self, x):
        """A new key under an existing sub-tensordict follows the same rule as at the top."""
        value = torch.ones(self.n, 2)
        if self.locked:
            with pytest.raises(RuntimeError, match="lock"):
                x.set(("next", "extra"), value)
            assert ("next", "extra") not in x.keys(include_nested=True)
        else:
            x.set(("next", "extra"), value)
            assert torch.equal(x.get(("next", "extra")), value)

    def test_lock_and_unlock(self, x):
        """lock_() locks the object and its sub-tensordicts; locked, it refuses rebinding."""
        was_locked = x.is_locked
        assert x.lock_() is x
        assert x.is_locked and x.get("next").is_locked
        with pytest.raises(RuntimeError, match="lock"):
            x.set("obs", torch.zeros(self.n, 3))
        x.set_("obs", torch.zeros(self.n, 3))
        assert x.unlock_() is x
        assert not x.is_locked and not x.get("next").is_locked
        x.set("obs", torch.ones(self.n, 3))
        assert torch.equal(x.get("obs"), torch.ones(self.n, 3))
        if was_locked:
            x.lock_()

    def test_lock_reaches_sub_tensordicts(self, x):
        """A sub-tensordict taken before lock_() is locked with its parent and cannot be unlocked alone."""
        was_locked = x.is_locked
        x.unlock_()
        sub = x.get("next")
        assert not sub.is_locked
        x.lock_()
        assert sub.is_locked and x.get("next").is_locked
        with pytest.raises(RuntimeError, match="lock"):
            sub.set("extra", torch.ones(self.n))
        with pytest.raises(RuntimeError, match="lock"):
            x.get("next").unlock_()
        assert x.get("next").is_locked
        with pytest.raises(RuntimeError, match="lock"):
            x.set(("next", "extra"), torch.ones(self.n))
        x.unlock_()
        assert not sub.is_locked and not x.get("next").is_locked
        if was_locked:
            x.lock_()

    def test_names_follow_the_batch(self, x):
        """Batch dim names set with refine_names survive apply, clone, indexing and get."""
        named = x.refine_names("time")
        assert named.names == ["time"]
        for out in (named.apply(lambda t: t.clone()), named.clone(), named[1:], named.get("next")):
            assert out.names == ["time"]
        assert named.unsqueeze(0).names == [None, "time"]

    # ------------------------------------------------------------------ memory mapping
    def test_is_memmap(self, x):
        """is_memmap() says whether the kind is memory-mapped."""
        assert x.is_memmap() == self.memmapped

    def test_is_locked(self, x):
        """is_locked says whether the kind is locked, and a sub-tensordict agrees with it."""
        assert x.is_locked == self.locked
        assert x.get("next").is_locked == self.locked

    def test_is_consolidated(self, x):
        """is_consolidated() says whether the leaves live in one consolidated storage."""
        assert x.is_consolidated() == self.consolidated
        assert not x.clone().is_consolidated()

    def test_views_that_keep_the_data_pointer(self, x):
        """x[0] and x[:1] are locked as views_locked says; a locked memmap's are memory-mapped too."""
        locked = self.locked if self.views_locked is None else self.views_locked
        for view in (x[0], x[:1]):
            assert view.is_locked == locked
            assert view.get("next").is_locked == locked
            if self.locked:
                assert view.is_memmap() == self.memmapped

    def test_memmap_round_trip(self, x, tmp_path):
        """memmap(dir) is locked and memory-mapped; load_memmap(dir) is unlocked, same class."""
        folder = tmp_path / "out"
        mapped = x.memmap(folder)
        assert mapped.is_memmap() and mapped.is_locked
        assert mapped.batch_size == x.batch_size
        self.assert_content(mapped)
        loaded = TensorDict.load_memmap(folder)
        assert type(loaded) is type(mapped)
        assert loaded.is_memmap() and not loaded.is_locked
        assert loaded.batch_size == x.batch_size
        self.assert_content(loaded)
        self.assert_content(x)

    def test_memmap_like(self, x, tmp_path):
        """memmap_like keeps the class, keys, shapes, dtypes and non-tensors; tensors read zeros."""
        like = x.memmap_like(tmp_path / "like")
        assert type(like) is type(x) and like.batch_size == x.batch_size
        assert leaf_keys(like) == LEAVES and like.is_memmap() and like.is_locked
        assert like.get_non_tensor("name") == self.name_value
        assert like.get(("next", "obs")).shape == torch.Size([self.n, 3])
        assert like.get("obs").shape == torch.Size([self.n, 3]) and (like.get("obs") == 0).all()
        assert like.get("done").dtype == torch.bool and not like.get("done").any()
        self.assert_content(x)

    def test_make_memmap_from_storage(self, x):
        """On a memory-mapped copy, the entry reads from the storage and is written though locked."""
        mapped = x.memmap()
        storage = torch.UntypedStorage(self.n * 2 * 4)
        out = mapped.make_memmap_from_storage(("next", "extra"), storage, (self.n, 2))
        out.fill_(3.0)
        assert mapped.is_locked
        assert torch.equal(mapped.get(("next", "extra")), torch.full((self.n, 2), 3.0))

    def test_make_memmap_from_tensor_persists(self, x, tmp_path):
        """make_memmap_from_tensor on a memmap(dir) copy writes a file that load_memmap reads."""
        folder = tmp_path / "grow"
        mapped = x.memmap(folder)
        mapped.make_memmap_from_tensor(("next", "extra"), torch.arange(float(self.n)))
        loaded = TensorDict.load_memmap(folder)
        assert torch.equal(loaded.get(("next", "extra")), torch.arange(float(self.n)))

    def test_make_memmap_on_the_object(self, x):
        """make_memmap_from_tensor works on a memory-mapped object (and persists), else refuses."""
        value = torch.arange(float(self.n))
        if self.memmapped:
            x.make_memmap_from_tensor(("next", "extra"), value)
            assert torch.equal(x.get(("next", "extra")), value)
            if self.has_folder:
                loaded = TensorDict.load_memmap(self.folder)
                assert torch.equal(loaded.get(("next", "extra")), value)
        else:
            with pytest.raises(RuntimeError, match="memory-mapped"):
                x.make_memmap_from_tensor(("next", "extra"), value)
            assert ("next", "extra") not in x.keys(include_nested=True)

    def test_pickle_round_trip(self, x):
        """pickle gives back the same class, batch size and content."""
        out = pickle.loads(pickle.dumps(x))
        assert type(out) is type(x) and out.batch_size == x.batch_size
        self.assert_content(out)


# ====================================================================== the kinds
class _TD:
    build = staticmethod(build_tensordict)


class _Lazy:
    build = staticmethod(build_lazy_stack)
    stacked_name = True


class _TC:
    build = staticmethod(build_tensorclass)
    new_key_error = (AttributeError, "'extra'")


class _Typed:
    build = staticmethod(build_typed)

    @staticmethod
    def load(path):
        """A TypedTensorDict folder loads as a TensorDict; from_tensordict gives the class back."""
        return TypedStep.from_tensordict(TensorDict.load_memmap(path))

    def test_memmap_round_trip(self, x, tmp_path):
        """memmap(dir) keeps the typed class; load_memmap(dir) gives a plain, unlocked TensorDict.

        The typed class writes a plain TensorDict folder (its meta.json names TensorDict, as the
        reference writes it), so loading cannot know the class: from_tensordict wraps it back.
        """
        mapped = x.memmap(tmp_path / "out")
        assert type(mapped) is type(x) and mapped.is_memmap() and mapped.is_locked
        self.assert_content(mapped)
        loaded = TensorDict.load_memmap(tmp_path / "out")
        assert type(loaded) is TensorDict and loaded.is_memmap() and not loaded.is_locked
        self.assert_content(loaded)
        again = TypedStep.from_tensordict(loaded)
        assert type(again) is TypedStep and again.is_memmap() and again.batch_size == x.batch_size
        self.assert_content(again)


class _Memmap:
    form = "memmap"
    memmapped = locked = has_folder = True


class _Loaded:
    form = "loaded"
    memmapped = has_folder = True


class _MappedView:
    """x[1:3] of a memory-mapped object: every leaf is still mapped, so it is memory-mapped.

    It keeps its source's lock. (The reference flags only views by an int or a slice
    from 0; SPEC: is_memmap() is True exactly while every leaf is a MemoryMappedTensor.)
    """

    indexed = memmapped = True


class _LazyView:
    """A lazy stack of some members of a memory-mapped lazy stack: memory-mapped like them."""

    indexed = memmapped = True


class TestTensorDict(_TD, ContractTests):
    pass


class TestTensorDictIndexed(_TD, ContractTests):
    indexed = True


class TestLazyStack(_Lazy, ContractTests):
    pass


class TestLazyStackIndexed(_Lazy, ContractTests):
    indexed = True


class TestTensorClass(_TC, ContractTests):
    pass


class TestTensorClassIndexed(_TC, ContractTests):
    indexed = True


class TestTensorDictMemmap(_Memmap, _TD, ContractTests):
    new_key_error = (RuntimeError, "lock")


class TestTensorDictMemmapIndexed(_MappedView, _TD, ContractTests):
    form, locked = "memmap", True
    new_key_error = (RuntimeError, "lock")


class TestLazyStackMemmap(_Memmap, _Lazy, ContractTests):
    new_key_error = (RuntimeError, "lock")


class TestLazyStackMemmapIndexed(_LazyView, _Lazy, ContractTests):
    form, locked = "memmap", True
    new_key_error = (RuntimeError, "lock")


class TestTensorClassMemmap(_Memmap, _TC, ContractTests):
    pass


class TestTensorClassMemmapIndexed(_MappedView, _TC, ContractTests):
    form, locked = "memmap", True


class TestTensorDictLoaded(_Loaded, _TD, ContractTests):
    pass


class TestTensorDictLoadedIndexed(_MappedView, _TD, ContractTests):
    form = "loaded"


class TestLazyStackLoaded(_Loaded, _Lazy, ContractTests):
    pass


class TestLazyStackLoadedIndexed(_LazyView, _Lazy, ContractTests):
    form = "loaded"


class TestTensorClassLoaded(_Loaded, _TC, ContractTests):
    pass


class TestTensorClassLoadedIndexed(_MappedView, _TC, ContractTests):
    form = "loaded"


class TestTypedTensorDict(_Typed, ContractTests):
    pass


class TestTypedTensorDictIndexed(_Typed, ContractTests):
    indexed = True


class TestTypedTensorDictMemmap(_Memmap, _Typed, ContractTests):
    new_key_error = (RuntimeError, "lock")


class TestTypedTensorDictMemmapIndexed(_MappedView, _Typed, ContractTests):
    form, locked = "memmap", True
    new_key_error = (RuntimeError, "lock")


class TestTypedTensorDictLoaded(_Loaded, _Typed, ContractTests):
    pass


class TestTypedTensorDictLoadedIndexed(_MappedView, _Typed, ContractTests):
    form = "loaded"


# ---------------------------------------------------------------------- consolidated
class _Consolidated:
    """x.consolidate(): every leaf a view of one storage; the result is locked.

    Its views x[0] and x[:1] are new tensordicts over parts of the storage, unlocked, as in
    the reference (a lazy stack's views hold its locked members, so they are locked).
    """

    form = "consolidated"
    locked = consolidated = True
    views_locked = False


class _ConsolidatedFile(_Consolidated):
    """x.consolidate(filename=path): the one storage is the file; the result is locked."""

    form = "consolidated-file"

    def test_from_consolidated_reads_the_file(self, x):
        """from_consolidated(path) of the source's class reads the file back, same content."""
        out = type(self.source).from_consolidated(self.file)
        assert type(out) is type(self.source) and out.is_consolidated()
        assert out.batch_size == self.source.batch_size
        assert torch.equal(out.get(("next", "obs")), NEXT)


class _ConsolidatedView:
    """x[1:3] of a consolidated object: neither consolidated nor locked, as in the reference."""

    indexed = True
    locked = consolidated = False
    views_locked = None


class _LazyConsolidated:
    """A consolidated lazy stack: its views and x[1:3] hold its locked members, so they are locked."""

    new_key_error = (RuntimeError, "lock")
    views_locked = None


class TestTensorDictConsolidated(_Consolidated, _TD, ContractTests):
    new_key_error = (RuntimeError, "lock")


class TestTensorDictConsolidatedIndexed(_ConsolidatedView, _Consolidated, _TD, ContractTests):
    pass


class TestTensorDictConsolidatedFile(_ConsolidatedFile, _TD, ContractTests):
    new_key_error = (RuntimeError, "lock")


class TestTensorDictConsolidatedFileIndexed(
    _ConsolidatedView, _ConsolidatedFile, _TD, ContractTests
):
    pass


class TestLazyStackConsolidated(_LazyConsolidated, _Consolidated, _Lazy, ContractTests):
    pass


class TestLazyStackConsolidatedIndexed(_LazyConsolidated, _Consolidated, _Lazy, ContractTests):
    indexed, consolidated = True, False


class TestLazyStackConsolidatedFile(_LazyConsolidated, _ConsolidatedFile, _Lazy, ContractTests):
    pass


class TestLazyStackConsolidatedFileIndexed(
    _LazyConsolidated, _ConsolidatedFile, _Lazy, ContractTests
):
    indexed, consolidated = True, False


class TestTensorClassConsolidated(_Consolidated, _TC, ContractTests):
    pass


class TestTensorClassConsolidatedIndexed(_ConsolidatedView, _Consolidated, _TC, ContractTests):
    pass


class TestTensorClassConsolidatedFile(_ConsolidatedFile, _TC, ContractTests):
    pass


class TestTensorClassConsolidatedFileIndexed(
    _ConsolidatedView, _ConsolidatedFile, _TC, ContractTests
):
    pass


# ---------------------------------------------------------------------- .tdz archives
class _Archive:
    """load_memmap(path.tdz) of x.save(path.tdz): plain tensors over a private map, unlocked."""

    form = "archive"

    def test_writes_stay_in_memory(self, x):
        """A write into an object loaded from an archive changes it, never the archive file.

        The archive is mapped copy-on-write, so the file keeps what save() wrote.
        """
        x.set_(("next", "obs"), torch.full((self.n, 3), -1.0))
        assert torch.equal(x.get(("next", "obs")), torch.full((self.n, 3), -1.0))
        assert torch.equal(self.load(self.file).get(("next", "obs")), NEXT)


class TestTensorDictArchive(_Archive, _TD, ContractTests):
    pass


class TestTensorDictArchiveIndexed(_Archive, _TD, ContractTests):
    indexed = True


class TestLazyStackArchive(_Archive, _Lazy, ContractTests):
    pass


class TestLazyStackArchiveIndexed(_Archive, _Lazy, ContractTests):
    indexed = True


class TestTensorClassArchive(_Archive, _TC, ContractTests):
    pass


class TestTensorClassArchiveIndexed(_Archive, _TC, ContractTests):
    indexed = True
