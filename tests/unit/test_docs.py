"""The README stays a lean front page, and the documentation's links hold.

- README.md is under 250 lines; the rest lives in docs/, and every docs/*.md is linked from it;
- every relative link and image in README.md and docs/*.md names a file of the repository, and a link that names a
  heading (`file.md#anchor`, `#anchor`) names one that file has, as GitHub spells its anchors;
- the Quick start's second command is, word for word, what .ci/run runs (CI runs nothing else).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
MAX_README_LINES = 250

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+).*?\1")
# [text](target) and ![alt](target); the text may hold one level of brackets; an optional "title" after the target
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
HTML_LINK = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
HTML_ANCHOR = re.compile(r"<a\b[^>]*?\b(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//")


def prose(text: str, keep_code_spans: bool = False) -> str:
    """The text outside fenced code blocks, line for line (blank where code was); code spans removed unless kept
    (a heading's `code` is part of its anchor)."""
    lines, fenced = [], None
    for line in text.split("\n"):
        match = FENCE.match(line)
        if fenced is None and match:
            fenced = match.group(1)
            lines.append("")
        elif fenced is not None:
            if match and match.group(1) == fenced:
                fenced = None
            lines.append("")
        else:
            lines.append(line if keep_code_spans else CODE_SPAN.sub("", line))
    return "\n".join(lines)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text as shown, lowercased, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link shows its text
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor a Markdown file has: its headings' (GitHub numbers repeats -1, -2...) and explicit ids."""
    text = path.read_text(encoding="utf-8")
    found, seen = set(), {}
    for line in prose(text, keep_code_spans=True).split("\n"):
        match = re.match(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    found.update(HTML_ANCHOR.findall(text))
    return found


def links(path: Path) -> list[str]:
    text = prose(path.read_text(encoding="utf-8"))
    return INLINE_LINK.findall(text) + REFERENCE_LINK.findall(text) + HTML_LINK.findall(text)


def section(text: str, title: str) -> str:
    """A `## title` section of a Markdown text, up to the next heading of its level or above."""
    match = re.search(rf"^## {re.escape(title)}\s*$(.*?)(?=^#{{1,2}} |\Z)", text, re.MULTILINE | re.DOTALL)
    assert match, f"no section '## {title}'"
    return match.group(1)


def fenced_blocks(text: str) -> list[str]:
    return [block.strip() for block in re.findall(r"^\s*```[^\n]*\n(.*?)^\s*```", text, re.MULTILINE | re.DOTALL)]


def test_the_readme_is_under_250_lines():
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines < MAX_README_LINES, f"README.md has {lines} lines: move detail into docs/"


def test_every_doc_is_linked_from_the_readme():
    assert DOCS, "docs/*.md is empty"
    linked = {(README.parent / target.split("#")[0]).resolve() for target in links(README)
              if not SCHEME.match(target) and target.split("#")[0]}
    missing = [doc.relative_to(ROOT).as_posix() for doc in DOCS if doc.resolve() not in linked]
    assert not missing, f"not linked from README.md: {missing}"


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda path: path.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(path: Path):
    problems = []
    for target in links(path):
        if SCHEME.match(target):
            continue  # https:, mailto: ...: not this test's business
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / file_part).resolve() if file_part else path.resolve()
        if not destination.is_relative_to(ROOT):
            problems.append(f"{target}: outside the repository")
        elif not destination.exists():
            problems.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            problems.append(f"{target}: {destination.relative_to(ROOT).as_posix()} has no heading '#{anchor}'")
    assert not problems, f"{path.relative_to(ROOT).as_posix()}: " + "; ".join(problems)


def test_the_quick_starts_second_command_is_what_ci_runs():
    blocks = fenced_blocks(section(README.read_text(encoding="utf-8"), "Quick start"))
    assert len(blocks) >= 2, "the Quick start has fewer than two commands"
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line.strip() for line in script.splitlines()
                if line.strip() and not line.lstrip().startswith("#")
                and not line.strip().startswith(("set ", "cd "))]
    assert commands == [blocks[1]], f".ci/run runs {commands}, the Quick start says {blocks[1]!r}"


def test_the_slugs_follow_github():
    assert slug("Behind nginx: `hosting/nginx.conf`") == "behind-nginx-hostingnginxconf"
    assert slug("Presets: what each promises, and what it measured") == \
        "presets-what-each-promises-and-what-it-measured"
    assert slug("What was tested here, and what was not") == "what-was-tested-here-and-what-was-not"
