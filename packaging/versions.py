"""One version and one repository address for every package (make check-versions).

The Cargo workspace ([workspace.package] version and repository in Cargo.toml) is the source of
truth; everything else that states either must agree with it:

- every crate takes the workspace's version (`version.workspace = true`);
- the Python package's version is dynamic (maturin reads it from the crate) and its Repository
  URL is the workspace's;
- node/package.json, its entry in package-lock.json, and the version napi wrote into the loader
  node/native/index.js; its repository URL;
- the C header's AGENTSTREAM_VERSION macros (cbindgen, from the crate version);
- the Go module path is the repository's address + /bindings/go;
- the README and docs/*.md: every artifact file name (agentstream-<v>…, agentstream-c-<v>…,
  agentstream-linux-x64-gnu-<v>…) and Go module version (…/bindings/go@v<v>, `v<v>` in a
  require line, the tag bindings/go/v<v>) they show;
- CHANGELOG.md's newest release heading;
- every package's pom.xml (Kotlin, Java) and *.csproj (C#) under bindings/ states the same version.

Prints what it checked; exits 1 naming every disagreement and the file to fix.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
problems: list[str] = []
checked: list[str] = []


def expect(ok: bool, where: str, message: str) -> None:
    if ok:
        checked.append(where)
    else:
        problems.append(f"{where}: {message}")


def workspace() -> tuple[str, str]:
    data = tomllib.loads((ROOT / "Cargo.toml").read_text())
    package = data["workspace"]["package"]
    return package["version"], package["repository"].rstrip("/")


def crates(version: str) -> None:
    members = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["members"]
    for member in members:
        manifest = ROOT / member / "Cargo.toml"
        package = tomllib.loads(manifest.read_text())["package"]
        stated = package.get("version")
        ok = stated == {"workspace": True} or stated == version
        expect(ok, str(manifest.relative_to(ROOT)), f"version is {stated!r}: use `version.workspace = true`")


def python(repository: str) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    expect(
        "version" in project.get("dynamic", []) and "version" not in project,
        "pyproject.toml",
        'the version must be dynamic (maturin takes the crate\'s): dynamic = ["version"]',
    )
    url = project.get("urls", {}).get("Repository", "")
    expect(url.rstrip("/") == repository, "pyproject.toml [project.urls]", f"Repository is {url!r}, not {repository!r}")


def node(version: str, repository: str) -> None:
    package = json.loads((ROOT / "node/package.json").read_text())
    expect(package["version"] == version, "node/package.json", f"version {package['version']} != {version}")
    url = package.get("repository", {}).get("url", "")
    expect(
        url.removeprefix("git+").removesuffix(".git") == repository,
        "node/package.json repository",
        f"url {url!r} is not git+{repository}.git",
    )
    lock = json.loads((ROOT / "package-lock.json").read_text())
    locked = lock.get("packages", {}).get("node", {}).get("version")
    expect(locked == version, "package-lock.json", f"packages.node.version {locked} != {version}: run npm install")
    loader = (ROOT / "node/native/index.js").read_text()
    embedded = set(re.findall(r"bindingPackageVersion !== '([^']+)'", loader))
    expect(
        embedded == {version},
        "node/native/index.js",
        f"napi's loader expects {sorted(embedded)}: rebuild it (npm run build) and commit it",
    )


def header(version: str) -> None:
    text = (ROOT / "include/agentstream.h").read_text()
    major, minor, patch = version.split("-")[0].split(".")
    wanted = {
        "AGENTSTREAM_VERSION": f'"{version}"',
        "AGENTSTREAM_VERSION_MAJOR": major,
        "AGENTSTREAM_VERSION_MINOR": minor,
        "AGENTSTREAM_VERSION_PATCH": patch,
    }
    for name, value in wanted.items():
        found = re.search(rf"^#define {name} (\S+)$", text, re.M)
        expect(
            found is not None and found.group(1) == value,
            f"include/agentstream.h {name}",
            f"is {found.group(1) if found else 'missing'}, not {value}: `make build-c` regenerates it",
        )


def go(repository: str) -> str:
    module = re.search(r"^module (\S+)$", (ROOT / "bindings/go/go.mod").read_text(), re.M)
    wanted = repository.removeprefix("https://").removeprefix("http://") + "/bindings/go"
    expect(module is not None and module.group(1) == wanted, "bindings/go/go.mod", f"module is not {wanted}")
    return wanted


def docs(version: str, go_module: str) -> None:
    """Artifact names and Go versions the README and the guides show."""
    artifact = re.compile(r"\bagentstream(?:-c|-linux-x64-gnu)?-(\d+\.\d+\.\d+)")
    go_version = re.compile(re.escape(go_module) + r"(?:@|\s+)(v\d+\.\d+\.\d+)\b|\bbindings/go/(v\d+\.\d+\.\d+)\b")
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text()
        where = str(doc.relative_to(ROOT))
        for m in artifact.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            expect(m.group(1) == version, f"{where}:{line}", f"names version {m.group(1)} ({m.group(0)}…), not {version}")
        for m in go_version.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            found = m.group(1) or m.group(2)
            expect(found == f"v{version}", f"{where}:{line}", f"Go module version {found}, not v{version}")


def changelog(version: str) -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    heading = re.search(r"^## \[(\d+\.\d+\.\d+[^\]]*)\]", text, re.M)
    expect(
        heading is not None and heading.group(1) == version,
        "CHANGELOG.md",
        f"the newest release heading is {heading.group(1) if heading else 'missing'}, not ## [{version}]",
    )


def other_languages(version: str) -> None:
    """The JVM and .NET packages (Kotlin, Java, C#) state the same version; examples are not packages."""
    for pom in sorted((ROOT / "bindings").glob("**/pom.xml")):
        if "example" in pom.relative_to(ROOT).parts or "target" in pom.relative_to(ROOT).parts:
            continue
        text = re.sub(r"<parent>.*?</parent>|<dependencies>.*?</dependencies>|<build>.*?</build>|<dependencyManagement>.*?</dependencyManagement>|<plugins>.*?</plugins>", "", pom.read_text(), flags=re.S)
        found = re.search(r"<version>([^<]+)</version>", text)
        stated = found.group(1) if found else "missing"
        expect(stated == version, str(pom.relative_to(ROOT)), f"the project version is {stated}, not {version}")
    for csproj in sorted((ROOT / "bindings").glob("**/*.csproj")):
        found = re.search(r"<Version>([^<]+)</Version>", csproj.read_text())
        if found:
            expect(found.group(1) == version, str(csproj.relative_to(ROOT)), f"<Version> is {found.group(1)}, not {version}")


def main() -> None:
    version, repository = workspace()
    crates(version)
    python(repository)
    node(version, repository)
    header(version)
    go_module = go(repository)
    docs(version, go_module)
    changelog(version)
    other_languages(version)
    if problems:
        print(f"versions: the workspace says {version} ({repository}); these disagree:", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        sys.exit(1)
    print(f"versions: {version} and {repository} in all {len(checked)} places checked")


if __name__ == "__main__":
    main()
