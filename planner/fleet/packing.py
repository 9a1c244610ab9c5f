"""Replicas in racks by scale-up domain (docs/OPTIMIZER.md 17).

A replica's pipeline stages each run on ``tp`` chips joined by the scale-up fabric (NVLink, Infinity Fabric), so a
stage lives inside one scale-up domain of D chips; pipeline stages talk over the scale-out network, so one
replica's stages may sit in different domains. A 72-GPU NVL72 domain holds one 64-GPU stage and 8 GPUs beside it,
not 72 / 64 of one.

The stages the grid makes are ``tp`` chips: powers of two, or a whole domain. Split a domain into its core C (the
largest power of two in D) and its tail T = D - C (72 = 64 + 8). A stage wider than the tail can only sit in a
core (powers of two pack a core exactly), a whole-domain stage takes a core and its tail, and stages no wider than
the tail (powers of two dividing it) fill whatever room is left exactly. So a set of stages fits in n domains if
and only if

    (2)   sum of stages' chips            <= D n     (a whole-domain stage counted as D)
    (2c)  sum of wide stages' core chips  <= C n     (a wide stage's chips, a whole-domain stage's C)

which are the MILP's rows (2) and (2c) with n = racks x domains per rack. Where a domain spans several racks (a
TPU pod, Groq's 576-chip domain) racks are bought whole under one fabric and a replica takes its chips only; a
domain that is a power of two (8-GPU servers) has no tail and (2c) is (2).

``domains_needed`` packs stages first-fit decreasing, as ``check`` recomputes a plan (exact for these sizes: it
meets (2) and (2c)'s bound); ``held_chips`` is a replica's footprint alone, its stages' shares of whole domains
(D / floor(D / s) a stage), which decides whether its replicas are counted whole (an eighth of a rack or more).
"""

from __future__ import annotations

import math

# Tolerance on a replica count before it is rounded up to the whole replicas a packing places.
WHOLE = 1e-6


def spans_racks(domain_chips: float, chips_per_rack: float) -> bool:
    """Whether one scale-up domain spans several racks: then racks are bought whole under one fabric, and a
    replica's chips, not its domain shares, are what it holds."""
    return domain_chips > chips_per_rack


def domains_per_rack(domain_chips: float, chips_per_rack: float) -> int:
    """Whole scale-up domains one rack holds (a rack's chips left over form none)."""
    return max(int(chips_per_rack // domain_chips), 1)


def power_of_two_in(n: float) -> int:
    """The largest power of two no greater than ``n`` (0 below 1)."""
    return 1 << (int(n).bit_length() - 1) if n >= 1 else 0


def core_and_tail(domain_chips: float) -> tuple[int, int]:
    """(C, T): a domain's core, the largest power of two in it, and the part of the rest stages can use, the
    largest power of two in D - C (72: 64 and 8; 8: 8 and 0)."""
    core = power_of_two_in(domain_chips)
    return core, power_of_two_in(domain_chips - core)


def stage_chips(size: float, domain_chips: float) -> tuple[float, float]:
    """(chips, core chips) one stage of ``size`` chips takes of its domains: a power of two as it is (its core
    chips 0 where the tail holds it), a stage of no power of two the next power of two or the whole domain, a
    stage wider than a domain whole domains."""
    core, tail = core_and_tail(domain_chips)
    if size > domain_chips:
        domains = math.ceil(size / domain_chips - 1e-9)
        return domains * float(core + tail), domains * float(core)
    if size > core:
        return float(core + tail), float(core)
    rounded = float(1 << math.ceil(math.log2(size) - 1e-9)) if size > 1 else 1.0
    return rounded, (rounded if rounded > tail else 0.0)


def chip_rows(chips: float, stages: int, domain_chips: float, chips_per_rack: float) -> tuple[float, float]:
    """One replica's coefficients of (2) and (2c), in chips of a rack: its chips as its stages take them, and the
    core chips of its wide stages, each scaled so a rack offers ``chips_per_rack`` to both rows. (chips, 0) where
    a domain spans racks or has no tail."""
    if chips <= 0:
        return 0.0, 0.0
    if spans_racks(domain_chips, chips_per_rack):
        return float(chips), 0.0
    stages = max(int(stages), 1)
    taken, core_taken = stage_chips(chips / stages, domain_chips)
    core, tail = core_and_tail(domain_chips)
    per_rack = domains_per_rack(domain_chips, chips_per_rack)
    row2 = stages * taken * chips_per_rack / ((core + tail) * per_rack)
    row2c = stages * core_taken * chips_per_rack / (core * per_rack) if tail else 0.0
    return row2, row2c


def held_chips(chips: float, stages: int, domain_chips: float, chips_per_rack: float) -> float:
    """Chips of its racks one replica holds with no other replica beside it: its stages' shares of whole domains
    (D / floor(D / s) a stage), in rack chips; at least (2)'s and (2c)'s coefficients."""
    if chips <= 0:
        return 0.0
    if spans_racks(domain_chips, chips_per_rack):
        return float(chips)
    stages = max(int(stages), 1)
    size = chips / stages
    share = (1.0 / math.floor(domain_chips / size + 1e-9) if size <= domain_chips
             else float(math.ceil(size / domain_chips - 1e-9)))
    return stages * share / domains_per_rack(domain_chips, chips_per_rack) * chips_per_rack


def replicas_per_rack(chips: float, stages: int, domain_chips: float, chips_per_rack: float) -> float:
    """Replicas of ``chips`` chips in ``stages`` pipeline stages one rack holds with its stages whole in its
    scale-up domains: a rack's chips over a replica's footprint alone (``held_chips``; a 64-GPU replica on an NVL72
    rack: 1, not 72 / 64; four stages of 64 GPUs: a quarter)."""
    return chips_per_rack / held_chips(chips, stages, domain_chips, chips_per_rack) if chips > 0 else 0.0


def racks_offered(domain_chips: float, chips_per_rack: float, racks: float, chips_rented: float) -> float:
    """Racks' worth of scale-up domains a system's racks and rented chips offer: a rental rents whole domains of its
    provider's (its chips rounded up to domains), where a domain is within a rack; chips where it spans racks."""
    if spans_racks(domain_chips, chips_per_rack):
        return racks + chips_rented / chips_per_rack
    return racks + math.ceil(chips_rented / domain_chips - 1e-9) / domains_per_rack(domain_chips, chips_per_rack)


def domains_needed(stages: list[tuple[float, float]], fluid_chips: float, domain_chips: float) -> int:
    """Scale-up domains that hold ``stages`` ([(stage chips, count)], whole stages) packed largest first, each
    into the fullest domain it fits (best fit decreasing), then ``fluid_chips`` (the chips of fractional replica
    counts: capacity shared over time, filling any room left) in the room left and new domains after it. A stage
    wider than a domain takes whole domains of its own. Domains are counted by how much room they have left, so
    the work grows with the distinct sizes, not the count (a plan of a billion replicas packs at once)."""
    rooms: dict[float, int] = {}  # room left -> domains with that room
    whole = 0
    for size, count in sorted(stages, key=lambda sc: -sc[0]):
        n = int(math.ceil(count - WHOLE))
        if size > domain_chips:
            whole += n * int(math.ceil(size / domain_chips - 1e-9))
            continue
        for room in sorted(rooms):  # the fullest domains first
            per = int(math.floor(room / size + 1e-9))
            if per == 0 or n == 0:
                continue
            full = min(rooms[room], n // per)
            moved = {room - per * size: full}
            left = n - full * per
            if left and full < rooms[room]:
                moved[room - left * size] = moved.get(room - left * size, 0) + 1
                full, left = full + 1, 0
            rooms[room] -= full
            for r, c in moved.items():
                rooms[r] = rooms.get(r, 0) + c
            n = left
        per = int(math.floor(domain_chips / size + 1e-9))
        if n:
            rooms[domain_chips - per * size] = rooms.get(domain_chips - per * size, 0) + n // per
            if n % per:
                r = domain_chips - (n % per) * size
                rooms[r] = rooms.get(r, 0) + 1
        rooms = {r: c for r, c in rooms.items() if c > 0}
    used = sum(rooms.values())
    fluid_left = max(fluid_chips - sum(r * c for r, c in rooms.items()), 0.0)  # beyond the room left: new domains
    return whole + used + int(math.ceil(fluid_left / domain_chips - 1e-9))
