"""The case model: one call of the op, data-free, with a recipe for its data.

A Case is what strategies draw, campaigns record, bundles store and users
paste into bug reports. It holds the canonical keyword arguments with
TensorSpecs in place of tensors (so `validate(**case.specs())` works as is),
a fill recipe per tensor (for a value argument: an optional dtype to pass it
in), a seed and the rule profile it is legal under (`rules`, "docs" unless a
device profile drew it; kept out of the JSON when "docs", so ids stay stable).
`call()` materialises it deterministically; `case_id` is a hash of its
canonical JSON, stable across machines and runs. A tensor may instead be
stored (real data, e.g. imported from a model's dump): its recipe holds the
data's digest and `stored` the arrays, kept in a .npz beside the case file
(op/stored.py).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fia_fuzz.op.call import CallView, int64_values
from fia_fuzz.op.features import case_features
from fia_fuzz.op.geometry import referenced_blocks
from fia_fuzz.op.outputs import output_specs
from fia_fuzz.op.params import ALL_ARGS, ATTR_DEFAULTS, TENSOR_ARGS, VALUE_ARGS
from fia_fuzz.op.specials import apply_specials, has_specials
from fia_fuzz.op.stored import STORED, stored_keys
from fia_fuzz.op.tensors import NUMPY_DTYPES, TensorSpec, numpy_dtype
from fia_fuzz.op.undetermined import Undetermined
from fia_fuzz.op.values import default_fill, materialise, materialise_blocks

#: dtype of the value-carrying arguments when passed as tensors (torch_npu schema).
VALUE_TENSOR_DTYPES = {"block_table": np.int32, "query_padding_size": np.int64,
                       "kv_padding_size": np.int64}
#: A fills entry {"dtype": ...} for a value argument passes it as an array of that dtype
#: instead (the wrong-dtype calls of dtype.block_table / dtype.int64_values).
VALUE_DTYPE_KEY = "dtype"
#: A paged cache's fill {"blocks": "referenced"} makes it lazy: only the blocks the table
#: references for the actual KV lengths hold data (op/geometry.py `referenced_blocks`).
LAZY_KEY, LAZY = "blocks", "referenced"
#: Paged caches that may be lazy.
CACHE_ARGS = ("key", "value", "key_rope")
#: Antiquant modes whose parameters are PA-managed: (block_num, [KV_N,] block_size), read
#: through block_table like the cache [V2 keyAntiquantMode 4/5], so they may be lazy too.
PAGED_ANTIQUANT_MODES = (4, 5)
#: Those parameters, each with the mode attribute that decides.
PAGED_ANTIQUANT_ARGS = {f"{side}_antiquant_{what}": f"{side}_antiquant_mode"
                        for side in ("key", "value") for what in ("scale", "offset")}
SCHEMA_VERSION = 1
#: The rule profile of a case that names none: the documented rules (`fia_fuzz.rules.profiles`).
DEFAULT_RULES = "docs"
#: Where a Case keeps its computed features (`Case.features`).
_FEATURES = "_features_cache"
#: Where a Case keeps its view (`Case.view`); not pickled (`Case.__getstate__`).
_VIEW = "_view_cache"


def _encode(name: str, value: Any) -> Any:
    if name in TENSOR_ARGS:
        if isinstance(value, (list, tuple)):
            return [v.to_dict() for v in value]
        return value.to_dict()
    if name in VALUE_ARGS:
        return [list(r) for r in value] if name == "block_table" else list(value)
    return value


def _decode(name: str, value: Any) -> Any:
    if name in TENSOR_ARGS:
        if isinstance(value, list):
            return [TensorSpec.from_dict(v) for v in value]
        return TensorSpec.from_dict(value)
    if name in VALUE_ARGS:
        return [list(r) for r in value] if name == "block_table" else list(value)
    return value


@dataclass(frozen=True)
class Case:
    """Canonical kwargs (TensorSpec for tensors), fill recipes, a data seed, a rule profile."""

    params: dict[str, Any]
    fills: dict[str, dict[str, Any]] = field(default_factory=dict)
    seed: int = 0
    rules: str = DEFAULT_RULES
    #: Arrays of the tensors whose recipe is "stored", by `stored_keys` (not in the JSON:
    #: the recipe's digest stands for them).
    stored: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.params) - set(ALL_ARGS))
        if unknown:
            raise ValueError(f"Case has unknown parameter(s) {unknown}")
        if not isinstance(self.rules, str) or not self.rules:
            raise ValueError(f"Case rules must name a rule profile, got {self.rules!r}")

    # ---- identity and serialisation -------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out = {
            "version": SCHEMA_VERSION,
            "params": {k: _encode(k, v) for k, v in sorted(self.params.items())
                       if v is not None},
            "fills": {k: dict(sorted(v.items())) for k, v in sorted(self.fills.items())},
            "seed": int(self.seed),
        }
        if self.rules != DEFAULT_RULES:
            out["rules"] = self.rules
        return out

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, indent=indent,
                          separators=(",", ":") if indent is None else None)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Case:
        params = {k: _decode(k, v) for k, v in d["params"].items()}
        return cls(params=params, fills={k: dict(v) for k, v in d.get("fills", {}).items()},
                   seed=int(d.get("seed", 0)), rules=d.get("rules", DEFAULT_RULES))

    @classmethod
    def from_json(cls, text: str) -> Case:
        return cls.from_dict(json.loads(text))

    @property
    def case_id(self) -> str:
        """16 hex digits of the SHA-256 of the canonical JSON."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:16]

    def __hash__(self) -> int:
        return hash(self.case_id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Case) and self.to_json() == other.to_json()

    # ---- use ----------------------------------------------------------------
    def specs(self) -> dict[str, Any]:
        """The canonical kwargs with TensorSpecs, ready for `validate(**case.specs())`.

        A value argument with a dtype override (fills[name]["dtype"]) is the small
        int array it will be passed as, so validate sees its dtype.
        """
        out = dict(self.params)
        for name in VALUE_ARGS:
            dt = self.value_dtype(name)
            if dt is not None and out.get(name) is not None:
                out[name] = np.asarray(out[name], dtype=NUMPY_DTYPES[dt])
        return out

    def elements(self) -> int:
        """Elements of every tensor of the call: what "smaller" means for a minimal case."""
        total = 0
        for spec in self.specs().values():
            for t in spec if isinstance(spec, list) else [spec]:
                shape = getattr(t, "shape", None)
                total += int(np.prod(shape)) if shape is not None else 0
        return total

    def value_dtype(self, name: str) -> str | None:
        """The dtype override of a value argument (None: the op's own form)."""
        return self.fills.get(name, {}).get(VALUE_DTYPE_KEY) if name in VALUE_ARGS else None

    def fill(self, name: str) -> dict[str, Any]:
        spec = self.params[name]
        first = spec[0] if isinstance(spec, list) else spec
        return self.fills.get(name) or default_fill(name, first)

    def call(self, data: bool = True) -> dict[str, Any]:
        """The canonical kwargs with NumPy arrays; bit-identical for the same case.

        data=False gives every tensor argument as a read-only zero-stride array of
        zeros (its shape and dtype, no memory, no generation): for checks of
        shapes and dtypes only.
        """
        def tensor(name: str, spec: TensorSpec, index: int = 0) -> np.ndarray:
            if not data:
                return np.broadcast_to(np.zeros((), numpy_dtype(spec.dtype)), spec.shape)
            return materialise(spec, self.fill(name), self.seed, name, index)

        out: dict[str, Any] = {}
        for name, value in self.params.items():
            if value is None:
                continue
            if name in TENSOR_ARGS and self.fill(name).get("dist") == STORED:
                arrays = [self._stored(k) for k in stored_keys(name, value)]
                out[name] = arrays if isinstance(value, list) else arrays[0]
            elif name in TENSOR_ARGS:
                if data and self.lazy(name):
                    out[name] = materialise_blocks(value, self.fill(name), self.seed, name,
                                                   self.referenced_blocks())
                elif isinstance(value, list):
                    out[name] = [tensor(name, s, i) for i, s in enumerate(value)]
                else:
                    out[name] = tensor(name, value)
            elif name in VALUE_ARGS and not int64_values(value):
                out[name] = _encode(name, value)  # as written: no int array holds it
            elif self.value_dtype(name) is not None:
                out[name] = np.asarray(value, dtype=NUMPY_DTYPES[self.value_dtype(name)])
            elif name in VALUE_TENSOR_DTYPES:
                out[name] = np.asarray(value, dtype=VALUE_TENSOR_DTYPES[name])
            elif name in VALUE_ARGS:
                out[name] = [int(v) for v in value]
            else:
                out[name] = value
        if data and has_specials(self.fills):
            apply_specials(self.fills, self.seed, out)
        return out

    def lazy(self, name: str) -> bool:
        """True for a paged cache (or PA-managed antiquant parameter) materialised with data
        in its referenced blocks only."""
        pa_managed = name in PAGED_ANTIQUANT_ARGS \
            and self.attr(PAGED_ANTIQUANT_ARGS[name]) in PAGED_ANTIQUANT_MODES
        return (name in CACHE_ARGS or pa_managed) and self.params.get("block_table") is not None \
            and self.fills.get(name, {}).get(LAZY_KEY) == LAZY \
            and getattr(self.params[name], "strides", None) is None

    def referenced_blocks(self) -> np.ndarray:
        """Physical block ids the call reads (empty without a block table)."""
        table = self.params.get("block_table")
        if table is None:
            return np.zeros(0, np.int64)
        return referenced_blocks(table, self.view().act_kv, int(self.attr("block_size")))

    def device_bytes(self) -> int:
        """Device memory the call needs: every input's buffer (whole caches, views' buffers)
        plus the outputs; a campaign compares it with what a device holds."""
        total = sum(t.storage_nbytes for name, v in self.params.items()
                    if name in TENSOR_ARGS and v is not None
                    for t in (v if isinstance(v, list) else [v]))
        return total + self._output_bytes()

    def _output_bytes(self) -> int:
        """Bytes of the call's outputs (0 when their shapes are undetermined)."""
        try:
            return sum(t.nbytes for t in output_specs(self.view()))
        except (Undetermined, KeyError, ValueError, TypeError):
            return 0

    def host_bytes(self) -> int:
        """Host memory of the materialised call: every input at its materialised size (a
        lazy cache: its referenced blocks only) plus the outputs. The golden's working set
        follows it (fp64 copies of the same elements), not the device's cache size."""
        blocks = None
        total = 0
        for name, v in self.params.items():
            if name not in TENSOR_ARGS or v is None:
                continue
            if self.lazy(name):
                blocks = self.referenced_blocks() if blocks is None else blocks
                total += v.nbytes // max(1, v.shape[0]) * len(blocks)
            else:
                total += sum(t.storage_nbytes for t in (v if isinstance(v, list) else [v]))
        return total + self._output_bytes()

    def _stored(self, key: str) -> np.ndarray:
        if key not in self.stored:
            raise ValueError(f"{key}: the case's stored tensor is not loaded (load the case "
                             "with fia_fuzz.files.cases.load_case, its .npz beside it)")
        return self.stored[key]

    def view(self) -> CallView:
        """The call's view, built once per Case object: its derived quantities are computed
        once however many features, rules and sizes ask for them."""
        view = self.__dict__.get(_VIEW)
        if view is None:
            view = CallView(self.specs())
            object.__setattr__(self, _VIEW, view)  # a cache, not a field: frozen holds
        return view

    def __getstate__(self) -> dict[str, Any]:
        """What pickles: fields and features, not the view (rebuilt on demand)."""
        return {k: v for k, v in self.__dict__.items() if k != _VIEW}

    def attr(self, name: str) -> Any:
        return self.params.get(name, ATTR_DEFAULTS.get(name))

    def features(self) -> dict[str, Any]:
        """Flat, report-ready description of which features this case exercises.

        Computed once per Case object and kept beside its fields (`_FEATURES` in the
        instance's __dict__: no dataclass field, so equality, hash, repr and JSON do not see
        it; a pickled case carries it to another process). Each call returns a fresh dict.
        A case whose features cannot be computed (an illegal one) raises every time.
        """
        cached = self.__dict__.get(_FEATURES)
        if cached is None:
            cached = case_features(self)
            object.__setattr__(self, _FEATURES, cached)  # a cache, not a field: frozen holds
        return dict(cached)
