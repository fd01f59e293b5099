#!/usr/bin/env python3
"""Finds import cycles between the files of one folder of src/ (issue 19: "no import cycles
between files of one folder that a split can remove").

usage: scripts/check-cycles.py

A file (or a module folder, counted with everything under it) imports a sibling when its code,
outside comments and `#[cfg(test)]` modules, names `super::<sibling>`, `super::{…, <sibling>, …}`
or the sibling's full `crate::…::<sibling>` path. Prints each folder whose siblings import each
other in a loop, with the members of the loop. A textual check, not the compiler's: a sibling
named only through a `use` of its parent's re-export is not seen. Exit code 0 without cycles, 1
with. Python 3 standard library only.
"""

import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def modules():
    """{folder module path (tuple): {module name: source text}} for every file under src/."""
    out = {}
    for d, _, files in os.walk(ROOT):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(d, f)
            parts = os.path.relpath(path, ROOT)[:-3].split(os.sep)
            if parts[-1] == "mod":
                parts = parts[:-1]
            if parts in (["lib"], ["main"]) or not parts:
                continue
            with open(path, encoding="utf-8") as fh:
                out.setdefault(tuple(parts[:-1]), {})[parts[-1]] = fh.read()
    return out


def code_of(text):
    """The text without its `#[cfg(test)] mod …` (everything after the first; a `#[cfg(test)]`
    on a single item keeps the rest) and without comment lines."""
    text = re.split(r"#\[cfg\(test\)\]\s*mod\s", text)[0]
    return "\n".join(l for l in text.split("\n") if not l.strip().startswith("//"))


def main():
    mods = modules()
    found = False
    for folder, files in sorted(mods.items()):
        names = sorted(files)

        def text_of(name):
            sub = folder + (name,)
            texts = [files[name]] + [
                t for f2, ms in mods.items() if f2[: len(sub)] == sub for t in ms.values()
            ]
            return "\n".join(code_of(t) for t in texts)

        base = re.escape("crate::" + "".join(p + "::" for p in folder))
        edges = {}
        for a in names:
            code = text_of(a)
            edges[a] = {
                b
                for b in names
                if b != a
                and re.search(
                    rf"({base}{b}\b|{base}\{{[^}}]*\b{b}\b|super::{b}\b|super::\{{[^}}]*\b{b}\b)",
                    code,
                )
            }

        def reaches(a):
            seen, stack = set(), [a]
            while stack:
                for z in edges[stack.pop()]:
                    if z not in seen:
                        seen.add(z)
                        stack.append(z)
            return seen

        loop = [a for a in names if a in reaches(a)]
        if loop:
            found = True
            where = "src/" + "/".join(folder) if folder else "src"
            print(f"cycle in {where}: {', '.join(loop)}")
    if not found:
        print("no import cycles between the files of one folder")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
