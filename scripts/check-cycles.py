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

It also holds the store's seam (issue 29): no file of src/ outside src/store/ names SQL in a
string literal — a statement keyword (`SELECT`, `INSERT INTO`, `UPDATE … SET`, `DELETE FROM`,
`CREATE`/`ALTER`/`DROP TABLE` or `INDEX`, `PRAGMA`, `BEGIN IMMEDIATE`…) in its code outside
`#[cfg(test)]` modules. Each such string is printed as `file:line: …` with the keyword, and the
exit code is 1: the query belongs in a `store/` function returning typed rows.
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


SQL = re.compile(
    r"\b(SELECT|INSERT\s+(?:OR\s+[A-Z]+\s+)?INTO|REPLACE\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM"
    r"|(?:CREATE|ALTER|DROP)\s+(?:UNIQUE\s+)?(?:TABLE|INDEX|VIEW|TRIGGER)|PRAGMA"
    r"|BEGIN\s+(?:IMMEDIATE|EXCLUSIVE|DEFERRED|TRANSACTION))\b"
)


def string_literals(text):
    """(line, contents) of every string literal of Rust source `text` — plain, byte and raw
    (`r#"…"#`) strings; comments, char literals and lifetimes are passed over."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            line += text.count("\n", i, end)
            i = end
        elif c == "'":
            # A char literal ('x', '\'', '\u{..}') or a lifetime ('a): skip either.
            m = re.match(r"'(?:\\.[^']*|[^'\\\n])'", text[i:])
            i += len(m.group(0)) if m else 1
        elif re.match(r"b?r#*\"", text[i:]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r"b?r(#*)\"", text[i:])
            close = '"' + m.group(1)
            start = i + len(m.group(0))
            end = text.find(close, start)
            end = n if end < 0 else end
            out.append((line, text[start:end]))
            line += text.count("\n", i, end)
            i = end + len(close)
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append((line, text[i + 1 : j]))
            line += text.count("\n", i, j)
            i = j + 1
        else:
            i += 1
    return out


def sql_outside_store():
    """`src/…:line: …` for every string literal outside src/store/ (and outside `#[cfg(test)]`
    modules) that names SQL."""
    found = []
    for d, _, files in os.walk(ROOT):
        for f in sorted(files):
            path = os.path.join(d, f)
            rel = os.path.relpath(path, os.path.dirname(ROOT))
            if not f.endswith(".rs") or rel.startswith(os.path.join("src", "store") + os.sep):
                continue
            with open(path, encoding="utf-8") as fh:
                code = re.split(r"#\[cfg\(test\)\]\s*mod\s", fh.read())[0]
            for line, lit in string_literals(code):
                for m in SQL.finditer(lit):
                    at = line + lit.count("\n", 0, m.start())
                    word = " ".join(m.group(1).split())
                    found.append((rel, at, word))
                    break
    return [
        f"{rel}:{at}: SQL ({word}) in a string outside src/store/: move the query into a store/ function"
        for rel, at, word in sorted(found)
    ]


def main():
    sql = sql_outside_store()
    for line in sql:
        print(line)
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
    if not sql:
        print("no SQL in a string outside src/store/")
    return 1 if found or sql else 0


if __name__ == "__main__":
    sys.exit(main())
