#!/usr/bin/python3
"""An independent check of sfubot's recording proof (docs/proof.md), in Python with the
`cryptography` package (Debian: python3-cryptography): canonicalizes manifest.json per RFC 8785
(JCS) without proof.signature and verifies the signature with the public key it names; then
every checkpoint line of proof.jsonl (its signature, number and previous hash, and that all
name one recording), and that a chain whose last checkpoint is `final` has its signed manifest.
Prints the fingerprint and exits 0 only if all of that holds (it does not hash the media, nor
tell finished from unfinished as `sfubot verify` does). Usage: verify-proof.py DIR
"""
import base64, hashlib, json, math, sys
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519


def number(x):
    """ECMAScript Number::toString from Python's shortest round-trip repr."""
    if x == 0:
        return "0"
    if x < 0:
        return "-" + number(-x)
    mantissa, _, exp = repr(x).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac)
    n = len(whole) + (int(exp) if exp else 0)
    stripped = digits.lstrip("0")
    n -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    head = digits if k == 1 else digits[0] + "." + digits[1:]
    return head + "e" + ("-" if e < 0 else "+") + str(abs(e))


def canonical(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        if not math.isfinite(v):
            raise ValueError("non-finite number")
        return number(float(v))
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ",".join(canonical(i) for i in v) + "]"
    keys = sorted(v, key=lambda k: k.encode("utf-16-be"))
    return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + canonical(v[k]) for k in keys) + "}"


def no_duplicates(pairs):
    d = {}
    for k, val in pairs:
        if k in d:
            raise ValueError("member %r given twice" % k)
        d[k] = val
    return d


def load(text):
    return json.loads(text, object_pairs_hook=no_duplicates, parse_int=float)


def verify(der_b64, signature_b64, data):
    key = serialization.load_der_public_key(base64.b64decode(der_b64))
    sig = base64.b64decode(signature_b64)
    if isinstance(key, ed25519.Ed25519PublicKey):
        key.verify(sig, data)
    elif isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1":
        key.verify(sig, data, ec.ECDSA(hashes.SHA256()))
    else:
        raise ValueError("not a P-256 or Ed25519 key")
    return hashlib.sha256(base64.b64decode(der_b64)).hexdigest()


def main(folder):
    problems = []
    signed = False
    try:
        with open(folder + "/manifest.json", encoding="utf-8") as f:
            manifest = load(f.read())
        if "proof" not in manifest:
            # A recorder that was killed leaves an unsigned manifest: the checkpoints are the proof.
            if manifest.get("ended") is not None:
                problems.append("manifest: finished but not signed")
            raise FileNotFoundError
        proof = manifest["proof"]
        signature = proof.pop("signature")
        fp = verify(proof["public_key"], signature, canonical(manifest).encode("utf-8"))
        if fp != proof["fingerprint"]:
            problems.append("manifest: fingerprint differs")
        print("manifest signed by", fp)
        signed = True
    except FileNotFoundError:
        pass
    except (InvalidSignature, KeyError, ValueError) as e:
        problems.append("manifest: %r" % e)
    previous = None
    try:
        with open(folder + "/proof.jsonl", "rb") as f:
            lines = f.read().split(b"\n")
    except FileNotFoundError:
        lines = [b""]
    recordings, last = set(), None
    for n, line in enumerate(lines[:-1], 1):
        try:
            cp = load(line.decode("utf-8"))
            recordings.add(canonical(cp.get("recording")))
            last = cp
            signature = cp.pop("signature")
            verify(cp["public_key"], signature, canonical(cp).encode("utf-8"))
            if cp["checkpoint"] != n or cp["previous"] != previous:
                problems.append("checkpoint %d: number or previous hash" % n)
        except (InvalidSignature, KeyError, ValueError) as e:
            problems.append("checkpoint %d: %r" % (n, e))
        previous = hashlib.sha256(line).hexdigest()
    if len(recordings) > 1:
        problems.append("the checkpoints name %d recordings" % len(recordings))
    if last is not None and last.get("final") is True and not signed:
        problems.append("the last checkpoint is final, but no signed manifest holds")
    print("checkpoints:", len(lines) - 1)
    for p in problems:
        print("problem:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
