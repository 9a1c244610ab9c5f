"""The scenario file: what a site must serve, under which limits, and with which hardware.

A scenario is YAML (see ``scenarios/`` and the interface contract). :func:`load_scenario` reads it with the
project's safe loader (``planner.yaml_io``: plain mappings, lists, strings, numbers and dates; never Python objects)
and validates it with the pydantic models of ``schema``. Every failure becomes a :class:`planner.errors.InputError`
whose message names the file, the line, the field path (``workloads[1].tier``) and what was expected.

Ids are checked against the catalog (``planner/data``) plus the scenario's inline ``hardware.custom`` and ``models``.
:meth:`Scenario.resolved_hardware` is the hardware a plan may use: catalog and custom racks, with
``hardware.overrides`` applied, filtered by ``hardware.allow`` and by availability on ``start_date``.

The package, lowest first (each module imports only those above it):

* ``messages``: pydantic errors in words, at a line (``file:line: field: message``);
* ``overrides``: ``hardware.overrides`` applied to a catalog or custom rack;
* ``settings``: ``PATH=VALUE`` what-ifs (``--set``, ``Scenario.with_``);
* ``checks``: problems across fields (ids, periods, carbon, efficiency, workloads);
* ``schema``: the models (``Scenario``, ``Workload``, ``Finance``, ``Site``, ...) and what a scenario resolves to;
* ``summary``: what ``planner validate`` reports (allowed hardware, demands, warnings);
* ``loading``: file -> YAML -> settings -> validated ``Scenario``; the JSON Schema.

Everything public is importable from ``planner.scenario`` itself, as before the split.
"""

from __future__ import annotations

from planner.scenario.loading import load_scenario, scenario_from_yaml, scenario_json_schema
from planner.scenario.messages import UNION_TAGS
from planner.scenario.schema import (
    ACQUISITION_WORDS,
    ApiOffer,
    Count,
    CurtailmentOrder,
    DemandScenario,
    Finance,
    HardwareChoice,
    Installed,
    LayoutPolicy,
    Name,
    NonNegNumber,
    Number,
    Objective,
    PosCount,
    PosNumber,
    Rate,
    Scenario,
    ServingStack,
    Share,
    Site,
    SolverName,
    SolverSettings,
    Speculative,
    Tier,
    TokenLengths,
    Workload,
)
from planner.scenario.settings import apply_setting, parse_setting, with_settings
from planner.scenario.summary import resolved_summary
from planner.vocabulary import TIERS
from planner.yaml_io import MAX_FILE_BYTES, MAX_NODES

__all__ = [
    "ACQUISITION_WORDS", "MAX_FILE_BYTES", "MAX_NODES", "TIERS", "UNION_TAGS",
    "ApiOffer", "Count", "CurtailmentOrder", "DemandScenario", "Finance", "HardwareChoice", "Installed",
    "LayoutPolicy", "Name", "NonNegNumber", "Number", "Objective", "PosCount", "PosNumber", "Rate", "Scenario",
    "ServingStack", "Share", "Site", "SolverName", "SolverSettings", "Speculative", "Tier", "TokenLengths", "Workload",
    "apply_setting", "load_scenario", "parse_setting", "resolved_summary", "scenario_from_yaml",
    "scenario_json_schema", "with_settings",
]
