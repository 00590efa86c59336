"""Standalone reproduction of one fia-fuzz case on an Ascend NPU (a bug-report attachment).

Needs only numpy, torch and torch_npu (no fia-fuzz): it rebuilds the exact
inputs from `inputs.npz` next to this file, calls the op with the recorded
keywords and layout, and prints its outputs against `golden.npz` (the fp64
ideal and the golden model at the device's precision, as the campaign judged
them: the op fails when its max error exceeds twice the golden's own).

    python repro_npu.py            # on a machine with an NPU and torch_npu

Hook: `main(call=fn)`, or the environment variable FIA_REPRO_CALL set to
"module:function", replaces the NPU call; fn(api, args, kwargs) gets the API
name, the positional tensors and the keywords (CPU torch tensors, int lists
and scalars, exactly what the NPU would get before `.npu()`) and returns
(attention_out, softmax_lse) as torch tensors or NumPy arrays.

Exit status: 0 within the golden's tolerance, 1 it fails, 2 the call cannot
be expressed on this API, 3 no NPU here.
"""

import importlib
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
#: Which case this is (for the reader; the inputs are in inputs.npz).
CASE: dict = {'case_id': '657dd1e90a2ab36d', 'features': {'layout': 'BNSD', 'in_layout': 'BNSD', 'out_layout': 'BNSD', 'q_dtype': 'bfloat16', 'kv_dtype': 'bfloat16', 'out_dtype': 'bfloat16', 'branch': 'prefill', 'q_seq': '2-16', 'B': 1, 'N': 1, 'KV_N': 1, 'G': 1, 'gqa': 'mha', 'g_class': '1', 'S1': 2, 'S2': 1, 'D': 16, 'Dv': 16, 'd_class': '<64', 'dv': 'equal', 'kv_list': False, 'device_bytes': 192, 'empty': 'none', 'q_dist': 'normal', 'k_dist': 'normal', 'v_dist': 'normal', 'logits': 'mixed', 'values': 'nan_attended', 'pse': False, 'pse_batch': 'none', 'mask': 'none', 'mask_shape': 'none', 'mask_oversized': False, 'mask_fill': 'none', 'band': 'default', 'sparse_mode': 0, 'inner_precise': 1, 'actual_q': 'absent', 'actual_kv': 'absent', 'act_zero': False, 'paged': False, 'cache': 'none', 'block_size': 0, 'block_edge': 'none', 'cache_reach': 'near', 'table_unused': False, 'table_spare': False, 'table_shuffled': False, 'table_oversized': False, 'table_width': 'none', 'full_quant': False, 'deq_dtype': 'none', 'post_quant': False, 'post_quant_form': 'none', 'post_quant_offset': False, 'antiquant': 'none', 'kv_quant_sym': 'none', 'q_padding': False, 'kv_padding': False, 'lse': False, 'prefix': False, 'prefix_len': 'none', 'rope': False, 'rope_d': 'none', 'sink': False, 'plain': True, 'view': 'contiguous', 'workload': 'none', 'size_edge': 'free', 'scale_form': 'set', 'pse_shift_form': 'none', 'pse_shift_size': 'none', 'atten_mask_size': 'none', 'band_form': 'absent', 'input_layout_form': 'set', 'num_key_value_heads_form': 'absent', 'sparse_mode_form': 'absent', 'inner_precise_form': 'absent', 'actual_seq_lengths_form': 'absent', 'actual_seq_lengths_kv_form': 'absent', 'block_table_size': 'none', 'block_size_form': 'absent', 'quant_scale2_form': 'none', 'antiquant_scale_form': 'none', 'key_antiquant_scale_form': 'none', 'value_antiquant_scale_form': 'none', 'antiquant_mode_form': 'absent', 'key_antiquant_mode_form': 'absent', 'value_antiquant_mode_form': 'absent', 'query_padding_size_form': 'none', 'kv_padding_size_form': 'none', 'softmax_lse_flag_form': 'absent', 'key_shared_prefix_form': 'none', 'actual_shared_prefix_len_form': 'none', 'learnable_sink_form': 'none'}}
#: api, positional tensor names, keyword tensor names (lists: their lengths), plain keywords,
#: stored dtypes, and why the call cannot be expressed ("" when it can).
CALL: dict = {'api': 'torch_npu.npu_fused_infer_attention_score', 'positional': ['arg0', 'arg1', 'arg2'], 'tensors': [], 'tensor_lists': {}, 'scalars': {'num_heads': 1, 'scale': 0.25, 'pre_tokens': 2147483647, 'next_tokens': 2147483647, 'input_layout': 'BNSD', 'num_key_value_heads': 0, 'sparse_mode': 0, 'inner_precise': 1, 'block_size': 0, 'antiquant_mode': 0, 'key_antiquant_mode': 0, 'value_antiquant_mode': 0, 'softmax_lse_flag': False}, 'dtypes': {'arg0': 'bfloat16', 'arg1': 'bfloat16', 'arg2': 'bfloat16'}, 'unexpressible': ''}
#: A failure: max error over the device-precision golden's (both against the fp64 ideal).
FAIL_RATIO = 2.0
#: Floor of the golden's error, so an exact golden does not divide by zero.
RATIO_FLOOR = 1e-6


def _tensor(a: np.ndarray, dtype: str) -> torch.Tensor:
    """A stored array as the torch tensor it was (bfloat16 is stored as its uint16 bits)."""
    a = np.ascontiguousarray(a)
    if dtype == "bfloat16":
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def build_call() -> tuple[list, dict]:
    """(positional tensors, keywords) of the op, rebuilt bit for bit from inputs.npz."""
    with np.load(os.path.join(HERE, "inputs.npz"), allow_pickle=False) as npz:
        stored = {k: npz[k] for k in npz.files}
    dtypes = CALL["dtypes"]

    def one(name: str) -> torch.Tensor:
        return _tensor(stored[name], dtypes[name])

    args = [one(n) for n in CALL["positional"]]
    kwargs = dict(CALL["scalars"])
    for name in CALL["tensors"]:
        kwargs[name] = one(name)
    for name, count in CALL["tensor_lists"].items():
        kwargs[name] = [one(f"{name}.{i}") for i in range(count)]
    return args, kwargs


def npu_call(api: str, args: list, kwargs: dict) -> tuple:
    """The op on NPU 0 (the tensors moved there first), results back on the CPU."""
    import torch_npu

    def dev(x):
        if isinstance(x, torch.Tensor):
            return x.npu()
        if isinstance(x, list) and x and isinstance(x[0], torch.Tensor):
            return [t.npu() for t in x]
        return x

    fn = getattr(torch_npu, api.rsplit(".", 1)[1])
    with torch.no_grad():
        out, lse = fn(*[dev(a) for a in args], **{k: dev(v) for k, v in kwargs.items()})
    torch.npu.synchronize()
    return out.cpu(), lse.cpu()


def _hooked() -> object:
    spec = os.environ.get("FIA_REPRO_CALL", "")
    if not spec:
        return npu_call
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def _f64(x: object) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().float().numpy().astype(np.float64)
    return np.asarray(x).astype(np.float64)


def _error(name: str, got: np.ndarray, ideal: np.ndarray, golden: np.ndarray) -> bool:
    """Print one output's comparison; True when it fails."""
    if got.shape != ideal.shape:
        print(f"{name}: shape {got.shape}, golden {ideal.shape}: FAIL")
        return True
    finite = np.isfinite(ideal)
    bad = int(np.sum(~np.isfinite(got[finite])))
    mismatch = int(np.sum(got[~finite] != ideal[~finite]))
    if not finite.any():
        print(f"{name}: golden has no finite element; {mismatch} differ")
        return mismatch > 0
    err = np.where(finite, np.abs(got - np.where(finite, ideal, 0.0)), 0.0)
    err = np.where(np.isnan(err), np.inf, err)
    base = float(np.max(np.abs(golden[finite] - ideal[finite])))
    worst = np.unravel_index(int(np.argmax(err)), err.shape)
    ratio = float(err.max()) / max(base, RATIO_FLOOR)
    fails = bad > 0 or mismatch > 0 or ratio > FAIL_RATIO
    print(f"{name}: max abs error {float(err.max()):.6g} at {tuple(int(i) for i in worst)} "
          f"(got {got[worst]:.8g}, ideal {ideal[worst]:.8g}); golden's own {base:.6g}; "
          f"ratio {ratio:.3g} (fails above {FAIL_RATIO:g}); non-finite where the golden is "
          f"finite: {bad}; invalid-row/inf mismatches: {mismatch} -> "
          f"{'FAIL' if fails else 'ok'}")
    return fails


def compare(out: object, lse: object) -> bool:
    """Print the outputs against the stored golden; True when the case fails."""
    path = os.path.join(HERE, "golden.npz")
    if not os.path.exists(path):
        print("no stored golden (the recording run crashed or timed out before it): "
              f"outputs of shapes {tuple(_f64(out).shape)}, {tuple(_f64(lse).shape)} returned")
        return False
    with np.load(path, allow_pickle=False) as g:
        fails = _error("attention_out", _f64(out), g["attention_out_fp64"],
                       g["attention_out_device"])
        if CALL["scalars"].get("softmax_lse_flag"):
            fails |= _error("softmax_lse", _f64(lse), g["softmax_lse_fp64"],
                            g["softmax_lse_device"])
    return fails


def main(call: object = None) -> int:
    print(f"case {CASE.get('case_id')}: {CASE.get('features')}")
    if CALL.get("unexpressible"):
        print(f"cannot be expressed on torch_npu: {CALL['unexpressible']}")
        return 2
    args, kwargs = build_call()
    fn = call or _hooked()
    print(f"calling {CALL['api']} ({'hooked: ' + str(fn) if fn is not npu_call else 'NPU'})")
    try:
        out, lse = fn(CALL["api"], args, kwargs)
    except ImportError as exc:
        print(f"no NPU here: {exc}")
        return 3
    fails = compare(out, lse)
    print("FAIL" if fails else "PASS")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
