"""`fia-fuzz validate CALL.json`: violations or "legal" with the inferred outputs."""

from __future__ import annotations

import json
from pathlib import Path

from fia_fuzz.cli import main


def _write(tmp_path: Path, call: dict) -> str:
    p = tmp_path / "call.json"
    p.write_text(json.dumps(call))
    return str(p)


CALL = {"query": {"shape": [1, 8, 4, 64], "dtype": "float16"},
        "key": {"shape": [1, 2, 16, 64], "dtype": "float16"},
        "value": {"shape": [1, 2, 16, 64], "dtype": "float16"},
        "num_heads": 8, "num_key_value_heads": 2, "input_layout": "BNSD",
        "softmax_lse_flag": True}


def test_legal_call_prints_outputs(tmp_path: Path, capsys) -> None:
    assert main(["validate", _write(tmp_path, CALL)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("legal")
    assert "float16[1, 8, 4, 64]" in out and "float32[1, 8, 4, 1]" in out


def test_illegal_call_prints_each_violation(tmp_path: Path, capsys) -> None:
    bad = {**CALL, "num_key_value_heads": 3, "sparse_mode": 7}
    assert main(["validate", _write(tmp_path, bad)]) == 1
    out = capsys.readouterr().out
    assert "[mask.sparse_mode_range]" in out and "sparse_mode=7" in out
    assert "num_key_value_heads" in out and "legal" not in out.splitlines()[0]


def test_kv_list_and_paged_calls_load(tmp_path: Path, capsys) -> None:
    call = {"query": {"shape": [2, 1, 256], "dtype": "float16"},
            "key": [{"shape": [1, 16, 128], "dtype": "float16"},
                    {"shape": [1, 24, 128], "dtype": "float16"}],
            "value": [{"shape": [1, 16, 128], "dtype": "float16"},
                      {"shape": [1, 24, 128], "dtype": "float16"}],
            "num_heads": 4, "num_key_value_heads": 2, "input_layout": "BSH"}
    assert main(["validate", _write(tmp_path, call)]) == 0
    assert "attention_out: float16[2, 1, 256]" in capsys.readouterr().out


def test_case_json_is_accepted(tmp_path: Path, capsys) -> None:
    from fia_fuzz.op.case import Case
    from fia_fuzz.rules.rulebook.bases import BASES

    case = Case(params=BASES["paged_decode"], seed=3)
    p = tmp_path / "case.json"
    p.write_text(case.to_json())
    assert main(["validate", str(p)]) == 0
    assert "attention_out: float16[2, 8, 1, 64]" in capsys.readouterr().out


def test_malformed_tensor_in_json_is_a_violation(tmp_path: Path, capsys) -> None:
    bad = {**CALL, "query": {"shape": [1, 8, -4, 64], "dtype": "float16"}}
    assert main(["validate", _write(tmp_path, bad)]) == 1
    assert "[args.shape_sane]" in capsys.readouterr().out
