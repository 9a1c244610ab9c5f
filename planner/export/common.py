"""What every export target shares: a row's launch (the command and its settings), the export (files, rows
exported, rows skipped with the reason), shell rendering of a launch, and the run over a plan's rows."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
from dataclasses import dataclass, field

from planner import __version__, catalog
from planner.errors import InputError
from planner.export.rows import PlanRows, Row, check_names, family_skip, hf_id_of, whole_replicas
from planner.vocabulary import FOUR_BIT

NEED = re.compile(r"\$([A-Z][A-Z0-9_]*)")  # a value the plan does not hold, named by the variable that must hold it
# Each script serves on $PORT (8000 unless set), so that the replicas of a row on one host run as copies of it with
# a port each (issue 42: with none, a second copy collided with the first)
PORT = "$PORT"
PORT_LINE = 'PORT="${PORT:-8000}"  # one port a copy: PORT=8001 bash THIS_SCRIPT for the next replica on this host'
# A replica over several hosts runs one copy of its script on each, told its rank: NODE_RANK (0 on the host that
# serves the API, checked to be a whole number below the hosts' count before anything else runs); the ranks
# above 0 run without the API server (vLLM's --headless), which the script's HEADLESS array adds
HEADLESS = "@HEADLESS@"  # an argv word the script renders as "${HEADLESS[@]}": --headless on ranks above 0
SCRIPT_ARRAYS = {HEADLESS: '"${HEADLESS[@]}"'}
CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029\x85]")  # characters that end a line (or hide one) in a file


@dataclass
class Launch:
    """One row's launch: the command (program first), the options file's settings where the engine reads one
    (TensorRT-LLM), and the values the plan does not hold that the operator must supply (variable -> what)."""

    row: Row
    argv: list[str]
    options: dict | None = None
    needs: dict[str, str] = field(default_factory=dict)

    def flags(self) -> list[str]:
        """The command's option names (``--x``), for the tests against the engine's documented flags."""
        return [a for a in self.argv if a.startswith("--")]


@dataclass
class Export:
    """A plan exported for one target: its files (relative path -> text), the launches of the rows it runs and
    the rows it skips with the reason."""

    target: str
    files: dict[str, str]
    launches: list[Launch]
    skipped: list[dict]

    def text(self) -> str:
        """Every file, each under a header line naming it: what ``planner export`` prints without --out."""
        return "".join(f"# ==> {name} <==\n{body}" + ("" if body.endswith("\n") else "\n")
                       for name, body in self.files.items())


def header_lines(target, plan: PlanRows) -> list[str]:
    """The comment lines heading every file: what wrote it, from which plan, against which engine version."""
    when = f", period {plan.period}" if plan.period else ""
    scen = f", demand scenario {plan.demand_scenario}" if plan.demand_scenario else ""
    return [f"engine: {target.key} {target.release}",  # the interface's first comment line (third round)
            f"written by planner {__version__} export --to {target.key} from plan {plan.scenario!r}{when}{scen}",
            f"written against {target.engine} {target.version} ({target.reference})"]


def row_comment(row: Row) -> list[str]:
    """What the plan says of a row, for the head of its launch."""
    return [f"{row.name}: model {row.demand.get('model')}, {row['replicas']} replicas in the plan "
            f"-> {whole_replicas(row)} to launch, {row['chips_per_replica']} chips each, precision {row['precision']}, "
            f"batch {row['batch']}, speculative {row['speculative']} ({row['draft_tokens']} draft tokens), "
            f"acquisition {row['acquisition']}"]


def comment_text(text: str) -> str:
    """``text`` fit for one comment line: every control character (a newline would end the comment and start a
    command, or a YAML key) a space."""
    return CONTROL.sub(" ", str(text))


def shell_word(arg: str, operator_vars=()) -> str:
    """An argument as one shell word that expands nothing but the variables the operator supplies
    (``operator_vars``, as "${VAR}"): every other character single-quoted, so a ``$(...)``, a backtick or a
    ``$HOME`` from a plan or a scenario stays text."""
    names = set(operator_vars)
    parts, at = [], 0
    for m in NEED.finditer(arg):
        if m.group(1) not in names:
            continue
        if m.start() > at:
            parts.append(shlex.quote(arg[at:m.start()]))
        parts.append(f'"${{{m.group(1)}}}"')
        at = m.end()
    if at < len(arg) or not parts:
        parts.append(shlex.quote(arg[at:]))
    return "".join(parts)


def shell_script(launch: Launch, comments: list[str], preamble: list[str] = (), script_vars: tuple = ()) -> str:
    """A launch as a bash script: the comments, a check that each value the plan does not hold was supplied, then
    the command, one option per line. Nothing from the plan or the scenario is ever run: comments hold no control
    character, each message and argument is single-quoted, and only the operator's own variables expand (and
    ``script_vars``, those the script's preamble sets)."""
    lines = ["#!/usr/bin/env bash", *(f"# {comment_text(c)}" for c in comments), "set -euo pipefail"]
    lines += [f'[ -n "${{{var}:-}}" ] || {{ echo {shlex.quote(comment_text(f"set {var} to {what}"))} >&2; exit 1; }}'
              for var, what in launch.needs.items()]
    lines += list(preamble)
    words = [SCRIPT_ARRAYS.get(a) or shell_word(a, [*launch.needs, *script_vars]) for a in launch.argv]
    k = next((i for i, a in enumerate(launch.argv) if a.startswith("--")), len(words))
    parts = [" ".join(words[:k])]  # the program and its positional words, then an option a line
    while k < len(words):  # an option and its value on one line
        if k + 1 < len(words) and not launch.argv[k + 1].startswith("--"):
            parts.append(f"{words[k]} {words[k + 1]}")
            k += 2
        else:
            parts.append(words[k])
            k += 1
    lines.append("exec " + " \\\n  ".join(parts))
    return "\n".join(lines) + "\n"


def rank_lines(row: Row, headless: bool = False) -> list[str]:
    """The preamble of a replica spanning ``row.nodes`` hosts: NODE_RANK must be a whole number below the hosts'
    count (checked before bash does any arithmetic with it: an operator's value is never evaluated otherwise);
    with ``headless``, the HEADLESS array holds --headless on every rank above 0."""
    n = row.nodes
    message = shlex.quote(f"NODE_RANK must be a whole number from 0 to {n - 1}: this host's rank in the replica")
    lines = [f'[[ "${{NODE_RANK}}" =~ ^[0-9]+$ ]] && [ "${{NODE_RANK}}" -lt {n} ] || '
             f"{{ echo {message} >&2; exit 1; }}"]
    if headless:
        lines.append('HEADLESS=(); [ "${NODE_RANK}" = 0 ] || HEADLESS=(--headless)  # ranks above 0 serve no API')
    return lines


def rank_needs(row: Row, addr_var: str, addr_what: str) -> dict[str, str]:
    """What the operator supplies on each host of a replica over several: its rank and the rank-0 host's
    address."""
    return {"NODE_RANK": f"this host's rank in the replica, 0 to {row.nodes - 1} (one copy of this script on each "
                         f"of its {row.nodes} hosts of {row.chips_per_node} chips; rank 0 serves the API)",
            addr_var: addr_what}


def manifest_json(target, plan: PlanRows, launches: list[Launch], skipped: list[dict], files: dict) -> str:
    """manifest.json: the export's target and version, each exported row's file and replicas, each skipped row
    with the reason, the router of each disaggregated workload, and the values the plan does not hold."""
    rows = [{"row": ln.row.index, "workload": ln.row["workload"], "role": ln.row["role"],
             "hardware": ln.row["hardware"], "replicas": ln.row["replicas"], "replicas_launched": whole_replicas(ln.row),
             "chips_per_replica": ln.row["chips_per_replica"], "acquisition": ln.row["acquisition"],
             "file": files.get(ln.row.index), "needs": ln.needs} for ln in launches]
    return json.dumps({"planner_version": __version__, "target": target.key, "engine": target.engine,
                       "engine_version": target.version, "reference": target.reference, "scenario": plan.scenario,
                       "period": plan.period, "demand_scenario": plan.demand_scenario,
                       "catalog_version": plan.catalog_version, "exported": rows, "skipped": skipped,
                       "routers": [r.entry() for r in target.routers(launches)]},
                      indent=2) + "\n"


@dataclass
class Router:
    """The router in front of one workload's prefill and decode rows: a disaggregated pair serves nothing
    without it (issue 42: no file set one up). The replicas' addresses are the operator's, set at launch."""

    workload: str
    prefill: list[Launch]
    decode: list[Launch]

    @property
    def file(self) -> str:
        return "router-" + re.sub(r"[^A-Za-z0-9._-]+", "-", self.workload) + ".sh"

    def replicas(self, role: str) -> int:
        return sum(whole_replicas(ln.row) for ln in (self.prefill if role == "prefill" else self.decode))

    def entry(self) -> dict:
        return {"workload": self.workload, "file": self.file,
                "prefill_rows": [ln.row.index for ln in self.prefill], "prefill_replicas": self.replicas("prefill"),
                "decode_rows": [ln.row.index for ln in self.decode], "decode_replicas": self.replicas("decode")}


def disaggregated_pairs(launches: list[Launch]) -> list[Router]:
    """Each workload with launched prefill and decode rows, in order of its first row."""
    by_workload: dict[str, dict[str, list[Launch]]] = {}
    for ln in launches:
        by_workload.setdefault(ln.row["workload"], {}).setdefault(ln.row["role"], []).append(ln)
    return [Router(w, roles["prefill"], roles["decode"]) for w, roles in by_workload.items()
            if roles.get("prefill") and roles.get("decode")]


URL_LISTS = ("PREFILL_URLS", "DECODE_URLS")


def router_script(target, plan: PlanRows, router: Router, program: list[str], per_url: dict[str, list[str] | str],
                  tail: list[str], about: str) -> str:
    """A router as a bash script: the operator supplies each side's replica URLs (space-separated), each one
    becomes the router's ``per_url[list]`` words and the URL; nothing from the plan runs (the URLs are the
    operator's own values, split into words by ``read -a``, never evaluated)."""
    counts = {"PREFILL_URLS": router.replicas("prefill"), "DECODE_URLS": router.replicas("decode")}
    comments = header_lines(target, plan) + [
        f"router for workload {router.workload}: prefill rows "
        f"{', '.join(str(ln.row.index) for ln in router.prefill)} ({counts['PREFILL_URLS']} replicas), decode rows "
        f"{', '.join(str(ln.row.index) for ln in router.decode)} ({counts['DECODE_URLS']} replicas), by {about}"]
    lines = ["#!/usr/bin/env bash", *(f"# {comment_text(c)}" for c in comments), "set -euo pipefail"]
    for var in URL_LISTS:
        side = var.split("_")[0].lower()
        what = (f"set {var} to the {counts[var]} {side} replicas' URLs, space-separated (http://HOST:PORT each, "
                "the PORT each replica's script was run with)")
        lines.append(f'[ -n "${{{var}:-}}" ] || {{ echo {shlex.quote(comment_text(what))} >&2; exit 1; }}')
    lines += ['PORT="${PORT:-8000}"  # the port the router serves the workload on', "args=()"]
    for var in URL_LISTS:  # a list of words, each quoted, then the URL; or the target's own bash words (no input)
        words = per_url[var] if isinstance(per_url[var], str) else " ".join(
            [*(shlex.quote(w) for w in per_url[var]), '"$u"'])
        lines.append(f'read -r -a urls <<< "${{{var}}}"; for u in "${{urls[@]}}"; do args+=({words}); done')
    words = [shell_word(w, ["PORT"]) for w in program] + ['"${args[@]}"'] + [shell_word(w, ["PORT"]) for w in tail]
    lines.append("exec " + " ".join(words))
    return "\n".join(lines) + "\n"


def readme(target, plan: PlanRows, launches: list[Launch], skipped: list[dict]) -> str:
    """README.md of the export: what is in it, what was skipped and why, what the operator must supply."""
    lines = [f"# {plan.scenario}: {target.engine} launch configs", "", *header_lines(target, plan), "",
             f"{len(launches)} row(s) exported, {len(skipped)} skipped. Replicas are the plan's rounded up to whole "
             "replicas. See docs/EXPORT.md for how each setting is derived.", ""]
    if skipped:
        lines += ["## Skipped rows", ""] + [f"- row {s['row']} ({s['workload']} {s['role']} on {s['hardware']}): "
                                           f"{s['reason']}" for s in skipped] + [""]
    routers = target.routers(launches)
    if routers:
        lines += ["## Routers", ""] + [
            f"- `{r.file}`: {r.workload}'s router, in front of its {r.replicas('prefill')} prefill and "
            f"{r.replicas('decode')} decode replicas (`PREFILL_URLS`, `DECODE_URLS`: their URLs)" for r in routers]
        lines += [""]
    needs = {(var, what) for ln in launches for var, what in ln.needs.items()}
    if needs:
        lines += ["## Values the plan does not hold", ""] + [f"- `{var}`: {what}" for var, what in sorted(needs)] + [""]
    return "\n".join(lines)


def skipped_entry(row: Row, reason: str) -> dict:
    return {"row": row.index, "workload": row["workload"], "role": row["role"], "hardware": row["hardware"],
            "reason": reason}


def pool_rows(rows: list[Row]) -> tuple[list[Row], list[dict]]:
    """The rows to launch, and the rows a replica pool's launch serves (docs/OPTIMIZER.md 16): the rows of one
    ``replica_pool`` are time shares of one deployment, so one launch runs them all, at the largest batch of its
    rows and their shares' replicas summed (rounded up by ``whole_replicas``); the others are listed as served
    by it."""
    groups: dict[tuple, list[Row]] = {}
    for r in rows:
        if r.fields.get("replica_pool") is not None:
            groups.setdefault((r["hardware"], r["replica_pool"]), []).append(r)
    lead: dict[int, Row] = {}
    served: list[dict] = []
    for (_, pool), members in groups.items():
        first = max(members, key=lambda m: (m["batch"] or 0, -m.index))
        total = sum(float(m["replicas"]) for m in members)
        lead[first.index] = dataclasses.replace(first, fields={**first.fields, "replicas": total})
        names = ", ".join(sorted({m["workload"] for m in members}))
        served += [skipped_entry(m, f"served by row {first.index}'s launch: replica pool {pool} ({names}) is one "
                                    f"deployment of {whole_replicas(lead[first.index])} replica(s)")
                   for m in members if m.index != first.index]
    members_of = {m.index for ms in groups.values() for m in ms}
    out = [lead.get(r.index, r) for r in rows if r.index in lead or r.index not in members_of]
    return out, served


def run_target(target, plan: PlanRows, strict: bool = False, row: int | None = None) -> Export:
    """Every row of the plan through ``target``: launched, or skipped with the reason (``strict``, or a single
    ``row`` asked for, turns a skip into exit 2). A setting the target cannot express on a row it runs is exit 2
    naming the row and the setting."""
    rows, pooled = pool_rows(plan.rows)
    if row is not None:
        if not 0 <= row < len(plan.rows):
            raise InputError(f"the plan has rows 0 to {len(plan.rows) - 1}, not {row}", field="--row")
        rows = [r for r in rows if r.index == row] or [next(r for r in plan.rows if r.index == row)]
        pooled = []
    for r in plan.rows:  # before any file is written: a name that is not safe text stops the export (exit 2)
        check_names(r, target.engine)
    launches, skipped = [], list(pooled)
    for r in rows:
        reason = target.skip_reason(r)
        if reason is not None and (strict or row is not None):
            raise InputError(f"{r.name}: {target.engine} does not run it: {reason}",
                             field="--row" if row is not None else "--strict")
        if reason is not None:
            skipped.append(skipped_entry(r, reason))
        else:
            launches.append(target.launch(r))
    files = target.files(plan, launches)
    by_row = {ln.row.index: target.file_for(ln.row) for ln in launches}
    files["manifest.json"] = manifest_json(target, plan, launches, skipped, by_row)
    files["README.md"] = readme(target, plan, launches, skipped)
    return Export(target.key, files, launches, skipped)


def model_argument(row: Row, hf_id: str, online: dict[str, list[str]]) -> tuple[str, list[str], dict[str, str]]:
    """The model to load, the flags that quantize it, and what the operator must supply: the Hugging Face
    checkpoint where the row's precision is the model's own, or one the engine quantizes on load (``online``:
    precision -> the engine's flags), else a checkpoint already in that precision (``$CHECKPOINT``), from which
    the engine reads the quantization."""
    native = row.model.native_precision
    if row["precision"] == native or (row["precision"] == "w4a16" and native in FOUR_BIT):
        return hf_id, [], {}  # a 4-bit checkpoint runs weight-only as published, its format read from it
    if row["precision"] in online and native == "bf16":
        return hf_id, list(online[row["precision"]]), {}
    return "$CHECKPOINT", [], {"CHECKPOINT": f"a checkpoint of {hf_id} in {row['precision']} (the plan serves it at "
                                             f"{row['precision']}; the checkpoint as published is {native})"}


def drafter_argument(row: Row, kind: str) -> tuple[str, dict[str, str]]:
    """The draft model's path and what the operator must supply: the workload's drafter where the plan names one
    from the catalog, else ``$DRAFT_MODEL`` (an EAGLE head's path is not in the plan or the catalog)."""
    found = hf_id_of(row.drafter) if kind == "draft_model" else None
    if found is not None:
        return found, {}
    what = "an EAGLE-3 draft head" if kind == "eagle" else "a draft model"
    return "$DRAFT_MODEL", {"DRAFT_MODEL": f"{what} for {hf_id_of(row.model) or row.demand.get('model')} "
                                           f"({row['workload']})"}


class ScriptTarget:
    """A target whose every row is one launch script (vLLM, SGLang, TensorRT-LLM): ``NN-workload-role-hw.sh``."""

    key = engine = version = release = reference = ""

    @property
    def families(self) -> list[str]:
        """The chip families the engine runs (data/engines.yaml, the engine of the same name as the target)."""
        return catalog.serving_engines()[self.key].families

    def skip_reason(self, row: Row) -> str | None:
        return family_skip(row, self.families, self.engine)

    def file_for(self, row: Row) -> str:
        return f"{row.slug}.sh"

    def files(self, plan: PlanRows, launches: list[Launch]) -> dict[str, str]:
        files = {self.file_for(ln.row): self.script(plan, ln) for ln in launches}
        return {**files, **{r.file: self.router(plan, r) for r in self.routers(launches)}}

    def routers(self, launches: list[Launch]) -> list[Router]:
        """The routers the export writes (a target with a router, vLLM's and SGLang's, returns
        ``disaggregated_pairs`` and writes each with its ``router``); none here."""
        return []

    def script(self, plan: PlanRows, launch: Launch) -> str:
        return shell_script(launch, header_lines(self, plan) + row_comment(launch.row), [PORT_LINE], ("PORT",))
