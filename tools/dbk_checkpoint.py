"""dbk_checkpoint.py — writes daybreak's checkpoint format (src/train/checkpoint.h, version 1)
from Python, for the tools that generate committed test fixtures (gen_reference.py,
gen_schedules.py). Python 3 standard library only."""
import json
import os
import struct


def write_checkpoint(path, model_name, meta, tensors):
    """tensors: (name, shape, data) with data the values' little-endian float32 bytes, in
    row-major order. Written to a temporary file renamed over path."""
    body = bytearray(b"DBKCKPT1")
    body += struct.pack("<II", 1, len(tensors))
    name = model_name.encode()
    body += struct.pack("<I", len(name)) + name
    meta_bytes = json.dumps(meta, sort_keys=True).encode()
    body += struct.pack("<I", len(meta_bytes)) + meta_bytes
    for tname, shape, data in tensors:
        count = 1
        for d in shape:
            count *= d
        assert len(data) == 4 * count, (tname, shape, len(data))
        encoded = tname.encode()
        body += struct.pack("<I", len(encoded)) + encoded
        body += struct.pack("<I", len(shape)) + struct.pack(f"<{len(shape)}q", *shape)
        body += struct.pack("<Q", count) + data
    h = 0xCBF29CE484222325
    for byte in body:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    body += struct.pack("<Q", h)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(body)
    os.replace(tmp, path)


def float_vector(name, values):
    """A 1-D tensor of Python floats, as write_checkpoint takes it."""
    return name, (len(values),), struct.pack(f"<{len(values)}f", *values)
