"""The production bars: how often unfiltered draws land where production calls live.

`fia-fuzz coverage` prints them under the axis table, and tests hold nightly draws
to them. Each bar reads only `case.features()` (op/case.py, the one home of what
a case is): vLLM-ascend's everyday call (TND query, paged KV, sparse 3) without
MLA rope; a decode whose explicit mask is what hides keys past one 512-key tile,
in each documented decode mask shape; the longest KV; and no illegal draw.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from fia_fuzz.strategies.masks import DECODE_SHAPES

#: Keys past which a decode mask is the only thing hiding keys beyond one key tile.
MASK_TILE = 512
#: Least share of the draws per bar, and the S2 each profile reaches.
VLLM_SHARE = 0.01
MASKED_SHARE = 0.05
S2_REACH = {"nightly": 32768, "stress": 131072}
#: Profiles the share bars are set for (smoke keeps workloads a small share by design).
BAR_PROFILES = tuple(S2_REACH)


def vllm_call(f: dict[str, Any]) -> bool:
    """vLLM-ascend's TND + paged + sparse 3 call, without MLA rope."""
    return f["layout"] == "TND" and bool(f["paged"]) and f["sparse_mode"] == 3 \
        and not f["rope"]


def masked_decode(f: dict[str, Any]) -> bool:
    """A decode over more than MASK_TILE keys with an explicit mask."""
    return f["branch"] == "decode" and (f["S2"] or 0) > MASK_TILE and f["mask"] != "none"


@dataclass
class Bars:
    """The bar figures of a sample of draws (`measure`)."""

    profile: str
    n: int = 0
    vllm: int = 0
    masked: Counter[str] = field(default_factory=Counter)   # by mask shape
    largest_s2: int = 0
    reach: int = 0            # draws with S2 >= S2_REACH[profile]
    illegal: int = 0

    def missed(self) -> list[str]:
        """The bars this sample misses (outside BAR_PROFILES only an illegal draw counts)."""
        out = ["illegal"] if self.illegal else []
        if self.profile not in BAR_PROFILES:
            return out
        if self.vllm < VLLM_SHARE * self.n:
            out.append("vllm")
        if sum(self.masked.values()) < MASKED_SHARE * self.n:
            out.append("masked")
        out += [s for s in DECODE_SHAPES if not self.masked[s]]
        return out + ([] if self.reach else ["s2"])

    def lines(self) -> list[str]:
        """The block `fia-fuzz coverage` prints: figure, bar, and MISSED where missed."""
        missed = self.missed()
        bar = self.profile in BAR_PROFILES

        def share(k: int, least: float, name: str) -> str:
            return f"{k} ({k / max(1, self.n):.1%}" + (f"; bar >= {least:.0%})" if bar else ")") \
                + (" MISSED" if name in missed else "")

        masked = sum(self.masked.values())
        shapes = [f"{s}: {self.masked[s]}" + (" MISSED" if s in missed else "")
                  for s in DECODE_SHAPES]
        other = masked - sum(self.masked[s] for s in DECODE_SHAPES)
        target = S2_REACH.get(self.profile)
        reach = f" ({self.reach} draws >= {target})" + (" MISSED" if "s2" in missed else "") \
            if target else ""
        return [
            f"production bars ({self.n} draws, profile {self.profile}"
            + ("):" if bar else "; the bars are set for nightly and stress):"),
            f"  TND + paged + sparse 3, no rope | {share(self.vllm, VLLM_SHARE, 'vllm')}",
            f"  decode, S2 > {MASK_TILE}, explicit mask | {share(masked, MASKED_SHARE, 'masked')}"
            f"; " + ", ".join(shapes + ([f"other: {other}"] if other else [])),
            f"  largest S2 | {self.largest_s2}{reach}",
            f"  illegal draws | {self.illegal}" + (" MISSED" if self.illegal else ""),
        ]


def measure(features: list[dict[str, Any]], profile: str, illegal: int = 0) -> Bars:
    """The bars over the features of drawn cases (`illegal`: how many broke a rule)."""
    target = S2_REACH.get(profile)
    s2 = [f["S2"] or 0 for f in features]
    return Bars(profile=profile, n=len(features), vllm=sum(map(vllm_call, features)),
                masked=Counter(f["mask_shape"] for f in features if masked_decode(f)),
                largest_s2=max(s2, default=0),
                reach=sum(x >= target for x in s2) if target else 0, illegal=illegal)
