"""The numba cache is dropped when a jitted source of the numerical layer changes (numba itself only watches a
cached function's own file, so a kernel edit would leave its callers' cached code stale), and only then."""

from solvers.jit import STAMP, drop_stale_cache


def test_cache_dropped_when_a_jitted_source_changes(tmp_path):
    (tmp_path / "perf").mkdir()
    (tmp_path / "perf" / "kernels.py").write_text("x = 1\n")
    (tmp_path / "milp.py").write_text("y = 1\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    assert drop_stale_cache(tmp_path)  # no stamp yet: drop and record
    (cache / "sweep.f-1.py311.nbi").write_text("index")
    (cache / "sweep.f-1.py311.1.nbc").write_text("code")
    assert not drop_stale_cache(tmp_path)  # sources unchanged: the cache stays
    assert (cache / "sweep.f-1.py311.nbi").exists()
    (tmp_path / "milp.py").write_text("y = 2\n")  # no kernel there: the compiled code stays valid
    assert not drop_stale_cache(tmp_path) and (cache / "sweep.f-1.py311.nbi").exists()
    (tmp_path / "perf" / "kernels.py").write_text("x = 2\n")
    assert drop_stale_cache(tmp_path)
    assert not list(cache.glob("*.nb*")) and (cache / STAMP).is_file()


def test_a_read_only_tree_is_left_alone(tmp_path):
    (tmp_path / "kernels.py").write_text("x = 1\n")
    tmp_path.chmod(0o500)
    try:
        assert drop_stale_cache(tmp_path) in (False, True)  # never raises (root may still write)
    finally:
        tmp_path.chmod(0o700)


def test_a_read_only_install_caches_under_the_temporary_directory(tmp_path, monkeypatch):
    """Without a writable __pycache__ (and HOME perhaps read-only too) numba would fail every command with
    'cannot cache function'; the cache moves to a per-user temporary directory instead (issue 11, item 11)."""
    import os
    import tempfile

    from solvers import jit

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    assert jit.cache_dir_fallback(tmp_path) is None  # writable: numba's own place
    monkeypatch.setattr(os, "access", lambda *a, **k: False)
    got = jit.cache_dir_fallback(tmp_path)
    assert got is not None and got.startswith(tempfile.gettempdir())
    monkeypatch.setenv("NUMBA_CACHE_DIR", "/somewhere")
    assert jit.cache_dir_fallback(tmp_path) is None  # the user's own setting wins


def test_a_damaged_cache_file_is_a_cache_miss(tmp_path):
    """A truncated or overwritten numba cache file (index or code) is recompiled, not an UnpicklingError: a
    fresh process over a cache of random bytes runs, and leaves a cache that loads again."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    cache = tmp_path / "cache"
    code = ("import numpy as np\nfrom solvers.jit import njit\n"
            "@njit\ndef twice(x):\n    return 2.0 * x\n"
            "print(twice(np.float64(3.0)))\n")
    script = tmp_path / "damaged_cache_probe.py"
    script.write_text(code)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(Path(__file__).resolve().parents[1]))

    def run():
        return subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)

    assert run().stdout.strip() == "6.0"
    files = [p for p in cache.rglob("*") if p.suffix in (".nbi", ".nbc")]
    assert {p.suffix for p in files} == {".nbi", ".nbc"}
    for damage in (os.urandom(300), b"", b"\x80\x04garbage"):
        for p in cache.rglob("*.nb*"):
            p.write_bytes(damage)
        out = run()
        assert out.returncode == 0 and out.stdout.strip() == "6.0", out.stderr[-2000:]
        assert "Traceback" not in out.stderr
    assert run().stdout.strip() == "6.0"  # and the rewritten cache loads


def test_a_drivers_serial_and_parallel_builds_agree_to_the_bit():
    """A small call runs the serial build, a large one the parallel build (solvers.jit.Driver): the same rows."""
    import numpy as np

    from planner.catalog import get_hardware, get_model
    from planner.perf.pack import hardware_vector, model_vector, workload_vector
    from solvers.perf import sweep

    model, hw = model_vector(get_model("llama-3.1-70b")), hardware_vector(get_hardware("hgx-h100"), "fp8")
    wl, draft = workload_vector(2000, 300), np.zeros_like(model)
    rng = np.random.default_rng(7)
    layouts = np.column_stack([rng.choice([1, 2, 4, 8], 40), rng.choice([1, 2], 40), np.zeros(40)]).astype(float)
    batches = rng.integers(1, 256, 12).astype(float)
    driver = sweep._colocated_points
    args = (model, draft, hw, wl, layouts, batches, 0.0, 1.0)
    serial = driver.serial(*args, 1)
    parallel = driver.parallel(*args, 2)
    assert np.array_equal(serial, parallel, equal_nan=True)
    assert np.array_equal(driver(*args, 1), serial, equal_nan=True)  # the parallel build on the calling thread
    assert np.array_equal(driver(*args, 0), serial, equal_nan=True)  # jit.SERIAL


def test_each_build_has_its_own_cache_name():
    from solvers.jit import renamed
    from solvers.perf import sweep

    driver = sweep._colocated_points
    assert driver.serial.py_func.__qualname__ == driver.py_func.__qualname__ + "_serial"
    assert driver.parallel.py_func is driver.py_func
    twin = renamed(lambda x: x + 1, "_b")
    assert twin(1) == 2 and twin.__name__.endswith("_b")


def test_warmup_leaves_both_builds_of_every_driver_compiled():
    from solvers.jit import DRIVERS, compile_both_builds

    compile_both_builds()
    for driver in DRIVERS:
        serial, parallel = ({tuple(s) for s in d.signatures} for d in driver.dispatchers)
        assert serial == parallel, driver.__qualname__
