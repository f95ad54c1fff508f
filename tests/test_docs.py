"""The documentation runs: every Python block of the guides and of README.md, and the task table.

A guide's blocks run in order in one namespace, in a fresh temporary working folder, so
that a guide reads as one session. README's blocks run one by one the same way. A block
that opens with ``# Run with torchrun`` is a script for a process group: it runs under
``torchrun`` with two processes on this machine. The "Methods by task" page must place
every public method of ``TensorDictBase`` once.
"""

from __future__ import annotations

import collections
import inspect
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import tensordict
from tensordict import TensorDictBase

from conftest import load_script

ROOT = Path(__file__).resolve().parent.parent
GUIDES = sorted((ROOT / "docs" / "guides").glob("*.rst"))
# A block that starts with this line is a script for several processes, shown, not run here.
TORCHRUN = "# Run with torchrun"


def rst_blocks(text: str) -> list[str]:
    """The Python code blocks of a reStructuredText page (``.. code-block:: python``)."""
    blocks = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() != ".. code-block:: python":
            continue
        indent = len(line) - len(line.lstrip())
        body = []
        for following in lines[i + 1 :]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            body.append(following)
        code = textwrap.dedent("\n".join(body))
        code = "\n".join(c for c in code.splitlines() if not re.match(r"^:[a-z-]+:", c))
        blocks.append(code.strip("\n") + "\n")
    return blocks


def markdown_blocks(text: str) -> list[str]:
    """The Python code blocks of a Markdown page (```` ```python ```` fences)."""
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.M | re.S)


def test_the_block_readers_find_blocks():
    """Both readers find the blocks of a small page (a broken reader would check nothing)."""
    assert len(TORCHRUN_SCRIPTS) >= 3
    rst = "Title\n\n.. code-block:: python\n\n   x = 1\n   y = x\n\nText\n"
    assert rst_blocks(rst) == ["x = 1\ny = x\n"]
    assert markdown_blocks("a\n```python\nx = 1\n```\n") == ["x = 1\n"]
    assert len(GUIDES) >= 8


def _torchrun(code: str, folder: Path) -> None:
    """Runs a script with two processes of a gloo group on this machine, or fails with its output."""
    script = folder / "script.py"
    script.write_text(code)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += ["--nproc-per-node", "2", str(script)]
    result = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr


TORCHRUN_SCRIPTS = [
    (f"{path.stem}-{number}", code)
    for path in [*GUIDES, ROOT / "README.md"]
    for number, code in enumerate(
        markdown_blocks(path.read_text()) if path.suffix == ".md" else rst_blocks(path.read_text())
    )
    if code.startswith(TORCHRUN)
]


@pytest.mark.parametrize(
    "code", [c for _, c in TORCHRUN_SCRIPTS], ids=[n for n, _ in TORCHRUN_SCRIPTS]
)
def test_torchrun_scripts_run(code, tmp_path):
    """Each torchrun script of the guides and of README.md runs in a group of two processes."""
    _torchrun(code, tmp_path)


@pytest.mark.parametrize("guide", GUIDES, ids=lambda p: p.stem)
def test_guide_blocks_run(guide, tmp_path, monkeypatch):
    """Every Python block of one guide runs, in order, in one namespace."""
    monkeypatch.chdir(tmp_path)
    # A module of its own, so that classes the guide defines (dataclasses) find their module.
    module = types.ModuleType(f"guide_{guide.stem}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = vars(module)
    for number, code in enumerate(rst_blocks(guide.read_text()), 1):
        if code.startswith(TORCHRUN):
            continue
        exec(compile(code, f"{guide.name}, block {number}", "exec"), namespace)


README_BLOCKS = markdown_blocks((ROOT / "README.md").read_text())
README_RUN = [code for code in README_BLOCKS if not code.startswith(TORCHRUN)]


@pytest.mark.parametrize("number", range(len(README_RUN)), ids=lambda n: f"block{n + 1}")
def test_readme_blocks_run(number, tmp_path, monkeypatch):
    """Each Python block of README.md that is not a torchrun script runs as written."""
    monkeypatch.chdir(tmp_path)
    code = README_RUN[number]
    exec(compile(code, f"README.md, block {number + 1}", "exec"), {"__name__": "readme"})


def test_every_method_of_the_base_has_one_task():
    """Each public method of TensorDictBase is in exactly one task, and no task names a stranger."""
    table = load_script("method_tasks").task_table()
    placed = collections.Counter(name for _, _, methods, _ in table for name in methods)
    public = {name for name in dir(TensorDictBase) if not name.startswith("_")}
    assert not public - set(placed), f"methods without a task: {sorted(public - set(placed))}"
    assert not set(placed) - public, f"not methods of TensorDictBase: {set(placed) - public}"
    twice = sorted(name for name, count in placed.items() if count > 1)
    assert not twice, f"methods in more than one task: {twice}"


def test_every_function_has_one_task():
    """Each function (and option block) of ``tensordict.__all__`` is in exactly one task."""
    table = load_script("method_tasks").task_table()
    placed = collections.Counter(name for _, _, _, functions in table for name in functions)
    public = {
        name
        for name in tensordict.__all__
        if inspect.isroutine(getattr(tensordict, name)) or name.startswith("set_")
    }
    assert not public - set(placed), f"functions without a task: {sorted(public - set(placed))}"
    assert not set(placed) - public, f"not functions of tensordict: {set(placed) - public}"
    twice = sorted(name for name, count in placed.items() if count > 1)
    assert not twice, f"functions in more than one task: {twice}"


def test_the_task_page_links_every_method():
    """The page written from the table links each method's page under its task's heading."""
    page = load_script("api_pages").by_task()
    for title in ("Build", "Memory mapping", "Across machines", "Locking", "Options"):
        assert f"\n{title}\n{'-' * len(title)}\n" in page
    for name in ("make_memmap_from_storage", "cos_", "keys", "lock_", "float32"):
        assert f"<generated/tensordict.TensorDictBase.{name}>`" in page


def test_a_method_page_has_the_seed_layout():
    """The page of a TensorDictBase method: its qualified name as title, autodoc, the closing line."""
    pages = load_script("api_pages").pages()
    page = pages["tensordict.TensorDictBase.make_memmap_from_storage"]
    lines = page.splitlines()
    title = lines.index("TensorDictBase.make_memmap_from_storage")
    assert lines[title + 1] == "=" * len(lines[title])
    assert ".. automethod:: TensorDictBase.make_memmap_from_storage" in lines
    assert lines[-1].startswith("Every tensordict class and every tensorclass has this method.")
    assert "tensordict.memmap.claim_writer" in pages
    assert "tensordict.MemoryMappedTensor.from_filename" in pages


def test_the_closing_line_is_written_only_where_it_is_true():
    """A method some class lacks gets a line naming the classes that lack it instead."""
    api_pages = load_script("api_pages")
    assert api_pages._closing("memmap") == api_pages.CLOSING
    line = api_pages._closing("no_such_method")
    assert line.startswith("Not every class has this method: TensorDict, ")
    assert "tensorclasses do not" in line
