"""Independent check: the golden in fp64 against torch's scaled_dot_product_attention in
float64, on everything SDPA expresses (GQA, boolean masks, causal, additive bias)."""

import numpy as np
import pytest
from golden_refs import close, golden, rand
from hypothesis import given
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
CAUSAL_2048 = np.triu(np.ones((2048, 2048), bool), k=1)


def sdpa(q, k, v, scale, attend=None, bias=None):
    """torch SDPA (math backend) in float64 on BNSD numpy data; attend: True = may attend."""
    tq, tk, tv = (torch.from_numpy(x.astype(np.float64)) for x in (q, k, v))
    g = q.shape[1] // k.shape[1]
    tk, tv = tk.repeat_interleave(g, 1), tv.repeat_interleave(g, 1)
    mask = None
    if attend is not None:
        mask = torch.from_numpy(np.ascontiguousarray(attend))
    if bias is not None:
        b = torch.from_numpy(bias.astype(np.float64))
        mask = b if mask is None else b.masked_fill(~mask, float("-inf"))
    with torch.no_grad():
        return torch.nn.functional.scaled_dot_product_attention(
            tq, tk, tv, attn_mask=mask, scale=scale).numpy()


@given(st.integers(1, 2), st.sampled_from([(1, 1), (4, 1), (4, 2), (8, 8)]),
       st.integers(1, 16), st.integers(1, 40), st.sampled_from([16, 64]),
       st.sampled_from(["none", "causal3", "causal2", "mask"]), st.integers(0, 2**32 - 1))
def test_matches_torch_sdpa_float64(b, heads, s1, s2, d, masking, seed):
    n, kvn = heads
    rng = np.random.default_rng(seed)
    q, k, v = rand(rng, (b, n, s1, d)), rand(rng, (b, kvn, s2, d)), rand(rng, (b, kvn, s2, d))
    scale = 1 / np.sqrt(d)
    kw = {"num_heads": n, "num_key_value_heads": kvn, "input_layout": "BNSD", "scale": scale}
    i, j = np.arange(s1)[:, None], np.arange(s2)[None, :]
    attend = None
    if s1 > 1 and masking == "causal3":
        kw.update(sparse_mode=3, atten_mask=CAUSAL_2048)
        attend = j <= i + s2 - s1
    elif s1 > 1 and masking == "causal2":
        kw.update(sparse_mode=2, atten_mask=CAUSAL_2048)
        attend = j <= i
    elif masking == "mask":
        m = rng.random((b, 1, s1, s2)) < 0.3
        kw["atten_mask"] = m
        attend = ~m
    out, _ = golden(q, k, v, **kw)
    ref = sdpa(q, k, v, scale, attend)
    live = np.ones(out.shape[:3], bool) if attend is None else \
        np.broadcast_to(attend, (b, 1, s1, s2)).any(-1).repeat(n, 1)
    close(out[live], ref[live], 1e-12)
    assert (out[~live] == 0).all()  # SDPA gives NaN on fully masked rows; FIA gives 0


def test_pse_matches_torch_additive_mask():
    rng = np.random.default_rng(20)
    q, k, v = rand(rng, (2, 2, 6, 32)), rand(rng, (2, 2, 11, 32)), rand(rng, (2, 2, 11, 32))
    pse = rand(rng, (2, 2, 6, 11))
    out, _ = golden(q, k, v, num_heads=2, input_layout="BNSD", pse_shift=pse, scale=0.2)
    close(out, sdpa(q, k, v, 0.2, bias=pse), 1e-12)
