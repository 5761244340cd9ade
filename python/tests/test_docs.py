"""docs/python.md and README.md's Python example run as written: each ```python block in a
fresh interpreter, in a temporary directory that sees the repository's data/ (the blocks read
data/matrices), with matplotlib's Agg backend; every figure a block saves must be written."""

import os
import re
import subprocess
import sys

import pytest


def _blocks(source_dir, page="docs/python.md"):
    text = (source_dir / page).read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


def _run(code, directory, source_dir):
    (directory / "data").symlink_to(source_dir / "data")
    env = dict(os.environ, MPLBACKEND="Agg")
    done = subprocess.run([sys.executable, "-c", code], cwd=directory, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_tutorial_has_its_figures(source_dir):
    saved = [f for b in _blocks(source_dir) for f in re.findall(r'savefig\("([^"]+)"\)', b)]
    assert saved == ["qdot_mix.png", "acg_sweep.png", "gemm_narrow.png"]


@pytest.mark.parametrize("index", range(5))
def test_block_runs(source_dir, tmp_path, index):
    blocks = _blocks(source_dir)
    assert len(blocks) == 5
    code = blocks[index]
    _run(code, tmp_path, source_dir)
    for figure in re.findall(r'savefig\("([^"]+)"\)', code):
        assert (tmp_path / figure).stat().st_size > 10_000


def test_readme_example_runs(source_dir, tmp_path):
    blocks = _blocks(source_dir, "README.md")
    assert len(blocks) == 1 and "ebla.cg(" in blocks[0]
    _run(blocks[0] + "\nassert cg.status == 'converged' and abs(r.value - x @ y) <= r.bound\n", tmp_path, source_dir)
