#!/usr/bin/env python3
"""Writes a small random-weight llama-architecture GGUF model for the real-server lane.

llama.cpp's llama-server needs a real GGUF file and none ships as a Debian package
(tests/real/README.md), so this script builds one with the gguf-py package from the llama.cpp source tree and numpy:
the tokenizer (llama SentencePiece, 32,000 tokens) is copied from a vocabulary file in the
source's models/ folder; the weights are seeded Gaussian noise scaled 1/sqrt(fan_in) so
activations stay finite. Random weights still do the full prefill/decode arithmetic, so the
server's timing behaviour (batching, queueing, per-token cost) is real.

Output rows of every non-NORMAL token (byte-fallback <0x..>, control, unknown) are zero: their
logits are then exactly 0 while the maximum over ~31,700 Gaussian logits is far above 0, so
greedy (temperature 0) or top-k decoding only ever emits whole-text pieces. That keeps "one
generated token = one streamed text chunk": llama.cpp holds back incomplete UTF-8 from byte
tokens, which would make token events and usage.completion_tokens differ for reasons that say
nothing about the measurement.

Usage: make_model.py --llama-src DIR --out FILE.gguf [--embd 256 --layers 4 ...]
"""
import argparse
import os
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-src", required=True, help="llama.cpp source tree (gguf-py, models/)")
    ap.add_argument("--out", required=True, help="GGUF file to write")
    ap.add_argument("--vocab", default="ggml-vocab-llama-spm.gguf", help="file in models/")
    ap.add_argument("--embd", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ff", type=int, default=768)
    ap.add_argument("--context", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    if args.embd % args.heads != 0:
        print("--embd: must be a multiple of --heads", file=sys.stderr)
        return 2

    sys.path.insert(0, os.path.join(args.llama_src, "gguf-py"))
    try:
        import numpy as np
        import gguf
    except ImportError as e:  # numpy comes from Debian's python3-numpy
        print(f"make_model.py: {e} (apt-get install python3-numpy)", file=sys.stderr)
        return 2

    vocab_path = os.path.join(args.llama_src, "models", args.vocab)
    reader = gguf.GGUFReader(vocab_path)
    token_types = reader.fields["tokenizer.ggml.token_type"].contents()
    n_vocab = len(token_types)

    tmp = args.out + ".tmp"
    w = gguf.GGUFWriter(tmp, "llama")
    w.add_name(f"llmcap-random-llama-{args.embd}x{args.layers}")
    w.add_context_length(args.context)
    w.add_embedding_length(args.embd)
    w.add_block_count(args.layers)
    w.add_feed_forward_length(args.ff)
    w.add_head_count(args.heads)
    w.add_head_count_kv(args.heads)
    w.add_rope_dimension_count(args.embd // args.heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(n_vocab)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    for key, field in reader.fields.items():
        if not key.startswith("tokenizer."):
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(key, field.contents(), vtype, sub_type=sub)

    rng = np.random.default_rng(args.seed)

    def mat(rows: int, cols: int) -> "np.ndarray":
        # numpy (rows=out, cols=in) is ggml ne = {in, out}: what llama.cpp expects.
        return (rng.standard_normal((rows, cols), dtype=np.float32) / np.sqrt(cols)).astype(
            np.float32)

    ones = lambda n: np.ones(n, dtype=np.float32)  # noqa: E731  RMS-norm gains
    e, f = args.embd, args.ff
    w.add_tensor("token_embd.weight", rng.standard_normal((n_vocab, e), dtype=np.float32))
    w.add_tensor("output_norm.weight", ones(e))
    out = mat(n_vocab, e)
    normal = np.asarray(token_types) == int(gguf.TokenType.NORMAL)
    out[~normal, :] = 0.0  # see the module docstring
    w.add_tensor("output.weight", out)
    for i in range(args.layers):
        w.add_tensor(f"blk.{i}.attn_norm.weight", ones(e))
        w.add_tensor(f"blk.{i}.attn_q.weight", mat(e, e))
        w.add_tensor(f"blk.{i}.attn_k.weight", mat(e, e))
        w.add_tensor(f"blk.{i}.attn_v.weight", mat(e, e))
        w.add_tensor(f"blk.{i}.attn_output.weight", mat(e, e))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", ones(e))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", mat(f, e))
        w.add_tensor(f"blk.{i}.ffn_up.weight", mat(f, e))
        w.add_tensor(f"blk.{i}.ffn_down.weight", mat(e, f))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(tmp, args.out)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
