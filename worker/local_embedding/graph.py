"""The inference graph of a BERT sentence encoder, built from its safetensors weights.

What sentence-transformers runs for all-MiniLM-L6-v2 (Transformer → mean Pooling →
Normalize), written out as an ONNX graph with `onnx.helper`, in memory, when the model is
first loaded: no torch, no exporter, no file written. The weights are read with
`safetensors.numpy` and become the graph's initializers, in fp32, unchanged.

    inputs   input_ids, attention_mask        int64 [batch, sequence]
    output   sentence_embedding               float32 [batch, hidden], L2-normalized

The operations are Hugging Face's `BertModel` in eval mode, in its order:

- embeddings: word + token type 0 (one sentence per input), then + position; LayerNorm;
- each layer: Q, K, V projections; scores QKᵀ·(1/√head) plus an additive mask (float32's
  minimum where the attention mask is 0); softmax; the context through the output
  projection; residual, LayerNorm; the feed-forward block with GELU (the erf form,
  `hidden_act: gelu`); residual, LayerNorm;
- pooling: the mean of the token vectors where the mask is 1 (the count clamped at 1e-9),
  then division by the L2 norm (clamped at 1e-12), as `torch.nn.functional.normalize`.

Opset 17: LayerNormalization is an operator there, and ONNX Runtime fuses the rest
(attention, GELU) into its own kernels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from worker.local_embedding.model_files import BertSpec, ModelFilesError

OPSET = 17
INPUT_IDS = "input_ids"
ATTENTION_MASK = "attention_mask"
OUTPUT = "sentence_embedding"


def load_weights(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a `model.safetensors`, named as `BertModel` names them (no `bert.`)."""
    from safetensors.numpy import load_file

    tensors = load_file(str(path))
    renamed: dict[str, np.ndarray] = {}
    for name, tensor in tensors.items():
        name = name.removeprefix("bert.")
        # Old checkpoints name LayerNorm's parameters gamma and beta.
        name = name.replace("LayerNorm.gamma", "LayerNorm.weight").replace(
            "LayerNorm.beta", "LayerNorm.bias")
        renamed[name] = tensor
    return renamed


class _Graph:
    """Nodes and initializers, with names made up as they are added."""

    def __init__(self, weights: Mapping[str, np.ndarray]) -> None:
        from onnx import helper

        self._helper = helper
        self.weights = weights
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def constant(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def weight(self, name: str, *, transpose: bool = False) -> str:
        try:
            value = self.weights[name]
        except KeyError:
            raise ModelFilesError(f"model.safetensors has no tensor {name!r}") from None
        value = np.asarray(value, dtype=np.float32)
        return self.constant(name, value.T if transpose else value)

    def op(self, op_type: str, *inputs: str, **attributes: Any) -> str:
        self._count += 1
        output = f"{op_type.lower()}_{self._count}"
        self.nodes.append(self._helper.make_node(op_type, list(inputs), [output],
                                                 name=f"{op_type}_{self._count}", **attributes))
        return output

    def linear(self, x: str, prefix: str) -> str:
        # A torch Linear keeps its weight as [out, in]; MatMul wants [in, out].
        product = self.op("MatMul", x, self.weight(f"{prefix}.weight", transpose=True))
        return self.op("Add", product, self.weight(f"{prefix}.bias"))

    def layer_norm(self, x: str, prefix: str, eps: float) -> str:
        return self.op("LayerNormalization", x, self.weight(f"{prefix}.weight"),
                       self.weight(f"{prefix}.bias"), axis=-1, epsilon=eps)


def _embeddings(g: _Graph, spec: BertSpec) -> str:
    words = g.op("Gather", g.weight("embeddings.word_embeddings.weight"), INPUT_IDS)
    token_type = g.weights.get("embeddings.token_type_embeddings.weight")
    if token_type is None:
        raise ModelFilesError("model.safetensors has no token type embeddings")
    summed = g.op("Add", words, g.constant("token_type_0", np.asarray(token_type[0], np.float32)))
    # Positions 0..sequence-1: the first rows of the position table.
    shape = g.op("Shape", INPUT_IDS)
    length = g.op("Slice", shape, g.constant("one", np.array([1], np.int64)),
                  g.constant("two", np.array([2], np.int64)))
    positions = g.op("Slice", g.weight("embeddings.position_embeddings.weight"),
                     g.constant("zero", np.array([0], np.int64)), length,
                     g.constant("axis_0", np.array([0], np.int64)))
    return g.layer_norm(g.op("Add", summed, positions), "embeddings.LayerNorm",
                        spec.layer_norm_eps)


def _heads(g: _Graph, x: str, perm: list[int]) -> str:
    split = g.op("Reshape", x, "heads_shape")
    return g.op("Transpose", split, perm=perm)


def _layer(g: _Graph, x: str, mask_bias: str, index: int, spec: BertSpec) -> str:
    prefix = f"encoder.layer.{index}"
    query = _heads(g, g.linear(x, f"{prefix}.attention.self.query"), [0, 2, 1, 3])
    key = _heads(g, g.linear(x, f"{prefix}.attention.self.key"), [0, 2, 3, 1])
    value = _heads(g, g.linear(x, f"{prefix}.attention.self.value"), [0, 2, 1, 3])
    scores = g.op("Mul", g.op("MatMul", query, key), "attention_scale")
    probabilities = g.op("Softmax", g.op("Add", scores, mask_bias), axis=-1)
    context = g.op("Transpose", g.op("MatMul", probabilities, value), perm=[0, 2, 1, 3])
    merged = g.op("Reshape", context, "hidden_shape")
    attended = g.linear(merged, f"{prefix}.attention.output.dense")
    x = g.layer_norm(g.op("Add", attended, x), f"{prefix}.attention.output.LayerNorm",
                     spec.layer_norm_eps)
    inner = g.linear(x, f"{prefix}.intermediate.dense")
    # GELU, erf form: x · ½ · (1 + erf(x / √2)).
    erf = g.op("Erf", g.op("Div", inner, "sqrt_two"))
    gelu = g.op("Mul", g.op("Mul", inner, g.op("Add", erf, "one_f")), "half")
    out = g.linear(gelu, f"{prefix}.output.dense")
    return g.layer_norm(g.op("Add", out, x), f"{prefix}.output.LayerNorm", spec.layer_norm_eps)


def build_graph(weights: Mapping[str, np.ndarray], spec: BertSpec) -> Any:
    """The ONNX ModelProto of the encoder with mean pooling and L2 normalization.

    Not passed through `onnx.checker` here (a third of a second at every start): the graph
    is the same for every load, and tests/unit/test_local_embedding.py checks it."""
    from onnx import TensorProto, helper

    if spec.hidden_size % spec.num_heads:
        raise ModelFilesError(f"hidden size {spec.hidden_size} is not a multiple of "
                              f"{spec.num_heads} heads")
    head = spec.hidden_size // spec.num_heads
    g = _Graph(weights)
    g.constant("heads_shape", np.array([0, 0, spec.num_heads, head], np.int64))
    g.constant("hidden_shape", np.array([0, 0, spec.hidden_size], np.int64))
    g.constant("attention_scale", np.array(1.0 / math.sqrt(head), np.float32))
    g.constant("sqrt_two", np.array(math.sqrt(2.0), np.float32))
    g.constant("one_f", np.array(1.0, np.float32))
    g.constant("half", np.array(0.5, np.float32))
    g.constant("float_min", np.array(np.finfo(np.float32).min, np.float32))
    g.constant("axes_1", np.array([1], np.int64))
    g.constant("axes_1_2", np.array([1, 2], np.int64))
    g.constant("axes_2", np.array([2], np.int64))
    g.constant("count_floor", np.array(1e-9, np.float32))
    g.constant("norm_floor", np.array(1e-12, np.float32))

    mask = g.op("Cast", ATTENTION_MASK, to=TensorProto.FLOAT)
    # [batch, 1, 1, sequence]: 0 where attended, float32's minimum where padded.
    mask_bias = g.op("Mul", g.op("Sub", "one_f", g.op("Unsqueeze", mask, "axes_1_2")),
                     "float_min")
    x = _embeddings(g, spec)
    for index in range(spec.num_layers):
        x = _layer(g, x, mask_bias, index, spec)

    token_mask = g.op("Unsqueeze", mask, "axes_2")  # [batch, sequence, 1]
    summed = g.op("ReduceSum", g.op("Mul", x, token_mask), "axes_1", keepdims=0)
    counts = g.op("Max", g.op("ReduceSum", token_mask, "axes_1", keepdims=0), "count_floor")
    mean = g.op("Div", summed, counts)
    norm = g.op("Max", g.op("ReduceL2", mean, axes=[1], keepdims=1), "norm_floor")
    g.nodes.append(helper.make_node("Div", [mean, norm], [OUTPUT], name="normalize"))

    graph = helper.make_graph(
        g.nodes, "sentence_encoder",
        inputs=[helper.make_tensor_value_info(INPUT_IDS, TensorProto.INT64, ["batch", "sequence"]),
                helper.make_tensor_value_info(ATTENTION_MASK, TensorProto.INT64,
                                              ["batch", "sequence"])],
        outputs=[helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT,
                                               ["batch", spec.hidden_size])],
        initializer=g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="agent-memory-worker")
    model.ir_version = 8  # what every ONNX Runtime since 1.14 reads
    return model


def serialized_model(model_dir: Path, spec: BertSpec) -> bytes:
    """The graph of the model in `model_dir`, as the bytes an InferenceSession takes."""
    model: Any = build_graph(load_weights(model_dir / "model.safetensors"), spec)
    data: bytes = model.SerializeToString()
    return data
