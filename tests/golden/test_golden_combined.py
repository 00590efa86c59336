"""Features together: layouts x GQA x lengths x left padding x prefix x masks/sparse modes x
pse x sink, against a per-batch dense reference built straight from the docs (SEM §3-6)."""

import numpy as np
from golden_refs import close, dense_ref, golden, rand
from hypothesis import given
from hypothesis import strategies as st

CAUSAL_2048 = np.triu(np.ones((2048, 2048), bool), k=1)


@st.composite
def combined(draw):
    b = draw(st.integers(1, 3))
    kvn, g = draw(st.sampled_from([1, 2])), draw(st.sampled_from([1, 2, 4]))
    s1, s2 = draw(st.integers(2, 9)), draw(st.integers(1, 14))
    act_q = draw(st.lists(st.integers(1, s1), min_size=b, max_size=b))
    act_kv = draw(st.lists(st.integers(0, s2), min_size=b, max_size=b))
    extra = draw(st.sampled_from(["none", "left_padding", "prefix"]))
    pad_q = [draw(st.integers(0, s1 - a)) for a in act_q]
    pad_kv = [draw(st.integers(0, s2 - a)) for a in act_kv]
    sp = draw(st.integers(1, 5))
    p = draw(st.integers(0, sp))
    mode = draw(st.sampled_from([0, 1, 2, 3, 4]))
    pre, nxt = draw(st.integers(-2, 12)), draw(st.integers(-2, 12))
    return dict(b=b, kvn=kvn, n=kvn * g, s1=s1, s2=s2, act_q=act_q, act_kv=act_kv, extra=extra,
                pad_q=pad_q, pad_kv=pad_kv, sp=sp, p=p, mode=mode, pre=pre, nxt=nxt,
                pse=draw(st.booleans()), sink=draw(st.booleans()),
                layout=draw(st.sampled_from(["BNSD", "BSND", "BSH"])),
                seed=draw(st.integers(0, 2**32 - 1)))


def _to(x, layout):
    if layout == "BSND":
        return x.transpose(0, 2, 1, 3).copy()
    if layout == "BSH":
        b, n, s, d = x.shape
        return x.transpose(0, 2, 1, 3).reshape(b, s, n * d).copy()
    return x


@given(combined())
def test_combined_features_match_per_batch_dense_reference(c):
    rng = np.random.default_rng(c["seed"])
    b, n, kvn, s1, s2, d = c["b"], c["n"], c["kvn"], c["s1"], c["s2"], 16
    q, k, v = rand(rng, (b, n, s1, d)), rand(rng, (b, kvn, s2, d)), rand(rng, (b, kvn, s2, d))
    prefix = c["extra"] == "prefix"
    left = c["extra"] == "left_padding"
    p = c["p"] if prefix else 0
    pk, pv = rand(rng, (1, kvn, c["sp"], d)), rand(rng, (1, kvn, c["sp"], d))
    cols = p + s2
    mode = c["mode"]
    mask = rng.random((b, 1, s1, cols)) < 0.25 if mode in (0, 1) else CAUSAL_2048
    pse = rand(rng, (b, n, s1, cols)) if c["pse"] else None
    sink = rng.standard_normal(n).astype(np.float32) if c["sink"] else None
    kw = {"num_heads": n, "num_key_value_heads": kvn, "input_layout": c["layout"],
          "scale": 0.3, "sparse_mode": mode, "pre_tokens": c["pre"], "next_tokens": c["nxt"],
          "atten_mask": mask, "actual_seq_lengths": c["act_q"],
          "actual_seq_lengths_kv": c["act_kv"]}
    if left:
        kw.update(query_padding_size=c["pad_q"], kv_padding_size=c["pad_kv"])
    if prefix:
        kw.update(key_shared_prefix=_to(pk, c["layout"]), value_shared_prefix=_to(pv, c["layout"]),
                  actual_shared_prefix_len=[p])
    if pse is not None:
        kw["pse_shift"] = pse
    if sink is not None:
        kw["learnable_sink"] = sink
    out, lse = golden(_to(q, c["layout"]), _to(k, c["layout"]), _to(v, c["layout"]), **kw)

    want = np.zeros((b, n, s1, d))
    want_lse = np.full((b, n, s1), np.inf)
    for x in range(b):
        aq, ak = c["act_q"][x], c["act_kv"][x]
        q0 = s1 - c["pad_q"][x] - aq if left else 0
        k0 = s2 - c["pad_kv"][x] - ak if left else 0
        kx = np.concatenate([pk[:, :, :p], k[x:x + 1, :, k0:k0 + ak]], axis=2)
        vx = np.concatenate([pv[:, :, :p], v[x:x + 1, :, k0:k0 + ak]], axis=2)
        s1b, s2b = aq, p + ak
        if s2b == 0:
            continue
        i, j = np.arange(s1b)[:, None], np.arange(s2b)[None, :]
        ai, aj = i + q0, j + k0  # absolute positions index the user mask and pse
        if mode == 0:
            ex = mask[x, 0][ai, aj] | (False if left else (j > i + c["nxt"]) | (j < i - c["pre"]))
        elif mode == 1:
            ex = mask[x, 0][ai, aj]
        elif mode == 2:
            ex = j > i
        elif mode == 3:
            ex = j > i + s2b - s1b
        else:
            ex = (j > i + s2b - s1b + c["nxt"]) | (j < i - (s1b - s2b + c["pre"]))
        bias = None if pse is None else pse[x:x + 1][:, :, ai, aj]
        r, r_lse = dense_ref(q[x:x + 1, :, q0:q0 + aq], kx, vx, 0.3, excluded=ex, bias=bias,
                             sink=sink)
        want[x, :, q0:q0 + aq] = r[0]
        want_lse[x, :, q0:q0 + aq] = r_lse[0]
    out_bnsd = {"BNSD": out, "BSND": out.transpose(0, 2, 1, 3) if out.ndim == 4 else out,
                "BSH": out.reshape(b, s1, n, d).transpose(0, 2, 1, 3)}[c["layout"]]
    close(out_bnsd, want)
    close(lse, want_lse[..., None])
