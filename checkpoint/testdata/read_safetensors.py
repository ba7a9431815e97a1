# Independent safetensors reader: standard library only (json, struct).
# Prints {"metadata": ..., "tensors": {name: {"dtype", "shape", "data"}}}
# as JSON, with floats printed by repr (round-trip exact).
import json
import struct
import sys

with open(sys.argv[1], "rb") as f:
    raw = f.read()
(n,) = struct.unpack("<Q", raw[:8])
header = json.loads(raw[8:8 + n].decode("utf-8"))
data = raw[8 + n:]
meta = header.pop("__metadata__", {})
out = {}
for name, info in header.items():
    begin, end = info["data_offsets"]
    fmt = {"F32": "f", "F64": "d"}[info["dtype"]]
    size = struct.calcsize(fmt)
    count = (end - begin) // size
    values = struct.unpack("<%d%s" % (count, fmt), data[begin:end])
    out[name] = {"dtype": info["dtype"], "shape": info["shape"], "data": [repr(v) for v in values]}
json.dump({"metadata": meta, "tensors": out}, sys.stdout)
