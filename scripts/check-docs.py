#!/usr/bin/env python3
"""Checks the README and docs/: no dead link, no path that does not exist, a short README; and,
after a rewrite, that no fact of an earlier README was lost.

usage: scripts/check-docs.py                 (what CI runs)
       scripts/check-docs.py --against REV   (also compare with REV's README.md)

1. Every relative link in README.md and docs/*.md must name an existing file, and an anchor
   (`file.md#heading`) a heading of that file (GitHub's anchor rules: lower case, punctuation
   dropped, spaces to dashes).
2. Every path in backticks in README.md and docs/*.md must exist: one that starts with a folder
   of the repository (`src/runner/trial/agent.rs`, `scripts/docker-up.sh`) as written; a shorter
   one naming a Rust file or a folder of the code (`trial/agent.rs`, `screens/`) as the end of some
   path under src/, tests/ or benches/. Paths with placeholders (`<name>`, `*`, `{a,b}`) are not
   checked.
3. README.md has fewer than 300 lines (the commands' table points to `--help` and docs/).
4. With --against REV: every sentence, list item and table row of REV's README.md must appear,
   whitespace-normalised, in README.md or some docs/*.md (text reflowed across lines still
   matches). Units deliberately rewritten are listed in scripts/check-docs.allowed.
Exit code 0 when all hold, 1 otherwise. Python 3 standard library only.
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


TOP = ("src/", "tests/", "scripts/", "data/", "docs/", "themes/", "benches/", "plans/",
       "screenshots/", ".ci/")


def code_paths():
    """Every file and folder under src/, tests/ and benches/, relative to the root."""
    out = set()
    for top in ("src", "tests", "benches"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
            rel = os.path.relpath(dirpath, ROOT)
            out.add(rel + "/")
            for f in filenames:
                out.add(os.path.join(rel, f))
    return out


# A task's own files (`tests/test.sh` of a SkillsBench task) are not this repository's.
TEST_DIRS = ("tests/offline/", "tests/docker/", "tests/terminal/", "tests/live/",
             "tests/settings/", "tests/support/", "tests/fixtures/", "tests/harbor/",
             "tests/acontext/")


def allowed_paths():
    """Paths other projects own that docs/ names on purpose (`path <p>` lines of the allow file)."""
    f = os.path.join(ROOT, "scripts", "check-docs.allowed")
    if not os.path.exists(f):
        return set()
    return {l.split(None, 1)[1].strip() for l in open(f, encoding="utf-8") if l.startswith("path ")}


def missing_paths(files):
    """(file, path) of every backticked path in `files` that names nothing."""
    known = code_paths()
    allowed = allowed_paths()
    out = []
    for f, text in files.items():
        for m in re.finditer(r"`([^`\s]+)`", text):
            p = m.group(1).rstrip(".,;:")
            if any(c in p for c in "<>*{}$=(") or p.startswith(("/", "-", "~")) or p in allowed:
                continue
            if p.startswith("tests/") and not p.startswith(TEST_DIRS):
                continue
            if p.startswith(TOP):
                if not os.path.exists(os.path.join(ROOT, p)):
                    out.append((f, p))
            elif re.fullmatch(r"[\w.-]+(/[\w.-]+)*\.rs", p):
                if not any(k == p or k.endswith("/" + p) for k in known):
                    out.append((f, p))
    return out


def main():
    args = sys.argv[1:]
    files = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    new = {f: open(f, encoding="utf-8").read() for f in files}
    missing = []
    if args[:1] == ["--against"] and len(args) == 2:
        rev = args[1]
        old = subprocess.run(
            ["git", "show", f"{rev}:README.md"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        haystack = norm(" ".join(norm(t) for t in new.values()))
        # Headings may be demoted and table rows reflowed; compare without heading marks.
        allowed_file = os.path.join(ROOT, "scripts", "check-docs.allowed")
        allowed = set()
        if os.path.exists(allowed_file):
            for line in open(allowed_file, encoding="utf-8"):
                if line.strip() and not line.startswith("#"):
                    allowed.add(norm(line))
        missing = [u for u in units(old) if u not in haystack and u not in allowed]
        for u in missing:
            print(f"missing from README.md and docs/: {u}")
    elif args:
        print("usage: scripts/check-docs.py [--against REV]", file=sys.stderr)
        return 2

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
    gone = missing_paths(new)
    for f, p in gone:
        print(f"no such path: {os.path.relpath(f, ROOT)}: `{p}`")
    readme_lines = new[files[0]].count("\n")
    long_readme = readme_lines >= 300
    if long_readme:
        print(f"README.md has {readme_lines} lines: keep it under 300")
    print(
        f"README.md: {readme_lines} lines; {len(missing)} missing, {len(dead)} dead links, "
        f"{len(gone)} paths that do not exist"
    )
    return 1 if missing or dead or gone or long_readme else 0


if __name__ == "__main__":
    sys.exit(main())
