"""Reference vectors for the local-embedder tests (`local.rs`), computed without candle.

A from-scratch numpy forward pass of a BERT encoder, tokenized by the Python
`tokenizers` package with padding off, then the attention-masked mean of the last
hidden states (no padding, so the plain mean) and L2 normalization: the
sentence-transformers recipe for all-MiniLM-L6-v2.

    python3 -m venv /tmp/ref && /tmp/ref/bin/pip install numpy safetensors tokenizers
    /tmp/ref/bin/python minilm_reference.py /path/to/all-MiniLM-L6-v2 cat kitten revenue

prints the cosine of every pair and the first four components of every vector.
"""

import json
import math
import sys

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer


def main() -> None:
    model_dir, texts = sys.argv[1], sys.argv[2:]
    weights = load_file(f"{model_dir}/model.safetensors")
    config = json.load(open(f"{model_dir}/config.json"))
    tokenizer = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tokenizer.no_padding()

    hidden = config["hidden_size"]
    heads = config["num_attention_heads"]
    head_dim = hidden // heads
    eps = config["layer_norm_eps"]
    erf = np.vectorize(math.erf)

    def w(name):
        return weights[name] if name in weights else weights["bert." + name]

    def layer_norm(x, prefix):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + eps) * w(prefix + ".weight") + w(prefix + ".bias")

    def dense(x, prefix):
        return x @ w(prefix + ".weight").T + w(prefix + ".bias")

    def embed(text):
        ids = np.array(tokenizer.encode(text).ids)
        n = len(ids)
        x = (
            w("embeddings.word_embeddings.weight")[ids]
            + w("embeddings.position_embeddings.weight")[:n]
            + w("embeddings.token_type_embeddings.weight")[0]
        )
        x = layer_norm(x, "embeddings.LayerNorm")
        for layer in range(config["num_hidden_layers"]):
            p = f"encoder.layer.{layer}."

            def split(t):
                return t.reshape(n, heads, head_dim).transpose(1, 0, 2)

            q = split(dense(x, p + "attention.self.query"))
            k = split(dense(x, p + "attention.self.key"))
            v = split(dense(x, p + "attention.self.value"))
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(head_dim)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(n, hidden)
            x = layer_norm(dense(context, p + "attention.output.dense") + x,
                           p + "attention.output.LayerNorm")
            inner = dense(x, p + "intermediate.dense")
            inner = 0.5 * inner * (1 + erf(inner / math.sqrt(2)))  # exact GELU
            x = layer_norm(dense(inner, p + "output.dense") + x, p + "output.LayerNorm")
        mean = x.mean(0)
        return mean / np.linalg.norm(mean)

    vectors = {t: embed(t) for t in texts}
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            print(f"cos({a!r}, {b!r}) = {float(vectors[a] @ vectors[b]):.6f}")
    for t in texts:
        print(repr(t), [round(float(c), 6) for c in vectors[t][:4]])


if __name__ == "__main__":
    main()
