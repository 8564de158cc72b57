#!/usr/bin/python3
"""Builds an XLM-RoBERTa-shaped encoder with random weights and exports it to ONNX.

The weights are random (fixed seed): the model exists so that the onnx package's
tests and benchmarks run the real ONNX Runtime path on the real graph shape
(embeddings with XLM-R's padding-offset positions, post-LN transformer layers,
GELU feed-forward, additive attention mask), not to produce meaningful vectors.

Defaults make the tiny test model committed under testdata/model/tiny/, and
the flags below its dense-output sibling (the export is deterministic):
    /usr/bin/python3 scripts/onnx/export_tiny.py
    /usr/bin/python3 scripts/onnx/export_tiny.py --dense --token-type-ids --out testdata/model/tiny-dense
A BGE-M3-sized model (24 layers, hidden 1024, vocab 250002, ~2.2 GB; never
committed) for benchmarks:
    /usr/bin/python3 scripts/onnx/export_tiny.py --preset bge-m3 --out /tmp/bge-m3-random

Needs Debian's python3-torch (apt-get install -y python3-torch python3-onnx) (legacy TorchScript exporter; no onnxscript) and
python3-onnx (to move the weights into one external data file, model.onnx_data,
as BGE-M3's published ONNX export does, so the external-data path is tested).
"""

import argparse
import inspect
import json
import math
import os
import tempfile

import torch
from torch import nn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PRESETS = {
    "tiny": dict(layers=2, hidden=32, heads=4, intermediate=64, max_positions=130),
    "bge-m3": dict(layers=24, hidden=1024, heads=16, intermediate=4096, max_positions=8194,
                   vocab=250002),
}


class Layer(nn.Module):
    def __init__(self, hidden, heads, intermediate):
        super().__init__()
        self.heads = heads
        self.scale = 1.0 / math.sqrt(hidden // heads)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-5)
        self.ff1 = nn.Linear(hidden, intermediate)
        self.ff2 = nn.Linear(intermediate, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-5)

    def forward(self, x, bias):
        b, t = x.shape[0], x.shape[1]
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        att = torch.matmul(q, k.transpose(-1, -2)) * self.scale + bias
        ctx = torch.matmul(att.softmax(-1), v).transpose(1, 2).reshape(b, t, -1)
        x = self.ln1(x + self.out(ctx))
        return self.ln2(x + self.ff2(nn.functional.gelu(self.ff1(x))))


class Encoder(nn.Module):
    def __init__(self, vocab, pad_id, layers, hidden, heads, intermediate, max_positions,
                 token_types, dense):
        super().__init__()
        self.pad_id = pad_id
        self.word = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_positions, hidden)
        self.typ = nn.Embedding(1, hidden) if not token_types else nn.Embedding(2, hidden)
        self.ln = nn.LayerNorm(hidden, eps=1e-5)
        self.layers = nn.ModuleList(Layer(hidden, heads, intermediate) for _ in range(layers))
        self.token_types = token_types
        self.dense = dense

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        # XLM-R positions: count real tokens from pad_id+1, padding stays at pad_id.
        real = input_ids.ne(self.pad_id).long()
        positions = torch.cumsum(real, dim=1) * real + self.pad_id
        types = token_type_ids if token_type_ids is not None else torch.zeros_like(input_ids)
        x = self.ln(self.word(input_ids) + self.pos(positions) + self.typ(types))
        bias = (1.0 - attention_mask[:, None, None, :].float()) * -1e9
        for layer in self.layers:
            x = layer(x, bias)
        if self.dense:
            cls = x[:, 0]
            return cls / cls.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        return x


def vocab_of(tokenizer_json):
    with open(tokenizer_json, encoding="utf-8") as f:
        tok = json.load(f)
    ids = [i for i, _ in enumerate(tok["model"]["vocab"])]
    ids += [t["id"] for t in tok.get("added_tokens", [])]
    pad = [t["id"] for t in tok.get("added_tokens", []) if t["content"] == "<pad>"]
    return max(ids) + 1, (pad or [1])[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    ap.add_argument("--tokenizer", default=os.path.join(ROOT, "testdata/tokenizer/tiny/tokenizer.json"),
                    help="tokenizer.json whose vocabulary size the model takes (tiny preset)")
    ap.add_argument("--vocab", type=int, help="vocabulary size (overrides --tokenizer)")
    ap.add_argument("--out", default=os.path.join(ROOT, "testdata/model/tiny"))
    ap.add_argument("--token-type-ids", action="store_true", help="add a token_type_ids input")
    ap.add_argument("--dense", action="store_true",
                    help="output sentence_embedding (CLS, L2-normalized) instead of last_hidden_state")
    ap.add_argument("--seed", type=int, default=20261129)
    args = ap.parse_args()

    cfg = dict(PRESETS[args.preset])
    pad_id = 1
    vocab = args.vocab or cfg.pop("vocab", None)
    cfg.pop("vocab", None)
    if vocab is None:
        vocab, pad_id = vocab_of(args.tokenizer)

    torch.manual_seed(args.seed)
    model = Encoder(vocab, pad_id, token_types=args.token_type_ids, dense=args.dense, **cfg).eval()
    if args.preset == "tiny":
        # Wider weights than the default init so that tokens, positions and
        # padding make a visible difference in the tests.
        with torch.no_grad():
            for p in model.parameters():
                if p.dim() > 1:
                    nn.init.normal_(p, std=0.2)

    ids = torch.tensor([[0, 5, 6, 7, 2], [0, 8, 2, pad_id, pad_id]], dtype=torch.long)
    mask = ids.ne(pad_id).long()
    inputs = (ids, mask)
    names = ["input_ids", "attention_mask"]
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}
    if args.token_type_ids:
        inputs += (torch.zeros_like(ids),)
        names.append("token_type_ids")
        axes["token_type_ids"] = {0: "batch", 1: "seq"}
    out_name = "sentence_embedding" if args.dense else "last_hidden_state"
    axes[out_name] = {0: "batch"} if args.dense else {0: "batch", 1: "seq"}

    os.makedirs(args.out, mode=0o700, exist_ok=True)
    import onnx  # imported late: only needed once torch has produced the graph

    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "model.onnx")
        # torch >= 2.9 defaults to the dynamo exporter (needs onnxscript); ask
        # for the TorchScript one where the flag exists (older torch has only it).
        legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
        with torch.no_grad():
            torch.onnx.export(model, inputs, raw, input_names=names, output_names=[out_name],
                              dynamic_axes=axes, opset_version=14, do_constant_folding=True, **legacy)
        proto = onnx.load(raw)  # also loads any external files torch wrote for >2 GB models
        for name in ("model.onnx", "model.onnx_data"):
            path = os.path.join(args.out, name)
            if os.path.exists(path):
                os.remove(path)
        onnx.save_model(proto, os.path.join(args.out, "model.onnx"), save_as_external_data=True,
                        all_tensors_to_one_file=True, location="model.onnx_data", size_threshold=0)
    for name in ("model.onnx", "model.onnx_data"):
        os.chmod(os.path.join(args.out, name), 0o600)
    print(f"{args.out}: vocab={vocab} pad_id={pad_id} output={out_name} "
          f"params={sum(p.numel() for p in model.parameters())}")


if __name__ == "__main__":
    main()
