"""The figures the docs quote are what the code prints (issue 27): docs/generate.py rewrites the marked regions of
README.md and docs/*.md (``make docs``); here the same check fails with a diff when one has drifted."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)


@pytest.mark.integration
def test_the_docs_quote_what_the_code_prints():
    """Every generated region (the README's answer and screenshot line, GTC2026's tiers table and plan totals,
    OPTIMIZER's max_platforms figures) and the screenshot's stored answer match a fresh solve: `make docs` fixes a
    failure."""
    problems = generate.check()
    assert problems == [], "\n\n".join(problems) + "\n\nrun `make docs` and commit what it rewrites"


def test_the_docs_have_generated_regions():
    readme = (ROOT / "README.md").read_text()
    specs = [m.group("spec").split()[0] for m in generate.REGION.finditer(readme)]
    assert "answer" in specs and "screenshot" in specs
    assert "docs/report.png" in readme
    # the Quick start keeps its two commands
    quick = readme.split("## Quick start", 1)[1].split("```", 2)[1]
    assert [line.split()[:2] for line in quick.splitlines()[1:] if line.strip()] == [["make", "demo"], ["make", "test"]]
    for path in generate.doc_files():
        for m in generate.REGION.finditer(path.read_text()):
            assert m.group("spec").split()[0] in generate.GENERATORS, (path, m.group("spec"))


def test_a_drifted_figure_is_caught_and_rewritten(monkeypatch, tmp_path):
    monkeypatch.setitem(generate.GENERATORS, "fake", lambda plans, args: f"{len(args)} racks")
    doc = tmp_path / "doc.md"
    doc.write_text("Inline: <!-- generated: fake a b -->3 racks<!-- end generated -->.\n"
                   "<!-- generated: fake a -->\nold block\n<!-- end generated -->\n")
    monkeypatch.setattr(generate, "ROOT", tmp_path)
    monkeypatch.setattr(generate, "doc_files", lambda: [doc])
    problems = generate.run(write=False, plans=object())
    assert len(problems) == 2
    assert "-3 racks" in problems[0] and "+2 racks" in problems[0] and "fake a b" in problems[0]
    assert "-old block" in problems[1] and "+1 racks" in problems[1]
    assert "3 racks" in doc.read_text()  # the check rewrites nothing
    assert generate.run(write=True, plans=object()) == []
    assert doc.read_text() == ("Inline: <!-- generated: fake a b -->2 racks<!-- end generated -->.\n"
                               "<!-- generated: fake a -->\n1 racks\n<!-- end generated -->\n")
    assert generate.run(write=False, plans=object()) == []


def test_an_unknown_generator_is_named(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="unknown generator 'nope'"):
        generate.render_regions("<!-- generated: nope x -->1<!-- end generated -->", object(), "doc.md")


def test_a_screenshot_not_written_by_the_script_reads_as_stale(tmp_path):
    from PIL import Image

    png = tmp_path / "old.png"
    Image.new("RGB", (4, 4)).save(png)
    assert generate.image_answer(png) is None
    assert generate.image_answer(ROOT / "docs" / "report.png")  # the committed one carries its answer
