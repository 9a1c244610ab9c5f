"""The figures the docs quote, regenerated from the code (issue 27): ``make docs`` rewrites them, ``make docs-check``
(and ``tests/test_docs.py``, in ``make test``) fails with a diff when one has drifted from what the code prints.

A quoted figure lives in a marked region of README.md or docs/*.md::

    <!-- generated: answer scenarios/sovereign-100mw.yaml -->
    ...text this script writes...
    <!-- end generated -->

The first word after ``generated:`` names a generator (``GENERATORS``), the rest are its arguments: a scenario
file, then ``PATH=VALUE`` settings as ``planner solve --set`` takes them. A region may sit inside a sentence
(markers and text on one line) or span lines (a block: the text between the markers starts and ends with a new
line). Each scenario and settings pair is solved once per run, by the library as ``planner solve`` solves it.

The README's screenshot (docs/report.png) is the HTML report of ``planner solve scenarios/sovereign-100mw.yaml
--html``, taken by headless Chromium at 1400 x 2200; the answer it shows is stored in the PNG (a text chunk,
``planner-answer``), so the check tells a stale screenshot from a current one without a browser. Where no
Chromium is installed, ``make docs`` leaves the PNG as it is and says so (the check then fails if it is stale).

    python docs/generate.py            # rewrite every region (and the screenshot)
    python docs/generate.py --check    # exit 1 with a unified diff per drifted region
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

REGION = re.compile(r"<!-- generated: (?P<spec>[^>]*?) -->(?P<body>.*?)<!-- end generated -->", re.S)
IMAGE_KEY = "planner-answer"  # the PNG text chunk holding the answer the screenshot shows
SCREENSHOT_SIZE = "1400,2200"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


class Plans:
    """One solve per (scenario, settings), kept for the run: the plan's interface dict (``Plan.to_dict()``)."""

    def __init__(self):
        self._plans: dict = {}

    def get(self, scenario: str, settings: tuple[str, ...] = ()) -> dict:
        key = (scenario, tuple(settings))
        if key not in self._plans:
            import planner
            from planner.scenario import load_scenario

            sc = load_scenario(str(ROOT / scenario), list(settings))
            self._plans[key] = planner.solve(sc).to_dict()
        return self._plans[key]


def _split(args: list[str]) -> tuple[str, tuple[str, ...]]:
    if not args:
        raise ValueError("needs a scenario file")
    return args[0], tuple(args[1:])


# ---- generators: (plans, args) -> text ------------------------------------------------------------------------------

def answer(plans: Plans, args: list[str]) -> str:
    """The answer ``planner solve SCENARIO`` prints first (its summary lines), as a text block."""
    from planner.report.summary import summary_lines

    from planner.report.buildout import summary_lines as buildout_lines

    scenario, settings = _split(args)
    command = "planner solve " + scenario + "".join(f" --set {s}" for s in settings)
    d = plans.get(scenario, settings)
    lines = buildout_lines(d) if "first_period_order" in d else summary_lines(d)
    return "```text\n$ " + command + "\n" + "\n".join(lines) + "\n```"


def _fleet_words(d: dict) -> str:
    racks = sorted(d["fleet"], key=lambda f: -f["racks"])
    parts = [f"{f['racks']:,} {f['hardware']}" for f in racks if f["racks"] > 0]
    return f"{d['totals']['racks']:,} racks ({', '.join(parts)})"


def totals(plans: Plans, args: list[str]) -> str:
    """One sentence's worth of a plan: racks per system, IT and facility power, yearly cost, USD/Mtok per workload."""
    from planner.report.summary import people

    scenario, settings = _split(args)
    d = plans.get(scenario, settings)
    t = d["totals"]
    per = [(w["workload"], w["cost_usd_per_mtok"]) for w in d["workloads"] if w.get("cost_usd_per_mtok") is not None]
    usd = (f"; {people(per[0][1])} USD per million output tokens for {per[0][0]}"
           + "".join(f", {people(v)} for {k}" for k, v in per[1:])) if per else ""
    return (f"{_fleet_words(d)}, {people(t['power_mw'])} MW IT ({people(t['facility_power_mw'])} MW facility), "
            f"about {people(t['annual_cost_usd'], 'USD')}/year{usd}")


def cost(plans: Plans, args: list[str]) -> str:
    """The plan's hardware and yearly cost, in a few words: "Corsair-rack and gb200-nvl72 (3 types), 525 M USD a
    year"."""
    from planner.report.summary import people

    scenario, settings = _split(args)
    d = plans.get(scenario, settings)
    systems = [f["hardware"] for f in sorted(d["fleet"], key=lambda f: -f["racks"]) if f["racks"] > 0]
    return (f"{', '.join(systems)} ({len(systems)} type{'s' if len(systems) != 1 else ''}), "
            f"{people(d['totals']['annual_cost_usd'], 'USD')} a year")


def screenshot(plans: Plans, args: list[str]) -> str:
    """The README's screenshot line, its alt text carrying the figures the picture shows."""
    from planner.report.summary import people

    scenario, settings = _split(args)
    d = plans.get(scenario, settings)
    t = d["totals"]
    return (f"![The HTML report of {scenario}: {_fleet_words(d)}, capex {people(t['capex_usd'], 'USD')}, "
            f"{people(t['annual_cost_usd'], 'USD')} a year](docs/report.png)")


# the system column of the tiers table where the precision of the fastest point does not say it all
TIER_LABELS = {"vr-nvl72+groq3-lpx": "vr-nvl72+groq3-lpx (fp4 attention, fp8 FFN)",
               "groq3-lpx": "groq3-lpx alone (fp8, not in the test block)"}


def tiers(plans: Plans, args: list[str]) -> str:
    """GTC2026's table: best output tokens/s per MW at each tier (``best_at_tiers`` of the frontier) and the
    fastest frontier point, per system. Arguments: MODEL INPUT_TOKENS OUTPUT_TOKENS HARDWARE..."""
    from planner.perf.frontier import best_at_tiers, frontier
    from planner.vocabulary import TIERS

    model, inp, out, *hardware = args
    points = frontier(model, hardware, input_tokens=int(inp), output_tokens=int(out))
    best = {(r["hardware"], r["tier"]): r["output_tokens_per_s_per_mw"] for r in best_at_tiers(points)}
    head = ("| system | " + " | ".join(f"{t} ({v:,.0f})" for t, v in TIERS.items())
            + " | fastest frontier point (tok/s/user) |\n|---|" + "---:|" * (len(TIERS) + 1))
    rows = []
    for hw in hardware:
        mine = [p for p in points if p["hardware"] == hw]
        fastest = max(mine, key=lambda p: p["tps_per_user"]) if mine else None
        label = TIER_LABELS.get(hw) or (f"{hw} ({fastest['precision']})" if fastest else hw)
        cells = [f"{best.get((hw, t), 0.0):,.0f}" for t in TIERS]
        speed = f"{fastest['tps_per_user']:,.0f}" if fastest else "-"
        rows.append(f"| {label} | " + " | ".join(cells) + f" | {speed} |")
    return head + "\n" + "\n".join(rows)


def _factor(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def ledger(plans: Plans, args: list[str]) -> str:
    """The accuracy ledger's medians (MODEL.md 13), one row per name of each group in ``args`` (``class``,
    ``regime``, ``class-regime``, ``vendor``): held-out and all points side by side."""
    from planner.perf.ledger import ledger as book

    groups = book()["groups"]
    by = {(g["group"], g["name"], g["split"]): g for g in groups}
    head = ("| group | name | held out: points | median | max | all: points | median | max | within 2x |\n"
            "|---|---|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    for group in args:
        names = list(dict.fromkeys(g["name"] for g in groups if g["group"] == group))
        for name in names:
            held, every = by.get((group, name, "held_out")), by[(group, name, "all")]
            cells = ([str(held["points"]), _factor(held["median_error"]), _factor(held["max_error"])] if held
                     else ["0", "-", "-"])
            rows.append(f"| {group} | {name} | " + " | ".join(cells) + f" | {every['points']} | "
                        f"{_factor(every['median_error'])} | {_factor(every['max_error'])} | {every['within_2x']} |")
    return head + "\n" + "\n".join(rows)


def kernels(plans: Plans, args: list[str]) -> str:
    """Each GPU generation's parameters from NVIDIA's measured kernel tables (MODEL.md 5.5,
    data/measured_kernels.yaml)."""
    from planner.perf.kernel_tables import KERNEL_PARAMS, book, read_measured

    symbols = {"bandwidth_efficiency": "η_bw", "flops_efficiency": "η_f", "fp8_flops_factor": "ρ_fp8",
               "fp4_flops_factor": "ρ_fp4", "w4a16_flops_factor": "ρ_w4a16", "grouped_gemm_factor": "g",
               "fp8_grouped_gemm_factor": "g_fp8", "fp4_grouped_gemm_factor": "g_fp4",
               "attention_flops_efficiency": "η_att bf16", "fp8_attention_flops_efficiency": "η_att fp8",
               "attention_stream_s": "σ_att (s)", "kernel_latency_s": "GEMM φ (s)", "collective_latency_s": "τ_c (s)"}
    head = ("| generation | " + " | ".join(symbols[n] for n in KERNEL_PARAMS) + " |\n"
            + "|---" * (len(KERNEL_PARAMS) + 1) + "|")
    rows = [f"| {g['generation']} | " + " | ".join("-" if g[n] is None else f"{g[n]:.4g}" for n in KERNEL_PARAMS)
            + " |" for g in book(read_measured())["groups"]]
    return head + "\n" + "\n".join(rows)


GENERATORS = {"answer": answer, "totals": totals, "cost": cost, "screenshot": screenshot, "tiers": tiers,
              "ledger": ledger, "kernels": kernels}


# ---- regions ---------------------------------------------------------------------------------------------------------

def render_regions(text: str, plans: Plans, where: str = "") -> tuple[str, list[tuple[str, str, str]]]:
    """``text`` with every region rewritten, and (spec, old body, new body) for each region that changed."""
    changed = []

    def one(m: re.Match) -> str:
        spec, body = m.group("spec").strip(), m.group("body")
        name, *args = spec.split()
        if name not in GENERATORS:
            raise ValueError(f"{where}: unknown generator {name!r} in <!-- generated: {spec} -->; "
                             f"known: {', '.join(GENERATORS)}")
        new = GENERATORS[name](plans, args)
        if body.startswith("\n"):  # a block: the text on lines of its own
            new = "\n" + new + "\n"
        if new != body:
            changed.append((spec, body, new))
        return f"<!-- generated: {m.group('spec')} -->{new}<!-- end generated -->"

    return REGION.sub(one, text), changed


def _answer_lines(plans: Plans, scenario: str) -> str:
    from planner.report.summary import summary_lines

    return "\n".join(summary_lines(plans.get(scenario)))


def image_answer(path: Path) -> str | None:
    """The answer stored in a screenshot written by this script (None for any other PNG)."""
    from PIL import Image

    with Image.open(path) as im:
        return (getattr(im, "text", None) or {}).get(IMAGE_KEY)


def browser() -> str | None:
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


def write_screenshot(plans: Plans, scenario: str, out: Path) -> str:
    """docs/report.png from the HTML report of ``scenario``: "wrote ..." or why not."""
    chrome = browser()
    if chrome is None:
        return f"left {out.relative_to(ROOT)} as it is: no headless browser ({', '.join(BROWSERS)})"
    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    expected = _answer_lines(plans, scenario)
    with tempfile.TemporaryDirectory() as tmp:
        page, shot = Path(tmp) / "report.html", Path(tmp) / "shot.png"
        subprocess.run([sys.executable, "-m", "planner.cli", "solve", str(ROOT / scenario), "--quiet", "--html",
                        str(page)], check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
        html = page.read_text()
        import html as html_lib

        missing = [line for line in expected.splitlines()[1:] if html_lib.escape(line) not in html]
        if missing:
            raise RuntimeError(f"the HTML report does not show the answer the library prints: {missing}")
        subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync", "--no-first-run",
                        f"--user-data-dir={Path(tmp) / 'profile'}", f"--screenshot={shot}",
                        f"--window-size={SCREENSHOT_SIZE}", "--hide-scrollbars", page.as_uri()],
                       check=True, capture_output=True, timeout=120)
        info = PngInfo()
        info.add_text(IMAGE_KEY, expected)
        with Image.open(shot) as im:
            im.convert("RGB").save(out, optimize=True, pnginfo=info)
    return f"wrote {out.relative_to(ROOT)} ({chrome})"


def screenshot_scenarios(text: str) -> list[str]:
    return [m.group("spec").split()[1] for m in REGION.finditer(text) if m.group("spec").split()[0] == "screenshot"]


def run(write: bool, images: bool = True, plans: Plans | None = None) -> list[str]:
    """Every region of every doc regenerated; with ``write`` the files are rewritten (and, with ``images``, the
    screenshot retaken). Returns the problems: a unified diff per drifted region (without ``write``) and a
    screenshot that does not show the current answer."""
    plans = plans or Plans()
    problems, notes = [], []
    for path in doc_files():
        text = path.read_text()
        if "<!-- generated:" not in text:
            continue
        rel = str(path.relative_to(ROOT))
        new, changed = render_regions(text, plans, rel)
        for spec, old, body in changed:
            diff = difflib.unified_diff(old.splitlines(), body.splitlines(), f"{rel} (quoted)",
                                        f"{rel} (the code now: {spec})", lineterm="")
            problems.append("\n".join(diff))
        if write and changed:
            path.write_text(new)
            notes.append(f"rewrote {len(changed)} region(s) of {rel}")
        for scenario in screenshot_scenarios(text):
            png = ROOT / "docs" / "report.png"
            current = _answer_lines(plans, scenario)
            if write and images and (not png.exists() or image_answer(png) != current):
                notes.append(write_screenshot(plans, scenario, png))
            stored = image_answer(png) if png.exists() else None
            if stored != current:
                diff = difflib.unified_diff((stored or "(no answer stored in the PNG)").splitlines(),
                                            current.splitlines(), "docs/report.png (shows)",
                                            f"planner solve {scenario} (prints now)", lineterm="")
                problems.append("the screenshot is stale (make docs retakes it):\n" + "\n".join(diff))
    for note in notes:
        print(note, file=sys.stderr)
    if write:  # what is left after writing: only a screenshot no browser could retake
        problems = [p for p in problems if p.startswith("the screenshot")]
    return problems


def check() -> list[str]:
    """The drifted regions and a stale screenshot, as unified diffs (empty when the docs quote the code)."""
    return run(write=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 with a diff per drifted figure")
    parser.add_argument("--no-image", action="store_true", help="do not retake the screenshot")
    opts = parser.parse_args(argv)
    os.environ.setdefault("COLUMNS", "120")
    problems = run(write=not opts.check, images=not opts.no_image)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} quoted figure(s) differ from what the code prints: run `make docs`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
