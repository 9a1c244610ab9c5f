"""The ``planner`` executable (pyproject's script). A command goes to this checkout's ``planner serve`` where one
runs, with nothing imported but the standard library and ``planner.client`` (0.03 s against 0.05-0.07 s for
``planner.cli``, which imports click and the command modules); else it runs here, in ``planner.cli``."""

from __future__ import annotations

import sys

from planner.client import exit_if_served


def entry() -> None:
    exit_if_served(sys.argv[1:])
    from planner.cli import main  # the CLI edge, imported only for a command no server took

    main()
