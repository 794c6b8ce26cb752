#!/usr/bin/env python3
"""Extracts the client examples from the documentation, so that each client's
tests run them as written (issue #28: examples that run).

Every fenced block whose info string starts with ``python``, ``ts``,
``java`` or ``go`` in README.md, clients/*/README.md and docs/*.md is an
example: it calls the API and its client's test script runs it against the
running servers (a ``go`` block is a whole program: package main, imports,
func main). A block may be followed (blank lines between are fine) by a
```` ```text ```` block: the example's standard output must be exactly that.

What is changed before an example runs, so that reruns and concurrent runs
do not meet each other's records (everything else runs as written):

- the campaign ``10001`` and the record ``900001`` become fresh ids (in
  numbers and inside strings such as request ids), one pair per example;
- in a block tagged ``tls`` (```` ```python tls ````), the results server's
  address ``127.0.0.1:7101`` becomes ``$RS_RESULTS_TLS_ADDR``, the TLS results
  server deploy/local/test-clients.sh starts (the example shows the address
  of a stack run with TLS; the file paths it reads are the local CA's).

Usage (the test scripts call it; Python's tests import it):

    clients/examples.py json LANG          every LANG example, as JSON
    clients/examples.py java TARGET        the java examples as classes with a main
                                           (TARGET/generated-test-sources/examples),
                                           TARGET/examples/index.tsv and ExampleN.expect
    clients/examples.py go TARGET          the go examples (each a whole program) as
                                           TARGET/exampleN/main.go, TARGET/index.tsv
                                           and TARGET/exampleN/expect
    clients/examples.py count              the examples per language
    clients/examples.py unrun              fails when docs/*.md has an API call in a
                                           shell block (bin/grpcurl, curl, rsctl):
                                           test/readme/run.sh runs README.md's only
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LANGS = {"python": "python", "py": "python", "ts": "typescript", "typescript": "typescript", "java": "java", "go": "go"}
CAMPAIGN, RECORD = "10001", "900001"
RESULTS_ADDR = "127.0.0.1:7101"
# Fresh ids per language (the clients' tests use 8e12 (Python), 9e12
# (TypeScript), 6e12 (Java), 4e12 (Go) + a millisecond clock; the examples 5e12 + ...).
BASES = {"python": 5_100_000_000_000, "typescript": 5_200_000_000_000, "java": 5_300_000_000_000, "go": 5_400_000_000_000}


@dataclass
class Example:
    file: str  # relative to the repository root
    line: int  # of the opening fence
    lang: str  # python, typescript or java
    tags: list[str]
    source: str  # as written
    code: str = ""  # as run (fresh ids, addresses)
    expect: str | None = None  # the ```text block after it, if any
    campaign: int = 0
    record: int = 0
    name: str = field(default="")

    def where(self) -> str:
        return f"{self.file}:{self.line}"


def doc_files() -> list[str]:
    files = [os.path.join(ROOT, "README.md")]
    files += sorted(glob.glob(os.path.join(ROOT, "clients", "*", "README.md")))
    files += sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    return [f for f in files if os.path.exists(f)]


def blocks(path: str) -> list[tuple[int, str, str]]:
    """(line of the opening fence, info string, body) of every fenced block."""
    out = []
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(```+|~~~+)(.*)$", lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m.group(1), m.group(2).strip(), i + 1
        body = []
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        out.append((start, info, "\n".join(body) + "\n"))
        i += 1
    return out


def examples(lang: str | None = None) -> list[Example]:
    found: list[Example] = []
    seq = 0
    base_ms = time.time_ns() // 1_000_000 % 10**9
    for path in doc_files():
        rel = os.path.relpath(path, ROOT)
        bs = blocks(path)
        for k, (line, info, body) in enumerate(bs):
            words = info.split()
            if not words or words[0] not in LANGS:
                continue
            ex_lang = LANGS[words[0]]
            if lang is not None and ex_lang != lang:
                continue
            ex = Example(file=rel, line=line, lang=ex_lang, tags=words[1:], source=body)
            if k + 1 < len(bs) and bs[k + 1][1] == "text" and _adjacent(path, line, body, bs[k + 1][0]):
                ex.expect = bs[k + 1][2]
            seq += 1
            ex.campaign = BASES[ex_lang] + base_ms * 100 + seq
            ex.record = ex.campaign * 10 + 1
            ex.name = f"Example{seq}"
            code = re.sub(rf"(?<![0-9]){RECORD}(?![0-9])", str(ex.record), body)
            code = re.sub(rf"(?<![0-9]){CAMPAIGN}(?![0-9])", str(ex.campaign), code)
            if "tls" in ex.tags:
                addr = os.environ.get("RS_RESULTS_TLS_ADDR")
                if not addr:
                    raise SystemExit(f"{ex.where()}: a tls example needs RS_RESULTS_TLS_ADDR (deploy/local/test-clients.sh)")
                code = code.replace(RESULTS_ADDR, addr)
            ex.code = code
            found.append(ex)
    return found


def _adjacent(path: str, line: int, body: str, next_line: int) -> bool:
    """Whether only blank lines separate the block (closing fence at
    line + body lines + 1) from the next one."""
    lines = open(path, encoding="utf-8").read().split("\n")
    close = line + body.count("\n")  # 0-based index of the closing fence
    return all(not lines[j].strip() for j in range(close + 1, next_line - 1))


def write_java(target: str) -> None:
    """Each java example as io.github.resultsync.examples.ExampleN: the
    block's import lines on top, its statements in main; an index of
    "name TAB file:line TAB tags" lines and the expected outputs."""
    pkg = os.path.join(target, "generated-test-sources", "examples", "io", "github", "resultsync", "examples")
    meta = os.path.join(target, "examples")
    os.makedirs(pkg, exist_ok=True)
    os.makedirs(meta, exist_ok=True)
    with open(os.path.join(meta, "index.tsv"), "w", encoding="utf-8") as index:
        for ex in examples("java"):
            lines = ex.code.rstrip("\n").split("\n")
            imports = [ln for ln in lines if re.match(r"^import [\w.*]+;\s*$", ln)]
            body = [ln for ln in lines if ln not in imports]
            src = (
                f"// {ex.where()} (extracted by clients/examples.py; fresh ids)\n"
                "package io.github.resultsync.examples;\n\n" + "\n".join(imports) + "\n\n"
                f"public final class {ex.name} {{\n  public static void main(String[] args) throws Exception {{\n"
                + "\n".join("    " + ln if ln else ln for ln in body)
                + "\n  }\n}\n"
            )
            with open(os.path.join(pkg, ex.name + ".java"), "w", encoding="utf-8") as f:
                f.write(src)
            if ex.expect is not None:
                with open(os.path.join(meta, ex.name + ".expect"), "w", encoding="utf-8") as f:
                    f.write(ex.expect)
            index.write(f"{ex.name}\t{ex.where()}\t{' '.join(ex.tags)}\n")


def write_go(target: str) -> None:
    """Each go example (a whole program: package main, its imports, func
    main) as TARGET/exampleN/main.go, its expected output as
    TARGET/exampleN/expect, and an index of "name TAB file:line TAB tags"
    lines (TARGET/index.tsv). TARGET must lie inside the clients/go module,
    whose packages the examples import."""
    os.makedirs(target, exist_ok=True)
    with open(os.path.join(target, "index.tsv"), "w", encoding="utf-8") as index:
        for ex in examples("go"):
            d = os.path.join(target, ex.name.lower())
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "main.go"), "w", encoding="utf-8") as f:
                f.write(f"// {ex.where()} (extracted by clients/examples.py; fresh ids)\n\n" + ex.code)
            if ex.expect is not None:
                with open(os.path.join(d, "expect"), "w", encoding="utf-8") as f:
                    f.write(ex.expect)
            index.write(f"{ex.name.lower()}\t{ex.where()}\t{' '.join(ex.tags)}\n")


def unrun() -> list[str]:
    """The API calls (bin/grpcurl, grpcurl, curl, rsctl lines) in the shell
    blocks of docs/*.md, which no test runs (test/readme/run.sh runs those
    of README.md)."""
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        for line, info, body in blocks(path):
            if info.split()[:1] not in (["sh"], ["console"], ["bash"], ["shell"]):
                continue
            for k, ln in enumerate(body.split("\n")):
                cmd = ln.strip().removeprefix("$ ")
                if re.match(r"^(bin/grpcurl|grpcurl|curl|bin/rsctl|rsctl)\s", cmd):
                    found.append(f"{os.path.relpath(path, ROOT)}:{line + 1 + k}: {cmd}")
    return found


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[1] == "json":
        if argv[2] not in BASES:
            raise SystemExit(f"unknown language {argv[2]} (one of {', '.join(BASES)})")
        json.dump([asdict(e) for e in examples(argv[2])], sys.stdout, indent=1)
        return 0
    if len(argv) == 3 and argv[1] == "java":
        write_java(argv[2])
        return 0
    if len(argv) == 3 and argv[1] == "go":
        write_go(argv[2])
        return 0
    if len(argv) == 2 and argv[1] == "unrun":
        calls = unrun()
        for c in calls:
            print(f"{c}  <- an API call no test runs: move it to README.md or a client example", file=sys.stderr)
        return 1 if calls else 0
    if len(argv) == 2 and argv[1] == "count":
        os.environ.setdefault("RS_RESULTS_TLS_ADDR", RESULTS_ADDR)  # counted, not run
        n = {lang: 0 for lang in BASES}
        for e in examples():
            n[e.lang] += 1
        print("examples: " + ", ".join(f"{k} {v}" for k, v in n.items()))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
