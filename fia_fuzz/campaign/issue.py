"""`fia-fuzz report --issue BUNDLE`: a Markdown issue body a kernel team accepts.

It holds, in order: the failure class in words on one line (e.g. "NaN query row returns
0 (fp64 golden: NaN)"); where backends of the same framework disagree on the call (torch's
MATH against FLASH_ATTENTION), that first, as the strongest evidence; the environment
(`numerics/environment.py` here, and what the campaign recorded); the
minimal call; expected (the fp64 golden, and the other backends of the framework that
agree with it) against actual at the worst element; and a self-contained script in the
backend's own framework: plain torch for the torch runners (`repro_torch.py`, run here
with `python -I` and its output shown), torch_npu for the NPU runners (the bundle's
repro_npu.py) and C for aclnn (the bundle's repro_aclnn.c), those two with the data files
of the bundle they read.
"""

from __future__ import annotations

import platform
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from fia_fuzz.campaign.bundles import Bundle, load_bundle
from fia_fuzz.campaign.evaluate import evaluate, golden_pair
from fia_fuzz.campaign.repro_torch import BACKENDS, script_for
from fia_fuzz.diff.signature import FAILED_OUTCOMES, failure_kind, signature
from fia_fuzz.files.cases import InputError
from fia_fuzz.numerics.environment import environment
from fia_fuzz.op.call import CallView
from fia_fuzz.op.case import Case
from fia_fuzz.op.geometry import DENSE_LAYOUTS, to_bnsd

#: The torch runners a torch bundle's call is also run on, to see which agree.
TORCH_SIBLINGS = ("torch-api-math", "torch-api-flash", "torch-math", "torch-sdpa")
#: Special fill values in words.
SPECIAL_WORDS = {"nan": "NaN", "inf": "+Inf", "-inf": "-Inf", "ninf": "-Inf"}
#: Seconds the standalone script may take when it is run to show its output.
SCRIPT_TIMEOUT = 120.0


def worst_element(actual: np.ndarray, truth: np.ndarray) -> tuple[tuple[int, ...], str]:
    """(index, why): the first element whose finiteness differs from the truth, else the
    largest absolute error."""
    a, t = actual.astype(np.float64), truth.astype(np.float64)
    differs = (np.isnan(a) != np.isnan(t)) | (np.isinf(a) != np.isinf(t)) | (
        np.isinf(a) & np.isinf(t) & (a != t))
    if differs.any():
        at = np.unravel_index(int(np.flatnonzero(differs)[0]), a.shape)
        return tuple(int(i) for i in at), (f"finiteness differs at {int(differs.sum())} of "
                                           f"{a.size} elements")
    err = np.nan_to_num(np.abs(a - t), nan=0.0)
    at = np.unravel_index(int(err.argmax()), a.shape)
    return tuple(int(i) for i in at), f"max abs error {float(err.max()):.6g}"


def value_text(x: float) -> str:
    """A value as an issue names it: NaN, +Inf, -Inf, 0, else 6 significant digits."""
    if np.isnan(x):
        return "NaN"
    if np.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    return "0" if x == 0 else f"{x:.6g}"


def failure_words(case: Case, actual: float, expected: float, row: dict[str, Any]) -> str:
    """The failure class in words: what the call holds, what came back, what was due."""
    what = []
    for name in ("query", "key", "value"):
        fill = case.fills.get(name, {})
        special = SPECIAL_WORDS.get(str(fill.get("special", "")))
        if special:
            where = str(fill.get("where", ""))
            noun = "query row" if name == "query" else f"{name} ({where})" if where else name
            what.append(f"{special} {noun}")
    if not what and case.features().get("values") == "masked_row":
        what.append("fully masked row")
    if what:
        return (f"{' and '.join(what)} returns {value_text(actual)} "
                f"(fp64 golden: {value_text(expected)})")
    kind = failure_kind(row) or "fail"
    return (f"{kind} in {signature(row).split(' ')[0]}: worst element {value_text(actual)} "
            f"(fp64 golden: {value_text(expected)})")


def _framework(runner: str) -> str:
    if runner in BACKENDS:
        return "torch"
    if runner.startswith("aclnn"):
        return "aclnn"
    if runner in ("npu", "npu-v2", "torchair"):
        return "torch_npu"
    return "other"


def _siblings(case: Case, runner: str, at: tuple[int, ...], layout: str, heads: int
              ) -> list[tuple[str, float | None, bool, str]]:
    """(runner, its value at `at` or None, whether it passes, note) for each other torch
    runner that runs here and supports the case."""
    from fia_fuzz.runners import get_runner

    found = []
    for name in TORCH_SIBLINGS:
        if name == runner:
            continue
        r = get_runner(name)
        if not r.available()[0] or not r.supports(case)[0]:
            continue
        outputs: dict[str, np.ndarray] = {}
        row = evaluate(case, r, outputs)
        if row.get("outcome") != "ok" or "attention_out" not in outputs:
            found.append((name, None, False, str(row.get("error") or row.get("outcome"))))
            continue
        out = to_bnsd(np.asarray(outputs["attention_out"], np.float64), layout, heads)
        found.append((name, float(out[at]), failure_kind(row) is None,
                      str(row.get("verdict"))))
    return found


def _call_lines(case: Case) -> list[str]:
    view = case.view()
    lines = []
    for name, spec in case.specs().items():
        if hasattr(spec, "shape"):
            lines.append(f"- `{name}`: {spec.dtype}{list(spec.shape)}")
        elif isinstance(spec, list) and spec and hasattr(spec[0], "shape"):
            lines.append(f"- `{name}`: list of {len(spec)} tensors")
        else:
            lines.append(f"- `{name}` = `{spec!r}`")
    for name, fill in sorted(case.fills.items()):
        if fill.get("special"):
            lines.append(f"- `{name}` holds {fill.get('count', 1)} x "
                         f"{SPECIAL_WORDS.get(str(fill['special']), fill['special'])} "
                         f"({fill.get('where', 'anywhere')} positions), the rest "
                         f"{fill.get('dist', '')} x {fill.get('scale', '')}")
    lines.append(f"- B={view.B} N={view.N} KV_N={view.KV_N} S1={view.S1} S2={view.S2} "
                 f"D={view.Dk} (case {case.case_id}, seed {case.seed}; the inputs are "
                 "deterministic, `case.json` rebuilds them bit for bit)")
    return lines


def _run_script(text: str) -> tuple[int, str]:
    """Run the script alone (`python -I`, from a temporary directory): exit status, output."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "repro_torch.py"
        path.write_text(text)
        try:
            res = subprocess.run([sys.executable, "-I", str(path)], cwd=d, text=True,
                                 capture_output=True, timeout=SCRIPT_TIMEOUT)
        except subprocess.TimeoutExpired:
            return -1, f"(did not finish in {SCRIPT_TIMEOUT:.0f}s)"
    return res.returncode, (res.stdout + res.stderr).strip()


def _live_outputs(b: Bundle, runner: str) -> tuple[np.ndarray, np.ndarray]:
    """The outputs of a row with no bundle of its own, run again here on its runner (its
    inputs rebuild bit for bit from its case); InputError when the runner is not here."""
    from fia_fuzz.runners import RunnerSpecError, get_runner

    where = f"its signature's bundle {b.signature_bundle} has stored outputs" \
        if b.signature_bundle else "it has no bundle with stored outputs"
    try:
        r = get_runner(runner)
    except RunnerSpecError as exc:
        raise InputError(f"{b.case.case_id}: {exc}") from None
    ok, why = r.available()
    if not ok:
        raise InputError(f"{b.case.case_id}: a row without a bundle of its own is run again "
                         f"on its runner, and {runner!r} is not available here ({why}); "
                         f"{where}")
    arrays: dict[str, np.ndarray] = {}
    row = evaluate(b.case, r, arrays)
    if "attention_out" not in arrays:
        raise InputError(f"{b.case.case_id}: no outputs on {runner} here "
                         f"({row.get('outcome')}: {row.get('error')}); {where}")
    return arrays["attention_out"], arrays["softmax_lse"]


def issue_body(bundle: str | Path | Bundle, run_script: bool = True) -> str:
    """The Markdown issue body of one failure bundle, or of a failing row with no bundle of
    its own (`bundles.row_bundle`: its outputs come from running it again here; see the
    module doc)."""
    b = bundle if isinstance(bundle, Bundle) else load_bundle(bundle)
    case, m = b.case, b.metrics
    runner = str(m.get("runner_spec") or m.get("runner") or "")
    if b.outputs is None and b.of_row and failure_kind(m) not in FAILED_OUTCOMES:
        b = replace(b, outputs=_live_outputs(b, runner))
    if b.outputs is None:
        raise InputError(f"{b.path}: the bundle holds no device outputs (outputs.npz): "
                         "it failed without a result (crash, hang, error); its repro.txt "
                         "has the commands")
    view = CallView(case.call())
    layout, heads = str(view.out_layout), view.N
    if layout not in (*DENSE_LAYOUTS, "NBSD"):
        raise InputError(f"{b.path}: output layout {layout}: an issue body is written for "
                         f"the dense output layouts ({', '.join(DENSE_LAYOUTS)}, NBSD)")
    truth, _ = golden_pair(case.call(), case.rules)
    actual = to_bnsd(np.asarray(b.outputs[0], np.float64), layout, heads)
    expected = to_bnsd(np.asarray(truth[0], np.float64), layout, heads)
    at, why = worst_element(actual, expected)
    a, e = float(actual[at]), float(expected[at])
    words = failure_words(case, a, e, m)
    framework = _framework(runner)
    sibs = _siblings(case, runner, at, layout, heads) if framework == "torch" else []
    parts = [f"# {words} ({runner})", ""]
    agree = [s for s in sibs if s[2]]
    if agree:
        parts += [f"**torch's own backends disagree on this call:** {runner} returns "
                  f"{value_text(a)} where " + ", ".join(f"{n} returns {value_text(v)}"
                                                    for n, v, _, _ in agree if v is not None)
                  + f" (fp64 golden: {value_text(e)}), on the same inputs.", ""]
    parts += ["## Summary", "", f"{words}, on `{runner}`.", "",
              f"- signature: `{m.get('signature') or signature(m)}`",
              (f"- result row of case `{case.case_id}` in `{b.path}` (no bundle of its own; "
               f"its signature's: `{b.signature_bundle or 'none'}`)" if b.of_row else
               f"- bundle: `{b.path}` (case `{case.case_id}`)"), "",
              "## Environment", ""]
    parts += [f"- {k} {v}" for k, v in environment().items() if v is not None]
    parts.append(f"- {platform.system()}")
    if b.recorded.environment:
        parts.append("- the campaign's environment: " + ", ".join(
            f"{k} {v}" for k, v in b.recorded.environment.items() if v is not None))
    recorded = {k.removeprefix("meta_"): v for k, v in m.items()
                if k.startswith("meta_") and v not in (None, "")}
    if recorded:
        parts.append("- recorded by the campaign: " + ", ".join(f"{k} {v}"
                                                                for k, v in recorded.items()))
    parts += ["", "## Minimal call", "", *_call_lines(case), "",
              "## Expected against actual at the worst element", "",
              f"Element `out{list(at)}` in (B, N, S, D); {why}.", "",
              "| source | value | agrees with the fp64 golden |", "| --- | --- | --- |",
              f"| fp64 golden (expected) | {value_text(e)} | - |",
              f"| **{runner}** (actual) | **{value_text(a)}** | no |"]
    for name, v, ok, note in sibs:
        parts.append(f"| {name} | {value_text(v) if v is not None else note} | "
                     f"{'yes' if ok else 'no'} |")
    if sibs:
        parts += ["", "Backends of the same framework that agree with the golden: "
                  + (", ".join(s[0] for s in agree) or "none") + "."]
    parts += ["", *_script_section(b.path, case, runner, framework, words, at, run_script)]
    return "\n".join(parts) + "\n"


def _script_section(path: Path, case: Case, runner: str, framework: str, words: str,
                    at: tuple[int, ...], run_script: bool) -> list[str]:
    if framework == "torch":
        from fia_fuzz.runners.torch_api import sdpa_arguments

        args = sdpa_arguments(case.call(), at[0])
        try:
            text = script_for(args, runner, case.case_id, words)
        except ValueError as exc:
            return ["## Reproduce", "", f"No standalone script: {exc}; "
                    f"`fia-fuzz repro {path} --runner {runner}` reruns it."]
        out = ["## Reproduce: plain torch, no fia-fuzz", "",
               f"The failing batch {at[0]} as torch's public call (save as `repro_torch.py`, "
               "run `python repro_torch.py`; exit status 1 on the mismatch):", "",
               "```python", text.rstrip(), "```"]
        if run_script:
            code, printed = _run_script(text)
            out += ["", f"Its output here (`python -I repro_torch.py`, exit status {code}):",
                    "", "```", printed, "```"]
        return out
    name = {"torch_npu": "repro_npu.py", "aclnn": "repro_aclnn.c"}.get(framework)
    if name and (path / name).exists():
        lang = "python" if name.endswith(".py") else "c"
        data = "inputs.npz and golden.npz" if framework == "torch_npu" else "the aclnn/ files"
        return [f"## Reproduce: {framework}, no fia-fuzz", "",
                f"`{name}` of the bundle; it reads {data} beside it (attach them):", "",
                f"```{lang}", (path / name).read_text().rstrip(), "```"]
    return ["## Reproduce", "", f"No standalone script for runner {runner!r} in this "
            f"bundle; `fia-fuzz repro {path} --runner {runner}` reruns it."]
