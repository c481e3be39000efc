"""Check the release artifacts in dist/ (the last step of `make dist`), then write dist/SHA256SUMS.

    python3 packaging/check_dist.py DIST_DIR VERSION

For each artifact: its name carries VERSION; it holds what a user's install needs and nothing of
the build tree; every shared object a user loads (the wheel's extension, the .node addon,
libagentstream.so) and the supervisor programs of the wheel and the npm platform package need
glibc 2.17 at most; libagentstream.so carries the soname
libagentstream.so.<major> and the tarball the links to it; the pkg-config files are relocatable;
the Go module finds the library through pkg-config only; the Java jar and dist/csharp (when built)
carry the same glibc 2.17 library, the jar's classes load on Java 22. Exits 1 listing every failure.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

MAX_GLIBC = (2, 17)
JAVA_22_CLASS_VERSION = 66
failures: list[str] = []


def check(ok: bool, what: str) -> None:
    if not ok:
        failures.append(what)


def one(dist: Path, pattern: str) -> Path | None:
    found = sorted(dist.glob(pattern))
    check(len(found) == 1, f"expected exactly one {dist}/{pattern}, found {[p.name for p in found]}")
    return found[0] if len(found) == 1 else None


def elf_facts(data: bytes, name: str) -> tuple[tuple[int, int], str | None]:
    """(newest GLIBC_x.y symbol version needed, SONAME) of a shared object."""
    with tempfile.NamedTemporaryFile(suffix=".so") as f:
        f.write(data)
        f.flush()
        symbols = subprocess.run(["objdump", "-T", f.name], capture_output=True, text=True, check=True).stdout
        headers = subprocess.run(["objdump", "-p", f.name], capture_output=True, text=True, check=True).stdout
    versions = [tuple(int(x) for x in v.split(".")[:2]) for v in re.findall(r"GLIBC_(\d+\.\d+(?:\.\d+)?)", symbols)]
    newest = max(versions, default=(0, 0))
    check(newest <= MAX_GLIBC, f"{name} needs GLIBC_{newest[0]}.{newest[1]} (at most {MAX_GLIBC[0]}.{MAX_GLIBC[1]} allowed)")
    soname = re.search(r"SONAME\s+(\S+)", headers)
    return newest, soname.group(1) if soname else None


# A link of a package's README that is not a URL: PyPI and npm show the README without the
# repository beside it, so `[types](types.md)` leads nowhere there.
RELATIVE_LINK = re.compile(r"\]\((?!https?://|mailto:|#)([^)\s]+)\)")


def no_relative_links(text: str, where: str) -> None:
    links = RELATIVE_LINK.findall(text)
    check(not links, f"{where}: links that lead nowhere outside the repository: {links} (use https:// URLs)")


def python(dist: Path, version: str) -> None:
    wheel = one(dist / "python", f"agentstream-{version}-cp311-abi3-manylinux*_x86_64.whl")
    if wheel:
        check("manylinux_2_17_x86_64" in wheel.name, f"{wheel.name}: no manylinux_2_17_x86_64 tag")
        with zipfile.ZipFile(wheel) as zf:
            names = set(zf.namelist())
            for required in ("agentstream/__init__.py", "agentstream/py.typed", "agentstream/_native.abi3.so",
                             "agentstream/agentstream-supervisor"):
                check(required in names, f"{wheel.name}: no {required}")
            info = f"agentstream-{version}.dist-info"
            metadata = zf.read(f"{info}/METADATA").decode() if f"{info}/METADATA" in names else ""
            check(f"\nVersion: {version}\n" in metadata, f"{wheel.name}: METADATA does not say Version: {version}")
            no_relative_links(metadata, f"{wheel.name}: the description (docs/python.md)")
            check(any(n.startswith(f"{info}/") and "LICENSE" in n for n in names), f"{wheel.name}: no LICENSE in {info}")
            check(not any("/tests/" in n for n in names), f"{wheel.name}: carries the test suite")
            if "agentstream/_native.abi3.so" in names:
                elf_facts(zf.read("agentstream/_native.abi3.so"), f"{wheel.name}:_native.abi3.so")
            if "agentstream/agentstream-supervisor" in names:
                # The runs' supervisor program: run by the loader on the user's machine, and
                # executable once installed (pip keeps the mode the wheel records).
                supervisor = zf.getinfo("agentstream/agentstream-supervisor")
                check(supervisor.external_attr >> 16 & 0o111 == 0o111,
                      f"{wheel.name}: agentstream/agentstream-supervisor is not executable")
                elf_facts(zf.read(supervisor), f"{wheel.name}:agentstream-supervisor")
    sdist = one(dist / "python", f"agentstream-{version}.tar.gz")
    if sdist:
        with tarfile.open(sdist) as tf:
            names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
        for required in (
            "pyproject.toml", "Cargo.toml", "Cargo.lock", "LICENSE", "core/Cargo.toml", "core/src/lib.rs",
            "bindings/python/Cargo.toml", "python/agentstream/__init__.py",
        ):
            check(required in names, f"{sdist.name}: no {required}")
        check(not any(n.startswith("target/") or "/target/" in n for n in names), f"{sdist.name}: carries target/")


def read_tgz(path: Path) -> dict[str, tarfile.TarInfo | bytes]:
    files: dict[str, tarfile.TarInfo | bytes] = {}
    with tarfile.open(path) as tf:
        for member in tf.getmembers():
            if member.isfile():
                files[member.name] = tf.extractfile(member).read()
            else:
                files[member.name] = member
    return files


def node(dist: Path, version: str) -> None:
    main = one(dist / "node", f"agentstream-{version}.tgz")
    platform = one(dist / "node", f"agentstream-linux-x64-gnu-{version}.tgz")
    if main:
        files = read_tgz(main)
        manifest = json.loads(files.get("package/package.json", b"{}"))
        check(manifest.get("version") == version, f"{main.name}: package.json version {manifest.get('version')}")
        check(
            manifest.get("optionalDependencies") == {"agentstream-linux-x64-gnu": version},
            f"{main.name}: optionalDependencies are {manifest.get('optionalDependencies')}",
        )
        check("scripts" not in manifest and "devDependencies" not in manifest, f"{main.name}: build-time fields left in")
        for required in ("dist/index.js", "dist/index.mjs", "dist/index.d.ts", "native/index.js", "native/index.d.ts", "LICENSE", "README.md"):
            check(f"package/{required}" in files, f"{main.name}: no {required}")
        check(not any(n.endswith(".node") for n in files), f"{main.name}: carries an addon (the platform package does)")
        readme = files.get("package/README.md")
        if isinstance(readme, bytes):
            no_relative_links(readme.decode(), f"{main.name}: README.md (docs/node.md)")
    if platform:
        files = read_tgz(platform)
        manifest = json.loads(files.get("package/package.json", b"{}"))
        check(manifest.get("version") == version, f"{platform.name}: package.json version {manifest.get('version')}")
        for key, value in (("os", ["linux"]), ("cpu", ["x64"]), ("libc", ["glibc"]), ("main", "agentstream.linux-x64-gnu.node")):
            check(manifest.get(key) == value, f"{platform.name}: {key} is {manifest.get(key)}, not {value}")
        addon = files.get("package/agentstream.linux-x64-gnu.node")
        check(isinstance(addon, bytes), f"{platform.name}: no agentstream.linux-x64-gnu.node")
        if isinstance(addon, bytes):
            elf_facts(addon, f"{platform.name}:agentstream.linux-x64-gnu.node")
        # The runs' supervisor program beside the addon, executable once installed.
        supervisor = files.get("package/agentstream-supervisor")
        check(isinstance(supervisor, bytes), f"{platform.name}: no agentstream-supervisor")
        if isinstance(supervisor, bytes):
            with tarfile.open(platform) as tf:
                mode = tf.getmember("package/agentstream-supervisor").mode
            check(mode & 0o111 == 0o111, f"{platform.name}: agentstream-supervisor is not executable ({mode:o})")
            elf_facts(supervisor, f"{platform.name}:agentstream-supervisor")


def c(dist: Path, version: str) -> None:
    tarball = one(dist / "c", f"agentstream-c-{version}-x86_64-linux-gnu.tar.gz")
    if not tarball:
        return
    top = f"agentstream-{version}"
    major = version.split(".")[0]
    files = read_tgz(tarball)
    check(all(n == top or n.startswith(top + "/") for n in files), f"{tarball.name}: entries outside {top}/")
    for required in ("include/agentstream.h", f"lib/libagentstream.so.{version}", "lib/libagentstream.a",
                     "lib/pkgconfig/agentstream.pc", "lib/pkgconfig/agentstream-static.pc", "share/doc/agentstream/LICENSE"):
        check(isinstance(files.get(f"{top}/{required}"), bytes), f"{tarball.name}: no {required}")
    for link, target in ((f"libagentstream.so.{major}", f"libagentstream.so.{version}"), ("libagentstream.so", f"libagentstream.so.{major}")):
        member = files.get(f"{top}/lib/{link}")
        check(isinstance(member, tarfile.TarInfo) and member.issym() and member.linkname == target,
              f"{tarball.name}: lib/{link} is not a link to {target}")
    library = files.get(f"{top}/lib/libagentstream.so.{version}")
    if isinstance(library, bytes):
        _, soname = elf_facts(library, f"{tarball.name}:libagentstream.so.{version}")
        check(soname == f"libagentstream.so.{major}", f"{tarball.name}: soname is {soname}, not libagentstream.so.{major}")
    header = files.get(f"{top}/include/agentstream.h", b"").decode()
    check(f'#define AGENTSTREAM_VERSION "{version}"' in header, f"{tarball.name}: the header's AGENTSTREAM_VERSION is not {version}")
    for pc in ("agentstream", "agentstream-static"):
        text = files.get(f"{top}/lib/pkgconfig/{pc}.pc", b"").decode()
        check("prefix=${pcfiledir}/../..\n" in text, f"{tarball.name}: {pc}.pc is not relocatable (prefix=${{pcfiledir}}/../..)")
        check(f"\nVersion: {version}\n" in text, f"{tarball.name}: {pc}.pc does not say Version: {version}")
        check(not re.search(r"@[A-Z_]+@", text), f"{tarball.name}: {pc}.pc has an unreplaced @…@")


def go(dist: Path, version: str) -> None:
    lists = sorted((dist / "go" / "proxy").glob("**/@v/list"))
    check(len(lists) == 1, f"expected one Go module in {dist}/go/proxy, found {len(lists)}")
    if len(lists) != 1:
        return
    versions = lists[0].parent
    check(lists[0].read_text().split() == [f"v{version}"], f"{lists[0]}: does not list v{version}")
    archive = versions / f"v{version}.zip"
    check(archive.exists(), f"no {archive}")
    if not archive.exists():
        return
    with zipfile.ZipFile(archive) as zf:
        names = zf.namelist()
        prefixes = {n.split("/@")[0] if "/@" in n else n.split("@")[0] for n in names}
        check(len(prefixes) == 1, f"{archive.name}: files of more than one module: {prefixes}")
        module_files = {n.split(f"@v{version}/", 1)[1]: n for n in names}
        check("go.mod" in module_files, f"{archive.name}: no go.mod")
        sources = {k: zf.read(v).decode() for k, v in module_files.items() if k.endswith(".go")}
    check(any("#cgo pkg-config: agentstream\n" in s for s in sources.values()), f"{archive.name}: no `#cgo pkg-config: agentstream`")
    for name, text in sources.items():
        check("${SRCDIR}/.." not in text and "target/release" not in text,
              f"{archive.name}: {name} reaches into the build tree (${{SRCDIR}}/.. or target/release)")


def java(dist: Path, version: str) -> None:
    """The jar (when dist-java ran): its library, its classes loadable by Java 22, its license."""
    if not (dist / "java").exists():
        return
    jar = one(dist / "java", f"agentstream-{version}.jar")
    if not jar:
        return
    with zipfile.ZipFile(jar) as zf:
        names = set(zf.namelist())
        library = "native/linux-x86_64/libagentstream.so"
        check(library in names, f"{jar.name}: no {library}")
        check("META-INF/LICENSE" in names, f"{jar.name}: no META-INF/LICENSE")
        if library in names:
            elf_facts(zf.read(library), f"{jar.name}:{library}")
        newer = sorted(n for n in names if n.endswith(".class") and int.from_bytes(zf.read(n)[6:8], "big") > JAVA_22_CLASS_VERSION)
        check(not newer, f"{jar.name}: {len(newer)} classes Java 22 cannot load (class file version over {JAVA_22_CLASS_VERSION}), e.g. {newer[:1]}")


def csharp(dist: Path) -> None:
    """dist/csharp (when dist-csharp ran): the assembly, its docs, the library beside it, the license."""
    folder = dist / "csharp"
    if not folder.exists():
        return
    for required in ("Agentstream.dll", "Agentstream.xml", "libagentstream.so", "README.md", "LICENSE"):
        check((folder / required).exists(), f"{folder}: no {required}")
    if (folder / "libagentstream.so").exists():
        elf_facts((folder / "libagentstream.so").read_bytes(), "csharp/libagentstream.so")


def checksums(dist: Path) -> None:
    lines = []
    for path in sorted(p for p in dist.rglob("*") if p.is_file() and p.name != "SHA256SUMS"):
        lines.append(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.relative_to(dist)}")
    (dist / "SHA256SUMS").write_text("\n".join(lines) + "\n")


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: python3 packaging/check_dist.py DIST_DIR VERSION")
    dist, version = Path(sys.argv[1]), sys.argv[2]
    python(dist, version)
    node(dist, version)
    c(dist, version)
    go(dist, version)
    java(dist, version)
    csharp(dist)
    if failures:
        print("check_dist: the artifacts are not right:", file=sys.stderr)
        for f in failures:
            print(f"  {f}", file=sys.stderr)
        sys.exit(1)
    checksums(dist)
    artifacts = sorted(p.relative_to(dist) for p in dist.rglob("*") if p.is_file() and "proxy" not in p.parts)
    print(f"check_dist: {version}: every artifact checked (glibc <= {MAX_GLIBC[0]}.{MAX_GLIBC[1]}); dist/SHA256SUMS written")
    for a in artifacts:
        print(f"  dist/{a}")


if __name__ == "__main__":
    main()
