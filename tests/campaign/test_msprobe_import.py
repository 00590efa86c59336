"""`fia-fuzz import-msprobe`: dumps written here in msprobe's own PyTorch format (the
mindstudio-probe wheel's json_writer / pytorch_processor), statistics and tensor tasks,
v1 and v2 API names, lists and None arguments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from fia_fuzz.cli import main
from fia_fuzz.files.cases import load_case
from fia_fuzz.op.tensors import dtype_name
from fia_fuzz.reports import read_results

torch = pytest.importorskip("torch")
from fia_fuzz.runners.torch_convert import to_torch  # noqa: E402

V1 = "NPU.npu_fused_infer_attention_score"
V2 = "NPU.npu_fused_infer_attention_score_v2"


def stat_tensor(shape: tuple[int, ...], dtype: str, lo: Any, hi: Any) -> dict[str, Any]:
    """A tensor as a statistics task writes it (pytorch_processor._analyze_tensor)."""
    return {"type": "torch.Tensor", "dtype": f"torch.{dtype}", "shape": list(shape),
            "Max": hi, "Min": lo, "Mean": None if dtype in ("int32", "bool") else (lo + hi) / 2,
            "Norm": None if dtype in ("int32", "bool") else 1.0, "requires_grad": False}


def real_tensor(a: np.ndarray, data_dir: Path, data_name: str) -> dict[str, Any]:
    """A tensor as a tensor task writes it: statistics plus the .pt file named data_name."""
    data_dir.mkdir(parents=True, exist_ok=True)
    torch.save(to_torch(a), data_dir / data_name)
    f = a.astype(np.float64)
    return {"type": "torch.Tensor", "dtype": f"torch.{dtype_name(a.dtype)}",
            "shape": list(a.shape), "Max": float(f.max()), "Min": float(f.min()),
            "Mean": float(f.mean()), "Norm": float(np.linalg.norm(f)), "requires_grad": False,
            "data_name": data_name}


def val(v: Any) -> dict[str, Any]:
    return {"type": type(v).__name__, "value": v}


def paged_decode_call() -> dict[str, Any]:
    """A model's paged bf16 decode, BSH (4,1,1024), block_table (4,5),
    block 128, 8 heads over 1 KV head, per-request KV lengths; v1 keywords, None args."""
    kv = stat_tensor((20, 128, 128), "bfloat16", -3.25, 2.875)
    return {
        "input_args": [stat_tensor((4, 1, 1024), "bfloat16", -4.5, 4.0625), kv,
                       stat_tensor((20, 128, 128), "bfloat16", -1.5, 1.75)],
        "input_kwargs": {
            "pse_shift": None, "atten_mask": None, "actual_seq_lengths": None,
            "actual_seq_lengths_kv": [val(640), val(300), val(129), val(1)],
            "block_table": stat_tensor((4, 5), "int32", -1, 10),
            "num_heads": val(8), "scale": val(0.08838834764831845),
            "input_layout": val("BSH"), "num_key_value_heads": val(1),
            "block_size": val(128), "inner_precise": val(1), "antiquant_scale": None},
        "output": [stat_tensor((4, 1, 1024), "bfloat16", -1.0, 1.0),
                   stat_tensor((1,), "float32", 0.0, 0.0)]}


def kv_list_call() -> dict[str, Any]:
    """v1 with key/value as tensor lists (one per batch), fp16 BSH."""
    lists = [[stat_tensor((1, s, 128), "float16", -1.0, 1.0) for s in (16, 24)]
             for _ in range(2)]
    return {"input_args": [stat_tensor((2, 1, 256), "float16", -2.0, 2.0), *lists],
            "input_kwargs": {"num_heads": val(4), "num_key_value_heads": val(2),
                             "input_layout": val("BSH"), "atten_mask": None,
                             "actual_seq_lengths_kv": [val(16), val(24)]},
            "output": [stat_tensor((2, 1, 256), "float16", -1.0, 1.0), None]}


def illegal_call() -> dict[str, Any]:
    """8 query heads over 3 KV heads: no GQA grouping; a finding of its own."""
    return {"input_args": [stat_tensor((1, 8, 4, 64), "float16", -1.0, 1.0),
                           stat_tensor((1, 3, 16, 64), "float16", -1.0, 1.0),
                           stat_tensor((1, 3, 16, 64), "float16", -1.0, 1.0)],
            "input_kwargs": {"num_heads": val(8), "num_key_value_heads": val(3),
                             "input_layout": val("BNSD")},
            "output": []}


def write_dump(d: Path, task: str, data: dict[str, Any]) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    doc = {"task": task, "level": "L1", "framework": "pytorch",
           "dump_data_dir": str(d / "dump_tensor_data") if task == "tensor" else None,
           "data": data}
    (d / "dump.json").write_text(json.dumps(doc, indent=1))
    return d / "dump.json"


def test_statistics_dump_imports_validates_and_reproduces(tmp_path: Path, capsys) -> None:
    dump = write_dump(tmp_path / "dump", "statistics", {
        "Functional.linear.0.forward": {"input_args": [], "input_kwargs": {}, "output": []},
        f"{V1}.0.forward": paged_decode_call(),
        f"{V1}.0.backward": {"input": [], "output": []},
        f"{V1}.1.forward": kv_list_call(),
        f"{V1}.2.forward": illegal_call(),
    })
    out = tmp_path / "cases"
    assert main(["import-msprobe", str(dump), "--out", str(out)]) == 1  # one illegal call
    text = capsys.readouterr().out
    assert "statistics task, 3 FIA call(s)" in text
    assert "[gqa." in text or "[heads." in text or "num_key_value_heads" in text
    paged = out / f"{V1}.0.json"
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [paged.name, f"{V1}.1.json", f"{V1}.2.json"])

    case = load_case(paged)
    p = case.params
    assert p["query"].shape == (4, 1, 1024) and p["query"].dtype == "bfloat16"
    assert p["num_heads"] == 8 and p["num_key_value_heads"] == 1 and p["block_size"] == 128
    assert p["actual_seq_lengths_kv"] == [640, 300, 129, 1]
    assert np.shape(p["block_table"]) == (4, 5) and p["block_table"][0] == [0, 1, 2, 3, 4]
    assert p["block_table"][3] == [10, -1, -1, -1, -1]
    q = case.call()["query"].astype(np.float64)
    assert q.min() == -4.5 and q.max() == 4.0625  # the dumped Min/Max, reproduced
    assert case.call()["query"].tobytes() == case.call()["query"].tobytes()
    feats = case.features()
    assert (feats["paged"], feats["branch"], feats["gqa"], feats["actual_kv"]) == (
        True, "decode", "mqa", "per_batch")

    assert main(["validate", str(paged)]) == 0
    assert main(["repro", str(paged)]) == 0
    assert "mode: live on torch-sdpa" in capsys.readouterr().out
    assert main(["validate", str(out / f"{V1}.1.json")]) == 0
    assert load_case(out / f"{V1}.1.json").features()["kv_list"] is True
    assert main(["repro", str(out / f"{V1}.1.json")]) == 0
    capsys.readouterr()
    assert main(["repro", str(out / f"{V1}.2.json")]) == 2
    assert "illegal case" in capsys.readouterr().err


def test_tensor_dump_carries_the_real_tensors(tmp_path: Path, capsys) -> None:
    d = tmp_path / "dump"
    data_dir = d / "dump_tensor_data"
    rng = np.random.default_rng(0)
    q = rng.standard_normal((1, 8, 16, 64)).astype(ml_dtypes.bfloat16)
    k = rng.standard_normal((1, 2, 32, 64)).astype(ml_dtypes.bfloat16)
    v = rng.standard_normal((1, 2, 32, 64)).astype(ml_dtypes.bfloat16)
    name = f"{V2}.0.forward"
    call = {"input_args": [real_tensor(a, data_dir, f"{name}.input.{i}.pt")
                           for i, a in enumerate((q, k, v))],
            "input_kwargs": {"num_query_heads": val(8), "num_key_value_heads": val(2),
                             "input_layout": val("BNSD"), "softmax_scale": val(0.125),
                             "return_softmax_lse": val(True), "atten_mask": None,
                             "actual_seq_qlen": None, "actual_seq_kvlen": [val(32)],
                             "query_rope": None, "learnable_sink": None},
            "output": []}
    dump = write_dump(d, "tensor", {name: call})
    out = tmp_path / "cases"
    assert main(["import-msprobe", str(dump), "--out", str(out)]) == 0
    assert "tensor task, 1 FIA call(s)" in capsys.readouterr().out
    path = out / f"{V2}.0.json"
    assert path.with_suffix(".npz").is_file()
    case = load_case(path)
    assert case.params["num_heads"] == 8 and case.params["softmax_lse_flag"] is True
    assert case.params["scale"] == 0.125 and case.params["actual_seq_lengths_kv"] == [32]
    got = case.call()
    for key, a in (("query", q), ("key", k), ("value", v)):
        assert got[key].dtype == a.dtype and got[key].tobytes() == a.tobytes()
    assert main(["repro", str(path), "--runner", "torch-sdpa"]) == 0

    # a changed tensor file is refused, not silently used
    arrays = dict(np.load(path.with_suffix(".npz")))
    arrays["query"] = arrays["query"] ^ np.uint16(1)
    np.savez(path.with_suffix(".npz"), **arrays)
    capsys.readouterr()
    assert main(["repro", str(path)]) == 2
    assert "sha256 mismatch" in capsys.readouterr().err


def test_seed_cases_replay_first_then_fuzz_their_cells(tmp_path: Path, capsys) -> None:
    dump = write_dump(tmp_path / "dump", "statistics", {f"{V1}.0.forward": paged_decode_call(),
                                                        f"{V1}.1.forward": kv_list_call()})
    cases = tmp_path / "cases"
    assert main(["import-msprobe", str(dump), "--out", str(cases)]) == 0
    run = tmp_path / "run"
    assert main(["campaign", "--runner", "torch-sdpa", "--seed-cases", str(cases),
                 "--max-cases", "4", "--no-shrink", "--out", str(run)]) == 0
    df = read_results(run)
    seeds = df[df["origin"] == "seed"]
    assert len(seeds) == 2 and set(seeds["outcome"]) == {"ok"}
    assert df.index[df["origin"] == "seed"].max() < df.index[df["origin"] == "explore"].min()
    cells = {("BSH", "bfloat16", "decode"), ("BSH", "float16", "decode")}
    explored = df[df["origin"] == "explore"]
    assert len(explored) == 4
    assert {(r.layout, r.q_dtype, r.branch) for r in explored.itertuples()} <= cells


def test_not_a_dump_and_no_fia_call_exit_2(tmp_path: Path, capsys) -> None:
    empty = write_dump(tmp_path / "d", "statistics", {"Functional.linear.0.forward": {}})
    assert main(["import-msprobe", str(empty), "--out", str(tmp_path / "o")]) == 2
    assert "no npu_fused_infer_attention_score" in capsys.readouterr().err
    (tmp_path / "x.json").write_text("[1]")
    assert main(["import-msprobe", str(tmp_path / "x.json"), "--out", str(tmp_path / "o")]) == 2
    assert "not an msprobe dump" in capsys.readouterr().err


def _import(tmp_path: Path, task: str, call: dict[str, Any], capsys) -> tuple[int, str]:
    dump = write_dump(tmp_path / "d", task, {f"{V1}.0.forward": call})
    rc = main(["import-msprobe", str(dump), "--out", str(tmp_path / "o")])
    return rc, capsys.readouterr().out


def test_unusable_statistics_are_noted_not_silently_dropped(tmp_path: Path, capsys) -> None:
    call = paged_decode_call()
    call["input_args"][0]["Max"] = float("nan")
    call["input_args"][2]["Min"] = "abc"
    rc, out = _import(tmp_path, "statistics", call, capsys)
    assert rc == 0, out
    assert "note: query: dumped Min -4.5 / Max nan is no finite range" in out
    assert "note: value: dumped Min 'abc'" in out


def test_tensor_task_without_data_files_is_noted(tmp_path: Path, capsys) -> None:
    rc, out = _import(tmp_path, "tensor", kv_list_call(), capsys)
    assert rc == 0, out
    assert "note: query: the tensor task dump names no data file for it" in out


@pytest.mark.parametrize("edit, says", [
    ({"block_size": val(0)}, "block_size is 0, not a positive int"),
    ({"actual_seq_lengths_kv": [val(10 ** 15)] * 4},
     "actual_seq_lengths_kv[0]=1000000000000000 needs 7812500000000 blocks of 128, the "
     "dumped table is 5 wide"),
])
def test_a_block_table_that_cannot_be_rebuilt_says_why(edit: dict[str, Any], says: str,
                                                         tmp_path: Path, capsys) -> None:
    call = paged_decode_call()
    call["input_kwargs"].update(edit)
    rc, out = _import(tmp_path, "statistics", call, capsys)
    assert rc == 1 and f"not imported: block_table cannot be rebuilt: {says}" in out, out
