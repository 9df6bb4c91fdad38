"""Every code block of the README and the guides runs as written (docs/README.md, "Code blocks
in these pages"): per page, in order, in one scratch folder holding a tiny dataset, an image
folder and the built `stoker` command; `sh` blocks under bash -e, `python` blocks each in a
fresh namespace of one interpreter per page (as a reader's session; torch is imported once). A
block that cannot run here carries `<!-- not run: REASON -->`."""

import json
import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

import stoker
from markdown_pages import ROOT, Block, blocks, guides

RUN = {"sh": "sh", "bash": "sh", "python": "python"}
NOT_CODE = {"text"}  # output and synopses


def stoker_cli() -> Path:
    """The `stoker` binary of the build: $STOKER_CLI, else $STOKER_BUILD_DIR/stoker (build/)."""
    return Path(os.environ.get("STOKER_CLI") or
                ROOT / os.environ.get("STOKER_BUILD_DIR", "build") / "stoker")


def unmarked_blocks(page: Path) -> list:
    """'page:line' of each block that neither runs here nor says why."""
    return [f"{page.relative_to(ROOT)}:{block.line} ({block.language or 'no language'})"
            for block in blocks(page.read_text())
            if block.marker is None and block.language not in RUN and
            block.language not in NOT_CODE]


def make_scratch(folder: Path) -> None:
    """The examples' inputs (examples/doc_inputs.py, the command the README names) and the CLI
    as build/stoker and as `stoker` on bin/."""
    subprocess.run([sys.executable, str(ROOT / "examples" / "doc_inputs.py"), str(folder)],
                   check=True)
    for place in (folder / "build", folder / "bin"):
        place.mkdir()
        (place / "stoker").symlink_to(stoker_cli())


# The page's interpreter: runs each block file named on stdin, answers on fd ARGV[1] with
# {"ok", "error"}; what the blocks print goes to its stdout.
INTERPRETER = """
import json, os, sys, traceback
answers = os.fdopen(int(sys.argv[1]), "w")
for path in sys.stdin:
    path = path.strip()
    try:
        exec(compile(open(path).read(), path, "exec"), {"__name__": "__main__"})
        answer = {"ok": True, "error": ""}
    except BaseException:
        answer = {"ok": False, "error": traceback.format_exc()}
    sys.stdout.flush()
    sys.stderr.flush()
    answers.write(json.dumps(answer) + "\\n")
    answers.flush()
"""
TIMEOUT = 600  # seconds a block may take: generous, for a loaded machine; no timing is checked


class Session:
    """Runs a page's blocks in order in `folder`: python blocks in one interpreter, sh blocks
    under bash -e; a failing block fails the test naming the page, line and output."""

    def __init__(self, page: Path, folder: Path, env: dict):
        self.page, self.folder, self.env = page, folder, env
        self.log = folder / "python-output.txt"
        read, write = os.pipe()
        with open(self.log, "w") as log:
            self.python = subprocess.Popen([sys.executable, "-c", INTERPRETER, str(write)],
                                           cwd=folder, env=env, stdin=subprocess.PIPE,
                                           stdout=log, stderr=subprocess.STDOUT, text=True,
                                           pass_fds=[write])
        os.close(write)
        self.answers = os.fdopen(read)

    def close(self):
        self.python.stdin.close()
        self.python.wait(timeout=TIMEOUT)
        self.answers.close()

    def fail(self, block: Block, output: str):
        pytest.fail(f"{self.page.relative_to(ROOT)}:{block.line}:\n{block.code}\n{output[-4000:]}",
                    pytrace=False)

    def run(self, block: Block) -> None:
        if RUN[block.language] == "sh":
            done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.code],
                                  cwd=self.folder, env=self.env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT)
            if done.returncode != 0:
                self.fail(block, f"exit {done.returncode}\n{done.stdout}")
            return
        script = self.folder / f"{self.page.stem}-{block.line}.py"
        script.write_text(block.code)
        start = self.log.stat().st_size
        self.python.stdin.write(f"{script}\n")
        self.python.stdin.flush()
        if not select.select([self.answers], [], [], TIMEOUT)[0]:
            self.python.kill()
            self.fail(block, f"no answer in {TIMEOUT} s")
        line = self.answers.readline()
        if not line:
            self.fail(block, f"the interpreter exited: {self.log.read_text()}")
        answer = json.loads(line)
        if not answer["ok"]:
            with open(self.log) as log:
                log.seek(start)
                self.fail(block, f"{log.read()}\n{answer['error']}")


@pytest.mark.parametrize("page", guides(), ids=lambda page: str(page.relative_to(ROOT)))
def test_every_code_block_runs_or_says_why_not(page, tmp_path):
    assert unmarked_blocks(page) == []
    runnable = [b for b in blocks(page.read_text()) if b.marker is None and b.language in RUN]
    if not runnable:
        return
    if not stoker_cli().exists():
        pytest.skip(f"no stoker command at {stoker_cli()} (build the target stoker_cli)")
    make_scratch(tmp_path)
    package = str(Path(stoker.__file__).resolve().parents[1])
    env = dict(os.environ, PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
               PYTHONPATH=os.pathsep.join(filter(None, [package, os.environ.get("PYTHONPATH")])),
               STOKER_DATA=str(tmp_path / "data-root"), STOKER_CACHE=str(tmp_path / "cache"))
    session = Session(page, tmp_path, env)
    try:
        for block in runnable:
            session.run(block)
    finally:
        session.close()


def test_a_block_without_a_marker_or_a_runnable_language_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr("test_docs_blocks.ROOT", tmp_path)
    page = tmp_path / "page.md"
    page.write_text("```cpp\nint main();\n```\n\n<!-- not run: a GPU -->\n```cpp\nx\n```\n"
                    "```text\nusage\n```\n  ```\n  untagged\n  ```\n")
    assert unmarked_blocks(page) == ["page.md:1 (cpp)", "page.md:12 (no language)"]
    assert [b.marker for b in blocks(page.read_text())] == [None, ("not run", "a GPU"), None,
                                                            None]
