"""Every relative link and #anchor of README.md and docs/*.md resolves: the file or folder
exists in the checkout, and the anchor is one of the target page's by GitHub's rules
(markdown_pages.anchors)."""

from pathlib import Path
from urllib.parse import unquote

import pytest

from markdown_pages import DOCS, ROOT, anchors, links

PAGES = [ROOT / "README.md"] + sorted(DOCS.glob("*.md"))


def broken_links(page: Path) -> list:
    """'page:line: target (why)' for each link of `page` that does not resolve."""
    broken = []
    for line, target in links(page.read_text()):
        if ":" in target.split("/")[0] or target.startswith("//"):
            continue  # a URL (https:, mailto:), not the checkout's
        path, _, anchor = target.partition("#")
        resolved = (page.parent / unquote(path)).resolve() if path else page
        where = f"{page.relative_to(ROOT)}:{line}: {target}"
        if not resolved.exists():
            broken.append(f"{where} (no such file)")
        elif ROOT not in resolved.parents and resolved != ROOT:
            broken.append(f"{where} (outside the repository)")
        elif anchor and resolved.suffix == ".md" and unquote(anchor) not in anchors(
                resolved.read_text()):
            broken.append(f"{where} (no such anchor)")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page):
    assert broken_links(page) == []


def test_anchors_follow_githubs_rules():
    page = ("# Top\n## `stoker doctor`\n## pipeline/ — the data path\n## Top\n"
            "## The fast mode's pixels\n## A [link](x.md) and <b>tags</b>\n"
            "```\n# not a heading\n```\n")
    assert anchors(page) == {"top", "stoker-doctor", "pipeline--the-data-path", "top-1",
                             "the-fast-modes-pixels", "a-link-and-tags"}


def test_a_broken_link_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr("test_docs_links.ROOT", tmp_path)
    (tmp_path / "b.md").write_text("# Here\n")
    page = tmp_path / "a.md"
    page.write_text("[ok](b.md#here) [gone](c.md) [bad](b.md#there) `[code](d.md)`\n"
                    "[url](https://example.org/x) [self](#nowhere)\n")
    assert broken_links(page) == ["a.md:1: c.md (no such file)",
                                  "a.md:1: b.md#there (no such anchor)",
                                  "a.md:2: #nowhere (no such anchor)"]
