"""actual_seq_lengths / actual_seq_lengths_kv: count, sign and bounds
[V4 参数说明 actualSeqLengths(Kv), V4 TND 综合限制, SEM §3].

Right-padded layouts take per-batch lengths (length 1 broadcasts, longer
lists use the first B). TND/NTD take cumulative end offsets; so do their key
lengths unless the KV is paged (then they are per-batch, V4 TND d=512 table).
"""

from __future__ import annotations

from typing import Any

from fia_fuzz.op.call import CallView
from fia_fuzz.op.undetermined import Undetermined
from fia_fuzz.rules.rule import rule, src
from fia_fuzz.rules.rulebook.bases import T, bf

PACKED_MAX_BATCH = 4096


def ordered(lens: list[int], name: str) -> list[int]:
    """Per-batch lengths read off cumulative ends, Undetermined where one is negative: the
    ends decrease there, which lengths.packed_monotonic reports (rules on the per-batch
    lengths have nothing to judge)."""
    if any(n < 0 for n in lens):
        raise Undetermined(name)
    return lens


def _ints(c: CallView, name: str) -> list[int] | None:
    return c.ints(name)


@rule("lengths.q_count", "actual_seq_lengths has length 1 or at least B",
      src("V4", "参数说明 actualSeqLengths (传入长度为1时...大于等于Batch时取前Batch个数。"
                "其他长度不支持)"))
def lengths_q_count(c: CallView) -> str | None:
    a = _ints(c, "actual_seq_lengths")
    if a is None or c.packed or c.decode:
        return None
    if len(a) != 1 and len(a) < c.B:
        return f"len(actual_seq_lengths)={len(a)} is neither 1 nor >= B={c.B}"
    return None


@rule("lengths.kv_count",
      "actual_seq_lengths_kv has length 1 or at least B (at least B for packed layouts)",
      src("V4", "参数说明 actualSeqLengthsKv; TND 综合限制"))
def lengths_kv_count(c: CallView) -> str | None:
    a = _ints(c, "actual_seq_lengths_kv")
    if a is None:
        return None
    if c.packed and len(a) < c.B:
        return f"len(actual_seq_lengths_kv)={len(a)} < B={c.B} for layout {c.in_layout}"
    if len(a) != 1 and len(a) < c.B:
        return f"len(actual_seq_lengths_kv)={len(a)} is neither 1 nor >= B={c.B}"
    return None


@rule("lengths.q_nonnegative", "actual_seq_lengths values are non-negative",
      src("V4", "参数说明 actualSeqLengths (传入时应为非负数)"))
def lengths_q_nonnegative(c: CallView) -> str | None:
    a = _ints(c, "actual_seq_lengths")
    if a is None or (c.decode and not c.packed):
        return None
    neg = [x for x in a if x < 0]
    return f"actual_seq_lengths has negative values {neg[:4]}" if neg else None


@rule("lengths.kv_nonnegative", "actual_seq_lengths_kv values are non-negative",
      src("V4", "参数说明 actualSeqLengthsKv (传入时应为非负数)"))
def lengths_kv_nonnegative(c: CallView) -> str | None:
    a = _ints(c, "actual_seq_lengths_kv")
    if a is None:
        return None
    neg = [x for x in a if x < 0]
    return f"actual_seq_lengths_kv has negative values {neg[:4]}" if neg else None


@rule("lengths.q_max", "each actual_seq_lengths value is at most the query S",
      src("V4", "参数说明 actualSeqLengths (不大于query中对应batch的实际Sequence Length)"))
def lengths_q_max(c: CallView) -> str | None:
    if c.packed or c.decode or c.values.get("actual_seq_lengths") is None:
        return None
    over = [(b, a) for b, a in enumerate(c.act_q) if a > c.S1]
    if over:
        return f"actual_seq_lengths (batch, value) {over[:4]} exceed Q_S={c.S1}"
    return None


@rule("lengths.kv_max", "each actual_seq_lengths_kv value is at most that batch's KV S",
      src("V4", "参数说明 actualSeqLengthsKv (不大于key/value中对应batch的Sequence Length)"))
def lengths_kv_max(c: CallView) -> str | None:
    if c.paged or c.packed or c.values.get("actual_seq_lengths_kv") is None:
        return None
    over = [(b, a, c.kv_seq(b)) for b, a in enumerate(c.act_kv) if a > c.kv_seq(b)]
    if over:
        return f"actual_seq_lengths_kv (batch, value, KV_S) {over[:4]} exceed the KV length"
    return None


@rule("lengths.packed_required", "TND/NTD layouts need actual_seq_lengths and actual_seq_l"
                                 "engths_kv",
      src("V4", "TND、TND_NTD、NTD_TND 综合限制 (actualSeqLengths和actualSeqLengthsKv必须传入)"))
def lengths_packed_required(c: CallView) -> str | None:
    if not c.packed:
        return None
    missing = [n for n in ("actual_seq_lengths", "actual_seq_lengths_kv") if not c.has(n)]
    return f"layout {c.attrs['input_layout']!r} without {missing}" if missing else None


@rule("lengths.packed_count_max", "TND/NTD actual lengths have at most 4096 entries",
      src("V4", "TND、TND_NTD、NTD_TND 综合限制 (长度<=4096)"))
def lengths_packed_count_max(c: CallView) -> str | None:
    if not c.packed:
        return None
    long = {n: len(a) for n in ("actual_seq_lengths", "actual_seq_lengths_kv")
            if (a := c.values.get(n)) is not None and len(a) > PACKED_MAX_BATCH}
    return f"lengths {long} exceed {PACKED_MAX_BATCH} entries" if long else None


@rule("lengths.packed_monotonic", "TND/NTD cumulative offsets never decrease",
      src("SEM", "2. Layouts (cumulative end offsets)"))
def lengths_packed_monotonic(c: CallView) -> str | None:
    if not c.packed:
        return None
    names = ["actual_seq_lengths"] + ([] if c.paged else ["actual_seq_lengths_kv"])
    for n in names:
        a = _ints(c, n)
        if a is None:
            continue
        drops = [(i, a[i - 1], a[i]) for i in range(1, len(a)) if a[i] < a[i - 1]]
        if drops:
            return f"{n} is cumulative but decreases at (index, prev, value) {drops[:3]}"
    return None


@rule("lengths.packed_total", "TND/NTD: the last cumulative offset equals the tensor's T",
      src("SEM", "2. Layouts (T = total tokens of a packed batch)"))
def lengths_packed_total(c: CallView) -> str | None:
    if not c.packed:
        return None
    out = []
    a = _ints(c, "actual_seq_lengths")
    if a and a[-1] != c.q_dims["T"]:
        out.append(f"actual_seq_lengths ends at {a[-1]} != query T={c.q_dims['T']}")
    if not c.paged:
        a = _ints(c, "actual_seq_lengths_kv")
        a = a[: c.B] if a else a
        if a and a[-1] != c.kv_dims["T"]:
            out.append(f"actual_seq_lengths_kv ends at {a[-1]} != key T={c.kv_dims['T']}")
    return "; ".join(out) or None


#: (rule id, base call, overrides): each breaks exactly that rule of this module.
NEGATIVE: list[tuple[str, str, dict[str, Any]]] = [
    ("lengths.q_count", "padded", {"query_padding_size": None, "kv_padding_size": None,
                                   "query": T(3, 6, 256), "key": T(3, 16, 256),
                                   "value": T(3, 16, 256), "actual_seq_lengths": [2, 3],
                                   "actual_seq_lengths_kv": [10]}),
    ("lengths.kv_count", "padded", {"query_padding_size": None, "kv_padding_size": None,
                                    "query": T(3, 6, 256), "key": T(3, 16, 256),
                                    "value": T(3, 16, 256), "actual_seq_lengths": [2],
                                    "actual_seq_lengths_kv": [10, 12]}),
    ("lengths.kv_count", "tnd", {"actual_seq_lengths_kv": [20]}),
    ("lengths.q_nonnegative", "masked", {"actual_seq_lengths": [-1, 4]}),
    ("lengths.kv_nonnegative", "masked", {"actual_seq_lengths_kv": [-3, 16]}),
    ("lengths.q_max", "masked", {"actual_seq_lengths": [3, 5]}),
    ("lengths.kv_max", "masked", {"actual_seq_lengths_kv": [10, 17]}),
    ("lengths.kv_max", "kvlist", {"actual_seq_lengths_kv": [16, 25]}),
    ("lengths.packed_required", "tnd", {"actual_seq_lengths_kv": None}),
    ("lengths.packed_count_max", "tnd",
     {"actual_seq_lengths": list(range(1, 4098)), "actual_seq_lengths_kv": list(range(1, 4098)),
      "query": bf(4097, 8, 128), "key": bf(4097, 2, 128), "value": bf(4097, 2, 128)}),
    ("lengths.packed_monotonic", "tnd", {"actual_seq_lengths": [6, 4, 10],
                                         "actual_seq_lengths_kv": [8, 12, 20]}),
    ("lengths.packed_total", "tnd", {"actual_seq_lengths": [4, 11]}),
    ("lengths.packed_total", "tnd", {"query": bf(12, 8, 128)}),
    ("lengths.packed_total", "tnd", {"key": bf(22, 2, 128), "value": bf(22, 2, 128)}),
    ("lengths.packed_total", "tnd_paged_causal", {"query": bf(11, 8, 128)}),
]
