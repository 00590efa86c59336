"""Runners that keep state across the steps of a call sequence (`fia_fuzz.op.sequence`).

An engine holds its KV cache, its block table and, in graph mode, a captured
graph with its input buffers between FIA calls. A `StatefulRunner` does the
same: `begin(seq, key_pool, value_pool)` takes the pool as it is before step 0,
`step(data)` appends the step's new K/V rows into its own cache in place
(`data.slots`, `data.new_key`, `data.new_value`) and calls the op on that cache
(`data.call` is the same step as a standalone call: its key/value are the
sequence's own snapshot, which a stateful runner must not read), `end()` lets
go. `run_alone` runs one step on a fresh instance, begun from the step's own
snapshot: what the step gives without any history (the `replay_fresh`
relation compares the two).

- `Stateless(runner)`: the default adapter; every step is `runner.run(call)`.
- `TorchStateful` (`torch-sdpa`, `torch-math`): the composition over a cache
  kept across steps and written in place (on the CPU the tensors the kernel
  reads share the cache's memory; on CUDA each call uploads it); with CUDA, a
  decode-only sequence that replays runs as `TorchCudaGraph`.
- `TorchCudaGraph`: a fixed-shape paged decode captured once per non-replay step
  in a `torch.cuda.CUDAGraph` and replayed with the next steps' query, lengths and
  table copied into the captured buffers; the pools live on the GPU, written in
  place between replays. Unavailable without CUDA.
- `NpuEager` (`npu`, `npu-v2`) and `TorchAirGraph` (`torchair`): the same on an
  Ascend NPU (written against torch_npu's documented API; never run here).
"""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from fia_fuzz.op.case import Case
from fia_fuzz.op.sequence import Sequence, StepData
from fia_fuzz.runners.base import Runner

Outputs = tuple[np.ndarray, np.ndarray]


class StatefulRunner(ABC):
    name: str = ""

    def available(self) -> tuple[bool, str]:
        return True, ""

    def supports(self, seq: Sequence) -> tuple[bool, str]:
        """(True, "") when the runner can run the whole sequence as such."""
        return True, ""

    def supports_step(self, case: Case) -> tuple[bool, str]:
        """(True, "") when the backend can express the step's call."""
        return True, ""

    @abstractmethod
    def begin(self, seq: Sequence, key_pool: np.ndarray, value_pool: np.ndarray) -> None:
        """Take the pool as it is before the first step (the runner keeps its own copy)."""

    @abstractmethod
    def step(self, data: StepData) -> Outputs:
        """Append the step's rows to the held cache, then run the step on it."""

    def end(self) -> None:  # noqa: B027  (optional: most runners hold nothing to free)
        """Let go of what begin() and the steps held."""

    def metadata(self) -> dict[str, str]:
        return {"runner": self.name, "stateful": type(self).__name__}


#: Builds a fresh stateful runner (each sequence, and each step run alone, gets one).
Factory = Callable[[], StatefulRunner]


def alone(data: StepData) -> StepData:
    """`data` as a first step: nothing to write, nothing to replay."""
    state = replace(data.state, slots=(), step=replace(data.state.step, replay=False),
                    capture=data.state.index)
    empty = data.new_key[:0]
    return replace(data, state=state, new_key=empty, new_value=data.new_value[:0])


def run_alone(make: Factory, seq: Sequence, data: StepData) -> Outputs:
    """Step `data` on a fresh runner begun from the step's own cache snapshot."""
    runner = make()
    runner.begin(seq, data.call["key"], data.call["value"])
    try:
        return runner.step(alone(data))
    finally:
        runner.end()


class Stateless(StatefulRunner):
    """Any single-call runner as a stateful one: each step is the standalone call."""

    def __init__(self, runner: Runner):
        self.runner = runner
        self.name = runner.name

    def available(self) -> tuple[bool, str]:
        return self.runner.available()

    def supports_step(self, case: Case) -> tuple[bool, str]:
        return self.runner.supports(case)

    def begin(self, seq: Sequence, key_pool: np.ndarray, value_pool: np.ndarray) -> None:
        pass

    def step(self, data: StepData) -> Outputs:
        return self.runner.run(data.call)

    def metadata(self) -> dict[str, str]:
        return {**self.runner.metadata(), "stateful": "stateless adapter"}


class HostCache(StatefulRunner):
    """A cache held across steps as host arrays written in place; `run(call)` computes a
    step on the call whose key/value are that cache."""

    def begin(self, seq: Sequence, key_pool: np.ndarray, value_pool: np.ndarray) -> None:
        self.seq = seq
        self.key, self.value = key_pool.copy(), value_pool.copy()

    def write(self, data: StepData) -> None:
        width = self.key.shape[-1]
        self.key.reshape(-1, width)[data.slots] = data.new_key
        self.value.reshape(-1, width)[data.slots] = data.new_value

    def step(self, data: StepData) -> Outputs:
        self.write(data)
        return self.run({**data.call, "key": self.key, "value": self.value})

    @abstractmethod
    def run(self, call: dict[str, Any]) -> Outputs:
        """The step's outputs on the held cache."""


class TorchStateful(HostCache):
    """A torch runner's composition over the held cache; with CUDA, a decode-only sequence
    that replays a graph runs as `TorchCudaGraph`."""

    def __init__(self, runner: Any):
        self.runner = runner
        self.name = runner.name
        self.graph: TorchCudaGraph | None = None

    def available(self) -> tuple[bool, str]:
        return self.runner.available()

    def supports_step(self, case: Case) -> tuple[bool, str]:
        ok, why = self.runner.supports(case)
        return ok, why

    def begin(self, seq: Sequence, key_pool: np.ndarray, value_pool: np.ndarray) -> None:
        self.graph = None
        if any(s.replay for s in seq.steps) and TorchCudaGraph.can_run(seq) \
                and str(self.runner.device).startswith("cuda"):
            self.graph = TorchCudaGraph(self.runner.device)
            self.graph.begin(seq, key_pool, value_pool)
            return
        super().begin(seq, key_pool, value_pool)

    def step(self, data: StepData) -> Outputs:
        if self.graph is not None:
            return self.graph.step(data)
        return super().step(data)

    def run(self, call: dict[str, Any]) -> Outputs:
        return self.runner.run(call)  # type: ignore[no-any-return]

    def end(self) -> None:
        if self.graph is not None:
            self.graph.end()
        self.graph = None

    def metadata(self) -> dict[str, str]:
        return {**self.runner.metadata(), "stateful": "persistent cache"
                + (", CUDA graph replay" if str(self.runner.device).startswith("cuda") else "")}


def cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


class TorchCudaGraph(StatefulRunner):
    """Paged decode (one query token per request) as one fixed-shape torch function,
    captured in a CUDA graph at every non-replay step and replayed at replay steps."""

    name = "torch-cuda-graph"

    def __init__(self, device: str = "cuda"):
        self.device = device
        self.graph: Any = None

    @staticmethod
    def can_run(seq: Sequence) -> bool:
        return all(max(s.q) == 1 for s in seq.steps)

    def available(self) -> tuple[bool, str]:
        if not cuda_available():
            return False, f"{self.name}: needs CUDA (torch sees no GPU)"
        return True, ""

    def supports(self, seq: Sequence) -> tuple[bool, str]:
        if not self.can_run(seq):
            return False, f"{self.name}: captures decode steps (one query token) only"
        return True, ""

    def begin(self, seq: Sequence, key_pool: np.ndarray, value_pool: np.ndarray) -> None:
        from fia_fuzz.runners.torch_convert import to_torch

        self.seq = seq
        self.key = to_torch(key_pool, self.device)
        self.value = to_torch(value_pool, self.device)
        self.graph = None

    def _inputs(self, data: StepData) -> tuple[Any, Any, Any]:
        import torch

        from fia_fuzz.runners.torch_convert import to_torch

        n, _, d = self.seq.heads
        b = self.seq.batch
        q = to_torch(data.call["query"], self.device).reshape(b, n, d)
        table = torch.as_tensor(np.asarray(data.call["block_table"], np.int64),
                                device=self.device)
        lens = torch.as_tensor(np.asarray(data.call["actual_seq_lengths_kv"], np.int64),
                               device=self.device)
        return q, table, lens

    def _write(self, data: StepData) -> None:
        import torch

        from fia_fuzz.runners.torch_convert import to_torch

        if not len(data.slots):
            return
        width = self.key.shape[-1]
        idx = torch.as_tensor(data.slots, device=self.device)
        self.key.view(-1, width).index_copy_(0, idx, to_torch(data.new_key, self.device))
        self.value.view(-1, width).index_copy_(0, idx, to_torch(data.new_value, self.device))

    def _fn(self) -> tuple[Any, Any]:
        n, kv_n, d = self.seq.heads
        return paged_decode(self.q, self.key, self.value, self.table, self.lens, kv_n,
                            1.0 / float(np.sqrt(d)))

    def step(self, data: StepData) -> Outputs:
        import torch

        self._write(data)
        q, table, lens = self._inputs(data)
        if data.replay and self.graph is not None:
            self.q.copy_(q)
            self.table.copy_(table)
            self.lens.copy_(lens)
            self.graph.replay()
        else:
            self.q, self.table, self.lens = q, table, lens
            side = torch.cuda.Stream(self.device)
            side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(side), torch.no_grad():
                self._fn()  # warm-up outside the capture, as torch's docs ask
            torch.cuda.current_stream(self.device).wait_stream(side)
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph), torch.no_grad():
                self.out, self.lse = self._fn()
            self.graph.replay()
        torch.cuda.synchronize(self.device)
        return self._layout(self.out.clone(), self.lse.clone())

    def _layout(self, out: Any, lse: Any) -> Outputs:
        from fia_fuzz.runners.torch_convert import to_numpy

        b = self.seq.batch
        n, _, d = self.seq.heads
        if self.seq.form == "TND":
            return to_numpy(out), to_numpy(lse.reshape(b, n, 1))
        return to_numpy(out.reshape(b, 1, n * d)), to_numpy(lse.reshape(b, n, 1, 1))

    def end(self) -> None:
        self.graph = None


def paged_decode(q: Any, key: Any, value: Any, table: Any, lens: Any, kv_n: int,
                 scale: float) -> tuple[Any, Any]:
    """One query token per request over a paged BnBsH cache, fixed shapes only (so a CUDA
    graph can hold it): q (B, N, D), pools (NB, BS, KV_N*D), table (B, W) with -1 for
    unallocated entries, lens (B,). Token s of request b is in block table[b][s // BS]
    at offset s % BS (fia-semantics.md §2); fp32 scores and softmax."""
    import torch

    b, n, d = q.shape
    _, bs, _ = key.shape
    w = table.shape[1]
    idx = table.clamp(min=0)
    k = key[idx].reshape(b, w * bs, kv_n, d).permute(0, 2, 1, 3).float()
    v = value[idx].reshape(b, w * bs, kv_n, d).permute(0, 2, 1, 3).float()
    qf = q.reshape(b, kv_n, n // kv_n, d).float()
    scores = torch.matmul(qf, k.transpose(-1, -2)) * scale
    valid = torch.arange(w * bs, device=q.device)[None, :] < lens[:, None]
    scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    out = torch.matmul(torch.exp(scores - lse[..., None]), v).to(q.dtype)
    return out.reshape(b, n, d), lse.reshape(b, n)


class NpuEager(StatefulRunner):
    """torch_npu's op over a cache held on the NPU across steps, written in place."""

    api = "npu"

    def __init__(self, device_index: int = 0):
        from fia_fuzz.runners.npu import NpuRunner, NpuV2Runner

        self.front = (NpuV2Runner if self.api == "npu-v2" else NpuRunner)(device_index)
        self.name = self.front.name

    def available(self) -> tuple[bool, str]:
        return self.front.available()

    def supports_step(self, case: Case) -> tuple[bool, str]:
        return self.front.supports(case)

    def begin(self, seq: Sequence, key_pool: np.ndarray, value_pool: np.ndarray) -> None:
        from fia_fuzz.runners.torch_convert import to_torch

        self.dev = f"npu:{self.front.device_index}"
        self.key = to_torch(key_pool, self.dev)
        self.value = to_torch(value_pool, self.dev)

    def _write(self, data: StepData) -> None:
        import torch

        from fia_fuzz.runners.torch_convert import to_torch

        if len(data.slots):
            width = self.key.shape[-1]
            idx = torch.as_tensor(data.slots, device=self.dev)
            self.key.view(-1, width).index_copy_(0, idx, to_torch(data.new_key, self.dev))
            self.value.view(-1, width).index_copy_(0, idx, to_torch(data.new_value, self.dev))

    def _args(self, data: StepData) -> tuple[str, list[Any], dict[str, Any]]:
        from fia_fuzz.runners.npu import torch_args
        from fia_fuzz.runners.npu_calls import to_api

        mapped = to_api(self.name, data.call)
        args, kwargs = torch_args(mapped, self.dev)
        args[1], args[2] = self.key, self.value   # the held cache, not the snapshot
        return mapped.api, args, kwargs

    def step(self, data: StepData) -> Outputs:
        import torch
        import torch_npu

        from fia_fuzz.runners.npu import _back

        self._write(data)
        api, args, kwargs = self._args(data)
        with torch.no_grad():
            out, lse = getattr(torch_npu, api.rsplit(".", 1)[1])(*args, **kwargs)
        torch.npu.synchronize(self.front.device_index)
        return _back(out), _back(lse)


class NpuV2Eager(NpuEager):
    api = "npu-v2"


class TorchAirGraph(NpuEager):
    """The v2 op compiled by TorchAir in reduce-overhead (captured graph) mode: captured at
    each non-replay step, replayed with the step's inputs copied into the captured ones."""

    api = "npu-v2"

    def available(self) -> tuple[bool, str]:
        ok, why = super().available()
        if ok and importlib.util.find_spec("torchair") is None:
            return False, "torchair: torch_npu imports but torchair is not importable"
        return ok, why

    def begin(self, seq: Sequence, key_pool: np.ndarray, value_pool: np.ndarray) -> None:
        super().begin(seq, key_pool, value_pool)
        self.name = "torchair"
        self.compiled: Any = None
        self.static: tuple[list[Any], dict[str, Any]] | None = None

    def step(self, data: StepData) -> Outputs:
        import torch
        import torchair
        from torchair.configs.compiler_config import CompilerConfig

        from fia_fuzz.runners.npu import _back

        self._write(data)
        _, args, kwargs = self._args(data)
        if not data.replay or self.static is None:
            config = CompilerConfig()
            config.mode = "reduce-overhead"
            backend = torchair.get_npu_backend(compiler_config=config)

            def op(*a: Any, **kw: Any) -> Any:
                return torchair.ops.npu_fused_infer_attention_score_v2(*a, **kw)

            self.compiled = torch.compile(op, backend=backend, fullgraph=True, dynamic=False)
            self.static = (args, kwargs)
        else:   # the engine's way: new inputs written into the captured buffers
            s_args, s_kwargs = self.static
            for old, new in zip(s_args, args, strict=True):
                if isinstance(old, torch.Tensor) and old is not new:
                    old.copy_(new)
            for k, new in kwargs.items():
                old = s_kwargs.get(k)
                if isinstance(old, torch.Tensor):
                    old.copy_(new)
        s_args, s_kwargs = self.static
        with torch.no_grad():
            out, lse = self.compiled(*s_args, **s_kwargs)
        torch.npu.synchronize(self.front.device_index)
        return _back(out), _back(lse)


STATEFUL: dict[str, Factory] = {}


def register_stateful(name: str) -> Callable[[Factory], Factory]:
    def deco(factory: Factory) -> Factory:
        STATEFUL[name] = factory
        return factory
    return deco


def _torch(name: str) -> Factory:
    def make() -> StatefulRunner:
        from fia_fuzz.runners.base import get_runner

        return TorchStateful(get_runner(name))
    return make


for _name in ("torch-sdpa", "torch-math"):
    register_stateful(_name)(_torch(_name))
register_stateful("npu")(NpuEager)
register_stateful("npu-v2")(NpuV2Eager)
register_stateful("torchair")(TorchAirGraph)


def stateful_factory(spec: str, single: Callable[[], Runner]) -> Factory:
    """How to build the stateful form of runner `spec`: its registered one, else the
    stateless adapter over `single()` (the single-call runner)."""
    if spec in STATEFUL:
        return STATEFUL[spec]
    return lambda: Stateless(single())
