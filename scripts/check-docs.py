#!/usr/bin/env python3
"""Checks the README and docs/ after a rewrite: no fact of an earlier README lost, no dead link.

usage: scripts/check-docs.py [REV]   (REV: a git revision whose README.md is the reference;
                                      default: the last commit before docs/ existed)

1. Every sentence, list item and table row of REV's README.md must appear, whitespace-normalised,
   in README.md or some docs/*.md (text reflowed across lines still matches). Prints those that do
   not.
2. Every relative link in README.md and docs/*.md must name an existing file, and an anchor
   (`file.md#heading`) a heading of that file (GitHub's anchor rules: lower case, punctuation
   dropped, spaces to dashes).
Units that were deliberately rewritten (a renamed path, a table replaced) are listed, one per
line, in scripts/check-docs.allowed with a comment saying why. Exit code 0 when both hold, 1
otherwise. Python 3 standard library only.
"""

import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def norm(s):
    s = s.replace("](../screenshots/", "](screenshots/")
    return re.sub(r"\s+", " ", s).strip()


def units(text):
    """Sentences, list items and table rows of a Markdown text, normalised."""
    out = []
    in_code = False
    para = []

    def flush():
        if para:
            joined = norm(" ".join(para))
            # Sentences end with '. ' followed by a capital or a backtick; split there.
            for part in re.split(r"(?<=[.!?])\s+(?=[A-Z`*(\[])", joined):
                if len(part) > 3:
                    out.append(part)
            para.clear()

    for line in text.split("\n"):
        if line.startswith("```"):
            flush()
            in_code = not in_code
            continue
        if in_code:
            if line.strip():
                out.append(norm(line))
            continue
        stripped = line.strip()
        if not stripped:
            flush()
        elif stripped.startswith("|") or stripped.startswith("#"):
            flush()
            out.append(norm(stripped.lstrip("#").strip() if stripped.startswith("#") else stripped))
        elif re.match(r"^([-*]|\d+\.)\s", stripped):
            flush()
            para.append(re.sub(r"^([-*]|\d+\.)\s+", "", stripped))
        else:
            para.append(stripped)
    flush()
    return out


def anchor(heading):
    h = heading.strip().lower()
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def main():
    rev = sys.argv[1] if len(sys.argv) > 1 else None
    if rev is None:
        rev = subprocess.run(
            ["git", "log", "--diff-filter=A", "--format=%H", "--", "docs/architecture.md"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout.split()[-1] + "~1"
    old = subprocess.run(
        ["git", "show", f"{rev}:README.md"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    files = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    new = {f: open(f, encoding="utf-8").read() for f in files}
    haystack = norm(" ".join(norm(t) for t in new.values()))
    # Headings may be demoted and table rows reflowed; compare without Markdown heading marks.
    allowed_file = os.path.join(ROOT, "scripts", "check-docs.allowed")
    allowed = set()
    if os.path.exists(allowed_file):
        for line in open(allowed_file, encoding="utf-8"):
            if line.strip() and not line.startswith("#"):
                allowed.add(norm(line))
    missing = [u for u in units(old) if u not in haystack and u not in allowed]
    for u in missing:
        print(f"missing from README.md and docs/: {u}")

    dead = []
    for f, text in new.items():
        for m in re.finditer(r"\]\(([^)\s]+)\)", text):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, frag = target.partition("#")
            full = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            if not os.path.exists(full):
                dead.append(f"{os.path.relpath(f, ROOT)}: {target} (no such file)")
                continue
            if frag and full.endswith(".md"):
                heads = [anchor(h) for h in re.findall(r"^#+\s+(.*)$", open(full, encoding="utf-8").read(), re.M)]
                if frag not in heads:
                    dead.append(f"{os.path.relpath(f, ROOT)}: {target} (no such heading)")
    for d in dead:
        print(f"dead link: {d}")
    readme_lines = new[files[0]].count("\n")
    print(f"README.md: {readme_lines} lines; {len(missing)} missing, {len(dead)} dead links")
    return 1 if missing or dead else 0


if __name__ == "__main__":
    sys.exit(main())
