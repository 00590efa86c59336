"""The `fia-fuzz` command line: campaign, report, triage, bisect, repro, validate, coverage,
runners.

Bad input (unreadable or malformed files, unknown names, bad sizes) ends with
exit status 2 and one line saying what and where; `--debug` shows the
traceback instead.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from fia_fuzz.files.cases import InputError, check_call, check_case, load_case, read_json
from fia_fuzz.op.case import Case
from fia_fuzz.op.params import TENSOR_ARGS
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.rules.validate import case_violations

#: Exit status of a command given bad input (argparse's own).
USAGE_ERROR = 2
#: Exit status of a campaign some of whose cases the tool itself could not run.
HARNESS_FAILED = 3
#: Exit status of a repro whose inputs are not those the campaign recorded (no verdict).
INPUTS_DIFFER = 4
EXIT_CODES = """exit status:
  0  done (campaign, report: whatever they found, unless --fail-on names it)
  1  a finding: --fail-on matched (campaign, report; --fail-on new: an untriaged
     signature); the case still fails (repro); it fails in an environment (bisect); the
     call is illegal (validate, import-msprobe); a value or breaker never reached (coverage)
  2  bad input: an unusable file, flag or name (one line on stderr; --debug: traceback)
  3  harness failure (campaign): cases the tool could not run (a device process that did
     not start, an import error in it; outcome `harness`, one line on stderr)
  4  the inputs differ from the recorded case: not the same case (repro; nothing run, one
     line on stderr naming the versions that differ)"""
#: Flags whose value may start with "-" (a negative number, refused with its own message
#: instead of argparse's "expected one argument").
VALUE_FLAGS = ("--budget", "--case-timeout", "--memory-limit", "--device-memory",
               "--max-cases", "--workers", "--seed", "--worst", "--cases")


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Help with every default that says something shown, and the epilog as written."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        d = action.default
        if d is None or d is False or d == [] or d == argparse.SUPPRESS or "%(default)" in text:
            return text
        return f"{text} (default: %(default)s)"


class OneLineParser(argparse.ArgumentParser):
    """argparse with its errors on one line (no usage block), still exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(USAGE_ERROR, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _filters(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise InputError(f"--filter {item!r}: expected FEATURE=VALUE")
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        # a form value spelled like a number (num_key_value_heads_form=0) stays a string
        out[key] = value if _string_value(key, value, parsed) else parsed
    return out


def _string_value(axis: str, value: str, parsed: Any) -> bool:
    """Whether `axis` has the string `value` and not the value it parses as."""
    from fia_fuzz.strategies.axes import AXES

    values = AXES.get(axis, ())
    return parsed != value and value in values and not any(
        type(v) is type(parsed) and v == parsed for v in values)


def _runner(name: str) -> Any:
    """The runner `name`, or InputError naming the known ones."""
    from fia_fuzz.runners import RunnerSpecError, get_runner

    try:
        return get_runner(name)
    except RunnerSpecError as exc:
        raise InputError(str(exc)) from None


def _check_filters(profile: str, filters: dict[str, Any], rules: str) -> None:
    """Unknown filter names or values fail here, before any process starts."""
    from hypothesis.errors import InvalidArgument

    from fia_fuzz.strategies import cases
    from fia_fuzz.strategies.sequences import WORKLOADS

    if "sequence" in filters:
        if filters["sequence"] not in WORKLOADS or len(filters) > 1:
            raise InputError(f"--filter sequence={filters['sequence']!r}: expected one of "
                             f"{', '.join(WORKLOADS)}, alone (no other filter)")
        return
    try:
        cases(profile=profile, rules=rules, **filters)
    except InvalidArgument as exc:
        raise InputError(f"--filter: {exc}") from None


def _check_negative_filters(filters: dict[str, Any], rules: str) -> None:
    """--negative takes one filter, rule=ID: only calls breaking that rule are sent."""
    from hypothesis.errors import InvalidArgument

    from fia_fuzz.strategies.illegal import sided_illegal_cases

    if set(filters) - {"rule"}:
        raise InputError(f"--negative: --filter takes rule=ID only, not "
                         f"{sorted(set(filters) - {'rule'})}")
    if "rule" in filters:
        try:
            sided_illegal_cases(str(filters["rule"]), rules)
        except InvalidArgument as exc:
            raise InputError(f"--filter: {exc}") from None


def _positive(flag: str, value: float | None, given: str | None = None) -> None:
    """`given`: the flag's text as typed, named in the message instead of the number."""
    if value is not None and value <= 0:
        raise InputError(f"{flag} {given if given is not None else f'{value:g}'}: "
                         "must be positive")


def _seed(text: str) -> int:
    """A seed: an int from 0 to 2^64-1 (argparse type)."""
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if not 0 <= seed < 1 << 64:
        raise argparse.ArgumentTypeError(f"{text!r}: expected an int from 0 to 2^64-1")
    return seed


def _fail_on(values: list[str]) -> tuple[str, ...]:
    from fia_fuzz.reports.gate import parse_fail_on

    try:
        return parse_fail_on(values)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _triage(path: str | None) -> Any:
    """The triage file `--triage` names (None: an empty one); InputError with one line."""
    from fia_fuzz.reports.triage import TriageError, load_triage

    try:
        return load_triage(path)
    except TriageError as exc:
        raise InputError(str(exc)) from None


def _gate(run_dirs: list[str], tokens: tuple[str, ...], policy: str | None = None,
          triage: Any = None) -> int:
    """FOUND (one stderr line) when the run's results hold what `--fail-on` names, else 0."""
    if not tokens:
        return 0
    from fia_fuzz.diff import DEFAULT_POLICY
    from fia_fuzz.reports import read_results
    from fia_fuzz.reports.gate import FOUND, TRIAGE_TOKENS, found, marked, verdict_line

    df = read_results(run_dirs)
    counts = found(df, tokens, policy or DEFAULT_POLICY, triage)
    if not counts:
        return 0
    named = {t: list(marked(df, triage, t)) for t in counts if t in TRIAGE_TOKENS}
    print(verdict_line(counts, named), file=sys.stderr)
    return FOUND


def _print_marks(df: Any, triage: Any, fixed_after: int) -> None:
    """One line per failing signature: new, known (its ticket) or regressed; then the
    signatures possibly fixed, with a passing repro."""
    from fia_fuzz.reports.signatures import possibly_fixed, signatures

    for _, r in signatures(df, triage).iterrows():
        filed = f" [{r['ticket']}, {r['status']}]" if r["ticket"] else ""
        print(f"{r['triage']}: {r['signature']} ({int(r['count'])} rows){filed}")
    for sig, repro in possibly_fixed(df, fixed_after).items():
        print(f"possibly fixed (bundles pass {fixed_after} nights): {sig}: {repro}")


def _seed_cases(directory: str) -> tuple[Case, ...]:
    """The legal cases of DIR/*.json (with their stored tensors); illegal ones are named."""

    d = Path(directory)
    if not d.is_dir():
        raise InputError(f"--seed-cases {directory}: no such directory")
    files = sorted(d.glob("*.json"))
    if not files:
        raise InputError(f"--seed-cases {directory}: no case files (*.json) in it")
    seeds = []
    for f in files:
        case = load_case(f)
        illegal = case_violations(case)
        if illegal:
            print(f"seed case {f} is illegal, not run: "
                  + "; ".join(f"[{v.rule}] {v.message}" for v in illegal), file=sys.stderr)
            continue
        seeds.append(case)
    return tuple(seeds)


def cmd_campaign(args: argparse.Namespace) -> int:
    import time

    started = time.time()
    from fia_fuzz.campaign import CampaignConfig, run_campaign
    from fia_fuzz.campaign.config import parse_devices, parse_duration, parse_shard, parse_size

    if args.max_cases is None and args.budget is None:
        raise InputError("give --max-cases N or --budget DURATION (or both)")
    _positive("--max-cases", args.max_cases)
    _positive("--workers", args.workers)
    _positive("--fixed-after", args.fixed_after)
    from fia_fuzz.campaign.config import host_workers

    most, why = host_workers()
    if args.workers > most:
        raise InputError(f"--workers {args.workers}: this host runs at most {most} "
                         f"worker(s) ({why})")
    fail_on = _fail_on(args.fail_on)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {args.out}: is a file, expected a run directory")
    try:
        shard, shards = parse_shard(args.shard)
        budget = parse_duration(args.budget) if args.budget else None
        timeout = parse_duration(args.case_timeout)
        memory = parse_size(args.memory_limit) if args.memory_limit else None
        given = args.device_memory
        device_memory = None if given is None or given.strip().lower() == "none" \
            else parse_size(given)
        devices = parse_devices(args.devices) if args.devices else None
    except ValueError as exc:
        raise InputError(str(exc)) from None
    try:
        bundle_budget = None if args.bundle_budget.strip().lower() == "none" \
            else parse_size(args.bundle_budget)
    except ValueError as exc:
        raise InputError(f"--bundle-budget: {exc}") from None
    _positive("--budget", budget, args.budget)
    _positive("--bundle-budget", bundle_budget, args.bundle_budget)
    _positive("--bundles-per-signature", args.bundles_per_signature)
    _positive("--case-timeout", timeout, args.case_timeout)
    _positive("--memory-limit", memory, args.memory_limit)
    _positive("--device-memory", device_memory, given)
    filters = _filters(args.filter)
    if args.negative:
        _check_negative_filters(filters, args.rules)
    else:
        _check_filters(args.profile, filters, args.rules)
    runner = _runner(args.runner)
    ok, why = runner.available()
    if not ok:
        raise InputError(f"runner {args.runner!r} is not available here: {why}")
    if given is None:  # the backend's device, none for a host backend
        device_memory = runner.device_memory
    if memory is not None:
        from fia_fuzz.campaign.coordinator import check_memory_limit

        short = check_memory_limit(args.runner, memory)
        if short:
            raise InputError(f"--memory-limit {args.memory_limit}: too small: {short}")
    seeds = _seed_cases(args.seed_cases) if args.seed_cases else ()
    triage = _triage(args.triage)
    if args.replay and args.negative:
        raise InputError("--replay: negative mode writes no bundles and replays none")
    for d in args.replay:
        if not (Path(d) / "bundles").is_dir():
            raise InputError(f"--replay {d}: no bundles/ in it (expected a campaign's --out)")
    cfg = CampaignConfig(
        runner=args.runner, out=Path(args.out), max_cases=args.max_cases, budget_s=budget,
        seed=args.seed, profile=args.profile, filters=filters, workers=args.workers,
        devices=devices, shard=shard, shards=shards, negative=args.negative, rules=args.rules,
        case_timeout_s=timeout, memory_limit=memory, device_memory=device_memory,
        shrink=not args.no_shrink, bundles_per_signature=args.bundles_per_signature,
        bundle_budget=bundle_budget, metamorphic=args.metamorphic, seed_cases=seeds,
        replay=tuple(Path(d) for d in args.replay), pair_aims=not args.no_pair_aims)
    s = run_campaign(cfg, started=started)
    added = "" if s.attempt == 1 else (
        f" over {s.attempt} attempts (this one added {s.added_cases}: outcomes "
        f"{s.added_outcomes}; verdicts {s.added_verdicts})")
    print(f"campaign {s.run_id} (attempt {s.attempt}): {s.cases} cases{added}; outcomes "
          f"{s.outcomes}; verdicts {s.verdicts}; this attempt {s.elapsed_s:.1f}s "
          f"({s.cases_per_min:.0f}/min)")
    print(s.throughput_line())
    for sh in s.shrunk:
        what = "minimal" if sh["shrunk"] else "unshrunk"
        print(f"{what} {sh['kind']} case of {sh['cell']}: {sh['minimal']} -> {sh['bundle']}")
    print(f"results: {s.results}")
    from fia_fuzz.reports import read_results

    this_run = read_results([args.out])
    if not this_run.empty and "run_id" in this_run:
        this_run = this_run[this_run["run_id"].astype(str) == s.run_id]
    _print_replays(this_run)
    _print_marks(this_run, triage, args.fixed_after)
    found = _gate([args.out], fail_on, triage=triage)
    if s.harness:
        print(f"fia-fuzz campaign: {s.harness} case(s) could not be run by the tool "
              f"(outcome harness, no finding about the backend): "
              f"{' '.join(s.harness_note.split())[:300]}", file=sys.stderr)
        return HARNESS_FAILED
    return found


def _print_replays(df: Any) -> None:
    """How the replayed bundles fared: counts of each result, one line."""
    from fia_fuzz.reports.signatures import replays

    rep = replays(df)
    if not rep.empty:
        counts = rep["replay_result"].value_counts()
        print(f"replayed {len(rep)} bundle(s): "
              + ", ".join(f"{k} {int(v)}" for k, v in counts.items()))


def _issue(args: argparse.Namespace) -> int:
    """`report --issue BUNDLE` (or `--issue CASE_ID RUN_DIR...`): the Markdown issue body,
    on stdout or into --issue-out."""
    from fia_fuzz.campaign.bundles import find_bundle, row_bundle
    from fia_fuzz.campaign.issue import issue_body

    bundle: Any = Path(args.issue)
    if (bundle / "case.json").is_file():
        if args.run_dirs:
            raise InputError("--issue BUNDLE takes no run directories")
    else:  # a case id: its bundle, or its row (a failing row with no bundle of its own)
        dirs = args.run_dirs or ["."]
        bundle = find_bundle(args.issue, dirs) or row_bundle(args.issue, dirs)
        if bundle is None:
            raise InputError(f"--issue {args.issue}: not a bundle directory (no case.json "
                             "in it), nor a case id with a row in "
                             f"{' '.join(args.run_dirs or ['.'])}")
    body = issue_body(bundle)
    if args.issue_out:
        Path(args.issue_out).write_text(body, encoding="utf-8")
        print(f"issue body: {Path(args.issue_out).resolve()}")
    else:
        sys.stdout.write(body)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from fia_fuzz.diff import DEFAULT_POLICY, POLICIES
    from fia_fuzz.reports import aggregate, read_results, render, write_junit
    from fia_fuzz.reports.dataset import damage_warning

    if args.issue:
        return _issue(args)
    if not args.run_dirs:
        raise InputError("give one or more run directories (or --issue BUNDLE)")
    policy = args.policy or DEFAULT_POLICY
    if policy not in POLICIES:
        raise InputError(f"--policy {policy!r} is not one of {sorted(POLICIES)}")
    _positive("--worst", args.worst)
    _positive("--fixed-after", args.fixed_after)
    fail_on = _fail_on(args.fail_on)
    triage = _triage(args.triage)
    for d in args.run_dirs:
        if Path(d).exists() and not Path(d).is_dir():
            raise InputError(f"{d}: is a file, expected a run directory (a campaign's --out)")
        if not Path(d).is_dir():
            raise InputError(f"{d}: no such run directory")
    damaged: list[str] = []
    notes: list[str] = []
    df = read_results(args.run_dirs, damaged, notes)
    lines = [line for line in [*notes, damage_warning(damaged)] if line]
    if df.empty:  # one line still: what was found unreadable is why there is nothing
        why = "; ".join(line.removeprefix("warning: ") for line in lines)
        raise InputError(f"no results under {' '.join(args.run_dirs)}"
                         + (f" ({why})" if why else ""))
    for line in lines:
        print(line, file=sys.stderr)
    html = Path(args.html) if args.html else Path(args.run_dirs[0]) / "dashboard.html"
    path = render(df, html, policy=policy, worst_n=args.worst, triage=triage,
                  fixed_after=args.fixed_after)
    print(aggregate.headline(df).to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    _print_replays(df)
    _print_marks(df, triage, args.fixed_after)
    print(f"dashboard: {path.resolve()}")
    if args.junit:
        print(f"junit: {write_junit(df, args.junit, policy=policy, triage=triage).resolve()}")
    if args.screenshot:
        from fia_fuzz.reports.browser import screenshot

        try:
            print(f"screenshot: {screenshot(path, args.screenshot)}")
        except (OSError, RuntimeError) as exc:
            print(f"screenshot skipped: {exc}", file=sys.stderr)
    return _gate(args.run_dirs, fail_on, policy, triage)


def cmd_triage_add(args: argparse.Namespace) -> int:
    """Add (or update) one signature's entry in the triage file."""
    from fia_fuzz.reports.triage import Entry, TriageError, add_entry

    try:
        how = add_entry(args.triage, Entry(args.signature, args.ticket, args.status,
                                           args.note))
    except TriageError as exc:
        raise InputError(str(exc)) from None
    print(f"{how} {args.signature!r} -> {args.ticket} ({args.status}) in {args.triage}")
    return 0


def cmd_bisect(args: argparse.Namespace) -> int:
    """The bundle's repro under each --env interpreter; the first and last that fail."""
    from fia_fuzz.campaign.bisect import FAILS, parse_env, run_env, summary
    from fia_fuzz.campaign.bundles import load_bundle

    bundle = Path(args.bundle)
    if not (bundle / "case.json").is_file():
        raise InputError(f"{args.bundle}: not a bundle directory (no case.json in it)")
    try:
        envs = [parse_env(e) for e in args.env]
    except ValueError as exc:
        raise InputError(str(exc)) from None
    for name, python in envs:
        if shutil.which(python) is None:
            raise InputError(f"--env {name}={python}: no such interpreter")
    _positive("--timeout", args.timeout)
    metrics = load_bundle(bundle).metrics
    runner = args.runner or str(metrics.get("runner_spec") or metrics.get("runner") or "")
    if not runner:
        raise InputError(f"{args.bundle}: the bundle names no runner; give --runner")
    results = []
    for name, python in envs:
        r = run_env(name, python, bundle.resolve(), runner, args.timeout)
        results.append(r)
        print(f"{r.name}: {r.result}" + (f" ({r.detail})" if r.detail else "")
              + f"; {r.versions_text()}", flush=True)
    for line in summary(results):
        print(line)
    return 1 if any(r.result == FAILS for r in results) else 0


def cmd_repro(args: argparse.Namespace) -> int:
    from fia_fuzz.campaign.repro import InputsDiffer, reproduce

    if args.runner is not None:
        _runner(args.runner)
    try:
        return reproduce(args.case, args.runner, args.results, features=args.features)
    except InputsDiffer as exc:
        print(f"fia-fuzz repro: {exc}", file=sys.stderr)
        return INPUTS_DIFFER


def cmd_import_msprobe(args: argparse.Namespace) -> int:
    """Each FIA call of an msprobe dump to OUT/<name>.json; print its legality by rule id.

    Exit status 1 when a call is illegal or has no case (both are findings).
    """
    from fia_fuzz.campaign.msprobe import import_dump, write_imported

    task, imports = import_dump(args.dump)
    paths = iter(write_imported(imports, args.out))
    illegal = 0
    print(f"{args.dump}: {task} task, {len(imports)} FIA call(s)")
    for imp in imports:
        if imp.case is None:
            print(f"{imp.api}: not imported: {imp.problem}")
            illegal += 1
            continue
        path = next(paths)
        state = "legal" if not imp.violations else f"ILLEGAL ({len(imp.violations)} rule(s))"
        print(f"{imp.api} -> {path}: {state}")
        for note in imp.notes:
            print(f"  note: {note}")
        for v in imp.violations:
            print(f"  {v}")
        illegal += bool(imp.violations)
    return 1 if illegal else 0


def _call_from_json(data: Any, where: str) -> dict[str, Any]:
    if isinstance(data, dict) and "params" in data:
        return Case.from_dict(check_case(data, where)).specs()
    call: dict[str, Any] = {}
    check_call(data, where)
    for k, v in data.items():
        if k in TENSOR_ARGS and isinstance(v, dict):
            call[k] = TensorSpec.from_dict(v)
        elif k in TENSOR_ARGS and isinstance(v, list) and v and isinstance(v[0], dict):
            call[k] = [TensorSpec.from_dict(x) for x in v]
        else:
            call[k] = v
    return call


def cmd_validate(args: argparse.Namespace) -> int:
    from fia_fuzz.op.outputs import output_specs
    from fia_fuzz.rules.validate import require_legal, validate

    call = _call_from_json(read_json(args.call), args.call)
    violations = validate(**call, rules=args.rules)
    if violations:
        for v in violations:
            print(v)
        return 1
    out, lse = output_specs(require_legal(**call, rules=args.rules))
    print(f"legal (rules {args.rules})\nattention_out: {out}\nsoftmax_lse: {lse}")
    return 0


def cmd_coverage(args: argparse.Namespace) -> int:
    """Draw --cases cases; print hits per feature axis and value, the draw rate, legality
    and, for unfiltered draws, the production bars (strategies/bars.py).

    The rate counts drawing only (no tensor materialisation, no validation);
    validation runs afterwards on every drawn case and is reported apart.
    """
    import time

    from fia_fuzz.rules.validate import validate
    from fia_fuzz.strategies.axes import (
        AXES,
        FILTER_ONLY_IN_SMOKE,
        LARGE_ONLY,
        ROUTES_NOT_IN_SMOKE,
    )
    from fia_fuzz.strategies.bars import measure
    from fia_fuzz.strategies.cases import DEVICE_REGIONS
    from fia_fuzz.strategies.sample import draw_cases

    _positive("--cases", args.cases)
    if args.illegal is not None:
        return _illegal_coverage(args)
    if args.pairs:
        return _pair_coverage(args)
    if args.refresh_feasible:
        raise InputError("--refresh-feasible: goes with --pairs")
    filters = _filters(args.filter)
    _check_filters(args.profile, filters, args.rules)

    t0, c0 = time.perf_counter(), time.process_time()
    drawn = draw_cases(args.cases or 1000, args.seed, args.profile, rules=args.rules, **filters)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    counts: dict[str, Counter[str]] = {axis: Counter() for axis in AXES}
    features = [case.features() for case in drawn]
    for feats in features:
        for axis in AXES:
            counts[axis][repr(feats.get(axis))] += 1
    missed = 0
    for axis, values in AXES.items():
        cells = []
        for v in values:
            n = counts[axis].pop(repr(v), 0)
            excused = args.profile == "smoke" and \
                (axis, v) in LARGE_ONLY | FILTER_ONLY_IN_SMOKE | ROUTES_NOT_IN_SMOKE
            missed += n == 0 and not excused
            cells.append(f"{v}: {n}" if n else f"{v}: 0 (nightly/stress only)" if excused
                         else f"{v}: 0 (MISSED)")
        cells += [f"{v} (not an axis value): {n}" for v, n in counts[axis].items()]
        print(f"{axis:>17} | " + ", ".join(cells))
    regions = DEVICE_REGIONS.get(args.rules, {})
    if regions:
        print(f"regions only {args.rules} admits:")
    for name, reached in regions.items():
        n_hit = sum(1 for case in drawn if reached(case))
        missed += n_hit == 0
        print(f"  {name:>40} | {n_hit}" + ("" if n_hit else " (MISSED)"))
    t1 = time.perf_counter()
    illegal: Counter[str] = Counter()
    broken = 0
    for case in drawn:
        found = validate(**case.specs(), rules=args.rules)
        broken += bool(found)
        for v in found:
            illegal[v.rule] += 1
    t2 = time.perf_counter()
    n = len(drawn)
    bad = sum(1 for _ in illegal.elements())
    print(f"{n} cases drawn in {dt:.2f}s wall = {n / dt:.0f} cases/s; {cpu:.2f}s CPU = "
          f"{n / max(cpu, 1e-9):.0f} cases/CPU-s (profile {args.profile}, rules {args.rules}, "
          f"no materialisation)")
    print(f"{missed} axis values and regions never reached")
    print(f"validate: {n} cases in {t2 - t1:.2f}s, violations by rule: "
          f"{dict(illegal) if illegal else 'none (all legal)'} ({bad} violations)")
    if not filters:   # the bars are set on unfiltered draws
        print("\n".join(measure(features, args.profile, broken).lines()))
    _sequence_coverage(args.profile, args.seed, max(1, (args.cases or 1000) // 20))
    return 1 if missed or illegal else 0


def _pair_coverage(args: argparse.Namespace) -> int:
    """`coverage --pairs`: pairs of feature values and triples route x axis x axis covered
    by --cases draws, against the stored feasible set (strategies/pair_coverage.py); with
    --refresh-feasible, compute and store that set instead."""
    import time

    from fia_fuzz.strategies import pair_aims, pair_coverage, pairs
    from fia_fuzz.strategies.sample import draw_cases

    filters = _filters(args.filter)
    _check_filters(args.profile, filters, args.rules)
    if args.refresh_feasible:
        from fia_fuzz.strategies import pair_feasible

        fs = pair_feasible.compute(args.rules, reference=args.cases or pair_feasible.REFERENCE)
        print(f"stored {pairs.save(fs)}")
        return 0
    why = pairs.stale(args.rules)
    if why:
        raise InputError(f"{why}: recompute it with `fia-fuzz coverage --pairs "
                         f"--refresh-feasible --rules {args.rules}`")
    fs = pairs.load(args.rules)
    t0 = time.perf_counter()
    with pair_aims.unaimed(args.no_pair_aims):
        drawn = draw_cases(args.cases or 1000, args.seed, args.profile, rules=args.rules,
                           **filters)
    dt = time.perf_counter() - t0
    from fia_fuzz.rules.profiles import DEFAULT
    from fia_fuzz.strategies.cases import DEVICE_REGIONS

    docs = pairs.load(DEFAULT) if args.rules != DEFAULT else None
    cov = pair_coverage.measure([case.features() for case in drawn], fs, filters, docs)
    for name, reached in DEVICE_REGIONS.get(args.rules, {}).items():
        print(f"region only {args.rules} admits: {name}: "
              f"{sum(1 for case in drawn if reached(case))} cases")
    print(f"{len(drawn)} cases drawn in {dt:.1f}s = {len(drawn) / dt:.0f} cases/s (profile "
          f"{args.profile}, rules {args.rules}, pair aims "
          f"{'off' if args.no_pair_aims else 'on'})")
    print("\n".join(pair_coverage.lines(cov, fs)))
    return 0 if cov.ok else 1


def _sequence_coverage(profile: str, seed: int, n: int) -> None:
    """Shapes of `n` drawn call sequences: workloads, steps, block-boundary crossings,
    steps at k*block_size and k*block_size+1, replays, rollbacks."""
    from fia_fuzz.campaign.sequences import draw
    from fia_fuzz.strategies.sequences import share

    drawn = draw(seed, 0, n, profile, None)
    shapes = [s.shape_summary() for s in drawn]
    by = Counter(s.workload for s in drawn)
    total = {k: sum(x[k] for x in shapes) for k in shapes[0]} if shapes else {}
    print(f"sequences (campaign share under {profile}: {share(profile)}): {len(drawn)} drawn, "
          f"workloads {dict(sorted(by.items()))}; steps {total.get('steps', 0)}, block "
          f"crossings {total.get('block_crossings', 0)}, steps at k*block_size "
          f"{total.get('block_full_steps', 0)} and k*block_size+1 "
          f"{total.get('block_new_steps', 0)}, replays {total.get('replays', 0)}, rollbacks "
          f"{total.get('rollbacks', 0)}")


def _illegal_coverage(args: argparse.Namespace) -> int:
    """`coverage --illegal [PREFIX]`: per rule, the width of its breaker over --cases draws
    (default 20): distinct broken values and the families, layouts and branches of its bases.
    Exit status 1 when a rule's breaker never lands."""
    import time

    from fia_fuzz.rules.profiles import DEFAULT
    from fia_fuzz.strategies.illegal import BOUNDS, BREAKERS
    from fia_fuzz.strategies.illegal.width import (
        by_base,
        covered,
        family_pool,
        route_pool,
        table,
        width,
    )

    if args.rules != DEFAULT or args.filter:
        raise InputError("--illegal measures the documented rules' breakers; it takes no "
                         "--rules or --filter")
    ids = sorted(r for r in BREAKERS if r.startswith(args.illegal))
    if not ids:
        raise InputError(f"--illegal {args.illegal!r}: no rule id starts with it")
    n = args.cases or 20
    t0 = time.perf_counter()
    widths = {rid: width(by_base(rid, BREAKERS[rid], n, args.seed, routes=True)) for rid in ids}
    pool = family_pool(seed=args.seed)
    missed = {rid: sorted(f for f, how in covered(rid, BREAKERS[rid], pool, seed=args.seed)
                          .items() if how == "lands" and f not in widths[rid].families)
              for rid in ids}
    routes = route_pool(seed=args.seed)
    on = {rid: sorted(r for r, how in covered(rid, BREAKERS[rid], routes, seed=args.seed)
                      .items() if how == "lands") for rid in ids}
    off_route = {rid: [r for r in on[rid] if r not in widths[rid].routes] for rid in ids}
    dt = time.perf_counter() - t0
    print("\n".join(table(widths, bounds=BOUNDS, missed=missed, missed_routes=off_route)))
    dead = [rid for rid, w in widths.items() if not w.landed]
    bound = [rid for rid in ids if rid in BOUNDS]
    one_sided = [rid for rid in bound if not set(BOUNDS[rid]) <= set(widths[rid].sides)]
    narrow = [rid for rid in ids if missed[rid]]
    print(f"{len(ids)} breakers x {n} draws in {dt:.1f}s; "
          f"never landed: {dead or 'none'}")
    print(f"bounds: {len(bound) - len(one_sided)} of {len(bound)} bound rules reach every "
          f"side; missing a side: {one_sided or 'none'}")
    print(f"families: {len(ids) - len(narrow)} of {len(ids)} breakers land on every family "
          f"their change breaks the rule from; missing one: {narrow or 'none'}")
    cells = sum(len(r) for r in on.values())
    reached = cells - sum(len(r) for r in off_route.values())
    print(f"routes: breakers reach {reached} of the {cells} (rule, route) cells their change "
          f"breaks the rule on; missing one: {sorted(r for r in ids if off_route[r]) or 'none'}")
    return 1 if dead else 0


def cmd_runners(args: argparse.Namespace) -> int:
    """Every built-in runner with whether it runs here, and why not."""
    from fia_fuzz.runners import RUNNERS, get_runner

    for name in RUNNERS:
        ok, why = get_runner(name).available()
        print(f"{name:>14}  {'available' if ok else 'not available'}"
              + (f": {why}" if why else ""))
    print("plug-ins: --runner package.module:factory, or the entry-point group "
          "fia_fuzz.runners")
    return 0


def _rules_flag(p: argparse.ArgumentParser) -> None:
    from fia_fuzz.rules.profiles import DEFAULT, names

    p.add_argument("--rules", default=DEFAULT, choices=names(),
                   help="rule profile: the documented rules, or a device's own checks")


def _pair_aims_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-pair-aims", action="store_true",
                   help="draw the profile's own mix only: no draws aimed at rare feature "
                        "pairs (nightly and stress aim half of their draws)")


def _fail_on_flag(p: argparse.ArgumentParser) -> None:
    from fia_fuzz.reports.gate import TOKENS

    p.add_argument("--fail-on", action="append", default=[], metavar="KIND[,KIND]",
                   help=f"exit status 1 when the run's results hold any of these: "
                        f"{', '.join(TOKENS)} (repeatable; default: exit 0 whatever was found)")


def _triage_flags(p: argparse.ArgumentParser) -> None:
    from fia_fuzz.reports.signatures import FIXED_AFTER

    p.add_argument("--triage", metavar="FILE",
                   help="TOML file of known failure signatures (fia-fuzz triage add writes "
                        "it): each failing signature is marked new, known or regressed, and "
                        "--fail-on new gates on untriaged ones only")
    p.add_argument("--fixed-after", type=int, default=FIXED_AFTER, metavar="N",
                   help="a failure whose replayed bundles passed on each of the last N "
                        "nights is reported possibly fixed")


def build_parser() -> argparse.ArgumentParser:
    from fia_fuzz.campaign.bundle_quota import DEFAULT_BUDGET, PER_SIGNATURE
    from fia_fuzz.campaign.config import size_text
    from fia_fuzz.runners import RUNNERS

    p = OneLineParser(prog="fia-fuzz", description=__doc__, epilog=EXIT_CODES,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--debug", action="store_true",
                   help="on bad input, show the traceback instead of one line")
    sub = p.add_subparsers(dest="command", required=True)
    runner_help = (f"backend to run the op on: {', '.join(RUNNERS)}, or a plug-in "
                   "package.module:factory (fia-fuzz runners: what runs here)")

    c = sub.add_parser("campaign", help="draw legal cases, run them, record every result",
                       formatter_class=Formatter, epilog=EXIT_CODES)
    c.add_argument("--runner", default="torch-sdpa", help=runner_help)
    c.add_argument("--max-cases", type=int,
                   help="cases drawn by the whole campaign (all shards and workers)")
    c.add_argument("--budget", help="time budget, e.g. 90s, 2m, 8h")
    c.add_argument("--out", default="runs/latest", metavar="DIR",
                   help="run directory: results as they come, bundles, summary; an existing "
                        "one is resumed")
    c.add_argument("--seed", type=_seed, default=0,
                   help="seed of the whole campaign's draws (same seed, same cases)")
    c.add_argument("--profile", default="smoke", choices=["smoke", "nightly", "stress"],
                   help="size and feature mix of the draws")
    c.add_argument("--filter", action="append", default=[], metavar="FEATURE=VALUE",
                   help="pin a feature of case.features() (repeatable; fia-fuzz coverage "
                        "lists them); with --negative: rule=ID, calls breaking that rule only")
    c.add_argument("--workers", type=int, default=1,
                   help="worker processes on this host, one device each")
    c.add_argument("--devices", help="device indices for the workers, e.g. 0-7 or 0,2,4")
    c.add_argument("--shard", default="0/1",
                   help="this host's share i/n of the campaign (Slurm array, k8s indexed Job)")
    c.add_argument("--negative", action="store_true",
                   help="send illegal cases; record rejected / accepted-correct / "
                        "accepted-wrong / accepted-undefined / crashed / timeout")
    c.add_argument("--case-timeout", default="300s",
                   help="a case running longer is killed and recorded as timeout")
    c.add_argument("--memory-limit", help="address-space cap per worker, e.g. 32G")
    c.add_argument("--device-memory",
                   help="memory of one device, e.g. 64GiB: cases needing more (device_bytes plus "
                        "the runner's working memory) are recorded as skipped, not run; "
                        "default the runner's device (NPU runners: 64GiB, Atlas A2), none "
                        "for host runners; 'none' skips nothing")
    c.add_argument("--bundles-per-signature", type=int, default=PER_SIGNATURE, metavar="K",
                   help="full failure bundles per failure signature in the run (every other "
                        "failing row keeps its case and statistics and points to its "
                        "signature's first bundle)")
    c.add_argument("--bundle-budget", default=size_text(DEFAULT_BUDGET).replace(" ", ""),
                   metavar="SIZE",
                   help="bytes the run's bundles may take on this host, e.g. 4GiB ('none': "
                        "no cap); past it no more bundles are written, the campaign goes on")
    c.add_argument("--no-shrink", action="store_true",
                   help="skip shrinking failing cells to minimal cases")
    _pair_aims_flag(c)
    c.add_argument("--metamorphic", action="store_true",
                   help="also run each case's metamorphic partners on the same runner and "
                        "record the relation outcomes (mm_* columns) next to the verdicts")
    c.add_argument("--seed-cases", metavar="DIR",
                   help="replay the cases DIR/*.json first (origin=seed, e.g. from "
                        "import-msprobe), then draw from their feature cells")
    c.add_argument("--replay", nargs="+", default=[], metavar="DIR",
                   help="run directories of earlier nights: replay their bundles first; each "
                        "gets a replay_result (still fails, now passes, now unsupported)")
    _triage_flags(c)
    _fail_on_flag(c)
    _rules_flag(c)
    c.set_defaults(fn=cmd_campaign)

    r = sub.add_parser("report", help="merge run directories into one HTML dashboard",
                       formatter_class=Formatter, epilog=EXIT_CODES)
    r.add_argument("run_dirs", nargs="*", metavar="RUN_DIR", help="campaign --out directories")
    r.add_argument("--issue", metavar="BUNDLE",
                   help="instead: write a Markdown issue body for one failure bundle, or for "
                        "the failing row of a case id in RUN_DIR (default .) that has none "
                        "of its own: its case runs again here (summary, "
                        "environment, minimal call, expected against actual, a standalone "
                        "repro in the backend's own framework)")
    r.add_argument("--issue-out", metavar="FILE", help="write the --issue body here "
                   "(default: stdout)")
    r.add_argument("--html", help="output HTML path (default RUN_DIR/dashboard.html)")
    r.add_argument("--junit", metavar="OUT.xml", help="also write a JUnit XML of the results")
    r.add_argument("--policy", default=None, help="verdict policy the page and JUnit use "
                   "(default: the project default, see fia_fuzz.diff.policies)")
    r.add_argument("--worst", type=int, default=20, help="rows in the worst-cases table")
    r.add_argument("--screenshot", metavar="OUT.png",
                   help="also save a headless-Chromium screenshot of the page")
    _triage_flags(r)
    _fail_on_flag(r)
    r.set_defaults(fn=cmd_report)

    tr = sub.add_parser("triage", help="edit the triage file of known failure signatures",
                        formatter_class=Formatter, epilog=EXIT_CODES)
    trs = tr.add_subparsers(dest="triage_command", required=True)
    ta = trs.add_parser("add", help="add or update the entry of one signature (or glob)",
                        formatter_class=Formatter, epilog=EXIT_CODES)
    ta.add_argument("signature", help="a failure signature as report and campaign print it, "
                                      "or a glob of them (*, ?, [...])")
    ta.add_argument("--ticket", required=True, help="where it is filed: a URL or an id")
    ta.add_argument("--status", default="open",
                    help="open, wontfix (documented behaviour) or 'fixed-in VERSION'")
    ta.add_argument("--note", default="", help="a line for whoever reads it next")
    ta.add_argument("--triage", required=True, metavar="FILE",
                    help="the triage file (TOML; created when absent)")
    ta.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                    help="on bad input, show the traceback instead of one line")
    ta.set_defaults(fn=cmd_triage_add)

    bi = sub.add_parser("bisect", help="rerun a bundle under several interpreters (each with "
                        "another backend release): where does it fail?",
                        formatter_class=Formatter, epilog=EXIT_CODES)
    bi.add_argument("bundle", help="a failure bundle directory")
    bi.add_argument("--env", action="append", required=True, metavar="NAME=PYTHON",
                    help="an environment: its name and its Python, which has fia-fuzz "
                         "installed (repeatable, oldest first); each runs "
                         "PYTHON -m fia_fuzz repro BUNDLE --runner R")
    bi.add_argument("--runner", help="the runner to rerun it on (default: the bundle's)")
    bi.add_argument("--timeout", type=float, default=600.0,
                    help="seconds one environment's repro may take")
    bi.set_defaults(fn=cmd_bisect)

    rp = sub.add_parser("repro", help="rerun one case (bundle dir, CASE.json or case id)",
                        formatter_class=Formatter, epilog=EXIT_CODES)
    rp.add_argument("case", help="a bundle directory, a case.json, or a case id (looked up "
                                 "in --results)")
    rp.add_argument("--runner", help="run live on this runner (default: the stored device "
                                     "output when the bundle has one, else torch-sdpa)")
    rp.add_argument("--results", action="append", default=["."],
                    help="run directory to look the case id up in (repeatable)")
    rp.add_argument("--features", action="store_true",
                    help="also print every feature of the case (case.features())")
    rp.set_defaults(fn=cmd_repro)

    v = sub.add_parser("validate", help="check a call written as JSON of TensorSpecs and attrs",
                       formatter_class=Formatter, epilog=EXIT_CODES)
    v.add_argument("call", help="call.json: {name: {\"shape\": [...], \"dtype\": ...} or "
                                "value}, or a case.json")
    _rules_flag(v)
    v.set_defaults(fn=cmd_validate)

    im = sub.add_parser("import-msprobe", help="each FIA call of an msprobe dump.json "
                        "(statistics or tensor task) to a case file, validated",
                        formatter_class=Formatter, epilog=EXIT_CODES)
    im.add_argument("dump", help="msprobe's dump.json (tensor files beside it, "
                                 "under dump_tensor_data/)")
    im.add_argument("--out", required=True, metavar="DIR",
                    help="where the cases go (DIR/<api name>.json, tensors in .npz beside)")
    im.set_defaults(fn=cmd_import_msprobe)

    cv = sub.add_parser("coverage", help="how often the strategies reach each feature value",
                        formatter_class=Formatter, epilog=EXIT_CODES)
    cv.add_argument("--cases", type=int, help="cases drawn (default 1000); with --illegal, "
                    "draws per rule (default 20)")
    cv.add_argument("--illegal", nargs="?", const="", metavar="PREFIX",
                    help="measure the breakers instead (rules whose id starts with PREFIX): "
                         "distinct broken values, families, layouts, branches per rule")
    cv.add_argument("--seed", type=_seed, default=0, help="seed of the draws")
    cv.add_argument("--profile", default="smoke", choices=["smoke", "nightly", "stress"],
                    help="size and feature mix of the draws")
    cv.add_argument("--filter", action="append", default=[], metavar="FEATURE=VALUE",
                    help="pin a feature (repeatable), as for campaign")
    cv.add_argument("--pairs", action="store_true",
                    help="count pairs of feature values (and triples route x axis x axis) "
                         "against the rule profile's stored feasible set")
    cv.add_argument("--refresh-feasible", action="store_true",
                    help="with --pairs: recompute and store the rule profile's feasible "
                         "pairs and pair aims (--cases: its reference draws, default 5000)")
    _pair_aims_flag(cv)
    _rules_flag(cv)
    cv.set_defaults(fn=cmd_coverage)

    rn = sub.add_parser("runners", help="list the runners, whether each runs here and why not")
    rn.set_defaults(fn=cmd_runners)
    for verb in sub.choices.values():
        verb.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                          help="on bad input, show the traceback instead of one line")
    return p


def _join_negative_values(argv: list[str]) -> list[str]:
    """`--budget -5s` as `--budget=-5s`, so a negative value gets its own message."""
    out: list[str] = []
    for tok in argv:
        if out and out[-1] in VALUE_FLAGS and tok[:1] == "-" and tok[1:2] in "0123456789.i":
            out[-1] = f"{out[-1]}={tok}"
        else:
            out.append(tok)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = _join_negative_values(sys.argv[1:] if argv is None else list(argv))
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args) or 0)
    except (InputError, OSError) as exc:
        if args.debug:
            raise
        what = str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
        print(f"fia-fuzz {args.command}: {' '.join(what.split())}", file=sys.stderr)
        return USAGE_ERROR


if __name__ == "__main__":
    sys.exit(main())
