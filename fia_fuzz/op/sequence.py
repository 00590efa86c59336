"""Call sequences: the state an engine keeps between FIA calls, as data.

Engines never call FIA once (../shared/production-calls.md, "State across
calls"): a prefill, then decode steps over one paged KV cache whose blocks fill
and whose block table grows; chunked prefill; speculative decode whose rejected
drafts roll the lengths back; a graph captured once and replayed with new
lengths in the same buffers. A `Sequence` is such a run: a block pool (the
cache, one tensor for K and one for V, `(num_blocks, block_size, KV_N*D)`,
BnBsH), a batch of requests, and steps. Before each step the step's new tokens
are appended: their K/V rows are drawn (deterministic in the sequence seed and
the step index) and scattered into the blocks the table assigns, blocks coming
from a free list (in order, or shuffled as after other requests finished) when
a request's length crosses a multiple of block_size. The call then reads the
cache as it stands; a speculative step keeps `keep[b]` of its `q[b]` tokens and
rolls the rest back (their rows stay in the cache, stale, past the length). A
step with `replay: true` replays the graph the latest non-replay step captured:
same shapes, new lengths, table and query written into the captured buffers.

Like a Case, a Sequence is data-free JSON with a stable id (16 hex digits of
the SHA-256 of its canonical JSON); `states()` derives every step's lengths,
table and writes without data, `run()` materialises the steps (each a `Case`
with its query and the cache snapshot stored, so each step is legal by the
same rules, judged by the same golden and bundled like any case).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fia_fuzz.op import stored
from fia_fuzz.op.case import Case
from fia_fuzz.op.stored import STORED
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.op.values import materialise

SEQUENCE_VERSION = 1
#: The sequence workloads (`--filter sequence=...`), simplest first.
WORKLOADS = ("decode_loop", "chunked_prefill", "spec_decode", "graph_replay")
#: Step kinds.
STEP_KINDS = ("prefill", "chunk", "decode", "spec")
#: Query forms: vLLM's TND (sparse 3, the 2048 mask) or the classic BSH decode.
FORMS = ("TND", "BSH")
#: The value a table entry nobody has allocated holds (the vendor's -1).
UNUSED = -1
#: Positions of a step (the dataset's `position`), in the order one is named.
POSITIONS = ("prefill", "replay", "block_new", "block_full", "after_rollback",
             "first_decode", "capture", "chunk", "spec", "decode")
#: The 2048 x 2048 lower-triangular mask of sparse mode 3.
MASK_SIDE = 2048
DEFAULT_FILLS = {"query": {"dist": "uniform", "scale": 1.0},
                 "key": {"dist": "normal", "scale": 1.0},
                 "value": {"dist": "normal", "scale": 1.0}}


class IllegalSequence(ValueError):
    """A sequence whose state cannot evolve as written (a step past the pool, a replay that
    changes shapes ...), or one of whose steps is an illegal call."""


@dataclass(frozen=True)
class Step:
    """One call: new query tokens per request (`q`), of which `keep` stay after it (spec
    decode; None: all), and whether it replays the captured graph."""

    kind: str
    q: tuple[int, ...]
    keep: tuple[int, ...] | None = None
    replay: bool = False

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "q": list(self.q)}
        if self.keep is not None:
            d["keep"] = list(self.keep)
        if self.replay:
            d["replay"] = True
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Step:
        keep = d.get("keep")
        return cls(kind=str(d["kind"]), q=tuple(int(x) for x in d["q"]),
                   keep=None if keep is None else tuple(int(x) for x in keep),
                   replay=bool(d.get("replay", False)))


@dataclass(frozen=True)
class StepState:
    """What a step's call sees, derived without data: lengths, table, the slots written
    before it (flat `block * block_size + offset`, in request then token order), and the
    blocks allocated for it."""

    index: int
    step: Step
    before: tuple[int, ...]
    kv: tuple[int, ...]
    after: tuple[int, ...]
    table: tuple[tuple[int, ...], ...]
    slots: tuple[int, ...]
    new_blocks: int
    capture: int          # index of the step whose graph this one replays (itself if not)
    position: str
    block_full: bool      # a request's length is exactly k * block_size at the call
    block_new: bool       # a request's length is k * block_size + 1: its newest block's first


@dataclass(frozen=True)
class StepData:
    """A materialised step: its Case (query and cache snapshot stored), the canonical call,
    and the rows written into the pool before it."""

    state: StepState
    case: Case
    call: dict[str, Any]
    new_key: np.ndarray
    new_value: np.ndarray

    @property
    def index(self) -> int:
        return self.state.index

    @property
    def replay(self) -> bool:
        return self.state.step.replay

    @property
    def slots(self) -> np.ndarray:
        return np.asarray(self.state.slots, np.int64)


@dataclass(frozen=True)
class Sequence:
    workload: str
    form: str
    dtype: str
    heads: tuple[int, int, int]      # N, KV_N, D
    block_size: int
    num_blocks: int
    table_width: int
    context: tuple[int, ...]          # tokens per request already cached before step 0
    steps: tuple[Step, ...]
    alloc: str = "in_order"           # or "shuffled"
    seed: int = 0
    fills: dict[str, dict[str, Any]] = field(default_factory=dict)

    # ---- identity ----------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"version": SEQUENCE_VERSION, "kind": "sequence", "workload": self.workload,
                "form": self.form, "dtype": self.dtype, "heads": list(self.heads),
                "block_size": self.block_size, "num_blocks": self.num_blocks,
                "table_width": self.table_width, "context": list(self.context),
                "steps": [s.to_dict() for s in self.steps], "alloc": self.alloc,
                "seed": int(self.seed),
                "fills": {k: dict(sorted(v.items())) for k, v in sorted(self.fills.items())}}

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, indent=indent,
                          separators=(",", ":") if indent is None else None)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Sequence:
        if d.get("kind") != "sequence":
            raise ValueError("not a sequence (expected \"kind\": \"sequence\")")
        n, kv_n, dim = (int(x) for x in d["heads"])
        return cls(workload=str(d["workload"]), form=str(d["form"]), dtype=str(d["dtype"]),
                   heads=(n, kv_n, dim), block_size=int(d["block_size"]),
                   num_blocks=int(d["num_blocks"]), table_width=int(d["table_width"]),
                   context=tuple(int(x) for x in d["context"]),
                   steps=tuple(Step.from_dict(s) for s in d["steps"]),
                   alloc=str(d.get("alloc", "in_order")), seed=int(d.get("seed", 0)),
                   fills={k: dict(v) for k, v in d.get("fills", {}).items()})

    @classmethod
    def from_json(cls, text: str) -> Sequence:
        return cls.from_dict(json.loads(text))

    @property
    def sequence_id(self) -> str:
        """16 hex digits of the SHA-256 of the canonical JSON."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:16]

    case_id = sequence_id   # the campaign's identity of any item it runs

    def __hash__(self) -> int:
        return hash(self.sequence_id)

    # ---- shape -----------------------------------------------------------------
    @property
    def batch(self) -> int:
        return len(self.context)

    def fill(self, name: str) -> dict[str, Any]:
        return self.fills.get(name) or DEFAULT_FILLS[name]

    def pool_spec(self) -> TensorSpec:
        _, kv_n, d = self.heads
        return TensorSpec((self.num_blocks, self.block_size, kv_n * d), self.dtype)

    def query_shape(self, step: Step) -> tuple[int, ...]:
        n, _, d = self.heads
        if self.form == "TND":
            return (sum(step.q), n, d)
        return (self.batch, max(step.q), n * d)

    def elements(self) -> int:
        """Pool elements (K and V) plus every step's query: "smaller" for a shrink."""
        return 2 * int(np.prod(self.pool_spec().shape)) + sum(
            int(np.prod(self.query_shape(s))) for s in self.steps)

    # ---- state, without data ------------------------------------------------------
    def free_list(self) -> list[int]:
        ids = list(range(self.num_blocks))
        if self.alloc == "shuffled":
            rng = np.random.default_rng([self.seed & 0xFFFFFFFF, 0x5EC])
            ids = [int(x) for x in rng.permutation(self.num_blocks)]
        return ids

    def states(self) -> list[StepState]:
        """Every step's lengths, table and writes; raises IllegalSequence when the state
        cannot evolve as written."""
        self._check_shape()
        bs, b_count = self.block_size, self.batch
        free = self.free_list()
        rows: list[list[int]] = [[] for _ in range(b_count)]
        lens = list(self.context)
        for b in range(b_count):  # the context's blocks, allocated before step 0
            self._grow(rows[b], lens[b], free)
        out: list[StepState] = []
        capture = -1
        rolled = False
        seen_decode = False
        for i, step in enumerate(self.steps):
            self._check_step(i, step)
            before = tuple(lens)
            kv = tuple(lens[b] + step.q[b] for b in range(b_count))
            grown = [self._grow(rows[b], kv[b], free) for b in range(b_count)]
            new_blocks = sum(grown)
            slots: list[int] = []
            for b in range(b_count):
                for pos in range(lens[b], kv[b]):
                    slots.append(rows[b][pos // bs] * bs + pos % bs)
            if step.replay:
                if capture < 0:
                    raise IllegalSequence(f"step {i} replays a graph no earlier step captured")
                cap = self.steps[capture]
                if self.query_shape(cap) != self.query_shape(step) or cap.q != step.q:
                    raise IllegalSequence(f"step {i} replays step {capture}'s graph with "
                                          f"other query lengths {list(step.q)}")
            else:
                capture = i
            table = tuple(tuple(r + [UNUSED] * (self.table_width - len(r))) for r in rows)
            full = any(k and k % bs == 0 for k in kv)
            new = any(g and k > bs and k % bs == 1 for g, k in zip(grown, kv, strict=True))
            decode = step.kind == "decode"
            graph = any(s.replay for s in self.steps)
            names = {"prefill": i == 0 and step.kind in ("prefill", "chunk"),
                     "replay": step.replay, "block_new": new, "block_full": full,
                     "after_rollback": rolled, "first_decode": decode and not seen_decode,
                     "capture": graph and not step.replay, "chunk": step.kind == "chunk",
                     "spec": step.kind == "spec", "decode": True}
            position = next(p for p in POSITIONS if names[p])
            keep = step.keep if step.keep is not None else step.q
            after = tuple(lens[b] + keep[b] for b in range(b_count))
            rolled = after != kv
            seen_decode = seen_decode or decode
            lens = list(after)
            out.append(StepState(index=i, step=step, before=before, kv=kv, after=after,
                                 table=table, slots=tuple(slots), new_blocks=new_blocks,
                                 capture=capture, position=position, block_full=full,
                                 block_new=new))
        return out

    def _grow(self, row: list[int], length: int, free: list[int]) -> int:
        need = math.ceil(length / self.block_size)
        grown = 0
        while len(row) < need:
            if not free:
                raise IllegalSequence(f"the pool of {self.num_blocks} blocks runs out")
            if len(row) >= self.table_width:
                raise IllegalSequence(f"a request needs more than table_width="
                                      f"{self.table_width} blocks")
            row.append(free.pop(0))
            grown += 1
        return grown

    def _check_shape(self) -> None:
        if self.workload not in WORKLOADS:
            raise IllegalSequence(f"workload={self.workload!r}, expected one of {WORKLOADS}")
        if self.form not in FORMS:
            raise IllegalSequence(f"form={self.form!r}, expected one of {FORMS}")
        if not self.steps or not self.context:
            raise IllegalSequence("a sequence needs a request and a step")
        if self.alloc not in ("in_order", "shuffled"):
            raise IllegalSequence(f"alloc={self.alloc!r}, expected in_order or shuffled")

    def _check_step(self, i: int, step: Step) -> None:
        if step.kind not in STEP_KINDS:
            raise IllegalSequence(f"step {i}: kind={step.kind!r}, expected one of {STEP_KINDS}")
        if len(step.q) != self.batch or min(step.q) < 1:
            raise IllegalSequence(f"step {i}: q={list(step.q)} needs {self.batch} lengths >= 1")
        if step.keep is not None and (len(step.keep) != self.batch or any(
                not 1 <= k <= q for k, q in zip(step.keep, step.q, strict=True))):
            raise IllegalSequence(f"step {i}: keep={list(step.keep)} must keep 1..q tokens")
        if self.form == "BSH" and max(step.q) != 1:
            raise IllegalSequence(f"step {i}: the BSH form decodes one token per request")

    # ---- data ---------------------------------------------------------------------
    def initial_pool(self) -> tuple[np.ndarray, np.ndarray]:
        """The pool before step 0 (K, V): what earlier requests left, and the context."""
        spec = self.pool_spec()
        return (materialise(spec, self.fill("key"), self.seed, "key", 0),
                materialise(spec, self.fill("value"), self.seed, "value", 0))

    def new_rows(self, state: StepState) -> tuple[np.ndarray, np.ndarray]:
        """The K and V rows step `state.index` appends (one per slot)."""
        _, kv_n, d = self.heads
        spec = TensorSpec((len(state.slots), kv_n * d), self.dtype)
        return (materialise(spec, self.fill("key"), self.seed, "key", 1 + state.index),
                materialise(spec, self.fill("value"), self.seed, "value", 1 + state.index))

    def query(self, state: StepState) -> np.ndarray:
        spec = TensorSpec(self.query_shape(state.step), self.dtype)
        return materialise(spec, self.fill("query"), self.seed, "query", state.index)

    def step_params(self, state: StepState) -> dict[str, Any]:
        """The step's canonical kwargs with TensorSpecs (for `validate`, no data)."""
        n, kv_n, d = self.heads
        pool = self.pool_spec()
        params: dict[str, Any] = {
            "query": TensorSpec(self.query_shape(state.step), self.dtype), "key": pool,
            "value": pool,
            "num_heads": n, "num_key_value_heads": kv_n, "input_layout": self.form,
            "scale": 1.0 / math.sqrt(d), "block_table": [list(r) for r in state.table],
            "block_size": self.block_size, "actual_seq_lengths_kv": list(state.kv),
            "softmax_lse_flag": True}
        if self.form == "TND":
            params["actual_seq_lengths"] = [int(x) for x in np.cumsum(state.step.q)]
            params["sparse_mode"] = 3
            params["atten_mask"] = TensorSpec((MASK_SIDE, MASK_SIDE), "bool")
        return params

    def step_case(self, state: StepState, query: np.ndarray, key: np.ndarray,
                  value: np.ndarray) -> Case:
        """The step as a standalone Case: its query and the cache as it stands, stored."""
        params = self.step_params(state)
        fills: dict[str, dict[str, Any]] = {}
        arrays = {"query": query, "key": key, "value": value}
        for name, a in arrays.items():
            fills[name] = {"dist": STORED, "sha256": stored.digest([a])}
        if "atten_mask" in params:
            fills["atten_mask"] = {"dist": "triu", "k": 1}
        return Case(params=params, fills=fills, seed=self.seed,
                    stored={k: v for k, v in arrays.items()})

    def run(self) -> Iterator[StepData]:
        """Materialise the steps in order (the pool evolves: each step's snapshot is copied
        into its case, so a StepData stays valid after later steps)."""
        key, value = self.initial_pool()
        flat_k = key.reshape(-1, key.shape[-1])
        flat_v = value.reshape(-1, value.shape[-1])
        for state in self.states():
            new_k, new_v = self.new_rows(state)
            slots = np.asarray(state.slots, np.int64)
            flat_k[slots] = new_k
            flat_v[slots] = new_v
            case = self.step_case(state, self.query(state), key.copy(), value.copy())
            yield StepData(state=state, case=case, call=case.call(), new_key=new_k,
                           new_value=new_v)

    # ---- summary ------------------------------------------------------------------
    def shape_summary(self) -> dict[str, Any]:
        """Steps, block-boundary crossings, replays, rollbacks (for coverage and rows)."""
        states = self.states()
        return {"steps": len(states),
                "block_crossings": sum(s.new_blocks for s in states),
                "block_new_steps": sum(s.block_new for s in states),
                "block_full_steps": sum(s.block_full for s in states),
                "replays": sum(s.step.replay for s in states),
                "rollbacks": sum(s.after != s.kv for s in states),
                "max_kv": max(max(s.kv) for s in states)}
