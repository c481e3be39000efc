"""Extract the README's quick starts into files, so that the install test runs exactly what the
README shows (no second copy to drift).

A quick-start file is the fenced code block right after a marker line
`<!-- quickstart LANG/FILE -->` (invisible on the rendered page). Each language has a `run.sh`
(the commands a user types, run in a fresh folder holding the downloaded artifacts) and the
program files it uses.

    python3 packaging/quickstarts.py README.md OUT_DIR     # writes OUT_DIR/LANG/FILE, prints LANGs
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

MARKER = re.compile(r"^<!-- quickstart ([a-z]+)/([A-Za-z0-9_.-]+) -->$")
FENCE = re.compile(r"^(```+|~~~+)")


def extract(readme: str) -> dict[tuple[str, str], str]:
    """(language, file name) -> content of every marked block, in README order."""
    lines = readme.splitlines()
    blocks: dict[tuple[str, str], str] = {}
    i = 0
    while i < len(lines):
        marker = MARKER.match(lines[i].strip())
        i += 1
        if not marker:
            continue
        key = (marker.group(1), marker.group(2))
        if i >= len(lines) or not FENCE.match(lines[i]):
            sys.exit(f"README: the marker for {key[0]}/{key[1]} must be followed by a fenced code block")
        fence = FENCE.match(lines[i]).group(1)
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        if i == len(lines):
            sys.exit(f"README: the code block of {key[0]}/{key[1]} is not closed")
        i += 1
        if key in blocks:
            sys.exit(f"README: two quick-start blocks for {key[0]}/{key[1]}")
        blocks[key] = "\n".join(body) + "\n"
    return blocks


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: python3 packaging/quickstarts.py README.md OUT_DIR")
    blocks = extract(Path(sys.argv[1]).read_text(encoding="utf-8"))
    languages = sorted({lang for lang, _ in blocks})
    if not languages:
        sys.exit("README: no quick-start blocks (<!-- quickstart LANG/FILE --> before a code block)")
    for lang in languages:
        if (lang, "run.sh") not in blocks:
            sys.exit(f"README: the {lang} quick start has no run.sh block")
    out = Path(sys.argv[2])
    for (lang, name), content in blocks.items():
        (out / lang).mkdir(parents=True, exist_ok=True)
        (out / lang / name).write_text(content, encoding="utf-8")
    print(" ".join(languages))


if __name__ == "__main__":
    main()
