#!/usr/bin/env python3
"""Build tests/secrets/traces/<agent>.input.jsonl: each harness's own recorded output (the golden
s2-bash and s3-read-edit traces) with the shell command, the edit's new text and the written
file's content replaced by each entry of corpus.jsonl, so every secret shape reaches every
input-derived field (rawInput, title, diffs, result records that echo the input) in each
harness's real wire format; likewise a to-do item (the plan restates it) and, for the harnesses
with subagents, a Task call's prompt and description (the subagent's first message and every
one of its events' `extra` restate them). Deterministic; run it after changing the corpus or the goldens:

    python3 tests/secrets/make_traces.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOLDEN = HERE.parent / "golden"

# (case, the text in the golden input that is replaced by a corpus entry) per harness: the
# command of the shell call; the new text of the edit and the content of the file written; a
# to-do item; a subagent's prompt and description.
TARGETS: dict[str, list[tuple[str, str]]] = {
    "claude": [("s2-bash", "ls -1"), ("s3-read-edit", 'return f"Hello, {name}!"'),
               ("s3-read-edit", "# Changelog\n\n- greet() now uses an f-string and adds an exclamation mark.\n"),
               ("e-todowrite", "Read hello.py"),
               ("e-subagent", "Count the .py files in the project and report the number."),
               ("e-subagent", "Count python files")],
    "codex": [("s2-bash", "echo hi"), ("e-todo-list", "Read hello.py")],
    "droid": [("s2-bash", "echo hi"), ("s3-read-edit", '    return f"Hello, {name}!"'),
              ("s3-read-edit", "Created by the mock model.\n"), ("e-todo-plan", "Read hello.py")],
    "gemini": [("s2-bash", "ls -1"), ("s3-read-edit", 'return f"Hello, {name}!"'),
               ("s3-read-edit", "# Changelog\n\n- greet() now uses an f-string and adds an exclamation mark.\n"),
               ("e-write-todos", "Read hello.py")],
    "kimi": [("s2-bash", "echo hi"), ("s3-read-edit", '    return f"Hello, {name}!"'),
             ("s3-read-edit", "Created by the mock model.\n"), ("e-todo-plan", "Read hello.py")],
    # The to-do case first: it ends without a final `step_finish`, and the trace's last case
    # decides whether a run of it completes.
    "opencode": [("e-todowrite-plan", "Read hello.py"), ("s2-bash", "echo hi"),
                 ("s3-read-edit", '    return f"Hello, {name}!"'), ("s3-read-edit", "Created by the mock model.\n")],
    "qwen": [("s2-bash", "ls -1"), ("s3-read-edit", 'return f"Hello, {name}!"'),
             ("s3-read-edit", "# Changelog\n\n- greet() now uses an f-string and adds an exclamation mark.\n"),
             ("e-todo-write", "Read hello.py"), ("e-subagent", "Count the .py files and report the number.")],
}


def escaped(text: str) -> str:
    """`text` as it appears inside a JSON string (and, doubly escaped, inside a JSON string
    that itself holds JSON, as kimi's and codex's arguments do)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


def substitute(line: str, old: str, new: str) -> tuple[str, int]:
    n = 0
    for wrap in (escaped, lambda t: escaped(escaped(t))):
        o, w = wrap(old), wrap(new)
        n += line.count(o)
        line = line.replace(o, w)
    return line, n


def main() -> None:
    corpus = [json.loads(l) for l in (HERE / "corpus.jsonl").read_text().splitlines() if l.strip()]
    out_dir = HERE / "traces"
    out_dir.mkdir(exist_ok=True)
    for agent, targets in TARGETS.items():
        out: list[str] = []
        for entry in corpus:
            for case, original in targets:
                lines = (GOLDEN / agent / f"{case}.input.jsonl").read_text().splitlines()
                replaced = 0
                for line in lines:
                    line, n = substitute(line, original, entry["text"])
                    replaced += n
                    out.append(line)
                if replaced == 0:
                    raise SystemExit(f"{agent}/{case}: {original!r} not found")
        (out_dir / f"{agent}.input.jsonl").write_text("\n".join(out) + "\n")
        print(f"{agent}: {len(out)} lines")


if __name__ == "__main__":
    main()
