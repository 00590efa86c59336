"""Standalone reproduction of one fia-fuzz call sequence on an Ascend NPU.

Needs only numpy, torch and torch_npu (no fia-fuzz). It replays the whole
sequence in order the way an engine runs it: the KV pool (`pool.key`,
`pool.value` in inputs.npz) is allocated once, each step's new K/V rows are
written into it in place at the step's slots (`block * block_size + offset`),
then the step's call reads the pool with the step's query, lengths and block
table. Steps marked `replay` replay the graph the latest non-replay step
captured (torch.npu.NPUGraph), with the step's inputs copied into the captured
buffers. Each step's outputs are printed against its stored golden
(golden.npz, `s<i>.*`), and compared bitwise with the same step called again
on a copy of the pool as it stands (`fresh`): a difference is a state bug.

    python repro_npu.py            # on a machine with an NPU and torch_npu

Hook: `main(call=fn)`, or FIA_REPRO_CALL="module:function", replaces the NPU call
as for single-case bundles: fn(api, args, kwargs) gets CPU torch tensors (the
pool as it stands after the step's writes) and returns (attention_out,
softmax_lse); the steps then run eagerly, in order, on that pool.

Exit status: 0 every step within the golden's tolerance and equal to its fresh
call, 1 a step fails, 2 a step cannot be expressed on this API, 3 no NPU here.
"""

import importlib
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
#: Which sequence this is.
SEQUENCE: dict = {}
#: Per step: api, positional names (pool.key / pool.value for the cache), keyword tensors,
#: plain keywords, dtypes, replay flag, position.
STEPS: list = []
FAIL_RATIO = 2.0
RATIO_FLOOR = 1e-6
#: Floor of the golden's lse error: an absolute lse error is a relative error of the
#: softmax weights, judged at the fp16/bf16 tolerance as the campaign does.
LSE_FLOOR = 2.0 ** -10


def _tensor(a, dtype):
    a = np.ascontiguousarray(a)
    if dtype == "bfloat16":
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def _f64(x):
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().float().numpy().astype(np.float64)
    return np.asarray(x).astype(np.float64)


def npu_call(api, args, kwargs):
    import torch_npu

    def dev(x):
        return x.npu() if isinstance(x, torch.Tensor) else x

    fn = getattr(torch_npu, api.rsplit(".", 1)[1])
    with torch.no_grad():
        out, lse = fn(*[dev(a) for a in args], **{k: dev(v) for k, v in kwargs.items()})
    return out, lse


def _hooked():
    spec = os.environ.get("FIA_REPRO_CALL", "")
    if not spec:
        return npu_call
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _step_call(stored, step, pool):
    dtypes = step["dtypes"]

    def one(name):
        if name.startswith("pool."):
            return pool[name]
        return _tensor(stored[f"s{step['index']}.{name}"], dtypes[name])

    args = [one(n) for n in step["positional"]]
    kwargs = dict(step["scalars"])
    for name in step["tensors"]:
        kwargs[name] = one(name)
    for name, count in step["tensor_lists"].items():
        kwargs[name] = [one(f"{name}.{i}") for i in range(count)]
    return args, kwargs


def _error(name, got, ideal, golden, floor=RATIO_FLOOR):
    if got.shape != ideal.shape:
        print(f"  {name}: shape {got.shape}, golden {ideal.shape}: FAIL")
        return True
    finite = np.isfinite(ideal)
    bad = int(np.sum(~np.isfinite(got[finite])))
    err = np.where(finite, np.abs(got - np.where(finite, ideal, 0.0)), 0.0)
    err = np.where(np.isnan(err), np.inf, err)
    base = float(np.max(np.abs(golden[finite] - ideal[finite]))) if finite.any() else 0.0
    ratio = float(err.max()) / max(base, floor)
    fails = bad > 0 or ratio > FAIL_RATIO
    print(f"  {name}: max abs error {float(err.max()):.6g}; golden's own {base:.6g}; "
          f"ratio {ratio:.3g} -> {'FAIL' if fails else 'ok'}")
    return fails


def _raw(x):
    """(shape, itemsize, bytes) of a tensor or array: a bitwise identity."""
    if isinstance(x, torch.Tensor):
        t = x.detach().cpu().contiguous()
        x = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy()
    a = np.ascontiguousarray(x)
    return a.shape, a.dtype.itemsize, a.tobytes()


def _same(a, b):
    return _raw(a) == _raw(b)


def main(call=None):
    print(f"sequence {SEQUENCE.get('sequence_id')} ({SEQUENCE.get('workload')}), "
          f"{len(STEPS)} steps")
    bad = [s for s in STEPS if s.get("unexpressible")]
    if bad:
        print(f"step {bad[0]['index']} cannot be expressed on torch_npu: "
              f"{bad[0]['unexpressible']}")
        return 2
    fn = call or _hooked()
    on_npu = fn is npu_call
    if on_npu:
        try:
            import torch_npu  # noqa: F401
        except ImportError as exc:
            print(f"no NPU here: {exc}")
            return 3
    with np.load(os.path.join(HERE, "inputs.npz"), allow_pickle=False) as npz:
        stored = {k: npz[k] for k in npz.files}
    goldens = {}
    if os.path.exists(os.path.join(HERE, "golden.npz")):
        with np.load(os.path.join(HERE, "golden.npz"), allow_pickle=False) as g:
            goldens = {k: g[k] for k in g.files}
    dtype = SEQUENCE["pool_dtype"]
    pool = {f"pool.{n}": _tensor(stored[f"pool.{n}"], dtype) for n in ("key", "value")}
    if on_npu:
        pool = {k: v.npu() for k, v in pool.items()}
    graph = None
    failed = False
    for step in STEPS:
        i = step["index"]
        slots = torch.from_numpy(stored[f"s{i}.slots"]).long()
        for n in ("key", "value"):
            rows = _tensor(stored[f"s{i}.new_{n}"], dtype)
            flat = pool[f"pool.{n}"].view(-1, rows.shape[-1])
            flat.index_copy_(0, slots.to(flat.device), rows.to(flat.device))
        args, kwargs = _step_call(stored, step, pool)
        how = "replay" if step["replay"] else "call"
        if on_npu and SEQUENCE.get("graph"):
            args = [a.npu() if isinstance(a, torch.Tensor) else a for a in args]
            kwargs = {k: v.npu() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
            if step["replay"] and graph is not None:
                g, s_args, s_kwargs, outs = graph
                for old, new in zip(s_args, args):  # noqa: B905  (python 3.9 scripts)
                    if isinstance(old, torch.Tensor) and old is not new:
                        old.copy_(new)
                for k, new in kwargs.items():
                    if isinstance(s_kwargs.get(k), torch.Tensor):
                        s_kwargs[k].copy_(new)
                g.replay()
            else:
                g = torch.npu.NPUGraph()
                npu_call(step["api"], args, kwargs)   # warm-up before the capture
                with torch.npu.graph(g):
                    outs = npu_call(step["api"], args, kwargs)
                g.replay()
                graph = (g, args, kwargs, outs)
                how = "capture"
            out, lse = (t.clone() for t in graph[3])
            torch.npu.synchronize()
        else:
            out, lse = fn(step["api"], args, kwargs)
        if on_npu:
            torch.npu.synchronize()
        # the same step alone: a copy of the pool as it stands, nothing replayed
        fresh_pool = {k: v.clone() for k, v in pool.items()}
        f_args, f_kwargs = _step_call(stored, step, fresh_pool)
        f_out, f_lse = fn(step["api"], f_args, f_kwargs)
        print(f"step {i} ({step['kind']}, {step['position']}, kv {step['kv']}, {how}):")
        state = not (_same(out, f_out) and _same(lse, f_lse))
        print(f"  fresh call: {'DIFFERS (state)' if state else 'bitwise equal'}")
        fails = state
        if f"s{i}.attention_out_fp64" in goldens:
            fails |= _error("attention_out", _f64(out), goldens[f"s{i}.attention_out_fp64"],
                            goldens[f"s{i}.attention_out_device"])
            if step["scalars"].get("softmax_lse_flag"):
                fails |= _error("softmax_lse", _f64(lse), goldens[f"s{i}.softmax_lse_fp64"],
                                goldens[f"s{i}.softmax_lse_device"], LSE_FLOOR)
        failed |= fails
    print("FAIL" if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
