"""Virtual environments holding the engines whose own parsers judge the export (``make engines``):
``.engines/vllm-VERSION``, ``.engines/sglang-VERSION`` and ``.engines/dynamo-VERSION`` (Dynamo's worker with the
vLLM its release pins), at the versions the export targets name (planner.export's VERSION constants), each the
engine's wheels without their dependencies plus those of their dependencies the argument parsers import. Left out:
the GPU kernel packages (no GPU here and none of them is on the parsers' path), which the engine's own metadata
names and ``SKIP`` matches. torch is installed (the parsers import it) as one CPU build for all three,
``PARSER_TORCH``, once, in a folder they share (``SHARED``): vLLM 0.34 and SGLang 0.5.23 pin CUDA builds of torch
2.14, which bring 3 GB of CUDA libraries each that no argument parser loads (``import torch`` needs them all), and
the parsers judge the same flags on 2.13's CPU build (tests/test_engines_accept.py). What needs the torch it was
built for (``AFTER_TORCH``: torchvision's CUDA operators, which transformers only imports where it is installed) is
removed after. An environment that exists with its marker file is kept.

Usage: python tests/engines/install.py [ENGINE ...]   (from the project's own environment)"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOME = ROOT / ".engines"
# Requirements no parser imports that need a GPU, a compiler or a release the index may not carry: kernels,
# media codecs, the compiler stacks
SKIP = re.compile(r"^(flash|flashinfer|apache-tvm|numba|sgl-|sglang-kernel|humming|nvidia-|nvshmem|quack|tilelang|"
                  r"cuda-python|deepseek-recipe|av|decord|torchaudio|torchvision|torchcodec|PyNvVideoCodec|"
                  r"triton|kernels|torch_memory_saver|py-spy|deep_gemm|mooncake|"
                  r"sgl_kernel|flash-attn|cutlass|aisimulate|tokenspeed|instanttensor|fastsafetensors)", re.I)


# The torch every parser runs on: Dynamo 1.6.1's vLLM pins it, and it is the CPU build pip takes on this machine
PARSER_TORCH = "torch==2.13.0"
# Installed once, into a folder the three environments share (a .pth file in each puts it on its path), not once an
# environment: the parsers' torch and the triton that xgrammar (the engines' grammar backend) requires, 1.7 GB that
# took about 36 s of the cores an environment to unpack, beside the suite in CI. An environment that needs another
# version of one installs its own, which comes first on its path.
SHARED = (PARSER_TORCH, "triton==3.9.0")
# Pulled in by the engines' own requirements (timm, sglang) but built against the pinned CUDA torch: removed
AFTER_TORCH = ("torchvision",)


def versions() -> dict[str, str]:
    from planner.export import dynamo, sglang, vllm

    return {"vllm": vllm.VERSION, "sglang": sglang.VERSION, "dynamo": dynamo.RELEASE}


def wheels(engine: str) -> list[str]:
    """The packages (name==version) installed without dependencies: the engine's own with the router its export
    writes, and for Dynamo its runtime and the vLLM its vllm extra pins."""
    from planner.export import dynamo, sglang, vllm

    version = versions()[engine]
    if engine == "dynamo":
        return [f"ai-dynamo=={version}", f"ai-dynamo-runtime=={version}", f"vllm=={dynamo.VLLM_VERSION}"]
    if engine == "vllm":  # with the router a disaggregated vLLM pair is exported with
        return [f"vllm=={version}", f"{vllm.ROUTER}=={vllm.ROUTER_VERSION}"]
    return [f"sglang=={version}", f"{sglang.ROUTER}=={sglang.ROUTER_VERSION}"]


def venv_of(engine: str, version: str) -> Path:
    return HOME / f"{engine}-{version}"


# Set where an install runs beside the tests (.ci/run): the file its exit status is written to when it ends
PENDING = "PLANNER_ENGINES_PENDING"


def wait_for(engine: str, limit_s: float = 1200.0) -> None:
    """Where an install runs beside the tests (``PENDING`` names its status file), until this engine's environment
    is made, the install ends (its status written) or ``limit_s`` passes; at once elsewhere."""
    status = os.environ.get(PENDING)
    if not status:
        return
    made = venv_of(engine, versions()[engine]) / ".installed"
    end = time.monotonic() + limit_s
    while not made.exists() and not Path(status).exists() and time.monotonic() < end:
        time.sleep(2.0)


def python_of(engine: str) -> Path | None:
    """The environment's python where it is installed (its marker file written), else None."""
    env = venv_of(engine, versions()[engine])
    return env / "bin" / "python" if (env / ".installed").exists() else None


def requirements(wheel: Path) -> list[str]:
    """The wheel's own unconditional requirements (METADATA Requires-Dist without an extra), less SKIP."""
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode()
    reqs = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]
    return [r for r in reqs if "extra ==" not in r and not SKIP.match(r)]


def pip(env: Path, *args: str) -> None:
    """``pip install`` into ``env``, without byte-compiling what it installs: the parsers import a small part of
    the 22,000 modules of each environment (compiled as they are imported), and compiling them all took a minute of
    a core per environment, beside the suite in CI (.ci/run)."""
    subprocess.run([str(env / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", "--no-compile", *args],
                   check=True)


def shared() -> Path:
    """The folder of SHARED's packages, installed once (whole or not at all: made beside it, then renamed)."""
    folder = HOME / ("shared-" + "-".join(p.replace("==", "-") for p in SHARED))
    if (folder / ".installed").exists():
        return folder
    making = folder.with_name(folder.name + ".making")
    shutil.rmtree(making, ignore_errors=True)  # a folder an earlier install left half made
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile",
                    "--target", str(making), *SHARED], check=True)
    (making / ".installed").write_text("\n".join(SHARED) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    making.rename(folder)
    return folder


def install(engine: str) -> Path:
    version = versions()[engine]
    env = venv_of(engine, version)
    if (env / ".installed").exists():
        return env
    base = shared()
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(env)], check=True)
    site = subprocess.run([str(env / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "planner-shared.pth").write_text(f"{base}\n")  # torch and triton, as installed in SHARED
    packages = wheels(engine)
    names = {re.split(r"[=<>\[ ;]", p)[0].lower().replace("_", "-") for p in packages}
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([str(env / "bin" / "pip"), "download", "-q", "--disable-pip-version-check", "--no-deps",
                        "-d", tmp, *packages], check=True)
        files = sorted(Path(tmp).glob("*.whl"))
        reqs = sorted({r for w in files for r in requirements(w)
                       if re.split(r"[=<>!~\[ ;(]", r)[0].lower().replace("_", "-") not in names})
        torch = [r for r in reqs if re.match(r"^torch\s*[=<>!~ ;(]", r) or r == "torch"]
        with open(Path(tmp) / "torch.txt", "w") as held:  # the shared torch held while the rest resolve
            held.write(PARSER_TORCH + "\n")
        pip(env, "-c", str(Path(tmp) / "torch.txt"), *[r for r in reqs if r not in torch])
        pip(env, "--no-deps", *map(str, files))
        subprocess.run([str(env / "bin" / "pip"), "uninstall", "-y", "-q", *AFTER_TORCH], check=True)
    (env / ".installed").write_text(f"{engine}=={version}\n")
    return env


if __name__ == "__main__":
    from concurrent.futures import ThreadPoolExecutor

    # side by side: each install is pip unpacking wheels (torch's are gigabytes), bound by the disk and the network
    # more than by the two cores, and the three share pip's cache safely
    names = sys.argv[1:] or list(versions())
    shared()  # once, before the three that share it
    with ThreadPoolExecutor(max_workers=len(names)) as pool:
        for name, env in zip(names, pool.map(install, names)):
            print(f"{name}: {env}", flush=True)
