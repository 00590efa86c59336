"""Which kernel edge a call's sizes sit on: the `size_edge` and `table_width` features.

The A2 kernels tile keys in blocks of 64..512 and query rows in 32..128, split
the B*N (batch, head) pairs over the AI cores (20 or 24 cube cores per die, 48
on two), and split a long KV over the cores when B*N is too small to fill them
(flash decode) [production-calls.md, "Where kernels break"]. Lengths at a tile
multiple or one off it, B*N next to a core count and long KV over few (batch,
head) pairs take the tail and split paths; strategies/sizes.py draws them.
"""

from __future__ import annotations

from collections.abc import Sequence

#: Kernel key tile (SINNER) every length edge is measured against.
EDGE_TILE = 64
#: AI-core counts B*N lands next to (Atlas A2: 20 or 24 cube cores per die, 48 on two).
CORE_COUNTS = (20, 24, 48)
#: KV tokens from which a request is "long": 64 key tiles, the low end of production
#: decode caches (4K-128K tokens, production-calls.md).
LONG_KV = 4096
#: B*N below which a long KV is split over the cores: short of every core count's edge.
SPLIT_BN = min(CORE_COUNTS) - 1
#: Block-table entries per 32 bytes (int32), the alignment unit the docs ask of a pse's
#: KV_S [V2 pseShiftOptional: "建议padding到32字节"], against which table widths are edges.
WIDTH_TILE = 8
#: Edge kind -> remainder modulo the tile (checked in this order: one value per case).
EDGE_REMAINDERS = (("below", -1), ("above", 1), ("multiple", 0))
SIZE_EDGES = ("free", "multiple", "below", "above", "cores", "long")
TABLE_WIDTHS = ("none", "free", "multiple", "below", "above")


def near_cores(bn: int) -> bool:
    """B*N within one of an AI-core count."""
    return any(abs(bn - c) <= 1 for c in CORE_COUNTS)


def edge_of(values: Sequence[int], tile: int) -> str:
    """The first edge kind (below, above, multiple) any value >= tile - 1 takes, else free."""
    big = [x for x in values if x >= tile - 1]
    for kind, rem in EDGE_REMAINDERS:
        if any(x % tile == rem % tile for x in big):
            return kind
    return "free"


def size_edge(bn: int | None, lengths: Sequence[int], act_kv: Sequence[int]) -> str:
    """B*N next to a core count ("cores"), a KV of LONG_KV+ over fewer than SPLIT_BN
    (batch, head) pairs ("long"), else the edge the lengths take against EDGE_TILE."""
    if bn and near_cores(bn):
        return "cores"
    if bn and bn < SPLIT_BN and max(act_kv, default=0) >= LONG_KV:
        return "long"
    return edge_of(lengths, EDGE_TILE)


def table_width(width: int | None) -> str:
    """The edge a block table's width (entries per row) takes against WIDTH_TILE."""
    return "none" if width is None else edge_of([width], WIDTH_TILE)


#: Element-count edges, largest first: 2^32 and 2^31 the unsigned and signed 32-bit offset
#: widths (IFA's host checks its task count against UINT32_MAX, ops-transformer attention/
#: incre_flash_attention/op_host/incre_flash_attention_tiling_check.cpp
#: ProcessCheckATBInputWithPage); 2^24 the integers float32 counts exactly (the kernels'
#: softmax and mask positions run in fp32); 2^16 the 16-bit strides of the copy instructions
#: (CheckDataCopyNd2Nz: "DataCopy ND2NZ ... 行Stride大于等于65536"; the batch <= 65536 checks).
NUMEL_EDGES = ((1 << 32, "2^32"), (1 << 31, "2^31"), (1 << 24, "2^24"), (1 << 16, "2^16"))
NUMEL_CLASSES = ("<2^16", "2^16", "2^24", "2^31", "2^32")


def numel_class(numel: int) -> str:
    """The highest edge of NUMEL_EDGES an element count reaches, "<2^16" below them all."""
    return next((name for edge, name in NUMEL_EDGES if numel >= edge), "<2^16")


#: Share of batches whose valid KV length is 0: none, exactly one, two or more but fewer than
#: half, at least half, all. The host code branches on it: the V3 split skips empty batches
#: and an all-empty call takes its own path (common/op_host/split_core.cpp CalcSplitInfo,
#: SplitCore "全空case": isKvSeqAllZero), the decode kernel checks for them
#: (incre_flash_attention_tiling_check.cpp HasZeroSeqBatch, IsKvZeroBatchSplit).
EMPTY_SHARES = ("none", "one", "few", "half", "all")


def empty_share(lengths: Sequence[int]) -> str:
    """The EMPTY_SHARES class of per-batch KV lengths."""
    zeros = sum(1 for x in lengths if x == 0)
    if zeros == 0:
        return "none"
    if zeros == len(lengths):
        return "all"
    if zeros == 1:
        return "one"
    return "half" if 2 * zeros >= len(lengths) else "few"


#: Batch count against the cube cores (CORE_COUNTS' dies, 20 or 24): one batch, fewer than
#: either die's cores, 20..24 (each core of a die at most one batch), more than 24 (some core
#: takes two): the V3 split hands whole batches to a core first (common/op_host/
#: split_core.cpp AssignByBatch, CalcSplitPlan).
BATCH_CLASSES = ("1", "under", "cores", "over")


def batch_class(b: int) -> str:
    """The BATCH_CLASSES class of a batch count."""
    if b <= 1:
        return "1"
    lo, hi = min(CORE_COUNTS[:2]), max(CORE_COUNTS[:2])
    return "under" if b < lo else "cores" if b <= hi else "over"
