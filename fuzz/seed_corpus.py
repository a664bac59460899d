#!/usr/bin/env python3
"""Extracts fuzz seed inputs from conformance/ into fuzz/corpus/<target>/.

Every input the conformance vectors carry becomes a seed for the target that
reads that kind of input, so each fuzzer starts from valid tokens, codes,
consents, replies and frames and mutates from there. Seeds are named
seed-<sha1 prefix>; running again is idempotent.
Usage: fuzz/seed_corpus.py [CORPUS_DIR]   (default fuzz/corpus)
"""
import base64
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CONF = os.path.join(HERE, "..", "conformance")
CORPUS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus")
TARGETS = ["grant_token", "grant_caveats", "canonical", "lens_value", "lens_reply",
           "consent_code", "consent_review", "frame_reader", "json_fast_path"]


def load(name):
    with open(os.path.join(CONF, name), encoding="utf-8") as f:
        d = json.load(f)
    return d["cases"] if isinstance(d, dict) else d


def b64d(s):
    s = s.strip()
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def dumps(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode()


seeds = {t: set() for t in TARGETS}


def add(target, data):
    if isinstance(data, str):
        data = data.encode()
    seeds[target].add(data)


def frames(lines, maxes=(0, 64, 255), sizes=(b"\xff", b"\x01\x07", b"\x03\x00\x40")):
    body = b"".join(lines)
    for m in maxes:
        for s in sizes:
            cut = (s * 8)[:8]
            add("frame_reader", bytes([m, 0]) + cut + body)
    # the big-line flag, once
    add("frame_reader", bytes([0, 0x81]) + b"\xff" * 8 + body)


ndjson = []

# Grants: tokens, and their caveats as JSON.
for f in ["grants.json", "grants-narrowing.json"]:
    for c in load(f):
        tok = c["token"]
        add("grant_token", tok)
        try:
            blocks = json.loads(b64d(tok[4:]))
        except Exception:
            continue
        if isinstance(blocks, list) and blocks and all(isinstance(b, dict) for b in blocks):
            cav = [b.get("p", {}).get("caveats", []) for b in blocks]
            add("grant_caveats", dumps({"blocks": cav, "ctx": c.get("ctx")}))
            add("grant_caveats", dumps(cav[0]))
            for b in blocks:
                add("canonical", dumps(b))
        ndjson.append(dumps({"custody": 1, "id": c["name"][:20], "op": "grant",
                             "agent": c["proofKey"], "caveats": cav[0] if cav else []}) + b"\n")
# A few odd caveats on purpose (L10/L15).
for odd in [[{"risk": "toString"}], [{"risk": None}], [{"svc": {"a": 1}}],
            [{"per": {"max": 9007199254740993, "currency": "USD"}}],
            [{"exp": -9007199254740991}, {"nbf": 9007199254740991}], [None, [], {}],
            [{"can": ["shop.*"]}, {"only": ""}], [{"__proto__": ["x"]}]]:
    add("grant_caveats", dumps(odd))

# Canonical JSON and hashes.
for c in load("canonical.json"):
    add("canonical", dumps(c["input"]))
    add("canonical", c["canonical"])
for c in load("hash.json"):
    add("canonical", dumps(c["proposal"]))

# Lens.
for c in load("lens.json") + load("lens-key-order.json") + load("lens-verbatim.json"):
    target = "lens_value" if c.get("type") == "value" else "lens_reply"
    add(target, dumps(c["input"]))
    add("canonical", dumps(c["input"]))
    add("json_fast_path", dumps(c["input"]))
    if target == "lens_reply" and isinstance(c["input"], dict):
        ndjson.append(dumps(c["input"]) + b"\n")
for c in load("fit.json"):
    add("lens_reply", bytes([min(int(c["budget"]) // 4, 255)]) + dumps(c["input"]))
for c in load("estimate.json"):
    add("lens_value", dumps(c["text"]))

# Consent codes.
for c in load("codes.json"):
    code = c["code"]
    add("consent_code", code)
    try:
        body = json.loads(b64d(code.strip()[4:]))
    except Exception:
        continue
    if isinstance(body, dict):
        detail = body.pop("detail", None)
        if isinstance(detail, dict):
            add("consent_review", dumps({"consent": body, "proposal": detail,
                                         "service": body.get("service"), "now": 1790000000}))
        ndjson.append(dumps({"custody": 1, "id": "c", "op": "approve_code", "code": code,
                             "agent": "ed25519:gTl3Dqh9F19Wo1Rmw0x-zMuNipG07jeiXfYPW4_Js5Q"}) + b"\n")

# Consents.
for c in load("consent.json"):
    seed = {k: c[k] for k in ("consent", "proposal", "service", "now")}
    add("consent_review", dumps(seed))
    add("lens_value", dumps(c["proposal"]))
    ndjson.append(dumps({"custody": 1, "id": "k", "op": "consent", "consent": c["consent"],
                         "proposal": c["proposal"], "service": c["service"],
                         "agent": "ed25519:gTl3Dqh9F19Wo1Rmw0x-zMuNipG07jeiXfYPW4_Js5Q"}) + b"\n")

# Frames: the custody protocol and reply frames, plus hostile lines.
hostile = [b'{"a":1,"a":2}\n', b"\xff\xfe{}\n", b"[" * 70 + b"]" * 70 + b"\n", b"   \r\n",
           b'{"custody":1,"id":"h","op":"hello"}\n', b'{"x":"' + b"y" * 300 + b'"}\n',
           b'{"partial":']
frames([l for l in ndjson[:6]] + hostile)
for line in ndjson:
    frames([line, hostile[0], hostile[-1]], maxes=(0, 200), sizes=(b"\xff",))

for t, items in seeds.items():
    d = os.path.join(CORPUS, t)
    os.makedirs(d, exist_ok=True)
    for data in items:
        name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
print(" ".join(f"{t}:{len(v)}" for t, v in seeds.items()), file=sys.stderr)
