#!/usr/bin/env python3
"""Dependencies that no crate of the workspace uses (run by `make lint-deps`).

What cargo-machete does with `--with-metadata`, without building it (70 CPU-s of every cold
`make test`, in its busiest phase): for each workspace crate, each dependency it declares
(normal, dev and build) is used when its library name, as `cargo metadata` resolves it (a
rename, else the package's lib target), appears in a `.rs` file under the crate's directory as
a path (`name::`) or after `use` or `extern crate`, outside `//` comments. A crate lists what
only its doc comments use (doc tests) under `[package.metadata.cargo-machete] ignored`, as for
cargo-machete.

Exit 1 naming each unused dependency and its manifest; 0 when there is none.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path


def lib_names(metadata: dict) -> dict[str, str]:
    """Package name -> its library's crate name (a package without a lib: its name)."""
    names = {}
    for package in metadata["packages"]:
        lib = next((t["name"] for t in package["targets"]
                    if set(t["kind"]) & {"lib", "rlib", "dylib", "proc-macro", "cdylib", "staticlib"}), package["name"])
        names.setdefault(package["name"], lib.replace("-", "_"))
    return names


def sources(root: Path, others: list[Path]) -> str:
    """Every `.rs` file under a crate's directory, but `target/`'s and those of the workspace
    crates nested in it (`others`)."""
    texts = []
    for path in root.rglob("*.rs"):
        if "target" in path.relative_to(root).parts or any(path.is_relative_to(o) for o in others):
            continue
        # Comments are no use (a doc comment's example is a doc test: `ignored`). A `//` after
        # `:` is a URL's, in a string.
        texts.append(re.sub(r"(?<!:)//.*", "", path.read_text(errors="replace")))
    return "\n".join(texts)


def used(name: str, text: str) -> bool:
    n = re.escape(name)
    return re.search(rf"(?<![A-Za-z0-9_]){n}\s*::|\b(?:use|extern\s+crate)\s+(?:::)?{n}\b", text) is not None


def main() -> int:
    out = subprocess.run(["cargo", "metadata", "--format-version", "1", "--locked"],
                         check=True, capture_output=True, text=True).stdout
    metadata = json.loads(out)
    libs = lib_names(metadata)
    members = set(metadata["workspace_members"])
    unused = []
    roots = {p["id"]: Path(p["manifest_path"]).parent for p in metadata["packages"] if p["id"] in members}
    for package in metadata["packages"]:
        if package["id"] not in members:
            continue
        root = roots[package["id"]]
        others = [r for r in roots.values() if r != root and r.is_relative_to(root)]
        text = sources(root, others)
        ignored = set(((package.get("metadata") or {}).get("cargo-machete") or {}).get("ignored", []))
        for dep in {d["name"]: d for d in package["dependencies"]}.values():
            if dep["name"] in ignored:
                continue
            name = (dep.get("rename") or "").replace("-", "_") or libs.get(dep["name"], dep["name"].replace("-", "_"))
            if not used(name, text):
                unused.append(f"{package['manifest_path']}: {dep['name']} (as {name})")
    if unused:
        print("unused_deps: dependencies no source file of their crate uses:", file=sys.stderr)
        for line in unused:
            print(f"  {line}", file=sys.stderr)
        print("  (remove them, or list one that only a doc test uses under "
              "[package.metadata.cargo-machete] ignored)", file=sys.stderr)
        return 1
    print(f"unused_deps: every dependency of the {len(members)} workspace crates is used")
    return 0


if __name__ == "__main__":
    sys.exit(main())
