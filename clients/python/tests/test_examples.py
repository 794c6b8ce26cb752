"""Runs every Python example of the documentation (README.md,
clients/*/README.md, docs/*.md: every ```python block, extracted by
clients/examples.py) against the running servers, from the repository root,
and compares its output with the ```text block after it when there is one."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
_spec = importlib.util.spec_from_file_location("rs_examples", os.path.join(ROOT, "clients", "examples.py"))
assert _spec and _spec.loader
examples_mod = importlib.util.module_from_spec(_spec)
sys.modules["rs_examples"] = examples_mod  # dataclasses looks the module up
_spec.loader.exec_module(examples_mod)

EXAMPLES = examples_mod.examples("python")


def test_the_documentation_has_python_examples():
    files = {e.file for e in EXAMPLES}
    assert "clients/python/README.md" in files, files
    assert any("tls" in e.tags for e in EXAMPLES), "no TLS example"


@pytest.mark.parametrize("ex", EXAMPLES, ids=[e.where() for e in EXAMPLES])
def test_example_runs(ex):
    run = subprocess.run([sys.executable, "-c", ex.code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"{ex.where()} failed (exit {run.returncode}):\n{run.stderr}\n--- ran:\n{ex.code}"
    if ex.expect is not None:
        assert run.stdout == ex.expect, f"{ex.where()}: output differs from the ```text block after it"
