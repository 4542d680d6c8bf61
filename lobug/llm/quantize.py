"""MiniLM made small once: the packaged int8-weight ONNX file, whose weights onnxruntime widens
to fp32 when it loads them (~170 MiB resident), rewritten with int8 matrix products (~50 MiB).

Run in a child process (`python -m lobug.llm.quantize SOURCE TARGET`) so that the conversion's
own peak of memory is never the daemon's. Figures and retrieval: docs/benchmarks.md."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path


def quantize(source: Path, target: Path) -> None:
    """Fold the weights to fp32 (onnxruntime's basic graph optimisation writes the folded graph),
    then quantize dynamically to int8 (MatMulInteger); the target appears whole or not at all."""
    import onnxruntime
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        folded = Path(tmp) / "folded.onnx"
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        partial = Path(tmp) / "quantized.onnx"
        quantize_dynamic(str(folded), str(partial), weight_type=QuantType.QInt8)
        os.replace(partial, target)


if __name__ == "__main__":
    quantize(Path(sys.argv[1]), Path(sys.argv[2]))
