"""The on-disk format module ``tensordict.memmap.format`` alone: names, records, reading meta.json.

The spec is the module docstring and SPEC.md "Memory mapping: the rules".
"""

from __future__ import annotations

import json
import os
import re

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tensordict.errors import MemmapFormatError, MemmapNotFoundError
from tensordict.memmap import _fs
from tensordict.memmap import format as fmt

from conftest import REFERENCE

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True, database=None)

# Characters that robust_key=True writes as %XX, and characters it keeps.
SPECIAL = '/<>:"|?*\\ %' + "".join(map(chr, range(32))) + "\x7f"
PLAIN = "abcXYZ0189-_.~é中€😀!#$&'()+,;=@[]^`{}"

# Lone surrogates are left out: such a str is no UTF-8 file name at all.
KEY_CHARS = st.one_of(st.sampled_from(SPECIAL + PLAIN), st.characters(exclude_categories=("Cs",)))
EDGE_KEYS = ["", ".", "..", "...", "%", "%2E", "%2E%2E", "%25", "%~", ". ", "meta.json"]
KEYS = st.one_of(st.text(KEY_CHARS, max_size=12), st.sampled_from(EDGE_KEYS))
# Keys whose names must be shortened, all sharing one long prefix.
LONG_KEYS = st.text(KEY_CHARS, max_size=12).map(lambda tail: "k" * 256 + tail)
ANY_KEYS = st.one_of(KEYS, LONG_KEYS)
SUFFIXES = st.sampled_from(["", fmt.MEMMAP_SUFFIX, fmt.SHAPE_SUFFIX])

ESCAPED = re.compile(r"(?:[^%]|%[0-9A-F]{2})*")
FIELDS = ["shape", "device", "_type", "_format_version", "_class"]
RECORD = dict(device="cpu", shape=[3, 4], dtype="torch.float32", is_nested=False)


def _decode(name: str) -> str:
    """Inverse of robust encoding: ``%`` alone is the empty key, ``%XX`` is one character."""
    if name == "%":
        return ""
    return re.sub(r"%([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)), name)


# ---------------------------------------------------------------------- constants
def test_constants_are_the_reference_strings():
    """The version and _type/_class strings are the reference's (SPEC.md); file names and level
    fields are as specified; errors subclass ValueError / FileNotFoundError."""
    assert fmt.FORMAT_VERSION == 1
    assert fmt.TD_TYPE == "<class 'tensordict._td.TensorDict'>"
    assert fmt.TD_CLASS == "tensordict:TensorDict"
    assert fmt.LAZY_TYPE == "<class 'tensordict._lazy.LazyStackedTensorDict'>"
    assert fmt.LAZY_CLASS == "tensordict:LazyStackedTensorDict"
    assert fmt.NONTENSOR_TYPE == "<class 'tensordict.tensorclass.NonTensorData'>"
    assert (fmt.META_FILE, fmt.LOCK_FILE, fmt.NAME_MAX) == ("meta.json", "meta%lock", 255)
    assert (fmt.MEMMAP_SUFFIX, fmt.SHAPE_SUFFIX) == (".memmap", ".shape.memmap")
    assert sorted(fmt.LEVEL_FIELDS) == sorted(FIELDS)
    assert issubclass(MemmapFormatError, ValueError)
    assert issubclass(MemmapNotFoundError, FileNotFoundError)


# ---------------------------------------------------------------------- encode_key
@pytest.mark.parametrize("char", list(SPECIAL), ids=lambda c: f"0x{ord(c):02x}")
def test_encode_key_special_character_is_percent_hex(char):
    """Every unsafe character becomes %XX, upper-case hex of its code point, wherever it stands."""
    code = f"%{ord(char):02X}"
    assert fmt.encode_key(char) == code
    assert fmt.encode_key(f"a{char}b{char}") == f"a{code}b{code}"


def test_encode_key_empty_dot_and_dot_dot():
    """The empty key is written as '%'; the keys '.' and '..' as '%2E' and '%2E%2E'."""
    assert fmt.encode_key("") == "%"
    assert fmt.encode_key(".") == "%2E"
    assert fmt.encode_key("..") == "%2E%2E"


@pytest.mark.parametrize("key", ["obs", "Ob_2-x", "a.b", "...", ".hid", "x.", "é", "中", "😀"])
def test_encode_key_keeps_other_characters(key):
    """Letters, digits, unicode, '-', '_' and dots inside a name are unchanged."""
    assert fmt.encode_key(key) == key


def test_encode_key_examples():
    """Known keys encode to the names the reference wrote, with upper-case hex."""
    cases = {"a/b": "a%2Fb", "sp ace": "sp%20ace", "per%cent": "per%25cent", "col:on": "col%3Aon"}
    cases.update({"back\\slash": "back%5Cslash", 'quo"te': "quo%22te", "star*": "star%2A"})
    cases.update({"tab\tkey": "tab%09key", "unié": "unié", "\x1f\x7f": "%1F%7F", "a\x0b": "a%0B"})
    for key, name in cases.items():
        assert fmt.encode_key(key) == name


def test_robust_keys_fixture_files_are_our_names():
    """For every entry of the reference's robust_keys folder, our name is the file it wrote."""
    folder = REFERENCE / "robust_keys"
    meta = json.loads((folder / "meta.json").read_text())
    entries = {k: v for k, v in meta.items() if k not in FIELDS}
    assert len(entries) >= 14
    for key, record in entries.items():
        suffix = fmt.MEMMAP_SUFFIX if "dtype" in record else ""
        assert (folder / fmt.file_name(key, suffix)).exists(), key


@SETTINGS
@given(KEYS)
def test_encoded_name_is_a_safe_single_name(key):
    """An encoded name never holds '/', NUL, an unsafe character or '%~', is never '', '.' or '..';
    robust_key=None gives the same name as True (the default)."""
    name = fmt.encode_key(key)
    assert fmt.encode_key(key, None) == fmt.encode_key(key, True) == name
    assert name not in ("", ".", "..")
    assert "/" not in name and "\x00" not in name and "%~" not in name
    assert not any(c in name for c in SPECIAL if c != "%")
    assert name == "%" or ESCAPED.fullmatch(name), name


@SETTINGS
@given(KEYS)
def test_encoding_is_injective(key):
    """Decoding %XX gives the key back, so two different keys never share an encoded name."""
    assert _decode(fmt.encode_key(key)) == key


@pytest.mark.parametrize("key", ["", ".", "..", "a/b", "/abs", "../up", "a\x00b", "\x00"])
def test_encode_key_not_robust_refuses_invalid_names(key):
    """robust_key=False refuses '', '.', '..' and names with '/' or NUL, naming the key."""
    with pytest.raises(ValueError, match=re.escape(repr(key))):
        fmt.encode_key(key, False)


@SETTINGS
@given(KEYS)
def test_encode_key_not_robust_property(key):
    """robust_key=False returns a valid file name unencoded, and refuses any other key."""
    if key in ("", ".", "..") or "/" in key or "\x00" in key:
        with pytest.raises(ValueError):
            fmt.encode_key(key, False)
    else:
        assert fmt.encode_key(key, False) == key


# ---------------------------------------------------------------------- file_name
def test_file_name_simple():
    """A short key is its encoded name plus the suffix; no suffix names a folder."""
    assert fmt.file_name("obs", ".memmap") == "obs.memmap"
    assert fmt.file_name("nt", fmt.SHAPE_SUFFIX) == "nt.shape.memmap"
    assert fmt.file_name("sub") == "sub"
    assert fmt.file_name("a/b", ".memmap") == "a%2Fb.memmap"
    assert fmt.file_name("", ".memmap") == "%.memmap"
    assert fmt.file_name("..") == "%2E%2E"
    assert fmt.file_name("a b", ".memmap", False) == "a b.memmap"
    assert fmt.file_name("a b", ".memmap", None) == "a%20b.memmap"
    with pytest.raises(ValueError, match="'a/b'"):
        fmt.file_name("a/b", ".memmap", False)


def test_file_name_at_the_limit_is_not_shortened():
    """A name of exactly 255 bytes is kept as it is; 256 bytes is shortened to at most 255."""
    assert fmt.file_name("k" * 248, ".memmap") == "k" * 248 + ".memmap"
    assert fmt.file_name("é" * 124, ".memmap") == "é" * 124 + ".memmap"
    name = fmt.file_name("k" * 249, ".memmap")
    assert "%~" in name and len(name.encode()) <= 255


LONG = ["k" * 400, "é" * 200, "中" * 100, "😀" * 70, "/" * 90, "a%" * 100, "x" * 5000]


@pytest.mark.parametrize("key", LONG)
@pytest.mark.parametrize("robust_key", [True, False])
@pytest.mark.parametrize("suffix", ["", ".memmap", ".shape.memmap"])
def test_file_name_long_key_is_shortened(key, suffix, robust_key):
    """A name over 255 UTF-8 bytes is shortened to <= 255 bytes, keeps its suffix and holds '%~'."""
    if not robust_key:  # unencoded, so make it long enough on its own
        key = key.replace("/", "|") * 3
    stem = fmt.encode_key(key, robust_key)
    assert len((stem + suffix).encode()) > 255
    name = fmt.file_name(key, suffix, robust_key)
    assert len(name.encode("utf-8")) <= 255
    assert name.endswith(suffix) and "%~" in name
    assert "/" not in name and "\x00" not in name
    assert stem.startswith(name[: name.index("%~")])  # a prefix of the encoded key


def test_file_name_shortening_is_deterministic():
    """The shortened name is the same each call, cached or not, and fixed across processes and
    releases (a golden value: a folder written once must load later)."""
    first = fmt.file_name("é" * 200, ".memmap")
    fmt.file_name.cache_clear()
    assert fmt.file_name("é" * 200, ".memmap") == first
    golden = "k" * 206 + "%~841c6f9f4fb075fa5f500f324aad395133b8f244.memmap"
    assert fmt.file_name("k" * 400, ".memmap") == golden


@SETTINGS
@given(LONG_KEYS, LONG_KEYS, SUFFIXES)
def test_long_keys_differing_at_the_end_get_different_names(a, b, suffix):
    """Two long keys differing only after the kept prefix get different shortened names."""
    assume(a != b)
    name_a, name_b = fmt.file_name(a, suffix), fmt.file_name(b, suffix)
    assert name_a != name_b
    for name in (name_a, name_b):
        assert len(name.encode()) <= 255 and name.endswith(suffix) and "%~" in name


@SETTINGS
@given(ANY_KEYS, ANY_KEYS, SUFFIXES)
def test_file_name_is_injective(a, b, suffix):
    """Different keys never share a file name, whether shortened or not."""
    assume(a != b)
    assert fmt.file_name(a, suffix) != fmt.file_name(b, suffix)


@SETTINGS
@given(ANY_KEYS, SUFFIXES)
def test_file_name_property(key, suffix):
    """Every name fits in 255 bytes, ends with its suffix, and is the plain encoding when that fits."""
    name = fmt.file_name(key, suffix)
    plain = fmt.encode_key(key) + suffix
    assert len(name.encode()) <= 255 and name.endswith(suffix)
    assert name == plain if len(plain.encode()) <= 255 else "%~" in name


# ---------------------------------------------------------------------- entry_names / is_own_file
def test_entry_names():
    """A tensor takes <name>.memmap, a nested tensor also <name>.shape.memmap, a folder <name>."""
    assert fmt.entry_names("obs", "tensor", True) == ("obs.memmap",)
    assert fmt.entry_names("nt", "nested", True) == ("nt.memmap", "nt.shape.memmap")
    assert fmt.entry_names("sub", "folder", True) == ("sub",)
    assert fmt.entry_names("a b", "tensor", None) == ("a%20b.memmap",)
    assert fmt.entry_names("a b", "folder", False) == ("a b",)
    data, shape = fmt.entry_names("é" * 300, "nested", True)
    assert data != shape and data.endswith(".memmap") and shape.endswith(".shape.memmap")
    assert len(data.encode()) <= 255 and len(shape.encode()) <= 255


def test_is_own_file():
    """meta.json, the lock file and temporary files are own files; entry names are not."""
    for name in ("meta.json", "meta%lock", "meta%tmp.123.7f00", fmt.TMP_PREFIX):
        assert fmt.is_own_file(name), name
    for name in ("meta", "meta.json.memmap", "obs.memmap", "meta%25lock", "x", "%", "meta%tmp"):
        assert not fmt.is_own_file(name), name


@SETTINGS
@given(ANY_KEYS, SUFFIXES)
def test_robust_names_are_never_own_files_except_meta_json(key, suffix):
    """No robust name is the lock file or a temporary file; only the folder 'meta.json' is meta.json."""
    assert fmt.is_own_file(fmt.file_name(key, suffix)) == (key == "meta.json" and suffix == "")


# ---------------------------------------------------------------------- check_level_keys
@pytest.mark.parametrize("robust_key", [True, False])
@pytest.mark.parametrize("kind", ["tensor", "nested", "folder"])
@pytest.mark.parametrize("field", FIELDS)
def test_check_level_keys_refuses_level_fields(tmp_path, field, kind, robust_key):
    """A key named like a level field is refused, naming the key and folder, before any write."""
    with pytest.raises(MemmapFormatError, match=re.escape(repr(field))) as info:
        fmt.check_level_keys(str(tmp_path), {"obs": "tensor", field: kind}, robust_key)
    assert repr(str(tmp_path)) in str(info.value)
    assert os.listdir(tmp_path) == []


COLLISIONS = [  # entries, the name they share
    ({"x": "nested", "x.shape": "tensor"}, "x.shape.memmap"),
    ({"x.shape": "tensor", "x": "nested"}, "x.shape.memmap"),
    ({"a": "tensor", "a.memmap": "folder"}, "a.memmap"),
]


@pytest.mark.parametrize(("entries", "name"), COLLISIONS)
def test_check_level_keys_refuses_colliding_names(tmp_path, entries, name):
    """Entries sharing a name (tensor 'x.shape' and nested 'x': x.shape.memmap; folder 'a.memmap'
    and tensor 'a') are refused, naming both keys and the name."""
    with pytest.raises(MemmapFormatError, match=re.escape(repr(name))) as info:
        fmt.check_level_keys(str(tmp_path), entries, True)
    assert all(repr(key) in str(info.value) for key in entries)


@pytest.mark.parametrize(
    ("key", "robust_key"),
    [("meta.json", True), ("meta.json", None), ("meta.json", False), ("meta%lock", False)]
    + [("meta%tmp.1.abc", False)],
)
def test_check_level_keys_refuses_meta_json_and_lock_file(tmp_path, key, robust_key):
    """An entry named meta.json, the lock file or a temporary file is refused, naming it."""
    with pytest.raises(MemmapFormatError, match=re.escape(repr(key))):
        fmt.check_level_keys(str(tmp_path), {key: "folder"}, robust_key)


def test_check_level_keys_accepts_ordinary_keys(tmp_path):
    """Ordinary keys, including near-misses of reserved names, are accepted and nothing is written."""
    entries = dict.fromkeys(
        ["obs", "meta", "meta.json", "Shape", "shape_", "", "a/b", "a%2Fb"], "tensor"
    )
    entries.update(dict.fromkeys(["next", "x.shape", "meta%lock", ".."], "folder"))
    entries.update(dict.fromkeys(["nt", "x", "é" * 300, "é" * 300 + "!"], "nested"))
    assert fmt.check_level_keys(str(tmp_path), entries, True) is None
    assert fmt.check_level_keys(str(tmp_path), {"a b": "tensor", "c:d": "folder"}, False) is None
    assert fmt.check_level_keys(str(tmp_path), {}, True) is None
    assert os.listdir(tmp_path) == []


@SETTINGS
@given(st.lists(ANY_KEYS, unique=True, max_size=8))
def test_check_level_keys_accepts_any_distinct_tensor_keys(keys):
    """Distinct robust tensor keys never collide with each other or with the module's files."""
    entries = {key: "tensor" for key in keys if key not in FIELDS}
    fmt.check_level_keys("/nonexistent", entries, True)


# ---------------------------------------------------------------------- read_meta
@pytest.mark.parametrize("folder", ["nope", "."])
def test_read_meta_missing(tmp_path, folder):
    """A missing folder, or a folder without meta.json, raises FileNotFoundError naming the path."""
    path = tmp_path / folder / "meta.json"
    with pytest.raises(FileNotFoundError, match=re.escape(str(path))):
        fmt.read_meta(str(tmp_path / folder))


NOT_JSON = [b"{not json", b"", b'{"a": 1', b'{"a": "\xff"}', b"\x00"]
NOT_OBJECT = [b"[1, 2]", b"3", b'"text"', b"null", b"true"]


@pytest.mark.parametrize("raw", NOT_JSON + NOT_OBJECT)
def test_read_meta_not_a_json_object(tmp_path, raw):
    """A meta.json that is not JSON (or UTF-8), or JSON but not an object, raises ValueError naming it."""
    (tmp_path / "meta.json").write_bytes(raw)
    what = "JSON object" if raw in NOT_OBJECT else "not valid JSON"
    with pytest.raises(ValueError, match=re.escape(str(tmp_path / "meta.json")) + ".*" + what):
        fmt.read_meta(str(tmp_path))


@pytest.mark.parametrize("dangling", [False, True])
def test_read_meta_refuses_symlink(tmp_path, dangling):
    """A meta.json that is a symbolic link (even to valid JSON) raises ValueError saying so."""
    target = tmp_path / "elsewhere.json"
    if not dangling:
        target.write_text('{"a": 1}')
    (tmp_path / "level").mkdir()
    (tmp_path / "level" / "meta.json").symlink_to(target)
    with pytest.raises(ValueError, match="symbolic link"):
        fmt.read_meta(str(tmp_path / "level"))


def test_read_meta_returns_dict_and_stat(tmp_path):
    """read_meta returns the parsed object and the os.stat_result of the file; it writes nothing."""
    text = '{"a": 1, "sub/dir": {"type": "TensorDict"}}'
    (tmp_path / "meta.json").write_text(text)
    meta, stat = fmt.read_meta(str(tmp_path))
    assert meta == {"a": 1, "sub/dir": {"type": "TensorDict"}}
    assert isinstance(stat, os.stat_result)
    disk = os.stat(tmp_path / "meta.json")
    assert (stat.st_ino, stat.st_dev, stat.st_size) == (disk.st_ino, disk.st_dev, len(text))
    assert _fs.same_file(stat, disk)
    assert os.listdir(tmp_path) == ["meta.json"]  # a reader writes nothing, not even a lock


# ---------------------------------------------------------------------- records
def test_tensor_record_dense():
    """A dense tensor's record holds device, shape, dtype and is_nested false, JSON-ready."""
    record = fmt.tensor_record(torch.zeros(3, 4))
    assert record == RECORD and json.loads(json.dumps(record)) == record
    assert fmt.tensor_record(torch.tensor(True))["shape"] == []
    assert fmt.tensor_record(torch.zeros(0, 4, dtype=torch.int64))["dtype"] == "torch.int64"
    assert fmt.tensor_record(torch.zeros(5, dtype=torch.bfloat16))["dtype"] == "torch.bfloat16"


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors:UserWarning")
def test_tensor_record_nested():
    """A nested tensor's record has is_nested true and the shape of its shape tensor."""
    nt = torch.nested.nested_tensor([torch.zeros(2, 3), torch.zeros(4, 3), torch.zeros(1, 3)])
    record = fmt.tensor_record(nt)
    assert record == dict(device="cpu", shape=[3, 2], dtype="torch.float32", is_nested=True)
    assert record["shape"] == list(nt._nested_tensor_size().shape)


def test_parse_dtype_known():
    """Every supported dtype name parses back to its dtype; the reference's names are supported."""
    for name, dtype in fmt.DTYPES.items():
        assert name == str(dtype) and fmt.parse_dtype(name, "here") is dtype
    reference = json.loads((REFERENCE / "basic" / "meta.json").read_text())
    for record in reference.values():
        if isinstance(record, dict) and "dtype" in record:
            assert str(fmt.parse_dtype(record["dtype"], "here")) == record["dtype"]


@pytest.mark.parametrize("value", ["torch.float128", "float32", "", 32, None, ["torch.float32"]])
def test_parse_dtype_unknown(value):
    """An unknown dtype raises ValueError naming where, the bad value and the known ones."""
    with pytest.raises(
        ValueError, match=re.escape(f"X/meta.json: unknown dtype {value!r}")
    ) as info:
        fmt.parse_dtype(value, "X/meta.json")
    assert "torch.float32" in str(info.value)


def test_parse_shape_valid():
    """A list of non-negative ints (empty, with zeros) parses to a torch.Size."""
    assert fmt.parse_shape([2, 3], "w") == torch.Size([2, 3])
    assert fmt.parse_shape([], "w") == torch.Size([])
    assert fmt.parse_shape([0, 5], "w") == torch.Size([0, 5])
    assert isinstance(fmt.parse_shape([1], "w"), torch.Size)


@pytest.mark.parametrize("value", [[-1], [2, -3], [2.0], [True], ["3"], [None], (2, 3), "3", None])
def test_parse_shape_invalid(value):
    """A negative, float or non-int size, or a shape that is not a list, raises ValueError quoting it."""
    with pytest.raises(ValueError, match=re.escape(repr(value))) as info:
        fmt.parse_shape(value, "X/meta.json")
    assert "X/meta.json" in str(info.value)


def test_nbytes():
    """nbytes is numel times the item size; an empty shape is one element, a zero size no bytes."""
    assert fmt.nbytes([2, 3], torch.float32) == 24
    assert fmt.nbytes(torch.Size([2, 3]), torch.float64) == 48
    assert fmt.nbytes([], torch.int16) == 2
    assert fmt.nbytes([0, 5], torch.float32) == 0
    assert fmt.nbytes([7], torch.bool) == 7
    assert fmt.nbytes([2], torch.complex128) == 32


@SETTINGS
@given(st.lists(st.integers(0, 6), max_size=4), st.sampled_from(sorted(fmt.DTYPES)))
def test_nbytes_matches_torch(shape, dtype_name):
    """nbytes equals the bytes torch uses for a C-contiguous tensor of that shape and dtype."""
    tensor = torch.empty(shape, dtype=fmt.DTYPES[dtype_name])
    assert fmt.nbytes(shape, tensor.dtype) == tensor.numel() * tensor.element_size()


def test_level_meta_exact():
    """The level's fields of a TensorDict folder are exactly the reference's (as in its basic
    fixture); other classes pass their _type and _class."""
    expected = {
        "shape": [3],
        "device": "cpu",
        "_type": "<class 'tensordict._td.TensorDict'>",
        "_format_version": 1,
        "_class": "tensordict:TensorDict",
    }
    assert fmt.level_meta([3], "cpu") == expected
    assert fmt.level_meta(torch.Size([3]), torch.device("cpu")) == expected
    assert fmt.level_meta((3,), None) == expected
    meta, _ = fmt.read_meta(str(REFERENCE / "basic"))  # what the reference wrote
    assert {k: meta[k] for k in FIELDS} == expected and meta["float32"] == RECORD
    lazy = fmt.level_meta([2, 1], "cpu", fmt.LAZY_TYPE, fmt.LAZY_CLASS)
    assert lazy == {**expected, "shape": [2, 1], "_type": fmt.LAZY_TYPE, "_class": fmt.LAZY_CLASS}


def test_nontensor_meta():
    """A non-tensor folder's meta holds _type, data, _metadata and _is_non_tensor; pickled drops data."""
    assert fmt.nontensor_meta("hello", False) == {
        "_type": "<class 'tensordict.tensorclass.NonTensorData'>",
        "data": "hello",
        "_metadata": None,
        "_is_non_tensor": True,
    }
    assert fmt.nontensor_meta(None, False)["data"] is None
    pickled = fmt.nontensor_meta({1, 2}, True)
    assert pickled == {"_type": fmt.NONTENSOR_TYPE, "_metadata": None, "_is_non_tensor": True}
    source = (REFERENCE / "non_tensor" / "name" / "meta.json").read_text()
    assert json.dumps(fmt.nontensor_meta("hello", False)) == source  # the reference's bytes


SCALARS = st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5)
SCALARS = SCALARS | st.none() | st.booleans() | st.integers()
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)
JSON_OK = [None, True, 0, -5, 10**30, 1.5, "", "é", [], {}, [1, "a", None], {"a": {"b": [1.0]}}]
NAN, INF = float("nan"), float("inf")
JSON_BAD = [NAN, INF, -INF, [1, NAN], {"a": INF}, (1, 2), [(1,)], {1: "a"}, {"a": {2: 3}}]
JSON_BAD += [{(1,): 2}, {1, 2}, b"bytes", 1j, torch.tensor(1)]


JSON_CASES = [(v, True) for v in JSON_OK] + [(v, False) for v in JSON_BAD]


@pytest.mark.parametrize(("value", "ok"), JSON_CASES, ids=[repr(v) for v, _ in JSON_CASES])
def test_json_compatible_examples(value, ok):
    """None, bool, int, finite float, str, list and str-keyed dict are compatible; nan/inf, tuples,
    non-str dict keys, sets, bytes and tensors are not (they do not survive JSON unchanged)."""
    assert fmt.json_compatible(value) is ok


@SETTINGS
@given(JSON_VALUES)
def test_json_compatible_values_round_trip(value):
    """Any value built from JSON types is compatible and survives a JSON round trip unchanged."""
    assert fmt.json_compatible(value)
    assert json.loads(json.dumps(value)) == value


# ---------------------------------------------------------------------- child_path
def test_child_path_ordinary(tmp_path):
    """An ordinary name (existing or not, file or folder) gives the path inside the folder."""
    (tmp_path / "file.memmap").write_bytes(b"")
    (tmp_path / "sub").mkdir()
    for name in ("file.memmap", "sub", "missing", "a%2Fb", "..."):
        assert fmt.child_path(str(tmp_path), name) == os.path.join(str(tmp_path), name)


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../x", "/etc", "a\x00b"])
def test_child_path_refuses_escaping_names(tmp_path, name):
    """'..', '.', '', names with '/' or NUL are refused, naming the name."""
    with pytest.raises(ValueError, match=re.escape(repr(name)) + ".*leave the folder"):
        fmt.child_path(str(tmp_path), name)


@pytest.mark.parametrize("target", ["file", "dir", "dangling"])
def test_child_path_refuses_symlinks(tmp_path, target):
    """A child that is a symbolic link (to a file, a folder, or nothing) is refused."""
    outside = tmp_path / "outside"
    if target == "file":
        outside.write_bytes(b"x")
    elif target == "dir":
        outside.mkdir()
    (tmp_path / "level").mkdir()
    (tmp_path / "level" / "link").symlink_to(outside)
    with pytest.raises(
        ValueError, match="symbolic link.*" + re.escape(str(tmp_path / "level" / "link"))
    ):
        fmt.child_path(str(tmp_path / "level"), "link")


def test_a_key_with_a_lone_surrogate_is_refused_naming_it():
    """A key that is not valid Unicode cannot be a file name: a clear ValueError naming it."""
    with pytest.raises(ValueError, match=r"'a\\ud800'.*lone surrogate"):
        fmt.file_name("a\ud800", fmt.MEMMAP_SUFFIX)


# ---------------------------------------------------------------------- the reader
@pytest.mark.parametrize(
    ("meta", "kind"),
    [
        (fmt.level_meta([3], "cpu"), fmt.KIND_TD),
        ({"shape": [], "_type": fmt.TD_TYPE}, fmt.KIND_TD),
        ({"_type": fmt.LAZY_TYPE, "_class": fmt.LAZY_CLASS, "stack_dim": 0}, fmt.KIND_LAZY),
        ({"_type": "<class 'shapes.Frame'>"}, fmt.KIND_TENSORCLASS),
        (fmt.nontensor_meta("x", False), fmt.KIND_NONTENSOR),
    ],
    ids=["td", "td-without-class", "lazy", "tensorclass", "non-tensor"],
)
def test_level_kind_names_each_class_of_the_format(meta, kind):
    """level_kind tells TensorDict, lazy stack, tensorclass and non-tensor levels apart."""
    assert fmt.level_kind("f", meta) == kind


@pytest.mark.parametrize(
    "meta",
    [{"_class": {}}, {"_type": 3}, {"_type": "Nope"}, {}, {"_class": "tensordict:Nope"}],
    ids=["class-dict", "type-int", "type-odd", "empty", "unknown-class"],
)
def test_level_kind_refuses_what_names_no_class_naming_the_file(meta):
    """A meta.json whose class fields are not strings, or name nothing known, is refused."""
    with pytest.raises(ValueError, match=r"f/meta\.json"):
        fmt.level_kind("f", meta)


def test_parse_td_level_checks_version_batch_size_and_device():
    """parse_td_level returns (batch_size, device) and refuses each bad field, naming it."""
    assert fmt.parse_td_level("f", fmt.level_meta([2, 3], "cpu")) == (
        torch.Size([2, 3]),
        torch.device("cpu"),
    )
    assert fmt.parse_td_level("f", {**fmt.level_meta([], None), "device": None})[1] is None
    for field, value, match in [
        ("_format_version", 2, "unsupported _format_version 2"),
        ("_format_version", "1", "unsupported _format_version '1'"),
        ("shape", [2**63], "shape is not valid"),
        ("shape", [-1], "shape is not valid"),
        ("device", "nowhere:7", "unknown device 'nowhere:7'"),
    ]:
        with pytest.raises(ValueError, match=re.escape(match)):
            fmt.parse_td_level("f", {**fmt.level_meta([2], "cpu"), field: value})


def test_parse_lazy_level_and_members(tmp_path):
    """A lazy level's stack_dim must be an int; members are 0/ .. N-1/ without gaps or links."""
    assert fmt.parse_lazy_level("f", {"stack_dim": 1, "stack_dim_name": "t"}) == (1, "t")
    with pytest.raises(ValueError, match="stack_dim must be an int"):
        fmt.parse_lazy_level("f", {"stack_dim": "0"})
    for n in (0, 1, 2):
        (tmp_path / str(n)).mkdir()
    assert fmt.lazy_members(str(tmp_path)) == [str(tmp_path / str(n)) for n in (0, 1, 2)]
    (tmp_path / "1").rmdir()
    with pytest.raises(ValueError, match=r"members \[1\] are missing"):
        fmt.lazy_members(str(tmp_path))
    (tmp_path / "1").symlink_to(tmp_path / "0")
    with pytest.raises(ValueError, match="symbolic link"):
        fmt.lazy_members(str(tmp_path))


def test_parse_record_and_parse_tensor_record():
    """A record must be an object; a tensor record gives (dtype, shape, is_nested) or a clear error."""
    assert fmt.parse_record("f", "k", {"type": "TensorDict"}) == "TensorDict"
    assert fmt.parse_record("f", "k", fmt.tensor_record(torch.zeros(2))) is None
    with pytest.raises(ValueError, match=r"record of 'k' must be an object"):
        fmt.parse_record("f", "k", "tensor")
    record = fmt.tensor_record(torch.zeros(3, 2, dtype=torch.int16))
    assert fmt.parse_tensor_record("f", "k", record) == (torch.int16, torch.Size([3, 2]), False)
    nested = {**record, "is_nested": True, "shape": [2, 2]}
    assert fmt.parse_tensor_record("f", "k", nested)[2] is True
    for change, match in [
        ({"dtype": "torch.int17"}, "unknown dtype 'torch.int17'"),
        ({"shape": [3, -4]}, "[3, -4]"),
        ({"is_nested": "yes"}, "is_nested must be true or false"),
        ({"is_nested": True, "shape": [2]}, "must be [components, dims]"),
    ]:
        with pytest.raises(ValueError, match=re.escape(match)):
            fmt.parse_tensor_record("f", "k", {**record, **change})


def test_entry_path_finds_the_encoded_name_or_a_legacy_unencoded_one(tmp_path):
    """entry_path gives the encoded name; when only the unencoded file exists, that one."""
    folder = str(tmp_path)
    assert fmt.entry_path(folder, "a b", ".memmap") == os.path.join(folder, "a%20b.memmap")
    (tmp_path / "a b.memmap").write_bytes(b"")
    assert fmt.entry_path(folder, "a b", ".memmap") == os.path.join(folder, "a b.memmap")
    with pytest.raises(ValueError, match="would leave the folder"):
        fmt.entry_path(folder, "..", ".memmap", robust_key=False)
    (tmp_path / "c.memmap").symlink_to(tmp_path / "a b.memmap")
    with pytest.raises(ValueError, match="symbolic link"):
        fmt.entry_path(folder, "c", ".memmap")


def test_check_batch_prefix_names_the_key_and_both_shapes():
    """An entry whose shape does not start with the batch size is refused, naming both."""
    fmt.check_batch_prefix("f", "k", [3, 2], [3])
    with pytest.raises(ValueError, match=r"'k'.*\[2, 2\].*\[3\]"):
        fmt.check_batch_prefix("f", "k", [2, 2], [3])


def test_a_tensorclass_defined_in_a_function_loads_back(tmp_path):
    """A folder of a tensorclass defined inside a function loads back as that class."""
    from tensordict import TensorDict, tensorclass

    @tensorclass
    class Local:
        x: torch.Tensor

    Local(x=torch.arange(3.0), batch_size=[3]).memmap(tmp_path / "local")
    loaded = TensorDict.load_memmap(tmp_path / "local")
    assert type(loaded) is Local and loaded.x.tolist() == [0.0, 1.0, 2.0]


@SETTINGS
@given(
    shape=st.lists(st.one_of(st.integers(-3, 5), st.booleans(), st.floats(0, 3)), max_size=3),
    nested=st.one_of(st.booleans(), st.integers(0, 1), st.none()),
    name=st.sampled_from(["torch.float32", "torch.int64", "torch.int17", 3]),
)
def test_a_record_parses_the_same_after_records_that_look_equal(shape, nested, name):
    """Parsing a tensor record gives the same answer, or the same error, whatever records
    were parsed before it: after a valid record, one whose values compare equal but whose
    types differ (True for 1, 1 for True, 1.0 for 1) is still refused."""

    def answer(record):
        try:
            return fmt.parse_tensor_record("f", "k", record)
        except MemmapFormatError as err:
            return str(err)

    record = {"dtype": name, "shape": shape}
    if nested is not None:
        record["is_nested"] = nested
    first = answer(record)
    twins = {
        "dtype": name,
        "shape": [int(d) if isinstance(d, (bool, float)) else d for d in shape],
        "is_nested": bool(nested),
    }
    answer(twins)  # a record equal to it by value, parsed in between
    assert answer(record) == first
    if any(type(d) is not int for d in shape) or (nested is not None and type(nested) is not bool):
        assert isinstance(first, str)
