#!/usr/bin/python3
"""Rewrites an fp32 XLM-RoBERTa/BGE-M3 ONNX graph into a dynamically quantized int8 one.

Every MatMul (and Gemm) whose right-hand side is a constant 2-D weight becomes one
com.microsoft DynamicQuantizeMatMul node, which ONNX Runtime's CPU provider executes with
integer kernels (u8 activations x s8 weights, VNNI where the CPU has it):

    Y = DynamicQuantizeMatMul(A, B_int8, B_scale[N], B_zero_point[N] = 0 [, bias])

Weights are quantized symmetrically per output column (scale = max|W[:, j]| / 63 by default,
see WEIGHT_FORMATS for why 7 bits), so a column with small weights keeps its precision;
activations are quantized per tensor (u8) at run time by the operator itself. Everything else (embeddings, attention score products, layer norms)
stays fp32. This is the form ONNX Runtime's own quantize_dynamic produces after its fusions;
its Python tools are not needed (only python3-onnx and numpy).

    /usr/bin/python3 scripts/onnx/quantize_int8.py IN/model.onnx OUT/model.onnx
    /usr/bin/python3 scripts/onnx/quantize_int8.py --inline testdata/model/tiny/model.onnx testdata/model/tiny-int8/model.onnx

--op nbits writes com.microsoft MatMulNBits nodes instead (ONNX Runtime's block-quantized weight
layout, the one its LLM kernels use): weights in blocks of --block values along K, one scale per
block and column, --bits 8 or 4, and accuracy_level 4 (int8 activations quantized per block,
int32 accumulation: VNNI / AVX2 integer kernels) unless --accuracy-level says otherwise:

    /usr/bin/python3 scripts/onnx/quantize_int8.py --op nbits --bits 8 --block 32 IN/model.onnx OUT/model.onnx

The output keeps its weights in OUT/model.onnx_data (one external file, as the input's
export does) unless --inline is given (small models only: protobuf stops at 2 GB).
"""

import argparse
import os

import numpy as np
import onnx
from onnx import helper, numpy_helper


# Weight formats (--weights). MLAS multiplies u8 activations by s8 weights on AVX2 CPUs without
# VNNI with vpmaddubsw, which adds two u8*s8 products into a saturating int16: 2*255*127 = 64770
# does not fit, so large products are clipped. "s8-7bit" keeps weights in [-63, 63]
# (2*255*63 = 32130 fits: ONNX Runtime's reduce_range); "u8" stores weights as uint8 around a zero
# point of 128, which MLAS multiplies in 16 bits (its U8U8 kernel), exact at full 8-bit precision.
# Full-range s8 is exact only where the CPU has VNNI (int32 accumulation). On the tiny model the
# cosine to fp32 is 0.987 with s8 on an AVX2 CPU and 0.9994 with s8-7bit or u8, so s8-7bit (same
# kernel and speed as s8, safe on every CPU) is the default.
WEIGHT_FORMATS = {"s8": (127, np.int8, 0), "s8-7bit": (63, np.int8, 0), "u8": (127, np.uint8, 128)}


def quantize_columns(w, fmt="s8"):
    """w: [K, N] float32 -> (quantized [K, N], scale float32 [N], zero point [N])."""
    qmax, dtype, zero = WEIGHT_FORMATS[fmt]
    amax = np.abs(w).max(axis=0)
    scale = np.where(amax > 0, amax / float(qmax), 1.0).astype(np.float32)
    q = np.clip(np.rint(w / scale), -qmax, qmax) + zero
    return q.astype(dtype), scale, np.full(w.shape[1], zero, dtype=dtype)


def quantize_blocks(w, bits, block):
    """w: [K, N] float32 -> MatMulNBits' B [N, K/block, block*bits/8] uint8 and scales [N, K/block].

    Symmetric per block: q = round(w / scale) + 2^(bits-1) with scale = max|w| / (2^(bits-1) - 1),
    and no zero_points input, so ONNX Runtime uses its default zero point 2^(bits-1). For 4 bits
    two values share a byte, the first in the low nibble.
    """
    k, n = w.shape
    if k % block:
        raise SystemExit(f"K={k} is not a multiple of --block {block}")
    zero, qmax = 1 << (bits - 1), (1 << (bits - 1)) - 1
    wb = np.ascontiguousarray(w.T).reshape(n, k // block, block)  # [N, blocks, block]
    amax = np.abs(wb).max(axis=2)
    scale = np.where(amax > 0, amax / float(qmax), 1.0).astype(np.float32)
    q = (np.clip(np.rint(wb / scale[:, :, None]), -qmax, qmax) + zero).astype(np.uint8)
    if bits == 4:
        q = (q[:, :, 0::2] | (q[:, :, 1::2] << 4)).astype(np.uint8)
    return q, scale


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--inline", action="store_true", help="keep the weights inside model.onnx")
    ap.add_argument("--weights", choices=sorted(WEIGHT_FORMATS), default="s8-7bit",
                    help="weight format (see WEIGHT_FORMATS): s8-7bit (default), s8 full range, or u8")
    ap.add_argument("--min-elements", type=int, default=0,
                    help="leave weights with fewer elements in fp32")
    ap.add_argument("--op", choices=["dqmm", "nbits"], default="dqmm",
                    help="dqmm: DynamicQuantizeMatMul (default); nbits: MatMulNBits (see above)")
    ap.add_argument("--bits", type=int, choices=[4, 8], default=8, help="MatMulNBits weight bits")
    ap.add_argument("--block", type=int, default=32, help="MatMulNBits block size (power of 2, >= 16)")
    ap.add_argument("--accuracy-level", type=int, default=4, choices=[0, 1, 4],
                    help="MatMulNBits accuracy_level: 4 int8 compute, 0/1 fp32 compute")
    args = ap.parse_args()

    model = onnx.load(args.src)  # loads external data too
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    uses = {}
    for n in g.node:
        for i in n.input:
            uses[i] = uses.get(i, 0) + 1

    new_nodes, new_inits, dropped, count = [], [], set(), 0
    for n in g.node:
        w_name = n.input[1] if len(n.input) > 1 else ""
        w = inits.get(w_name)
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        ok = (w is not None and len(w.dims) == 2 and w.data_type == onnx.TensorProto.FLOAT
              and int(np.prod(w.dims)) >= args.min_elements)
        if ok and n.op_type == "Gemm":
            ok = (attrs.get("transA", 0) == 0 and attrs.get("alpha", 1.0) == 1.0
                  and attrs.get("beta", 1.0) == 1.0)
        if not ok or n.op_type not in ("MatMul", "Gemm"):
            new_nodes.append(n)
            continue
        wf = numpy_helper.to_array(w).astype(np.float32)
        if n.op_type == "Gemm" and attrs.get("transB", 0):
            wf = wf.T
        base = f"{w_name}_int8q{count}"
        bias = n.input[2] if n.op_type == "Gemm" and len(n.input) > 2 and n.input[2] else ""
        if args.op == "nbits":
            q, scale = quantize_blocks(wf, args.bits, args.block)
            new_inits += [numpy_helper.from_array(q, base + "_quantized"),
                          numpy_helper.from_array(scale, base + "_scale")]
            ins = [n.input[0], base + "_quantized", base + "_scale"]
            if bias:
                ins += ["", "", bias]  # zero_points and g_idx absent
            new_nodes.append(helper.make_node(
                "MatMulNBits", ins, list(n.output), name=(n.name or base) + "_nbits", domain="com.microsoft",
                K=int(wf.shape[0]), N=int(wf.shape[1]), bits=args.bits, block_size=args.block,
                accuracy_level=args.accuracy_level))
        else:
            q, scale, zp = quantize_columns(np.ascontiguousarray(wf), args.weights)
            new_inits += [numpy_helper.from_array(q, base + "_quantized"),
                          numpy_helper.from_array(scale, base + "_scale"),
                          numpy_helper.from_array(zp, base + "_zero_point")]
            ins = [n.input[0], base + "_quantized", base + "_scale", base + "_zero_point"]
            if bias:
                ins.append(bias)  # bias [N]
            new_nodes.append(helper.make_node("DynamicQuantizeMatMul", ins, list(n.output),
                                              name=(n.name or base) + "_int8", domain="com.microsoft"))
        uses[w_name] -= 1
        if uses[w_name] == 0:
            dropped.add(w_name)
        count += 1

    del g.node[:]
    g.node.extend(new_nodes)
    keep = [t for t in g.initializer if t.name not in dropped]
    del g.initializer[:]
    g.initializer.extend(keep + new_inits)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))

    os.makedirs(os.path.dirname(os.path.abspath(args.dst)), mode=0o700, exist_ok=True)
    data = os.path.join(os.path.dirname(os.path.abspath(args.dst)), "model.onnx_data")
    for p in (args.dst, data):
        if os.path.exists(p):
            os.remove(p)
    if args.inline:
        for t in g.initializer:
            if t.data_location == onnx.TensorProto.EXTERNAL:
                raise SystemExit("internal error: external tensor left after load")
        onnx.save_model(model, args.dst)
    else:
        onnx.save_model(model, args.dst, save_as_external_data=True, all_tensors_to_one_file=True,
                        location="model.onnx_data", size_threshold=1024)
        os.chmod(data, 0o600)
    os.chmod(args.dst, 0o600)
    form = (f"MatMulNBits bits={args.bits} block={args.block} accuracy_level={args.accuracy_level}"
            if args.op == "nbits" else f"{args.weights}, DynamicQuantizeMatMul")
    print(f"{args.dst}: {count} MatMul/Gemm weights quantized ({form})")


if __name__ == "__main__":
    main()
