"""Reading a scenario: the file's bytes (at most ``MAX_FILE_BYTES``, regular files only, UTF-8), the YAML
(``planner.yaml_io``: line marks kept, hostile input refused), ``--set`` settings, the efficiency and measurement
files it names (relative to it), then validation; every problem is an InputError naming the file, the line and the
field."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from planner import hf_config, yaml_io
from planner.catalog import hardware_catalog, model_catalog
from planner.errors import InputError
from planner.inputs import read_bytes_limited
from planner.measurements.fit import read_efficiency
from planner.measurements.table import resolve_measurements
from planner.scenario.messages import _short, _validation_error
from planner.scenario.schema import Scenario
from planner.scenario.settings import parse_setting, with_settings
from planner.yaml_io import MAX_FILE_BYTES


def _read_text(path: Path) -> str:
    return yaml_io.decode(read_bytes_limited(path, MAX_FILE_BYTES, "a scenario YAML file"), str(path))


def scenario_from_yaml(text: str, file: str = "<scenario>", settings=()) -> Scenario:
    """Parse and validate scenario YAML text, with ``settings`` (``PATH=VALUE``, as ``--set``) applied first;
    ``file`` names it in error messages."""
    hardware_catalog(), model_catalog()  # a broken catalog is the planner's fault (exit 1), not the scenario's
    data, root = yaml_io.parse(text, file)
    if data is None:
        raise InputError("is empty; expected a scenario mapping (name, start_date, finance, workloads, ...)", file=file)
    assert root is not None  # None only for an empty document
    if not isinstance(data, dict):
        raise InputError(f"expected a mapping of scenario fields at the top level, got {_short(data)}", file=file,
                         line=root.start_mark.line + 1)
    yaml_io.check_keys_are_text(root, file)
    try:
        data = with_settings(data, settings)
    except InputError as exc:
        raise exc.in_file(file) from None
    base = Path(file).parent if Path(file).is_file() else None
    if isinstance(data.get("efficiency"), str):  # a fitted file, read relative to the scenario
        path = Path(data["efficiency"])
        try:
            data["efficiency"] = read_efficiency(path if path.is_absolute() or base is None else base / path)
        except InputError as exc:
            raise exc.in_file(file) from None
    if isinstance(data.get("models"), list):  # {from: config.json}: the catalog entry derived from it
        data["models"] = [_model_entry(m, i, base, file) for i, m in enumerate(data["models"])]
    origins: list[str | None] | None = None  # each row's file and row, for the errors that name a row (inline: None)
    if isinstance(data.get("measurements"), list):  # files become their rows, read relative to the scenario
        try:
            rows: list = []
            origins = []
            for e in data["measurements"]:
                found = resolve_measurements([e], base) if isinstance(e, str) else [e]
                rows.extend(found)
                first = 2 if isinstance(e, str) and e.lower().endswith(".csv") else 1  # CSV: the header is line 1
                origins.extend(f"{e} {'line' if first == 2 else 'row'} {k + first}" if isinstance(e, str) else None
                               for k in range(len(found)))
            data["measurements"] = rows
        except InputError as exc:
            raise exc.in_file(file) from None
    try:
        return Scenario.model_validate(data, context={"measurement_origins": origins})
    except ValidationError as exc:
        raise _validation_error(exc, Scenario, file, root,
                                set_paths=[parse_setting(t)[0] for t in settings or ()]) from None


def _model_entry(item, index: int, base: Path | None, file: str):
    """A scenario's model entry: as written, or for ``{from: PATH, id: ID, ...}`` the entry derived from the Hugging
    Face config.json at PATH (relative to the scenario), the other fields given replacing the derived ones."""
    if not (isinstance(item, dict) and "from" in item):
        return item
    field = f"models[{index}].from"
    given = item["from"]
    if not isinstance(given, str) or not given:
        raise InputError(f"expected the path of a Hugging Face config.json, got {_short(given)}", file=file,
                         field=field)
    path = Path(given)
    path = path if path.is_absolute() or base is None else base / path
    rest = {k: v for k, v in item.items() if k != "from"}
    try:
        entry = hf_config.entry_from_config(hf_config.read_config(path), given, str(rest.get("id") or
                                                                                   hf_config.default_id(path)))
    except InputError as exc:
        raise InputError(str(exc), file=file, field=field) from None
    return {**entry, **rest}


def load_scenario(path: str | Path, settings=()) -> Scenario:
    """Read and validate a scenario file, with ``settings`` (``PATH=VALUE`` strings, as ``planner solve --set``)
    applied before validation; any problem raises InputError (file, line, field path, expectation)."""
    if not (isinstance(path, (str, Path)) or hasattr(path, "__fspath__")):  # planner.solve(None) comes here too
        raise InputError(f"expected a Scenario or the path of a scenario file, got {type(path).__name__}",
                         field="scenario")
    path = Path(path)
    return scenario_from_yaml(_read_text(path), str(path), settings)


def scenario_json_schema() -> dict:
    """JSON Schema (draft 2020-12) of the scenario file."""
    schema = Scenario.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
