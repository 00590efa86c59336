"""Cases a device cannot hold (device_bytes over --device-memory) become `skipped` rows,
counted by the report, never failures and never lost."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from torch_devices import DEVICES, torch_runner

from fia_fuzz.campaign import CampaignConfig
from fia_fuzz.campaign.config import device_shortfall
from fia_fuzz.cli import main
from fia_fuzz.diff.signature import failure_kind
from fia_fuzz.op.case import Case
from fia_fuzz.op.tensors import TensorSpec
from fia_fuzz.reports import read_results
from fia_fuzz.rules.profiles.atlas_a2 import DEVICE_MEMORY
from fia_fuzz.runners import get_runner

N = 16
LIMIT = 64 << 10  # smoke cases span a few KiB to a few MiB of device memory


def test_cases_over_the_device_memory_are_skipped_rows_and_counted(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert main(["campaign", "--runner", "golden", "--max-cases", str(N), "--device-memory",
                 "64KiB", "--no-shrink", "--out", str(out)]) == 0
    assert "'skipped'" in capsys.readouterr().out  # the command's summary counts them
    df = read_results(out)
    assert len(df) == N and df["case_id"].is_unique
    big = df["device_bytes"] > LIMIT
    assert big.any() and (~big).any()
    assert set(df[big]["outcome"]) == {"skipped"}
    assert set(df[~big]["outcome"]) == {"ok"}
    for _, row in df[big].iterrows():
        assert f"device_bytes {row['device_bytes']}" in row["error"]
        assert "the device holds 64.00 KiB (--device-memory)" in row["error"]
        assert failure_kind(row.to_dict()) is None
    assert not (out / "bundles").exists() or not any((out / "bundles").iterdir())

    html, junit = tmp_path / "d.html", tmp_path / "j.xml"
    assert main(["report", str(out), "--html", str(html), "--junit", str(junit)]) == 0
    assert f"skipped {int(big.sum())}" in html.read_text()
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and int(suite.get("skipped", 0)) >= int(big.sum())
    assert suite.get("failures") == "0" and suite.get("errors") == "0"

    # the same command again: a finished run, so a new night; the skipped rows stay
    assert main(["campaign", "--runner", "golden", "--max-cases", str(N), "--device-memory",
                 "64KiB", "--no-shrink", "--out", str(out)]) == 0
    assert set(df["case_id"]) <= set(read_results(out)["case_id"])


def test_host_runners_skip_nothing_unless_told_and_npu_runners_assume_an_a2() -> None:
    assert get_runner("golden").device_memory is None
    assert DEVICE_MEMORY == 64 << 30
    for name in ("npu", "npu-v2", "torchair", "mindspore"):
        assert get_runner(name).device_memory == DEVICE_MEMORY


def test_without_a_device_memory_nothing_is_skipped(tmp_path) -> None:
    out = tmp_path / "run"
    assert main(["campaign", "--runner", "golden", "--max-cases", "6", "--no-shrink",
                 "--out", str(out)]) == 0
    assert set(read_results(out)["outcome"]) == {"ok"}


@pytest.mark.parametrize("device", DEVICES)
def test_torch_runners_state_their_device_memory(device: str) -> None:
    """On the CPU a host backend (nothing skipped unless told); on CUDA the GPU's memory,
    read from the device itself."""
    pytest.importorskip("torch")
    import torch

    runner = torch_runner("torch-sdpa", device)
    if device == "cpu":
        assert runner.device_memory is None
    else:
        assert runner.device_memory == torch.cuda.get_device_properties(0).total_memory > 0


def test_workers_sharing_a_device_each_get_their_share() -> None:
    eight = CampaignConfig(workers=8, devices=(0,) * 8, device_memory=80 << 30)
    assert [eight.sharing(w) for w in range(8)] == [8] * 8
    mixed = CampaignConfig(workers=4, devices=(0, 0, 0, 1))
    assert [mixed.sharing(w) for w in range(4)] == [3, 3, 3, 1]
    assert CampaignConfig(workers=2).sharing(1) == 2  # no --devices: both on the first device
    assert CampaignConfig(workers=4, devices=(0, 1, 2, 3)).sharing(2) == 1
    # a 12 GiB case: fits one 80 GiB device, not an eighth of it (10 GiB)
    case = Case(params={"query": TensorSpec((1, 1, 128), "bfloat16"),
                        "key": TensorSpec((1, 3 << 24, 128), "bfloat16"),
                        "value": TensorSpec((1, 1, 128), "bfloat16"), "num_heads": 1})
    assert 12 << 30 <= case.device_bytes() < 13 << 30
    assert device_shortfall(case, 80 << 30, 1) == ""
    why = device_shortfall(case, 80 << 30, 8)
    assert "this worker's share holds 10.00 GiB (1/8 of a device of 80.00 GiB" in why
    assert f"device_bytes {case.device_bytes()}" in why


def test_a_campaign_of_two_workers_on_one_device_halves_its_memory(tmp_path) -> None:
    out = tmp_path / "run"
    assert main(["campaign", "--runner", "golden", "--max-cases", str(N), "--device-memory",
                 "128KiB", "--workers", "2", "--devices", "0,0", "--no-shrink",
                 "--out", str(out)]) == 0
    df = read_results(out)
    big = df["device_bytes"] > LIMIT  # half of 128 KiB
    assert len(df) == N and big.any() and (~big).any()
    assert set(df[big]["outcome"]) == {"skipped"}
    assert all("1/2 of a device of 128.00 KiB" in e for e in df[big]["error"])


def _decode(s2: int) -> Case:
    """A BNSD fp16 decode, 32 query heads on 8 KV heads, over `s2` keys."""
    return Case(params={"query": TensorSpec((1, 32, 1, 128), "float16"),
                        "key": TensorSpec((1, 8, s2, 128), "float16"),
                        "value": TensorSpec((1, 8, s2, 128), "float16"),
                        "num_heads": 32, "num_key_value_heads": 8, "input_layout": "BNSD"})


def test_the_torch_runners_working_memory_counts_against_the_share() -> None:
    # the composition gathers K/V per batch and holds score-sized fp32 tensors: a case
    # whose inputs fit a worker's share can need more than it
    case = _decode(1 << 22)
    working = get_runner("torch-sdpa").working_bytes(case)
    assert working > case.device_bytes()
    share = 80 << 30
    assert case.device_bytes() < share // 4 < case.device_bytes() + working
    assert device_shortfall(case, share, 4) == ""
    why = device_shortfall(case, share, 4, working)
    assert f"device_bytes {case.device_bytes()} + the runner's working memory {working}" in why
    assert get_runner("golden").working_bytes(case) == 0
    # the bound grows with the keys and the query rows, not with nothing
    assert get_runner("torch-sdpa").working_bytes(_decode(1 << 12)) < working


@pytest.mark.parametrize("device", [d for d in DEVICES if d.id == "cuda"])
def test_the_working_memory_bounds_what_the_composition_allocates(device) -> None:
    import torch

    from fia_fuzz.strategies.sample import draw_cases

    runner = torch_runner("torch-sdpa", device)
    for case in [_decode(1 << 16), *draw_cases(12, 0, profile="nightly")]:
        if not runner.supports(case)[0]:
            continue
        call = case.call()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        runner.run(call)
        peak = torch.cuda.max_memory_allocated() - base
        assert peak <= case.device_bytes() + runner.working_bytes(case), case.case_id
