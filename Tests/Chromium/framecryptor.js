// libwebrtc's FrameCryptor frame format (webrtc-sdk/webrtc api/crypto/frame_crypto_transformer.cc,
// as PQSRTC, LiveKit and flutter-webrtc use it) in JavaScript with WebCrypto, written from that
// source and independent of sfubot's Swift code:
//   frame  = clear header ‖ AES-GCM(ciphertext ‖ tag 16) ‖ IV 12 ‖ 0x0C ‖ key index
//   audio: 1 clear byte (the Opus TOC); H.264 (Annex-B): everything up to the first slice NAL
//   (type 1 or 5) header plus the byte after it; the AAD is the clear header. For H.264 everything
//   after the header is RBSP-escaped (00 00 x≤3 → 00 00 03 x), and the receiver reads the IV and
//   trailer from the escaped bytes before unescaping the rest.
//   key = PBKDF2-SHA256(material, salt, 100 000, 128 bits); ratchet: material' = the same, 256 bits.
//   IV = SSRC ‖ RTP timestamp ‖ (timestamp − send count mod 0xFFFF), big-endian.
'use strict';

const FrameCryptor = {
  IV_LENGTH: 12,
  ITERATIONS: 100000,

  fromHex(hex) {
    if (!/^([0-9a-fA-F]{2})*$/.test(hex)) throw new Error('not hex: ' + hex.length + ' characters');
    const out = new Uint8Array(hex.length / 2);
    for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.substr(2 * i, 2), 16);
    return out;
  },
  toHex(bytes) { return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(''); },
  concat(parts) {
    const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
    let o = 0;
    for (const p of parts) { out.set(p, o); o += p.length; }
    return out;
  },

  // The ratchet salt as sfubot's --ratchet-salt takes it: "hex:…" or text (its UTF-8 bytes).
  parseSalt(text) {
    return text.startsWith('hex:') ? FrameCryptor.fromHex(text.slice(4)) : new TextEncoder().encode(text);
  },

  async pbkdf2(material, salt, bits) {
    const base = await crypto.subtle.importKey('raw', material, 'PBKDF2', false, ['deriveBits']);
    const out = await crypto.subtle.deriveBits({ name: 'PBKDF2', hash: 'SHA-256', salt, iterations: FrameCryptor.ITERATIONS }, base, bits);
    return new Uint8Array(out);
  },
  // The AES-128-GCM key of one key material (DeriveKeys(material, salt, 128)).
  async deriveKeyBytes(material, salt) { return FrameCryptor.pbkdf2(material, salt, 128); },
  async deriveKey(material, salt) {
    const raw = await FrameCryptor.deriveKeyBytes(material, salt);
    return crypto.subtle.importKey('raw', raw, { name: 'AES-GCM' }, false, ['encrypt', 'decrypt']);
  },
  // RatchetKeyMaterial: the next material is 32 bytes of PBKDF2 of the current one.
  async ratchet(material, salt) { return FrameCryptor.pbkdf2(material, salt, 256); },

  // H264::WriteRbsp: an emulation byte before any byte ≤ 3 that follows two zeros.
  escape(bytes) {
    const out = [];
    let zeros = 0;
    for (const b of bytes) {
      if (b <= 3 && zeros >= 2) { out.push(3); zeros = 0; }
      out.push(b);
      zeros = b === 0 ? zeros + 1 : 0;
    }
    return Uint8Array.from(out);
  },
  // H264::ParseRbsp: drops the 03 of every 00 00 03.
  unescape(bytes) {
    const out = [];
    for (let i = 0; i < bytes.length;) {
      if (bytes.length - i >= 3 && bytes[i] === 0 && bytes[i + 1] === 0 && bytes[i + 2] === 3) {
        out.push(0, 0); i += 3;
      } else {
        out.push(bytes[i++]);
      }
    }
    return Uint8Array.from(out);
  },

  // Offsets of the NAL headers after each 00 00 01 (H264::FindNaluIndices' payload_start_offset).
  nalStarts(data) {
    const starts = [];
    for (let i = 0; i + 3 < data.length;) {
      if (data[i] === 0 && data[i + 1] === 0 && data[i + 2] === 1) { starts.push(i + 3); i += 3; } else i++;
    }
    return starts;
  },
  // get_unencrypted_bytes: audio 1; H.264 the first slice's offset + 2, or 0 without a slice.
  clearLength(kind, data) {
    if (kind === 'audio') return 1;
    for (const s of FrameCryptor.nalStarts(data)) {
      const type = data[s] & 0x1f;
      if (type === 1 || type === 5) return s + 2;
    }
    return 0;
  },

  makeIv(ssrc, timestamp, sendCount) {
    const iv = new Uint8Array(12);
    const v = new DataView(iv.buffer);
    v.setUint32(0, ssrc >>> 0);
    v.setUint32(4, timestamp >>> 0);
    v.setUint32(8, (timestamp - (sendCount % 0xffff)) >>> 0);
    return iv;
  },

  // Seals one frame with the given IV, as encryptFrame does. `kind` is 'audio' or 'video' (H.264).
  async sealWithIv(key, kind, data, iv, keyIndex) {
    const n = Math.min(FrameCryptor.clearLength(kind, data), data.length);
    const header = data.subarray(0, n);
    const ct = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: header, tagLength: 128 }, key, data.subarray(n)));
    const body = FrameCryptor.concat([ct, iv, Uint8Array.of(FrameCryptor.IV_LENGTH, keyIndex)]);
    return FrameCryptor.concat([header, kind === 'video' ? FrameCryptor.escape(body) : body]);
  },

  // Whether the receiver reads `iv` back: escaping left the last 14 bytes alone.
  ivSurvives(sealed, iv, keyIndex) {
    const t = sealed.subarray(sealed.length - 14);
    return t.subarray(0, 12).every((b, i) => b === iv[i]) && t[12] === FrameCryptor.IV_LENGTH && t[13] === keyIndex;
  },

  // Parses and opens one frame with the key `keyFor(index)` gives (null: no key at that index).
  // Returns {data, keyIndex, iv}; throws Error with a reason (too_short, iv_length, missing_key,
  // decrypt) as libwebrtc's decryptFrame drops the frame.
  async open(keyFor, kind, data) {
    if (data.length < 1 + 16 + 14) throw new Error('too_short');
    const n = FrameCryptor.clearLength(kind, data);
    const ivLength = data[data.length - 2], keyIndex = data[data.length - 1];
    if (ivLength !== FrameCryptor.IV_LENGTH) throw new Error('iv_length');
    const key = await keyFor(keyIndex);
    if (!key) throw new Error('missing_key');
    const iv = data.slice(data.length - 14, data.length - 2);
    let body = data.subarray(n);
    if (kind === 'video') body = FrameCryptor.unescape(body);
    if (body.length < 16 + 14) throw new Error('too_short');
    const header = data.subarray(0, n);
    const plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv, additionalData: header, tagLength: 128 }, key, body.subarray(0, body.length - 14))
      .catch(() => { throw new Error('decrypt'); });
    return { data: FrameCryptor.concat([header, new Uint8Array(plain)]), keyIndex, iv };
  },

  // Whether a frame ends in the "uncrypted magic bytes": libwebrtc passes such a frame on, without them.
  stripMagic(data, magic) {
    if (!magic || magic.length === 0 || data.length < magic.length) return null;
    const tail = data.subarray(data.length - magic.length);
    return tail.every((b, i) => b === magic[i]) ? data.slice(0, data.length - magic.length) : null;  // a copy: callers take .buffer
  },
};

// One sender's state: the key at its index and a send count per SSRC (makeIv). libwebrtc's
// count starts at 0 (its random first value is never used). Where escaping would change the IV in
// the last 14 bytes (the receiver would read a wrong IV: libwebrtc sends such a frame anyway and it
// never opens), the IV is re-chosen: random bytes without a zero, which escaping cannot touch. The
// SSRC and timestamp words decide that case, so moving the count on would rarely help.
class FrameCryptorSender {
  constructor(key, keyIndex) { this.key = key; this.keyIndex = keyIndex; this.counts = new Map(); this.rechosen = 0; }

  async seal(kind, data, ssrc, timestamp) {
    const count = this.counts.get(ssrc) || 0;
    this.counts.set(ssrc, count + 1);
    let iv = FrameCryptor.makeIv(ssrc, timestamp, count);
    for (let attempt = 0; attempt < 4; attempt++) {
      const sealed = await FrameCryptor.sealWithIv(this.key, kind, data, iv, this.keyIndex);
      if (kind !== 'video' || FrameCryptor.ivSurvives(sealed, iv, this.keyIndex)) return sealed;
      this.rechosen++;
      iv = crypto.getRandomValues(new Uint8Array(12)).map((b) => b || 1);
    }
    throw new Error('seal_failed');
  }
}

// A receiver's keys for one participant, by index, with libwebrtc's ratchet on failure: up to
// `window` ratchets of the material at the frame's index; the one that opens replaces it.
class FrameCryptorKeyRing {
  constructor(salt, window = 0) { this.salt = salt; this.window = window; this.sets = new Map(); this.ratcheted = 0; }

  async setKey(index, material) {
    this.sets.set(index, { material, key: await FrameCryptor.deriveKey(material, this.salt) });
  }

  async open(kind, data, magic) {
    const clear = FrameCryptor.stripMagic(data, magic);
    if (clear) return { data: clear, keyIndex: null, unencrypted: true };
    try {
      return await FrameCryptor.open(async (i) => (this.sets.get(i) || {}).key, kind, data);
    } catch (e) {
      if (e.message !== 'decrypt' || this.window === 0) throw e;
      const index = data[data.length - 1];
      let material = this.sets.get(index).material;
      for (let r = 0; r < this.window; r++) {
        material = await FrameCryptor.ratchet(material, this.salt);
        const key = await FrameCryptor.deriveKey(material, this.salt);
        try {
          const opened = await FrameCryptor.open(async () => key, kind, data);
          this.sets.set(index, { material, key });
          this.ratcheted++;
          return opened;
        } catch (e2) { /* the next ratchet step */ }
      }
      throw e;
    }
  }
}
if (typeof self !== 'undefined') Object.assign(self, { FrameCryptor, FrameCryptorSender, FrameCryptorKeyRing });
