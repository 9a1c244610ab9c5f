"""The numba cache is dropped when any source of the numerical layer changes (numba itself only watches a cached
function's own file, so a kernel edit would leave its callers' cached code stale)."""

from solvers.jit import STAMP, drop_stale_cache


def test_cache_dropped_when_a_source_changes(tmp_path):
    (tmp_path / "kernels.py").write_text("x = 1\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    assert drop_stale_cache(tmp_path)  # no stamp yet: drop and record
    (cache / "sweep.f-1.py311.nbi").write_text("index")
    (cache / "sweep.f-1.py311.1.nbc").write_text("code")
    assert not drop_stale_cache(tmp_path)  # sources unchanged: the cache stays
    assert (cache / "sweep.f-1.py311.nbi").exists()
    (tmp_path / "kernels.py").write_text("x = 2\n")
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
