// SFrame (RFC 9605) in JavaScript with WebCrypto, written from the RFC and independent of sfubot's
// Swift code. A frame is header ‖ AEAD(sframe_key, nonce, aad = header ‖ metadata, frame): the
// whole encoded frame is sealed, metadata empty for media (§4.4.3). Suites: the AES-GCM ones
// (AES_128_GCM_SHA256_128 = 4, AES_256_GCM_SHA512_128 = 5) and AES-CTR + HMAC (§4.5.1: 1, 2, 3).
// KID and CTR are BigInt (they reach 2^64 − 1).
'use strict';

const SFrame = {
  SUITES: {
    1: { name: 'AES_128_CTR_HMAC_SHA256_80', hash: 'SHA-256', nh: 32, nka: 16, nk: 48, nn: 12, nt: 10 },
    2: { name: 'AES_128_CTR_HMAC_SHA256_64', hash: 'SHA-256', nh: 32, nka: 16, nk: 48, nn: 12, nt: 8 },
    3: { name: 'AES_128_CTR_HMAC_SHA256_32', hash: 'SHA-256', nh: 32, nka: 16, nk: 48, nn: 12, nt: 4 },
    4: { name: 'AES_128_GCM_SHA256_128', hash: 'SHA-256', nh: 32, nk: 16, nn: 12, nt: 16, gcm: true },
    5: { name: 'AES_256_GCM_SHA512_128', hash: 'SHA-512', nh: 64, nk: 32, nn: 12, nt: 16, gcm: true },
  },

  // A value as big-endian bytes: `length` bytes, or the fewest (at least one) when omitted.
  bigEndian(value, length) {
    const out = [];
    let v = BigInt(value);
    do { out.unshift(Number(v & 0xffn)); v >>= 8n; } while (length === undefined ? v > 0n : out.length < length);
    return Uint8Array.from(out);
  },
  concat(parts) {
    const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
    let o = 0;
    for (const p of parts) { out.set(p, o); o += p.length; }
    return out;
  },
  readBigEndian(bytes) { return bytes.reduce((v, b) => (v << 8n) | BigInt(b), 0n); },

  // §4.3: config byte X|KKK|Y|CCC, then the KID and the CTR when they do not fit in 3 bits.
  encodeHeader(kid, ctr) {
    kid = BigInt(kid); ctr = BigInt(ctr);
    const k = kid < 8n ? null : SFrame.bigEndian(kid), c = ctr < 8n ? null : SFrame.bigEndian(ctr);
    const config = (k ? 0x80 | ((k.length - 1) << 4) : Number(kid) << 4) | (c ? 0x08 | (c.length - 1) : Number(ctr));
    return Uint8Array.from([config, ...(k || []), ...(c || [])]);
  },
  // Returns {kid, ctr, length} (the header's length in bytes); throws on a short frame.
  parseHeader(bytes) {
    if (bytes.length < 1) throw new Error('too_short');
    const config = bytes[0];
    let at = 1;
    const field = (extended, bits) => {
      if (!extended) return BigInt(bits);
      const n = bits + 1;
      if (bytes.length < at + n) throw new Error('too_short');
      const v = SFrame.readBigEndian(bytes.subarray(at, at + n));
      at += n;
      return v;
    };
    const kid = field(config & 0x80, (config >> 4) & 0x07);
    const ctr = field(config & 0x08, config & 0x07);
    return { kid, ctr, length: at };
  },

  async hmac(hash, key, data) {
    const k = await crypto.subtle.importKey('raw', key, { name: 'HMAC', hash }, false, ['sign']);
    return new Uint8Array(await crypto.subtle.sign('HMAC', k, data));
  },
  // RFC 5869. An empty salt is HashLen zeros (HMAC pads its key with zeros: the same key).
  async hkdfExtract(suite, salt, ikm) {
    return SFrame.hmac(suite.hash, salt.length ? salt : new Uint8Array(suite.nh), ikm);
  },
  async hkdfExpand(suite, prk, info, length) {
    const blocks = [];
    let t = new Uint8Array(0);
    for (let i = 1; blocks.reduce((s, b) => s + b.length, 0) < length; i++) {
      t = await SFrame.hmac(suite.hash, prk, SFrame.concat([t, info, Uint8Array.of(i)]));
      blocks.push(t);
    }
    return SFrame.concat(blocks).slice(0, length);
  },

  // §4.4.2 derive_key_salt; returns the intermediate values too (the RFC's vectors list them).
  async deriveKeySalt(suiteId, kid, baseKey) {
    const suite = SFrame.SUITES[suiteId];
    if (!suite) throw new Error('unknown suite ' + suiteId);
    const tail = SFrame.concat([SFrame.bigEndian(kid, 8), SFrame.bigEndian(suiteId, 2)]);
    const secret = await SFrame.hkdfExtract(suite, new Uint8Array(0), baseKey);
    const keyLabel = SFrame.concat([new TextEncoder().encode('SFrame 1.0 Secret key '), tail]);
    const saltLabel = SFrame.concat([new TextEncoder().encode('SFrame 1.0 Secret salt '), tail]);
    const key = await SFrame.hkdfExpand(suite, secret, keyLabel, suite.nk);
    const salt = await SFrame.hkdfExpand(suite, secret, saltLabel, suite.nn);
    return { suite, secret, keyLabel, saltLabel, key, salt };
  },

  // A KID's context: its suite, key and salt, and the WebCrypto keys the AEAD needs.
  async context(suiteId, kid, baseKey) {
    const d = await SFrame.deriveKeySalt(suiteId, kid, baseKey);
    return SFrame.contextFromKeySalt(suiteId, kid, d.key, d.salt);
  },
  async contextFromKeySalt(suiteId, kid, key, salt) {
    const suite = SFrame.SUITES[suiteId];
    const ctx = { suite, suiteId, kid: BigInt(kid), key, salt };
    if (suite.gcm) {
      ctx.aesKey = await crypto.subtle.importKey('raw', key, { name: 'AES-GCM' }, false, ['encrypt', 'decrypt']);
    } else {
      ctx.aesKey = await crypto.subtle.importKey('raw', key.subarray(0, suite.nka), { name: 'AES-CTR' }, false, ['encrypt', 'decrypt']);
      ctx.authKey = await crypto.subtle.importKey('raw', key.subarray(suite.nka), { name: 'HMAC', hash: suite.hash }, false, ['sign']);
    }
    return ctx;
  },

  nonce(salt, ctr) {
    const c = SFrame.bigEndian(ctr, salt.length);
    return salt.map((b, i) => b ^ c[i]);
  },

  // §4.5.1 compute_tag: HMAC over the lengths, nonce, aad and ciphertext, truncated to Nt.
  async ctrTag(ctx, nonce, aad, ct) {
    const s = ctx.suite;
    const data = SFrame.concat([SFrame.bigEndian(aad.length, 8), SFrame.bigEndian(ct.length, 8), SFrame.bigEndian(s.nt, 8), nonce, aad, ct]);
    return new Uint8Array(await crypto.subtle.sign('HMAC', ctx.authKey, data)).slice(0, s.nt);
  },
  async aeadSeal(ctx, nonce, aad, pt) {
    if (ctx.suite.gcm) return new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv: nonce, additionalData: aad, tagLength: 128 }, ctx.aesKey, pt));
    const counter = SFrame.concat([nonce, new Uint8Array(4)]);
    const ct = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-CTR', counter, length: 32 }, ctx.aesKey, pt));
    return SFrame.concat([ct, await SFrame.ctrTag(ctx, nonce, aad, ct)]);
  },
  async aeadOpen(ctx, nonce, aad, ct) {
    if (ctx.suite.gcm) {
      return new Uint8Array(await crypto.subtle.decrypt({ name: 'AES-GCM', iv: nonce, additionalData: aad, tagLength: 128 }, ctx.aesKey, ct)
        .catch(() => { throw new Error('decrypt'); }));
    }
    const nt = ctx.suite.nt;
    if (ct.length < nt) throw new Error('too_short');
    const inner = ct.subarray(0, ct.length - nt), tag = ct.subarray(ct.length - nt);
    const want = await SFrame.ctrTag(ctx, nonce, aad, inner);
    if (want.reduce((d, b, i) => d | (b ^ tag[i]), 0) !== 0) throw new Error('decrypt');
    const counter = SFrame.concat([nonce, new Uint8Array(4)]);
    return new Uint8Array(await crypto.subtle.decrypt({ name: 'AES-CTR', counter, length: 32 }, ctx.aesKey, inner));
  },

  // §4.4.3 encrypt(CTR, KID, metadata, plaintext).
  async encrypt(ctx, ctr, metadata, pt) {
    const header = SFrame.encodeHeader(ctx.kid, ctr);
    const aad = SFrame.concat([header, metadata]);
    return SFrame.concat([header, await SFrame.aeadSeal(ctx, SFrame.nonce(ctx.salt, ctr), aad, pt)]);
  },
  // §4.4.4 decrypt(metadata, sframe_ciphertext); `contextFor(kid)` gives the KID's context or null.
  async decrypt(contextFor, metadata, frame) {
    const h = SFrame.parseHeader(frame);
    const ctx = await contextFor(h.kid);
    if (!ctx) throw new Error('missing_key');
    const header = frame.subarray(0, h.length);
    const aad = SFrame.concat([header, metadata]);
    const data = await SFrame.aeadOpen(ctx, SFrame.nonce(ctx.salt, h.ctr), aad, frame.subarray(h.length));
    return { data, kid: h.kid, ctr: h.ctr };
  },
};

// One sender: a KID's context and its next CTR (initially 0, +1 per frame, §4.4.1).
class SFrameSender {
  constructor(ctx) { this.ctx = ctx; this.ctr = 0n; }
  async seal(frame) {
    const out = await SFrame.encrypt(this.ctx, this.ctr, new Uint8Array(0), frame);
    this.ctr += 1n;
    return out;
  }
}
if (typeof self !== 'undefined') Object.assign(self, { SFrame, SFrameSender });
