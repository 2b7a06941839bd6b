"""The documentation is checked like code: the settings table is rendered from the settings
class, the front door stays short, every relative link lands on a file (and heading) that
exists, and the repository names nothing outside itself."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from faultgraph.service.config import settings_table

ROOT = Path(__file__).resolve().parent.parent
READMES = ["README.md", "service/README.md", "attribution/README.md", "ingest/README.md", "simulate/README.md",
           "deploy/README.md"]
# Documents a part README links to; their links are checked too.
DOCS = [*READMES, "service/PERFORMANCE.md"]
START, END = "<!-- settings:start -->", "<!-- settings:end -->"

FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`+[^`\n]*`+")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def prose(text: str) -> str:
    """The text without fenced blocks, where `# comments` and `[x](y)` are not Markdown."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(prose(path.read_text(encoding="utf-8"))):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[str]:
    return LINK.findall(CODE_SPAN.sub("", prose(path.read_text(encoding="utf-8"))))


def test_settings_table_in_the_service_readme_is_rendered_from_the_settings_class() -> None:
    text = (ROOT / "service/README.md").read_text(encoding="utf-8")
    assert text.count(START) == 1 and text.count(END) == 1, "one settings:start and one settings:end marker"
    documented = text.split(START, 1)[1].split(END, 1)[0].strip()
    assert documented == settings_table().strip(), (
        "service/README.md's settings table differs from the settings class; paste the output of "
        "`python -c \"from faultgraph.service.config import settings_table; print(settings_table())\"`"
    )


def test_the_front_door_is_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines < 250, f"README.md has {lines} lines; details belong in the part READMEs"


@pytest.mark.parametrize("readme", DOCS)
def test_every_relative_link_lands_on_a_file_and_heading_that_exist(readme: str) -> None:
    source = ROOT / readme
    broken = []
    for target in links(source):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (source.parent / file_part).resolve() if file_part else source
        if not dest.is_relative_to(ROOT):
            broken.append(f"{target}: outside the repository")
        elif not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with that anchor in {dest.relative_to(ROOT)}")
    assert not broken, f"{readme}: " + "; ".join(broken)


def test_the_readme_links_every_part_readme() -> None:
    targets = {t.partition("#")[0] for t in links(ROOT / "README.md")}
    assert set(READMES[1:]) <= targets


def committed_files() -> list[Path]:
    """Markdown and Python files under version control (every such file when git cannot say)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--", "*.md", "*.py"], cwd=ROOT,
                             capture_output=True, check=True, text=True).stdout
        return [ROOT / name for name in out.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", ".venv", "__pycache__", "build", "dist"}
        return [p for p in ROOT.rglob("*") if p.suffix in {".md", ".py"}
                and not skip.intersection(p.relative_to(ROOT).parts) and ".egg-info" not in str(p)]


def test_no_committed_file_names_a_place_outside_the_repository() -> None:
    # Spelled in pieces so that this file does not name them itself.
    forbidden = ["/wo" + "rk/", "../sha" + "red", "the shared " + "folder"]
    files = committed_files()
    assert files, "found no Markdown or Python files"
    offenders = []
    for path in files:
        if not path.exists():  # deleted in the work tree, not yet committed
            continue
        text = path.read_text(encoding="utf-8", errors="replace").lower()
        offenders += [f"{path.relative_to(ROOT)}: {word!r}" for word in forbidden if word in text]
    assert not offenders, "; ".join(offenders)
