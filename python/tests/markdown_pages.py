"""The project's Markdown pages as the docs tests read them: fenced code blocks with the marker
line before each, links, and headings' anchors by GitHub's rules (docs/README.md, "Code blocks
in these pages")."""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([^\s`]*)")
MARKER = re.compile(r"^\s*<!--\s*(not run|recipe):\s*(.*?)\s*-->\s*$")


@dataclass
class Block:
    """A fenced code block: its language, code (indentation removed), first line (1-based) and
    the marker before it: ("not run", reason), ("recipe", name) or None."""
    language: str
    code: str
    line: int
    marker: Optional[tuple]


def blocks(text: str) -> list:
    """The fenced code blocks of a Markdown text, in order."""
    lines = text.split("\n")
    found, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence, language = opening.groups()
        previous = next((line for line in reversed(lines[:i]) if line.strip()), "")
        marked = MARKER.match(previous)
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence[:3]):
            end += 1
        code = "\n".join(line[len(indent):] if line.startswith(indent) else line.lstrip()
                         for line in lines[i + 1:end])
        found.append(Block(language, code + "\n", i + 1, marked.groups() if marked else None))
        i = end + 1
    return found


def without_fences(text: str) -> str:
    """The text with its fenced code blocks blanked, line numbers kept."""
    out, inside, fence = [], False, ""
    for line in text.split("\n"):
        opening = FENCE.match(line)
        if opening and (not inside or line.strip().startswith(fence[:3])):
            inside, fence = (not inside), opening.group(2)
            out.append("")
            continue
        out.append("" if inside else line)
    return "\n".join(out)


def prose(text: str) -> str:
    """The text without its fenced code blocks and inline code spans (their brackets are not
    links), line numbers kept."""
    return re.sub(r"(`+)(?:(?!\1).)+?\1", "``", without_fences(text))


LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)


def links(text: str) -> list:
    """(line, target) of every inline and reference-style link outside code."""
    body = prose(text)
    found = []
    for pattern in (LINK, REFERENCE):
        for match in pattern.finditer(body):
            found.append((body.count("\n", 0, match.start()) + 1, match.group(1)))
    return found


def anchors(text: str) -> set:
    """The anchors GitHub gives a page: each heading's text (a link's text, no HTML tags)
    lower-cased, every character but letters, digits, '_', '-' and spaces removed, spaces made
    '-', a repeated one suffixed -1, -2, ...; and explicit <a name|id="..."> anchors."""
    seen, result = {}, set(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", text))
    for line in without_fences(text).split("\n"):
        heading = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not heading:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1))
        title = re.sub(r"<[^>]+>", "", title)
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def guides() -> list:
    """The README and the guides docs/README.md lists under "Guides, by use", and the index."""
    index = (DOCS / "README.md").read_text()
    section = index.split("\n## Guides, by use\n", 1)[1].split("\n## ", 1)[0]
    names = re.findall(r"\]\(([A-Z][\w-]*\.md)\)", section)
    return [ROOT / "README.md", DOCS / "README.md"] + [DOCS / name for name in names]
