"""Call sequences in a campaign: run, judge every step, bundle, shrink.

A sequence (`op/sequence.py`) runs in the partition's device process on the
runner's stateful form (`runners/stateful.py`: its registered one, else the
stateless adapter). Every step is judged against the golden's output for that
step alone (the same `judge_outputs` as single cases) and compared bitwise
with the same step run alone on a fresh runner (`metamorphic/relations/
replay.py`, `replay_fresh`): a difference is a `state` finding even when both
are within tolerance. The dataset gets one row per step (the step's own case
identity and features, plus sequence_id, step, step_kind, position, replay,
block_new, block_full, state_*) and one per sequence (step_kind "sequence",
no verdict of its own: `seq_verdict` and, when it fails, its signature
`seq/<workload> step <i> <kind>: <how>` naming the first failing step).

A failing sequence is shrunk greedily (`shrink_sequence`): cut after the
failing step, drop earlier steps or fold the prefill into the cached context
(the failing step comes forward), drop requests, fewer heads, blocks in
order, shorter prompts; a candidate counts only if it fails with the same kind
and the same state diagnosis. Its bundle (`OUT/bundles/<sequence_id>/`) holds
sequence.json, every step's case (`steps/<i>/case.json` + .npz) and outputs,
metrics.json and repro_npu.py, which replays the whole sequence in order.

Nightly and stress run one sequence in place of every 20th stream case
(`strategies/sequences.EVERY`, drawn from their own seeded rounds, so the
case stream itself is unchanged; smoke runs none); `--filter sequence=NAME`
runs only sequences of that workload.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hseed

from fia_fuzz.campaign.bundles import BUNDLES, GOLDEN_NAMES, OUTPUT_NAMES, _plain, dir_bytes
from fia_fuzz.campaign.evaluate import base_row, environment_json, golden_pair, judge_outputs
from fia_fuzz.campaign.repro_npu import call_spec, expected_arrays
from fia_fuzz.diff.signature import failure_kind
from fia_fuzz.files.cases import ENVIRONMENT, INPUT_DIGEST, Recorded, write_case
from fia_fuzz.metamorphic.relations.replay import COMPARISON, diagnose, replay_fresh
from fia_fuzz.numerics.environment import environment
from fia_fuzz.op import stored
from fia_fuzz.op.digest import input_digest
from fia_fuzz.op.sequence import IllegalSequence, Sequence, Step
from fia_fuzz.rules.validate import validate
from fia_fuzz.runners.isolation import resolve_runner
from fia_fuzz.runners.stateful import STATEFUL, Factory, stateful_factory
from fia_fuzz.strategies.seeded import fixed_constants
from fia_fuzz.strategies.sequences import EVERY, sequences

#: The filter that selects sequences (`--filter sequence=decode_loop`).
FILTER = "sequence"
STATE = "state"
SEQUENCE_JSON = "sequence.json"
_TEMPLATE = Path(__file__).with_name("repro_npu_sequence_template.py")
#: The held outputs of the last sequence run with `hold` (device process only).
_HELD: dict[str, list[dict[str, np.ndarray]]] = {}


# ---- the stream ------------------------------------------------------------------------
def wanted(filters: dict[str, Any]) -> str | None:
    """The workload `--filter sequence=...` asks for (None: no sequence filter)."""
    value = filters.get(FILTER)
    return None if value is None else str(value)


def every(profile: str, filters: dict[str, Any]) -> int:
    """One sequence every N stream positions (0: none). A sequence filter runs sequences
    only; other filters pin case features, which sequences do not draw from."""
    if wanted(filters):
        return 1
    if filters:
        return 0
    return EVERY.get(profile, 0)


def draw(seed: int, rnd: int, count: int, profile: str, workload: str | None
         ) -> list[Sequence]:
    """`count` sequences of round `rnd`, a pure function of its arguments."""
    import hashlib

    got: list[Sequence] = []
    if count <= 0:
        return got
    mixed = int(hashlib.sha256(repr((seed, "sequences", rnd)).encode()).hexdigest()[:15], 16)

    @hseed(mixed)
    @settings(max_examples=count, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
    @given(sequences(workload=workload, profile=profile))
    def one(seq: Sequence) -> None:
        if seq.sequence_id not in {s.sequence_id for s in got}:
            got.append(seq)

    with fixed_constants():
        one()
    return got[:count]


def stream_item(st: Any, seq: Sequence) -> bool:
    """One stream position holding a sequence: counted, sharded and claimed like a case;
    False when the budget cut it off."""
    sid = seq.sequence_id
    if sid in st.seen:
        return True
    st.seen.add(sid)
    st.positions += 1
    if not st.job.in_shard(sid):
        return True
    k = st.shard_positions
    st.shard_positions += 1
    if not st.claims.take(k) or sid in st.done:
        return True
    t_gen = time.perf_counter() - st.last_mark
    row = run_sequence(st, seq, "explore", t_gen)
    st.last_mark = time.perf_counter()
    return row is not None


def sequence_round(st: Any, rnd: int, stop: Any) -> bool:
    """Round `rnd` of a sequences-only stream (`--filter sequence=...`); False to stop."""
    cfg = st.cfg
    fresh = 0
    for seq in draw(cfg.seed, rnd, cfg.round_size, cfg.profile, wanted(cfg.filters)):
        if stop() or (cfg.max_cases is not None and st.positions >= cfg.max_cases):
            return False
        if seq.sequence_id in st.seen:
            continue
        fresh += 1
        if not stream_item(st, seq):
            return False
    return fresh > 0


# ---- the device process --------------------------------------------------------------
def factory(ref: tuple[str, str]) -> Factory:
    resolve_runner(ref)   # imports the runner's module, which may register a stateful form
    return stateful_factory(ref[0], lambda: resolve_runner(ref))


def sequence_task(ref: tuple[str, str], seq_json: str, hold: bool = False
                  ) -> list[dict[str, Any]]:
    """Run the sequence on the runner's stateful form: one measured dict per step that ran
    (its case's row fields, the judge's metrics, the state comparison)."""
    _HELD.clear()
    seq = Sequence.from_json(seq_json)
    make = factory(ref)
    probe = make()
    ok, why = probe.available()
    if ok:
        ok, why = probe.supports(seq)
    name = str(probe.name or ref[0])
    rows: list[dict[str, Any]] = []
    held: list[dict[str, np.ndarray]] = []
    if not ok:
        return [{"step": 0, "outcome": "unsupported", "error": why, "runner": name}]
    previous = None
    for run in replay_fresh(seq, make):
        data = run.data
        st = data.state
        row = base_row(data.case, name)
        row.update(_step_columns(seq, st))
        row[INPUT_DIGEST] = input_digest(data.call)
        ok, why = probe.supports_step(data.case)
        t0 = time.perf_counter()
        if not ok:
            row.update(outcome="unsupported", error=why)
            rows.append(row)
            break
        try:
            truth, baseline = golden_pair(data.call, data.case.rules)
        except NotImplementedError as exc:
            row.update(outcome="unsupported", error=f"golden: {exc}")
            rows.append(row)
            break
        t1 = time.perf_counter()
        if run.error or run.in_sequence is None:
            row.update(outcome="error", error=run.error, t_golden=t1 - t0)
            rows.append(row)
            break
        row.update(judge_outputs(data.case, run.in_sequence, truth, baseline))
        row.update(outcome="ok", error=run.error, t_golden=t1 - t0,
                   t_diff=time.perf_counter() - t1)
        cmp = run.compare
        row.update(state_compare=COMPARISON, state_equal=bool(cmp and cmp.equal),
                   state_max_abs=None if cmp is None else cmp.max_abs,
                   state_differing=None if cmp is None else cmp.differing)
        if cmp is not None and not cmp.equal:
            row["state_kind"] = diagnose(seq, make, run, previous)
        if hold:
            out = dict(zip(OUTPUT_NAMES, run.in_sequence, strict=True))
            if run.fresh is not None:
                out.update({f"fresh_{k}": v for k, v in zip(OUTPUT_NAMES, run.fresh,
                                                            strict=True)})
            out.update(zip(GOLDEN_NAMES, (*truth, *baseline), strict=True))
            held.append(out)
        rows.append(row)
        previous = data
    if hold:
        _HELD[seq.sequence_id] = held
    return rows


def stage_sequence_task(seq_json: str, runner: str, directory: str) -> None:
    """Write the array files of the sequence's bundle (steps' cases and outputs,
    repro_npu.py with its inputs and goldens) into `directory`."""
    seq = Sequence.from_json(seq_json)
    write_arrays(Path(directory), seq, runner, _HELD.pop(seq.sequence_id, None))


def _step_columns(seq: Sequence, st: Any) -> dict[str, Any]:
    return {"sequence_id": seq.sequence_id, FILTER: seq.workload, "step": st.index,
            "step_kind": st.step.kind, "position": st.position, "replay": st.step.replay,
            "block_new": st.block_new, "block_full": st.block_full,
            "step_q": json.dumps(list(st.step.q)), "step_kv": json.dumps(list(st.kv))}


# ---- judging --------------------------------------------------------------------------
def step_kind(row: dict[str, Any]) -> str | None:
    """A step's failure kind: `state` when it differs from the step run alone, else the
    single-case kind (fail, error ...)."""
    if row.get("state_equal") is False:
        return STATE
    return failure_kind(row)


def verdict_of(steps: list[dict[str, Any]]) -> tuple[str, int | None, str | None, str]:
    """(seq_verdict, first failing step, its kind, its diagnosis)."""
    for row in steps:
        kind = step_kind(row)
        if kind:
            how = str(row.get("state_kind") or row.get("position") or "")
            return kind, int(row.get("step") or 0), kind, how
    if any(r.get("outcome") == "unsupported" for r in steps):
        return "unsupported", None, None, ""
    return "pass", None, None, ""


def signature(seq: Sequence, step: int, kind: str, how: str) -> str:
    return f"seq/{seq.workload} step {step} {kind}: {how}"


# ---- the partition ---------------------------------------------------------------------
def evaluate_sequence(st: Any, seq: Sequence, tags: dict[str, Any], *, timeout: float,
                      bundle: bool) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
    """Run `seq` in the device process; (step rows, sequence row), None when the budget
    or a crash left nothing measured (then the sequence row records the outcome)."""
    cfg = st.cfg
    res = st.worker.call(sequence_task, st.ref, seq.to_json(), bundle, timeout=timeout)
    steps: list[dict[str, Any]] = list(res.value or []) if res.ok else []
    summary = seq.shape_summary()
    row: dict[str, Any] = {
        "case_id": seq.sequence_id, "case_json": seq.to_json(), "sequence_id": seq.sequence_id,
        FILTER: seq.workload, "workload": f"seq/{seq.workload}", "step": None,
        "step_kind": "sequence", "position": "sequence", "runner": cfg.runner,
        **{f"seq_{k}": v for k, v in summary.items()}, "layout": seq.form,
        "q_dtype": seq.dtype, "B": seq.batch, "N": seq.heads[0], "KV_N": seq.heads[1],
        "D": seq.heads[2], "block_size": seq.block_size, "paged": True,
        ENVIRONMENT: environment_json()}
    row.update(tags)
    for s in steps:
        s.update(tags)
    if not res.ok:
        row.update(outcome=res.outcome, error=res.message, seq_verdict=res.outcome)
        kind, first, how = res.outcome, len(steps), "crash"
    else:
        verdict, first_step, kind_, how = verdict_of(steps)
        first = first_step if first_step is not None else 0
        kind = kind_ or ""
        errors = [s for s in steps if s.get("outcome") not in ("ok",)]
        row.update(outcome=errors[0]["outcome"] if errors else "ok",
                   error=errors[0].get("error", "") if errors else "", seq_verdict=verdict,
                   seq_steps_run=len(steps))
    if kind:
        sig = signature(seq, first, kind, how)
        row.update(signature=sig, failure_kind=kind, failing_step=first)
        for s in steps:
            if s.get("step") == first:
                s.update(signature=sig, failure_kind=kind)
    return steps, row


def run_sequence(st: Any, seq: Sequence, origin: str, t_generate: float,
                 extra: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Run one sequence and write its rows (steps, then the sequence); None when the budget
    cut it off."""
    cfg = st.cfg
    left = st.time_left()
    timeout = cfg.case_timeout_s if left is None else max(0.5, min(cfg.case_timeout_s, left))
    t0 = time.perf_counter()
    tags = {**st.meta, "run_id": st.job.run_id, "shard": f"{cfg.shard}/{cfg.shards}",
            "worker": st.job.worker, "device": st.job.device, "seed": cfg.seed,
            "attempt": st.job.attempt, "origin": origin, "mode": "sequence", **(extra or {})}
    done = evaluate_sequence(st, seq, tags, timeout=timeout, bundle=True)
    if done is None:
        return None
    steps, row = done
    row.update(t_generate=t_generate, t_case=time.perf_counter() - t0, timestamp=time.time())
    if row.get("failure_kind"):
        key = (seq.workload, row["failure_kind"], row["signature"].split(": ", 1)[-1])
        st.seq_failing.setdefault(key, seq)
        quota, always = st.quota, origin == "shrunk"
        slot = quota.always(seq.sequence_id) if always else \
            None if quota.exhausted else quota.claim(str(row["signature"]), seq.sequence_id)
        made = None
        if slot is not None:
            try:
                made = write_bundle(st, seq, row, steps)
            finally:
                if made is None:
                    quota.release(slot)
        if made is not None:
            row["bundle"] = str(made)
        elif quota.first(str(row["signature"])):
            row["signature_bundle"] = quota.first(str(row["signature"]))
    if seq.sequence_id in st.done:
        return row   # recorded already (a shrink that found nothing smaller): bundled again
    for s in steps:
        if s.get("case_id") in st.done:
            continue  # a step identical to one already recorded (e.g. a shrink candidate)
        st.writer.write(s)
        st.done.add(str(s["case_id"]))
    st.writer.write(row)
    st.done.add(seq.sequence_id)
    st.evaluated += 1
    st.busy_s += row["t_case"]
    st.outcomes[str(row["outcome"])] += 1
    st.report({"type": "case", "outcome": row["outcome"],
               "verdict": "fail" if row.get("failure_kind") else "pass", "origin": origin})
    return row


# ---- bundles ----------------------------------------------------------------------------
def write_arrays(d: Path, seq: Sequence, runner: str,
                 held: list[dict[str, np.ndarray]] | None) -> None:
    """Every step's case and outputs, and repro_npu.py with inputs.npz and golden.npz."""
    inputs: dict[str, np.ndarray] = {}
    goldens: dict[str, np.ndarray] = {}
    steps: list[dict[str, Any]] = []
    k0, v0 = seq.initial_pool()
    inputs["pool.key"], inputs["pool.value"] = _bits(k0), _bits(v0)
    dtypes = {"pool": seq.dtype}
    for data in seq.run():
        i = data.index
        sd = d / "steps" / str(i)
        sd.mkdir(parents=True, exist_ok=True)
        write_case(sd / "case.json", data.case, Recorded(input_digest(data.call), environment()))
        if held and i < len(held):
            stored.save(sd / "outputs.npz", held[i])
            step_golden = expected_arrays({n: held[i][n] for n in GOLDEN_NAMES
                                           if n in held[i]})
            goldens.update({f"s{i}.{n}": a for n, a in step_golden.items()})
        spec, arrays = call_spec(data.case, runner)
        spec.update(index=i, kind=data.state.step.kind, replay=data.replay,
                    position=data.state.position, kv=list(data.state.kv))
        if not spec.get("unexpressible"):
            # the cache is the script's own (pool.*, written step by step): the step's
            # snapshot is not stored, only the rows written before it
            for pos, name in ((1, "key"), (2, "value")):
                arg = spec["positional"][pos]
                assert np.array_equal(_bits(arrays[arg]), _bits(data.call[name]))
                arrays.pop(arg)
                spec["positional"][pos] = f"pool.{name}"
        for name, a in arrays.items():
            inputs[f"s{i}.{name}"] = a
        inputs[f"s{i}.slots"] = data.slots
        inputs[f"s{i}.new_key"], inputs[f"s{i}.new_value"] = (_bits(data.new_key),
                                                              _bits(data.new_value))
        steps.append(spec)
    stored.savez(d / "inputs.npz", inputs)
    if goldens:
        stored.savez(d / "golden.npz", goldens)
    text = _TEMPLATE.read_text()
    about = {"sequence_id": seq.sequence_id, "workload": seq.workload, "pool_dtype": seq.dtype,
             "graph": any(s.replay for s in seq.steps)}
    for name, value in (("SEQUENCE", about), ("STEPS", steps)):
        line = f"{name}: {'dict' if name == 'SEQUENCE' else 'list'} = " \
               f"{'{}' if name == 'SEQUENCE' else '[]'}\n"
        if line not in text:
            raise RuntimeError(f"{_TEMPLATE} lost its {name!r} line")
        literal = repr(json.loads(json.dumps(value, default=str)))
        text = text.replace(line, line.split(" = ")[0] + f" = {literal}\n", 1)
    (d / "repro_npu.py").write_text(text)
    del dtypes


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(np.uint16) if a.dtype.name == "bfloat16" else a


def write_bundle(st: Any, seq: Sequence, row: dict[str, Any], steps: list[dict[str, Any]]
                 ) -> Path | None:
    """OUT/bundles/<sequence_id>/, complete or absent (written to a temporary directory)."""
    root = Path(st.cfg.out) / BUNDLES
    root.mkdir(parents=True, exist_ok=True)
    final = root / seq.sequence_id
    tmp = Path(tempfile.mkdtemp(prefix=f".{seq.sequence_id}-", suffix=".tmp", dir=root))
    try:
        runner = str(row.get("runner_spec") or row.get("runner"))
        res = st.worker.call(stage_sequence_task, seq.to_json(), runner, str(tmp),
                             timeout=st.cfg.case_timeout_s)
        if not res.ok:
            return None
        (tmp / SEQUENCE_JSON).write_text(seq.to_json(indent=2) + "\n")
        metrics = {"sequence": {k: _plain(v) for k, v in row.items() if k != "case_json"},
                   "steps": [{k: _plain(v) for k, v in s.items() if k != "case_json"}
                             for s in steps]}
        (tmp / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True,
                                                     default=str) + "\n")
        (tmp / "repro.txt").write_text(
            f"python {final}/repro_npu.py   # the whole sequence, in order, on torch_npu\n"
            f"# sequence {seq.sequence_id}: {row.get('signature', '')}\n"
            f"# one step alone: fia-fuzz repro {final}/steps/<i>/case.json\n")
        if not st.quota.admit(dir_bytes(tmp), always=row.get("origin") == "shrunk"):
            return None
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
        return final
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


# ---- shrinking --------------------------------------------------------------------------
def legal(seq: Sequence) -> bool:
    """Every step's state evolves and every step's call validates."""
    try:
        states = seq.states()
    except IllegalSequence:
        return False
    return all(not validate(**seq.step_params(s)) for s in states)


def fit(seq: Sequence) -> Sequence:
    """The pool and table exactly as large as the steps need."""
    bs = seq.block_size
    lens, widest = list(seq.context), [-(-x // bs) for x in seq.context]
    for s in seq.steps:
        kv = [x + q for x, q in zip(lens, s.q, strict=True)]
        widest = [max(w, -(-k // bs)) for w, k in zip(widest, kv, strict=True)]
        lens = [x + k for x, k in zip(lens, s.keep or s.q, strict=True)]
    return replace(seq, num_blocks=max(1, sum(widest)), table_width=max(1, max(widest)))


def candidates(seq: Sequence, failing: int) -> list[Sequence]:
    """Smaller sequences, most promising first (see the module doc)."""
    out: list[Sequence] = []
    steps = list(seq.steps)
    if failing + 1 < len(steps):
        out.append(replace(seq, steps=tuple(steps[:failing + 1])))
    first = steps[0]
    if len(steps) > 1 and not first.replay and first.keep is None:
        # fold the first step into the cached context: the same lengths, one step fewer
        ctx = tuple(c + q for c, q in zip(seq.context, first.q, strict=True))
        rest = list(steps[1:])
        if rest and rest[0].replay:
            rest[0] = replace(rest[0], replay=False)
        out.append(replace(seq, context=ctx, steps=tuple(rest)))
    for j in range(min(failing, len(steps) - 1)):
        rest = steps[:j] + steps[j + 1:]
        if rest and rest[0].replay:
            rest[0] = replace(rest[0], replay=False)
        out.append(replace(seq, steps=tuple(rest)))
    if seq.batch > 1:
        for b in range(seq.batch):
            def drop(t: tuple[int, ...] | None, b: int = b) -> tuple[int, ...] | None:
                return None if t is None else t[:b] + t[b + 1:]
            out.append(replace(seq, context=drop(seq.context),
                               steps=tuple(Step(s.kind, drop(s.q), drop(s.keep), s.replay)
                                           for s in steps)))
    n, kv_n, d = seq.heads
    for heads in ((1, 1, d), (n // 2, max(1, kv_n // 2), d), (n, kv_n, 64)):
        if heads != seq.heads and heads[0] >= 1 and heads[0] % heads[1] == 0:
            out.append(replace(seq, heads=heads))
    if seq.alloc != "in_order":
        out.append(replace(seq, alloc="in_order"))
    bs = seq.block_size
    if any(c > bs for c in seq.context):
        out.append(replace(seq, context=tuple(c - bs if c > bs else c for c in seq.context)))
    if first.q and max(first.q) > bs and first.kind in ("prefill", "chunk"):
        q = tuple(x - bs if x > bs else x for x in first.q)
        out.append(replace(seq, steps=(replace(first, q=q), *steps[1:])))
    if any(s.keep is not None for s in steps):
        out.append(replace(seq, steps=tuple(replace(s, keep=None) for s in steps)))
    if seq.seed:
        out.append(replace(seq, seed=0))
    return [fit(c) for c in out]


def shrink_sequence(st: Any, seq: Sequence, kind: str, how: str, stop_at: float
                    ) -> tuple[Sequence, list[dict[str, Any]]]:
    """The smallest sequence found that fails with `kind` and diagnosis `how`, and the
    shrink's steps (each candidate tried: id, steps, elements, fails)."""
    trace: list[dict[str, Any]] = []
    tried: set[str] = set()
    best, failing = seq, _failing_step(st, seq, kind, how, trace, tried)
    if failing is None:
        return seq, trace
    improved = True
    while improved and time.time() < stop_at:
        improved = False
        for cand in candidates(best, failing):
            if time.time() >= stop_at:
                break
            if cand.sequence_id in tried or not legal(cand):
                continue
            where = _failing_step(st, cand, kind, how, trace, tried)
            if where is not None:
                best, failing, improved = cand, where, True
                break
    return best, trace


def _failing_step(st: Any, seq: Sequence, kind: str, how: str, trace: list[dict[str, Any]],
                  tried: set[str]) -> int | None:
    tried.add(seq.sequence_id)
    done = evaluate_sequence(st, seq, {}, timeout=st.cfg.case_timeout_s, bundle=False)
    steps, row = done if done is not None else ([], {})
    same = row.get("failure_kind") == kind and str(row.get("signature", "")).endswith(
        f": {how}")
    trace.append({"sequence_id": seq.sequence_id, "steps": len(seq.steps),
                  "elements": seq.elements(), "fails": same,
                  "signature": row.get("signature")})
    return int(row["failing_step"]) if same else None


def shrink_failures(st: Any) -> list[dict[str, Any]]:
    """Shrink each failing (workload, kind, diagnosis) this partition found; the minimal
    sequence is run again as a row (origin=shrunk) and bundled with `shrink.json`."""
    out = []
    for (workload, kind, how), seq in list(st.seq_failing.items()):
        left = st.time_left()
        if left is not None and left <= 1.0:
            break
        stop_at = time.time() + st.cfg.shrink_seconds
        if left is not None:
            stop_at = min(stop_at, time.time() + left - 1.0)
        minimal, trace = shrink_sequence(st, seq, kind, how, stop_at)
        row = run_sequence(st, minimal, "shrunk", 0.0, {"shrunk_from": seq.sequence_id,
                                                         "size_found": seq.elements(),
                                                         "size_minimal": minimal.elements()})
        summary = {"cell": {FILTER: workload}, "workload": workload, "kind": kind, "how": how,
                   "shrunk": minimal.sequence_id != seq.sequence_id, "found": seq.sequence_id,
                   "minimal": minimal.sequence_id, "steps_found": len(seq.steps),
                   "steps_minimal": len(minimal.steps), "size_found": seq.elements(),
                   "size_minimal": minimal.elements(),
                   "signature": row.get("signature") if row else None,
                   "bundle": row.get("bundle") if row else None, "tried": len(trace)}
        if row and row.get("bundle"):
            (Path(row["bundle"]) / "shrink.json").write_text(
                json.dumps({**summary, "trace": trace}, indent=2, default=str) + "\n")
        st.report({"type": "log", "text": f"sequence shrunk: {summary}"})
        out.append(summary)
    return out


__all__ = ["STATEFUL", "every", "draw", "run_sequence", "sequence_task", "shrink_failures",
           "wanted"]
