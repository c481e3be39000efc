"""Write the Go module of bindings/go as a Go module proxy serves it, into a folder that
`GOPROXY=file://<folder>` reads: <module>/@v/list, v<version>.info, .mod and .zip.

    python3 packaging/go_proxy.py OUT_DIR VERSION

This is what `go get <module>@v<version>` downloads once the repository is published and tagged
`bindings/go/v<version>`; until then (and in the install test) the folder stands in for the
proxy. The zip holds the module's files as git tracks them, under `<module>@v<version>/`, as
`go mod download` would lay them out; no file of the build tree goes in.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULE_DIR = "bindings/go"


def module_path() -> str:
    for line in (ROOT / MODULE_DIR / "go.mod").read_text().splitlines():
        if line.startswith("module "):
            return line.split()[1]
    sys.exit(f"{MODULE_DIR}/go.mod has no module line")


def escape(path: str) -> str:
    """The proxy protocol's case encoding: an upper-case letter becomes '!' + its lower case."""
    return "".join(f"!{c.lower()}" if c.isupper() else c for c in path)


def tracked_files() -> list[str]:
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "-z", "--", MODULE_DIR],
            check=True,
            capture_output=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"go_proxy: the module's files come from git (git ls-files {MODULE_DIR}): {e}")
    files = [f for f in out.decode().split("\0") if f]
    if f"{MODULE_DIR}/go.mod" not in files:
        sys.exit(f"go_proxy: {MODULE_DIR}/go.mod is not tracked by git")
    return sorted(files)


def commit_time() -> str:
    out = subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%cI"], capture_output=True, text=True
    ).stdout.strip()
    return out or "1970-01-01T00:00:00Z"


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: python3 packaging/go_proxy.py OUT_DIR VERSION")
    out_dir, version = Path(sys.argv[1]), "v" + sys.argv[2].removeprefix("v")
    module = module_path()
    versions = out_dir / escape(module) / "@v"
    versions.mkdir(parents=True, exist_ok=True)
    (versions / "list").write_text(version + "\n")
    (versions / f"{version}.info").write_text(json.dumps({"Version": version, "Time": commit_time()}) + "\n")
    (versions / f"{version}.mod").write_bytes((ROOT / MODULE_DIR / "go.mod").read_bytes())
    prefix = f"{module}@{version}/"
    with zipfile.ZipFile(versions / f"{version}.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        for name in tracked_files():
            relative = name[len(MODULE_DIR) + 1 :]
            info = zipfile.ZipInfo(prefix + relative, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, (ROOT / name).read_bytes())
    print(f"go module {module} {version}: {versions}")


if __name__ == "__main__":
    main()
