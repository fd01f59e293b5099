#!/usr/bin/env python3
"""Holds the size limits of src/ (issue 45): no file past 1,000 lines before its tests, no
function past 200 lines.

usage: scripts/check-sizes.py

A file's lines before its tests are those before its first line that starts with
`#[cfg(test)]`; a file that is a test module itself (declared `#[cfg(test)] mod NAME;` by its
parent) is left out. A function is counted from the line of its `fn` to the line of its closing
brace, found outside comments, strings (raw ones too) and character literals; a function inside
another counts in both. Prints each file and function past its limit as `file:line: …`; exit
code 0 when none is, 1 otherwise. Python 3 standard library only.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
MAX_FILE_LINES = 1000
MAX_FN_LINES = 200


def blank_literals(text):
    """`text` with every comment, string and character literal's content replaced by spaces
    (newlines kept), so braces and `fn` are only the code's."""
    out = []
    i, n = 0, len(text)

    def blank(s):
        return "".join(c if c == "\n" else " " for c in s)

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(text[i:j]))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(text[i:j]))
            i = j
        elif (m := re.compile(r'b?r(#*)"').match(text, i)) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + m.group(1)
            j = text.find(end, m.end())
            j = n if j < 0 else j + len(end)
            out.append(blank(text[i:j]))
            i = j
        elif c == '"' or (c == "b" and text.startswith('b"', i) and (i == 0 or not text[i - 1].isalnum())):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(blank(text[i : j + 1]))
            i = j + 1
        elif c == "'":
            # A character literal ('x', '\n', '\u{1F600}', '{'), else a lifetime ('a).
            m = re.compile(r"'(\\(u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'").match(text, i)
            if m:
                out.append(blank(m.group(0)))
                i = m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def test_module_files():
    """Files that are `#[cfg(test)] mod NAME;` of their parent."""
    out = set()
    for folder, _, files in os.walk(SRC):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(folder, f)
            lines = open(path, encoding="utf-8").read().split("\n")
            base = folder if f in ("mod.rs", "lib.rs", "main.rs") else os.path.join(folder, f[:-3])
            for a, b in zip(lines, lines[1:]):
                m = re.match(r"\s*(pub(\(\w+\))?\s+)?mod\s+(\w+)\s*;", b)
                if a.strip().startswith("#[cfg(test)]") and m:
                    name = m.group(3)
                    out.add(os.path.join(base, name + ".rs"))
                    out.add(os.path.join(base, name, "mod.rs"))
    return out


def check(path):
    """The limits `path` passes, as `file:line: …` strings."""
    rel = os.path.relpath(path, ROOT)
    text = open(path, encoding="utf-8").read()
    lines = text.split("\n")
    before = next((i for i, l in enumerate(lines) if l.startswith("#[cfg(test)]")), len(lines))
    out = []
    if before > MAX_FILE_LINES:
        out.append(f"{rel}:1: {before} lines before its tests (at most {MAX_FILE_LINES})")
    code = blank_literals("\n".join(lines[:before]))
    for m in re.finditer(r"\bfn\s+(\w+)", code):
        depth, j = 0, m.end()
        while j < len(code) and code[j] not in "{;":
            j += 1
        if j >= len(code) or code[j] == ";":
            continue
        while j < len(code):
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        first = code.count("\n", 0, m.start()) + 1
        last = code.count("\n", 0, j) + 1
        if last - first + 1 > MAX_FN_LINES:
            out.append(f"{rel}:{first}: fn {m.group(1)} is {last - first + 1} lines (at most {MAX_FN_LINES})")
    return out


def main():
    skip = test_module_files()
    found = []
    for folder, _, files in sorted(os.walk(SRC)):
        for f in sorted(files):
            path = os.path.join(folder, f)
            if f.endswith(".rs") and path not in skip:
                found.extend(check(path))
    for line in found:
        print(line)
    if found:
        return 1
    print(f"no file of src/ past {MAX_FILE_LINES} lines before its tests, no fn past {MAX_FN_LINES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
