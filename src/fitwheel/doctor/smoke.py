"""Smoke tests run in the target interpreter (``doctor --run``).

Each test is a short script run as ``python -I -c SCRIPT`` in its own child process: a clean
environment (``PATH``, ``HOME``, the locale and the temporary folder only: no ``PYTHONPATH``, no
``CUDA_VISIBLE_DEVICES``, so every device is tried), an empty working folder, its own process
group, and a time bound after which the whole group is killed. A script reports on lines
``@@fitwheel-doctor {json}``; a child that hangs, crashes (a signal) or exits without a report is
itself the finding, never a traceback here.

Which tests apply is decided here from what is installed and the machine's devices, so a test
that cannot apply starts no process and says why it does not apply.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from fitwheel.doctor.backends import device_cc
from fitwheel.doctor.builds import Build
from fitwheel.doctor.report import FAIL, NA, PASS, Check, Status
from fitwheel.platform.profile import Device, Profile
from fitwheel.torchbackend.gpubuild import usable_gpus

__all__ = ["SMOKE_TESTS", "SmokePlan", "run_script", "smoke_checks"]

_TAG = "@@fitwheel-doctor "
_KEEP_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SYSTEMROOT", "USER", "LOGNAME")
_MAX_OUTPUT = 1 << 20

_PRELUDE = r"""
import json, sys
def report(name, status, detail, **extra):
    sys.stdout.write("@@fitwheel-doctor " + json.dumps(
        {"name": name, "status": status, "detail": detail, **extra}) + "\n")
    sys.stdout.flush()
def error(exc):
    text = (type(exc).__name__ + ": " + str(exc)).strip()
    return text.splitlines()[0][:400] if text else type(exc).__name__
"""

# -- the scripts ---------------------------------------------------------------------------------

_TORCH_IMPORT = r"""
import torch
v = torch.version
report("import", "pass", "torch %s imports (CUDA %s, HIP %s, XPU %s)" % (
    torch.__version__, v.cuda, getattr(v, "hip", None), getattr(v, "xpu", None)))
"""

_TORCH_DEVICES = r"""
import torch
def runs(archs, cc):
    # a cubin (sm_XY) runs on GPUs of its major with an equal or higher minor (sm_XYa only on
    # exactly XY); PTX (compute_XY) on any GPU from XY on
    for a in archs:
        kind, _, number = a.partition("_")
        digits = number.rstrip("af")
        if not digits.isdigit():
            continue
        major, minor = divmod(int(digits), 10)
        if kind == "sm" and (major, minor) == tuple(cc):
            return True
        if kind == "sm" and digits == number and major == cc[0] and minor <= cc[1]:
            return True
        if kind == "compute" and (major, minor) <= tuple(cc):
            return True
    return False
kind = KIND
expected = EXPECTED
mod = torch.xpu if kind == "xpu" else torch.cuda
if not mod.is_available():
    report("devices", "fail", "torch sees no %s device, but this machine has %d" % (
        kind.upper(), expected))
else:
    n = mod.device_count()
    archs = list(mod.get_arch_list()) if hasattr(mod, "get_arch_list") else []
    names = []
    missing = []
    for i in range(n):
        p = mod.get_device_properties(i)
        if kind == "cuda" and getattr(torch.version, "hip", None):
            arch = p.gcnArchName.split(":")[0]
            ok = not archs or arch in archs
        elif kind == "cuda":
            cc = mod.get_device_capability(i)
            arch = "sm_%d%d" % cc
            ok = not archs or runs(archs, cc)
        else:
            arch = getattr(p, "name", "xpu")
            ok = True
        names.append("%d: %s (%s)" % (i, p.name, arch))
        if not ok:
            missing.append("%d (%s)" % (i, arch))
    detail = "%d device(s): %s; the build reports archs %s" % (n, "; ".join(names), " ".join(archs))
    if n < expected:
        report("devices", "fail", "torch sees %d of the %d %s devices here: %s" % (
            n, expected, kind.upper(), detail))
    elif missing:
        report("devices", "fail", "no kernels for device %s: %s" % (", ".join(missing), detail))
    else:
        report("devices", "pass", detail)
"""

_TORCH_MATMUL = r"""
import torch
kind = KIND
torch.manual_seed(0)
a = torch.randn(64, 48, dtype=torch.float64)
b = torch.randn(48, 32, dtype=torch.float64)
rows = a.tolist(); cols = b.t().tolist()
ref = torch.tensor([[sum(x * y for x, y in zip(r, c)) for c in cols] for r in rows])
cpu = (a.float() @ b.float()).double()
err = (cpu - ref).abs().max().item()
if err < 1e-3:
    report("matmul", "pass", "64x48 @ 48x32 on the CPU matches (max error %.1e)" % err,
           device="cpu")
else:
    report("matmul", "fail", "the CPU product is wrong (max error %.3g)" % err, device="cpu")
if kind:
    mod = torch.xpu if kind == "xpu" else torch.cuda
    n = mod.device_count() if mod.is_available() else 0
    for i in range(n):
        dev = "%s:%d" % (kind if kind == "xpu" else "cuda", i)
        try:
            out = (a.float().to(dev) @ b.float().to(dev)).cpu().double()
            e = (out - cpu).abs().max().item()
            if e < 5e-2:
                report("matmul", "pass", "on %s matches the CPU (max difference %.1e)" % (dev, e),
                       device=dev)
            else:
                report("matmul", "fail", "on %s differs from the CPU by %.3g" % (dev, e),
                       device=dev)
        except Exception as exc:
            report("matmul", "fail", "on %s: %s" % (dev, error(exc)), device=dev)
"""

_TORCH_COMPILE = r"""
import torch
dev = DEVICE
def f(x):
    return torch.sin(x) * 2 + x
x = torch.arange(16, dtype=torch.float32, device=dev)
compiled = torch.compile(f)
out = compiled(x)
diff = (out - f(x)).abs().max().item()
if diff < 1e-4:
    report("torch.compile", "pass", "a tiny function compiles and runs on %s" % dev)
else:
    report("torch.compile", "fail", "the compiled function differs by %.3g on %s" % (diff, dev))
"""

_TORCH_FLEX = r"""
import torch
from torch.nn.attention.flex_attention import flex_attention
dev = DEVICE
q, k, v = (torch.randn(1, 2, 128, 64, device=dev, dtype=torch.float16) for _ in range(3))
out = torch.compile(flex_attention)(q, k, v)
ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
diff = (out - ref).abs().max().item()
if diff < 5e-2:
    report("flexattention", "pass", "FlexAttention runs on %s (max difference %.1e)" % (dev, diff))
else:
    report("flexattention", "fail", "FlexAttention differs from SDPA by %.3g on %s" % (diff, dev))
"""

_TORCH_MX = r"""
import torch
dev = DEVICE
names = ("float8_e4m3fn", "float8_e8m0fnu", "float4_e2m1fn_x2")
missing = [n for n in names if not hasattr(torch, n)]
if missing:
    report("mx formats", "fail", "this torch lacks the dtypes %s" % ", ".join(missing))
else:
    a = torch.randn(128, 128, device=dev)
    b = torch.randn(128, 128, device=dev)
    a8 = a.to(torch.float8_e4m3fn)
    b8 = b.to(torch.float8_e4m3fn).t().contiguous().t()
    scale = torch.ones(128, 4, device=dev).to(torch.float8_e8m0fnu)
    out = torch._scaled_mm(a8, b8, scale, scale, out_dtype=torch.bfloat16).float()
    ref = a8.float() @ b8.float()
    rel = ((out - ref).abs().max() / ref.abs().max()).item()
    if rel < 5e-2:
        report("mx formats", "pass", "an MX-FP8 scaled matrix product runs on %s (relative "
               "difference %.1e); MX-FP4 dtype present" % (dev, rel))
    else:
        report("mx formats", "fail", "the MX-FP8 product differs by %.3g on %s" % (rel, dev))
"""

_TORCH_P2P = r"""
import torch
n = torch.cuda.device_count() if torch.cuda.is_available() else 0
linked = LINKED
pairs, missing = [], []
for i in range(n):
    for j in range(n):
        if i != j:
            ok = torch.cuda.can_device_access_peer(i, j)
            (pairs if ok else missing).append("%d->%d" % (i, j))
try:
    import torch.distributed._symmetric_memory as symm
    nvshmem = getattr(symm, "is_nvshmem_available", lambda: None)()
    symmetric = "symmetric memory module present" + (
        "" if nvshmem is None else (", NVSHMEM %s" % ("available" if nvshmem else "not available")))
except Exception as exc:
    symmetric = "no symmetric memory (%s)" % error(exc)
bad = [p for p in missing if tuple(int(x) for x in p.split("->")) in linked]
detail = "peer access %s; %s" % (", ".join(pairs) or "none", symmetric)
if missing:
    detail += "; no peer access %s" % ", ".join(missing)
report("p2p", "fail" if bad else "pass",
       ("linked GPUs without peer access: %s; " % ", ".join(bad) if bad else "") + detail)
"""

_TORCH_CPU = r"""
import torch
cap = torch.backends.cpu.get_cpu_capability()
expected = EXPECTED
order = ["DEFAULT", "NEON", "VSX", "ZVECTOR", "AVX2", "AVX512", "SVE128", "SVE256", "SVE512"]
extra = []
if hasattr(torch.backends, "mkldnn"):
    extra.append("oneDNN %s" % ("available" if torch.backends.mkldnn.is_available() else "absent"))
    try:
        extra.append("bf16 %s" % ("yes" if torch.ops.mkldnn._is_mkldnn_bf16_supported() else "no"))
    except Exception:
        pass
detail = "kernels in use: %s%s" % (cap, (" (" + ", ".join(extra) + ")") if extra else "")
if expected and cap == "DEFAULT" and expected != "DEFAULT":
    report("cpu kernels", "fail", "%s, but this CPU supports %s kernels" % (detail, expected))
elif expected == "AVX512" and cap == "AVX2":
    report("cpu kernels", "pass",
           "%s (AVX512 kernels are chosen only where they are faster)" % detail)
else:
    report("cpu kernels", "pass", detail)
"""

_JAX = r"""
import jax, numpy as np
report("import", "pass", "jax %s imports" % jax.__version__)
devices = jax.devices()
kinds = sorted({d.platform for d in devices})
expected = EXPECTED
gpus = [d for d in devices if d.platform in ("gpu", "cuda", "rocm")]
if expected and len(gpus) < expected:
    report("devices", "fail", "jax sees %d of the %d GPUs here (%s)" % (len(gpus), expected,
           ", ".join(str(d) for d in devices)))
else:
    shown = ", ".join(str(d) for d in devices)
    report("devices", "pass", "%d device(s): %s" % (len(devices), shown))
rng = np.random.default_rng(0)
a = rng.standard_normal((64, 48), dtype=np.float32)
b = rng.standard_normal((48, 32), dtype=np.float32)
ref = a.astype(np.float64) @ b.astype(np.float64)
for d in devices:
    try:
        out = np.asarray(jax.device_put(a, d) @ jax.device_put(b, d))
        e = float(np.abs(out - ref).max())
        verdict = "matches" if e < 5e-2 else "differs from"
        report("matmul", "pass" if e < 5e-2 else "fail",
               "on %s %s the CPU (max difference %.1e)" % (d, verdict, e), device=str(d))
    except Exception as exc:
        report("matmul", "fail", "on %s: %s" % (d, error(exc)), device=str(d))
"""

_CUPY = r"""
import cupy, numpy as np
report("import", "pass", "cupy %s imports" % cupy.__version__)
n = cupy.cuda.runtime.getDeviceCount()
expected = EXPECTED
report("devices", "fail" if n < expected else "pass", "cupy sees %d of %d GPUs" % (n, expected))
rng = np.random.default_rng(0)
a = rng.standard_normal((64, 48), dtype=np.float32)
b = rng.standard_normal((48, 32), dtype=np.float32)
ref = a.astype(np.float64) @ b.astype(np.float64)
for i in range(n):
    try:
        with cupy.cuda.Device(i):
            out = cupy.asnumpy(cupy.asarray(a) @ cupy.asarray(b))
        e = float(np.abs(out - ref).max())
        verdict = "matches" if e < 5e-2 else "differs from"
        report("matmul", "pass" if e < 5e-2 else "fail",
               "on GPU %d %s the CPU (max difference %.1e)" % (i, verdict, e), device="gpu:%d" % i)
    except Exception as exc:
        report("matmul", "fail", "on GPU %d: %s" % (i, error(exc)), device="gpu:%d" % i)
"""

#: test name -> what it checks (for --help and the docs)
SMOKE_TESTS = {
    "import": "the framework imports",
    "devices": "device enumeration and the arch list the framework reports",
    "matmul": "a small matrix product on the CPU and on every device, compared with the CPU",
    "torch.compile": "torch.compile of a tiny function (on the first GPU, else the CPU)",
    "flexattention": "FlexAttention on the first GPU",
    "mx formats": "MX-FP8/MX-FP4 dtypes and a scaled matrix product (Blackwell, gfx950)",
    "p2p": "peer-to-peer access between each pair of GPUs, symmetric memory",
    "cpu kernels": "the CPU kernel level torch uses (x86-64 ISA level, oneDNN, Arm SVE/bf16)",
}


def clean_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    source = os.environ if env is None else env
    out = {k: source[k] for k in _KEEP_ENV if k in source}
    out.setdefault("PATH", os.defpath)
    out["PYTHONDONTWRITEBYTECODE"] = "1"
    return out


@dataclass(frozen=True, slots=True)
class Outcome:
    reports: list[dict[str, object]]
    failure: str  # "" when the script ran to its end


def run_script(python: str, script: str, timeout: float, env: Mapping[str, str]) -> Outcome:
    """Run ``script`` in ``python``; its reports, or why it did not finish. At most the last
    :data:`_MAX_OUTPUT` bytes of each of its streams are read."""
    from fitwheel import proc

    with tempfile.TemporaryDirectory(prefix="fitwheel-doctor-") as cwd:
        try:
            done = proc.run(
                [python, "-I", "-c", _PRELUDE + script],
                timeout=timeout,
                cwd=cwd,
                env=env,
                limit=_MAX_OUTPUT,
            )
        except OSError as exc:
            return Outcome([], f"cannot start {python}: {exc.strerror or exc}")
    reports = []
    for line in done.text().splitlines():
        if line.startswith(_TAG):
            try:
                data = json.loads(line[len(_TAG) :])
            except ValueError:
                continue
            if isinstance(data, dict):
                reports.append(data)
    code = done.returncode
    if code is None:
        return Outcome(reports, f"did not finish within {timeout:g} s (hung); the child was killed")
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return Outcome(reports, f"the process crashed ({name})")
    if code != 0:
        lines = [
            x for x in done.stderr[-8192:].decode("utf-8", "replace").splitlines() if x.strip()
        ]
        last = lines[-1].strip() if lines else f"exit status {code}"
        return Outcome(reports, last[:400])
    return Outcome(reports, "")


@dataclass(frozen=True, slots=True)
class SmokePlan:
    """One child process: its script and the checks it is expected to report."""

    package: str
    names: tuple[str, ...]
    script: str


def _cpu_expectation(profile: Profile) -> str:
    x86 = profile.properties.get("x86_64", {})
    levels = x86.get("level", ())
    if levels:
        return {"v4": "AVX512", "v3": "AVX2"}.get(levels[0], "DEFAULT")
    arm = profile.properties.get("aarch64", {})
    if arm:
        return "SVE256" if any("sve" in f for f in arm) else ""
    return ""


def _has_mx(devices: Sequence[Device]) -> bool:
    for d in devices:
        cc = device_cc(d) if d.vendor == "nvidia" else None
        if cc is not None and cc[0] >= 10:
            return True
        if "gfx950" in d.properties.get("amd", {}).get("gfx_arch", ()):
            return True
    return False


def _linked_pairs(devices: Sequence[Device]) -> set[tuple[int, int]]:
    pairs = set()
    by_node = {i: d for i, d in enumerate(devices)}
    for i, d in by_node.items():
        for peer in d.extra.get("xgmi_peers", ()) or ():
            for j, other in by_node.items():
                if other.index + 1 == peer or other.extra.get("node") == peer:
                    pairs.add((i, j))
    return pairs


def plan_torch(build: Build, profile: Profile) -> tuple[list[SmokePlan], list[Check]]:
    """The torch tests for ``build`` on ``profile``'s machine, and the n/a checks of those
    that do not apply."""
    pkg = build.dist.name
    kind = build.kind if build.kind in ("cuda", "rocm", "xpu") else ""
    vendor = {"cuda": "nvidia", "rocm": "amd", "xpu": "intel"}.get(kind, "")
    gpus = usable_gpus(profile, vendor) if vendor else []
    torch_kind = "xpu" if kind == "xpu" else ("cuda" if kind else "")
    device = f"{torch_kind}:0" if gpus else "cpu"
    plans = [
        SmokePlan(pkg, ("import",), _TORCH_IMPORT),
        SmokePlan(
            pkg, ("matmul",), _TORCH_MATMUL.replace("KIND", repr(torch_kind if gpus else ""))
        ),
        SmokePlan(pkg, ("torch.compile",), _TORCH_COMPILE.replace("DEVICE", repr(device))),
        SmokePlan(
            pkg, ("cpu kernels",), _TORCH_CPU.replace("EXPECTED", repr(_cpu_expectation(profile)))
        ),
    ]
    na: list[Check] = []
    why_no_gpu = (
        ("a CPU build: it uses no GPU" if usable_gpus(profile) else "no GPU on this machine")
        if not kind
        else f"no {vendor.upper() if vendor != 'nvidia' else 'NVIDIA'} GPU on this machine"
    )
    if gpus:
        script = _TORCH_DEVICES.replace("KIND", repr(torch_kind)).replace(
            "EXPECTED", str(len(gpus))
        )
        plans.insert(1, SmokePlan(pkg, ("devices",), script))
        plans.append(
            SmokePlan(pkg, ("flexattention",), _TORCH_FLEX.replace("DEVICE", repr(device)))
        )
        if _has_mx(gpus):
            plans.append(SmokePlan(pkg, ("mx formats",), _TORCH_MX.replace("DEVICE", repr(device))))
        else:
            na.append(
                Check(
                    "mx formats",
                    pkg,
                    NA,
                    "no GPU here with MX-FP8/MX-FP4 (compute capability 10.0 or newer, or gfx950)",
                )
            )
        if len(gpus) >= 2 and torch_kind == "cuda":
            linked = _linked_pairs(gpus)
            plans.append(SmokePlan(pkg, ("p2p",), _TORCH_P2P.replace("LINKED", repr(linked))))
        else:
            na.append(Check("p2p", pkg, NA, "peer-to-peer needs two GPUs of one vendor"))
    else:
        for name in ("devices", "flexattention", "mx formats", "p2p"):
            na.append(Check(name, pkg, NA, why_no_gpu))
    return plans, na


def smoke_checks(
    python: str,
    builds: Mapping[str, Build],
    installed: set[str],
    profile: Profile,
    *,
    timeout: float,
    skip: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    runner: Callable[[str, str, float, Mapping[str, str]], Outcome] = run_script,
) -> list[Check]:
    """Run the smoke tests that apply; one check per report, and one for every test that did
    not finish."""
    child_env = clean_environment(env)
    plans: list[SmokePlan] = []
    checks: list[Check] = []
    torch = builds.get("torch")
    if torch is not None:
        torch_plans, na = plan_torch(torch, profile)
        plans += torch_plans
        checks += na
    if "jax" in installed:
        expected = (
            len(usable_gpus(profile, "nvidia"))
            if any(b.kind == "cuda" and b.dist.key.startswith("jax") for b in builds.values())
            else 0
        )
        plans.append(
            SmokePlan(
                "jax", ("import", "devices", "matmul"), _JAX.replace("EXPECTED", str(expected))
            )
        )
    cupy = [b for b in builds.values() if b.dist.key.startswith("cupy")]
    if cupy:
        gpus = usable_gpus(profile, "nvidia" if cupy[0].kind == "cuda" else "amd")
        if gpus:
            plans.append(
                SmokePlan(
                    cupy[0].dist.name,
                    ("import", "devices", "matmul"),
                    _CUPY.replace("EXPECTED", str(len(gpus))),
                )
            )
        else:
            checks.append(Check("import", cupy[0].dist.name, NA, "CuPy needs a GPU; none here"))
    skipped = set(skip)
    imported: dict[str, bool] = {}
    for plan in plans:
        if skipped.intersection(plan.names):
            checks += [Check(n, plan.package, NA, "skipped (--skip)") for n in plan.names]
            continue
        if plan.names[0] != "import" and imported.get(plan.package) is False:
            checks += [
                Check(n, plan.package, NA, f"{plan.package} does not import") for n in plan.names
            ]
            continue
        outcome = runner(python, plan.script, timeout, child_env)
        seen = set()
        for data in outcome.reports:
            status = data.get("status")
            name = str(data.get("name", plan.names[0]))
            seen.add(name)
            checks.append(
                Check(
                    name,
                    plan.package,
                    _status(status),
                    str(data.get("detail", "")),
                    None,
                )
            )
        if outcome.failure:
            failed = [n for n in plan.names if n not in seen] or [plan.names[-1]]
            for name in failed:
                checks.append(Check(name, plan.package, FAIL, outcome.failure, _fix_hint(name)))
        if "import" in plan.names:
            imported[plan.package] = "import" in seen and not (
                outcome.failure and "import" not in seen
            )
    order = {name: i for i, name in enumerate(SMOKE_TESTS)}
    packages = list(dict.fromkeys(c.package for c in checks))
    # one package's tests together, in the order of the table (a stable sort keeps each
    # device's matmul in device order)
    return sorted(checks, key=lambda c: (packages.index(c.package), order.get(c.name, 99)))


def _fix_hint(name: str) -> str | None:
    return None


def _status(value: object) -> Status:
    """A child's status as reported; anything else counts as a failure."""
    for status in (PASS, FAIL, NA):
        if value == status:
            return status
    return FAIL
