"""all-MiniLM-L6-v2's encoder in PyTorch, with the weights of its ONNX file: the CUDA backend of
`chunkwise.embeddings.minilm` for machines that have torch but not onnxruntime-gpu.

Reading (`read_onnx_weights`, needs the `onnx` package): the pinned int8 file stores each weight
matrix as int8 with a float scale per output column (per row for the embedding tables) and
dequantizes it inside the graph with `Cast` then `Mul`. Those constant nodes are evaluated once
here, so torch multiplies by exactly the float weights the CPU path computes. Biases and
LayerNorm parameters keep their Hugging Face names (`…encoder.layer.3.attention.self.query.bias`)
but the weight matrices have the exporter's anonymous names (`val_49`), so each is found through
the graph: the constant operand of the `MatMul` that feeds the `Add` of its bias. An fp32 export
of the same model reads the same way. LayerNorm's epsilon comes from the graph's
LayerNormalization nodes.

Running (`TorchBert`): the BERT encoder as the graph computes it (post-LayerNorm, exact erf
GELU, attention over the real tokens only, no pooler), with the matrix products and attention in
`dtype` (float16 on CUDA, float32 on the CPU) while the residual stream, every LayerNorm and the
mean pooling stay in float32. That keeps cosine >= 0.999 to the CPU's vectors
(tests/test_torch_bert.py measures it on the CPU, tests/bench/gpu_check.py on a GPU).
"""

from __future__ import annotations

import importlib
import logging
import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, NamedTuple

import numpy as np

from ..errors import ConfigError, MissingDependencyError

log = logging.getLogger(__name__)

#: all-MiniLM-L6-v2's config.json: 12 heads of 32 dimensions over a hidden size of 384
HEADS = 12
#: BERT's layer_norm_eps, for a graph that spells LayerNorm out in elementary ops
DEFAULT_EPS = 1e-12
DTYPES = ("float32", "float16", "bfloat16")
#: the linear layers of one encoder layer, by their Hugging Face names
LINEARS = ("attention.self.query", "attention.self.key", "attention.self.value",
           "attention.output.dense", "intermediate.dense", "output.dense")
NORMS = ("attention.output.LayerNorm", "output.LayerNorm")
_LAYER_BIAS = re.compile(r"(?:^|\.)encoder\.layer\.(\d+)\.attention\.self\.query\.bias$")


def _require(module: str) -> Any:
    """`module`, or `MissingDependencyError` saying `pip install <module>` (not the gpu extra,
    whose onnxruntime-gpu is not needed here and would have to replace onnxruntime)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependencyError(module) from e


# -- reading the ONNX file ------------------------------------------------------------------
@dataclass
class BertWeights:
    """float32 arrays of a BERT encoder. Linear weights are (in, out), as ONNX's MatMul takes
    them; `layers[i]` maps Hugging Face names within layer i (`attention.self.query.weight`,
    `output.LayerNorm.bias`, …) to arrays."""

    word: np.ndarray
    position: np.ndarray
    token_type: np.ndarray
    embed_norm: tuple[np.ndarray, np.ndarray]
    layers: list[dict[str, np.ndarray]]
    eps: float


def _dequantize(args: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x, scale = args[0].astype(np.float32), args[1].astype(np.float32)
    zero = args[2].astype(np.float32) if len(args) > 2 else np.float32(0)
    if scale.ndim == 1 and x.ndim > 1:  # per-axis: line the scales up with `axis`
        shape = [1] * x.ndim
        shape[attrs.get("axis", 1)] = -1
        scale = scale.reshape(shape)
        zero = zero.reshape(shape) if zero.ndim else zero
    return (x - zero) * scale


#: the ops exporters use to derive weights from initializers, evaluated with numpy
_FOLD: dict[str, Callable[[list[np.ndarray], dict[str, Any], Any], np.ndarray]] = {
    "Cast": lambda a, at, onnx: a[0].astype(onnx.helper.tensor_dtype_to_np_dtype(at["to"])),
    "Mul": lambda a, at, onnx: a[0] * a[1],
    "Sub": lambda a, at, onnx: a[0] - a[1],
    "Identity": lambda a, at, onnx: a[0],
    "Transpose": lambda a, at, onnx: np.transpose(a[0], at.get("perm")),
    "Constant": lambda a, at, onnx: onnx.numpy_helper.to_array(at["value"]),
    "DequantizeLinear": lambda a, at, onnx: _dequantize(a, at),
}


class _Constants:
    """The values of a graph that do not depend on its inputs, computed on request."""

    def __init__(self, graph: Any, onnx: Any) -> None:
        self.onnx = onnx
        self.initializers = {t.name: t for t in graph.initializer}
        self.producer = {out: node for node in graph.node for out in node.output}
        self.bias_add = {name: node for node in graph.node if node.op_type == "Add"
                         for name in node.input}

    def __call__(self, name: str) -> np.ndarray:
        if name in self.initializers:
            return self.onnx.numpy_helper.to_array(self.initializers[name])
        node = self.producer.get(name)
        if node is None or node.op_type not in _FOLD:
            raise ConfigError(f"{name} is not a constant of the graph "
                              f"({node.op_type if node else 'a graph input'})")
        attrs = {a.name: self.onnx.helper.get_attribute_value(a) for a in node.attribute}
        return np.asarray(_FOLD[node.op_type]([self(i) for i in node.input if i], attrs,
                                              self.onnx))

    def find(self, suffix: str) -> str:
        """The one value named `suffix` or `<prefix>.suffix` (exporters add `inner.` etc.)."""
        hits = [n for n in (*self.initializers, *self.producer)
                if n == suffix or n.endswith("." + suffix)]
        if len(hits) != 1:
            raise ConfigError(f"expected one value named *{suffix} in the graph, found {hits}")
        return hits[0]

    def linear_weight(self, bias: str) -> np.ndarray:
        """The weight of the linear layer whose bias is `bias`: MatMul(x, W) + bias."""
        add = self.bias_add.get(bias)
        matmul = add and next((self.producer.get(i) for i in add.input if i != bias), None)
        if matmul is None or matmul.op_type != "MatMul":
            raise ConfigError(f"{bias} is not added to a MatMul: not a BERT graph this reads")
        return self(matmul.input[1])


def read_onnx_weights(path: str | Path) -> BertWeights:
    """The encoder weights of an ONNX export of a BERT model, dequantized to float32."""
    onnx = _require("onnx")
    try:
        graph = onnx.load(str(path)).graph
    except Exception as e:
        raise ConfigError(f"cannot read ONNX model {path}: {e}") from e
    c = _Constants(graph, onnx)
    count = len({m.group(1) for n in (*c.initializers, *c.producer)
                 if (m := _LAYER_BIAS.search(n))})
    if not count:
        raise ConfigError(f"{path}: no encoder.layer.N biases: not a BERT graph this reads")
    layers = [_read_layer(c, f"encoder.layer.{i}") for i in range(count)]
    eps = {a.f for n in graph.node if n.op_type == "LayerNormalization"
           for a in n.attribute if a.name == "epsilon"}
    if len(eps) > 1:
        raise ConfigError(f"{path}: LayerNorms with different epsilons {sorted(eps)}")
    return BertWeights(
        word=c(c.find("embeddings.word_embeddings.weight")),
        position=c(c.find("embeddings.position_embeddings.weight")),
        token_type=c(c.find("embeddings.token_type_embeddings.weight")),
        embed_norm=(c(c.find("embeddings.LayerNorm.weight")),
                    c(c.find("embeddings.LayerNorm.bias"))),
        layers=layers, eps=eps.pop() if eps else DEFAULT_EPS)


def _read_layer(c: _Constants, prefix: str) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name in LINEARS:
        bias = c.find(f"{prefix}.{name}.bias")
        out[f"{name}.bias"] = c(bias)
        out[f"{name}.weight"] = c.linear_weight(bias)
        if out[f"{name}.weight"].shape[1:] != out[f"{name}.bias"].shape:
            raise ConfigError(f"{bias}: weight {out[f'{name}.weight'].shape} does not match")
    for name in NORMS:
        for part in ("weight", "bias"):
            out[f"{name}.{part}"] = c(c.find(f"{prefix}.{name}.{part}"))
    return out


# -- running it -----------------------------------------------------------------------------
class _Layer(NamedTuple):
    """One encoder layer's tensors: (weight (out, in), bias) pairs for the linear layers and
    (weight, bias) for the LayerNorms."""

    qkv: tuple[Any, Any]  # query, key and value stacked: one product for the three
    out: tuple[Any, Any]
    norm1: tuple[Any, Any]
    inter: tuple[Any, Any]
    ff: tuple[Any, Any]
    norm2: tuple[Any, Any]


class TorchBert:
    """A `chunkwise.embeddings.minilm.Runner`: BERT in PyTorch on `device` (`cpu`, `cuda`, `cuda:N`).

    `dtype` (`float32`, `float16`, `bfloat16`; default float16 on CUDA, float32 on the CPU) is
    the precision of the matrix products and attention only (see the module docstring)."""

    backend = "torch"
    #: batches in flight on the GPU (results are [batch, 384]: small)
    QUEUED = 8

    def __init__(self, weights: BertWeights, *, device: str = "cpu", dtype: str | None = None,
                 heads: int = HEADS) -> None:
        torch = self._torch = _require("torch")
        self._device = torch.device(device)
        self._cuda = self._device.type == "cuda"
        self.device = device
        self.dtype = dtype or ("float16" if self._cuda else "float32")
        if self.dtype not in DTYPES:
            raise ConfigError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        hidden = weights.word.shape[1]
        if hidden % heads:
            raise ConfigError(f"hidden size {hidden} is not a multiple of {heads} heads")
        self.heads, self.hidden, self.eps = heads, hidden, float(weights.eps)
        self.gpu_name, self.total_memory = self._describe_gpu()
        f32, low = torch.float32, getattr(torch, self.dtype)
        put = self._put
        self.word = put(weights.word, f32)
        self.position = put(weights.position, f32)
        self.token_type = put(weights.token_type[0], f32)  # every token is of segment 0
        self.embed_norm = (put(weights.embed_norm[0], f32), put(weights.embed_norm[1], f32))
        self.layers = [self._layer(w, low) for w in weights.layers]

    @classmethod
    def from_onnx(cls, path: str | Path, *, device: str = "cpu",
                  dtype: str | None = None) -> TorchBert:
        """The model of an ONNX file on `device`; `ConfigError` if torch sees no such GPU."""
        torch = _require("torch")
        if device.startswith("cuda") and not torch.cuda.is_available():
            build = "a CPU-only build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
            raise ConfigError(f"torch {torch.__version__} ({build}) sees no CUDA GPU")
        return cls(read_onnx_weights(path), device=device, dtype=dtype)

    def _describe_gpu(self) -> tuple[str | None, int | None]:
        if not self._cuda:
            return None, None
        cuda = self._torch.cuda
        props = cuda.get_device_properties(self._device.index or cuda.current_device())
        return props.name, props.total_memory

    def _put(self, array: np.ndarray, dtype: Any) -> Any:
        array = np.ascontiguousarray(array)
        if not array.flags.writeable:  # onnx's arrays view the file's buffer; torch warns
            array = array.copy()
        return self._torch.from_numpy(array).to(self._device, dtype)

    def _layer(self, w: dict[str, np.ndarray], low: Any) -> _Layer:
        def linear(*names: str) -> tuple[Any, Any]:
            weight = np.concatenate([w[f"{n}.weight"] for n in names], axis=1).T
            bias = np.concatenate([w[f"{n}.bias"] for n in names])
            return self._put(weight, low), self._put(bias, low)

        def norm(name: str) -> tuple[Any, Any]:
            f32 = self._torch.float32
            return self._put(w[f"{name}.weight"], f32), self._put(w[f"{name}.bias"], f32)

        return _Layer(qkv=linear(*(f"attention.self.{n}" for n in ("query", "key", "value"))),
                      out=linear("attention.output.dense"),
                      norm1=norm("attention.output.LayerNorm"),
                      inter=linear("intermediate.dense"), ff=linear("output.dense"),
                      norm2=norm("output.LayerNorm"))

    def _norm(self, x: Any, wb: tuple[Any, Any]) -> Any:
        return self._torch.nn.functional.layer_norm(x, (self.hidden,), wb[0], wb[1], self.eps)

    def encode(self, input_ids: Any, mask: Any) -> Any:
        """Unit sentence vectors, float32 [batch, hidden] on the device, of int64 token ids and
        attention mask [batch, width] already there."""
        F = self._torch.nn.functional
        batch, width = input_ids.shape
        low = getattr(self._torch, self.dtype)
        x = F.embedding(input_ids, self.word) + self.position[:width] + self.token_type
        x = self._norm(x, self.embed_norm)
        keys = mask.bool()[:, None, None, :]  # [batch, 1, 1, width]: attend to real tokens
        split = (batch, width, 3, self.heads, self.hidden // self.heads)
        for L in self.layers:
            q, k, v = F.linear(x.to(low), *L.qkv).view(split).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=keys)
            a = a.transpose(1, 2).reshape(batch, width, self.hidden)
            x = self._norm(x + F.linear(a, *L.out).float(), L.norm1)
            h = F.gelu(F.linear(x.to(low), *L.inter))  # exact (erf) GELU, as the graph
            x = self._norm(x + F.linear(h, *L.ff).float(), L.norm2)
        m = mask.to(x.dtype)[..., None]
        pooled = (x * m).sum(dim=1) / m.sum(dim=1).clamp_min(1e-9)
        return F.normalize(pooled, dim=1, eps=1e-12)

    def _to_device(self, array: np.ndarray) -> Any:
        t = self._torch.from_numpy(array)
        # pinned memory lets the copy overlap the work queued before it
        return t.pin_memory().to(self._device, non_blocking=True) if self._cuda else t

    def run(self, batches: Iterable[tuple[np.ndarray, np.ndarray]]) -> Iterator[np.ndarray]:
        # Up to QUEUED batches are queued before the oldest result is copied back (which waits
        # for it), so the GPU always has work while the host pads and copies.
        pending: deque[Any] = deque()
        for ids, mask in batches:
            with self._torch.inference_mode():  # not around a yield: the caller's mode
                pending.append(self.encode(self._to_device(ids), self._to_device(mask)))
            if len(pending) > self.QUEUED:
                yield pending.popleft().cpu().numpy()
        while pending:
            yield pending.popleft().cpu().numpy()
