"""Zip bombs in ``.tdz`` archives: inflating takes bounded memory and stops at the recorded size.

Each archive here is built by hand (a minimal zip writer below), so that its headers can
record another size than its stream inflates to. The memory a load or an unpack takes is
the peak resident set size of a child process, measured from just before the call.
"""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import zipfile
import zlib

import pytest
import torch

from tensordict import load_memmap, unpack_memmap
from tensordict.errors import ArchiveFormatError, MemmapFormatError
from tensordict.memmap import format as fmt

from conftest import ROOT

GIB = 1 << 30
MIB = 1 << 20
BOUND = 8 * MIB  # what a load or an unpack may take beyond its baseline, whatever the archive

_LOCAL = struct.Struct("<4s5H3I2H")
_CENTRAL = struct.Struct("<4s6H3I5H2I")
_EOCD = struct.Struct("<4s4H2IH")


def _zip(path, members) -> None:
    """Writes a zip of ``members``: ``(name, method, raw stream, crc, recorded size)`` each."""
    out = bytearray()
    central = bytearray()
    for name, method, raw, crc, size in members:
        encoded = name.encode()
        offset = len(out)
        out += _LOCAL.pack(
            b"PK\x03\x04", 20, 0, method, 0, 33, crc, len(raw), size, len(encoded), 0
        )
        out += encoded + raw
        central += _CENTRAL.pack(
            b"PK\x01\x02", 20, 20, 0, method, 0, 33, crc, len(raw), size, len(encoded), 0, 0, 0, 0,
            0o644 << 16, offset,
        )  # fmt: skip
        central += encoded
    start = len(out)
    out += central
    out += _EOCD.pack(b"PK\x05\x06", 0, 0, len(members), len(members), len(central), start, 0)
    with open(path, "wb") as handle:
        handle.write(out)


def _meta(numel: int) -> bytes:
    """The root meta.json of a tensordict holding one uint8 tensor ``a`` of ``numel`` items."""
    meta = {"a": {"device": "cpu", "shape": [numel], "dtype": "torch.uint8", "is_nested": False}}
    meta.update(fmt.level_meta([], "cpu"))
    return json.dumps(meta).encode()


def _stored(name: str, data: bytes) -> tuple:
    return (name, zipfile.ZIP_STORED, data, zlib.crc32(data), len(data))


def _compressed(method: int, data: bytes) -> tuple:
    """``(raw stream, crc)`` of ``data`` as zipfile compresses it with ``method``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as zf:
        zf.writestr("x", data)
        info = zf.getinfo("x")
    whole = buffer.getvalue()
    name_len, extra_len = struct.unpack_from("<2H", whole, info.header_offset + 26)
    start = info.header_offset + _LOCAL.size + name_len + extra_len
    return whole[start : start + info.compress_size], info.CRC


@pytest.fixture(scope="module")
def gibibyte_of_zeros():
    """``(raw deflate stream, crc)`` of 1 GiB of zeros: about 1 MB."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = bytes(MIB)
    parts, crc = [], 0
    for _ in range(GIB // MIB):
        parts.append(deflate.compress(chunk))
        crc = zlib.crc32(chunk, crc)
    parts.append(deflate.flush())
    return b"".join(parts), crc


_CHILD = """
import json, sys, tensordict
from tensordict import load_memmap, unpack_memmap

def status(field):
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024

results = {}
warm = sys.argv[1]
load_memmap(warm)  # the code paths, imported and run once, before anything is measured
unpack_memmap(warm, warm + ".out")
for label, how, path in json.loads(sys.argv[2]):
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")  # the peak resident size starts again from here
    base = status("VmRSS")
    try:
        if how == "load":
            load_memmap(path)
        else:
            unpack_memmap(path, path + ".out")
        outcome = "ok"
    except Exception as err:
        outcome = f"{type(err).__name__}: {err}"
    results[label] = [outcome, status("VmHWM") - base]
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def bombs(tmp_path_factory, gibibyte_of_zeros):
    """Runs each bomb in one child process; ``{label: (outcome, bytes grown, archive)}``."""
    if not os.access("/proc/self/clear_refs", os.W_OK):
        pytest.skip("the peak resident size cannot be reset here (/proc/self/clear_refs)")
    folder = tmp_path_factory.mktemp("bombs")
    stream, crc = gibibyte_of_zeros
    bomb = lambda name, size: (name, zipfile.ZIP_DEFLATED, stream, crc, size)  # noqa: E731
    archives = {
        # the headers and meta.json record 1 KiB; the stream inflates to 1 GiB
        "tensor past its headers": [_stored("meta.json", _meta(1024)), bomb("a.memmap", 1024)],
        # all honest: a 1 GiB tensor in a 1 MB archive
        "honest gibibyte": [_stored("meta.json", _meta(GIB)), bomb("a.memmap", GIB)],
        # meta.json itself: its headers record 1 GiB, or 100 bytes
        "meta.json of a gibibyte": [bomb("meta.json", GIB)],
        "meta.json past its headers": [bomb("meta.json", 100)],
    }
    jobs = []
    for label, members in archives.items():
        path = folder / f"{label.replace(' ', '-')}.tdz"
        _zip(path, members)
        for how in ("load", "unpack"):
            if label != "honest gibibyte" or how == "unpack":  # its load holds 1 GiB: the data
                jobs.append((f"{how}: {label}", how, str(path)))
    warm = folder / "warm.tdz"
    raw, small_crc = _compressed(zipfile.ZIP_DEFLATED, bytes(1024))
    _zip(
        warm,
        [
            _stored("meta.json", _meta(1024)),
            ("a.memmap", zipfile.ZIP_DEFLATED, raw, small_crc, 1024),
        ],
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(warm), json.dumps(jobs)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    return {label: (*results[label], path) for label, _, path in jobs}


@pytest.mark.parametrize("how", ["load", "unpack"])
def test_a_tensor_that_inflates_past_its_headers_stops_there(bombs, how):
    """Headers and meta.json record 1 KiB, the stream gives 1 GiB: an error naming the entry, a few MiB taken."""
    outcome, grown, path = bombs[f"{how}: tensor past its headers"]
    assert outcome.startswith("ArchiveFormatError")
    assert "'a.memmap': it inflates to more than the 1024 bytes its headers record" in outcome
    assert grown < BOUND, f"{grown / MIB:.1f} MiB"
    if how == "unpack":
        assert not os.path.exists(os.path.join(path + ".out", "a.memmap"))  # no partial file


def test_unpacking_an_honest_gibibyte_streams_it_to_disk(bombs):
    """A 1 MB archive of a 1 GiB tensor unpacks to a 1 GiB file, inflated a chunk at a time."""
    outcome, grown, path = bombs["unpack: honest gibibyte"]
    assert outcome == "ok"
    assert grown < BOUND, f"{grown / MIB:.1f} MiB"
    assert os.path.getsize(os.path.join(path + ".out", "a.memmap")) == GIB
    os.unlink(os.path.join(path + ".out", "a.memmap"))


@pytest.mark.parametrize("how", ["load", "unpack"])
def test_a_meta_json_recording_more_than_the_bound_is_refused_before_inflating(bombs, how):
    """A meta.json whose headers record 1 GiB (more than MAX_META_BYTES) is refused unread."""
    outcome, grown, path = bombs[f"{how}: meta.json of a gibibyte"]
    assert outcome.startswith("ArchiveFormatError")
    assert f"more than the {fmt.MAX_META_BYTES} a meta.json may hold" in outcome
    assert grown < BOUND, f"{grown / MIB:.1f} MiB"
    assert not os.path.exists(os.path.join(path + ".out", "meta.json"))


@pytest.mark.parametrize("how", ["load", "unpack"])
def test_a_meta_json_that_inflates_past_its_headers_stops_there(bombs, how):
    """A meta.json recorded as 100 bytes whose stream gives 1 GiB: an error naming it, a few MiB taken."""
    outcome, grown, _ = bombs[f"{how}: meta.json past its headers"]
    assert "'meta.json': it inflates to more than the 100 bytes its headers record" in outcome
    assert grown < BOUND, f"{grown / MIB:.1f} MiB"


@pytest.mark.parametrize(
    "method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA], ids=str
)
@pytest.mark.parametrize(
    ("recorded", "match"),
    [
        (10, "inflates to more than the 10 bytes its headers record"),
        (2 * MIB, rf"inflates to {MIB} bytes, but its headers record {2 * MIB}"),
    ],
    ids=["more", "fewer"],
)
def test_every_method_stops_at_the_recorded_size(tmp_path, method, recorded, match):
    """Deflate, bzip2 and lzma streams of 1 MiB recorded as 10 bytes or 2 MiB: refused, naming the entry."""
    raw, crc = _compressed(method, bytes(MIB))
    path = tmp_path / "bomb.tdz"
    _zip(path, [_stored("meta.json", _meta(recorded)), ("a.memmap", method, raw, crc, recorded)])
    with pytest.raises(ArchiveFormatError, match=rf"'a\.memmap': it {match}"):
        load_memmap(path)
    with pytest.raises(ArchiveFormatError, match=rf"'a\.memmap': it {match}"):
        unpack_memmap(path, tmp_path / "out")
    assert not (tmp_path / "out" / "a.memmap").exists()


@pytest.mark.parametrize(
    "method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA], ids=str
)
def test_every_method_inflates_an_honest_entry(tmp_path, method):
    """A compressed entry whose headers tell the truth loads and unpacks with its bytes."""
    data = torch.arange(3 * MIB, dtype=torch.uint8).numpy().tobytes()
    raw, crc = _compressed(method, data)
    path = tmp_path / "ok.tdz"
    _zip(path, [_stored("meta.json", _meta(len(data))), ("a.memmap", method, raw, crc, len(data))])
    assert load_memmap(path)["a"].numpy().tobytes() == data
    assert (unpack_memmap(path, tmp_path / "out") / "a.memmap").read_bytes() == data


def test_a_meta_json_larger_than_the_bound_in_a_folder_is_refused(tmp_path):
    """A folder's meta.json past MAX_META_BYTES (a sparse file) is refused without being read."""
    (tmp_path / "td").mkdir()
    with open(tmp_path / "td" / "meta.json", "wb") as handle:
        handle.truncate(fmt.MAX_META_BYTES + 1)
    with pytest.raises(MemmapFormatError, match="more than the 67108864 a meta.json"):
        load_memmap(tmp_path / "td")
