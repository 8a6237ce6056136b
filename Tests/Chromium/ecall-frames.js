// ECall frame format in JavaScript (WebCrypto AES-256-GCM), written from docs/ecall-wire.md
// and independent of the Swift code: shared by the subscriber page and the test-vector page.
//   audio: 0xFF ‖ nonce(12) ‖ ciphertext ‖ tag(16)                       (ECALL-WIRE §2)
//   video: per slice NAL (types 1, 5) in Annex-B: header(1) ‖ next byte ‖ nonce(12) ‖ ct ‖ tag(16);
//          every other NAL (SPS, PPS, SEI, AUD) passes in the clear             (ECALL-WIRE §3)
'use strict';

const ECall = {
  async importKey(hex) {
    if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new Error('a call key is 64 hex characters');
    return crypto.subtle.importKey('raw', ECall.fromHex(hex), { name: 'AES-GCM' }, false, ['decrypt', 'encrypt']);
  },

  fromHex(hex) {
    const out = new Uint8Array(hex.length / 2);
    for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.substr(2 * i, 2), 16);
    return out;
  },

  toHex(bytes) {
    return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  },

  // Opens one audio frame; throws on a missing marker, a short frame or a key that does not open it.
  async openAudio(key, frame) {
    if (frame.length < 29) throw new Error('too_short');
    if (frame[0] !== 0xff) throw new Error('no_marker');
    const plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: frame.subarray(1, 13) }, key, frame.subarray(13));
    return new Uint8Array(plain);
  },

  // Seals one audio frame with the given 12-byte nonce (test vectors: compare bytes with Swift).
  async sealAudio(key, plain, nonce) {
    const ct = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv: nonce }, key, plain));
    const out = new Uint8Array(1 + 12 + ct.length);
    out[0] = 0xff; out.set(nonce, 1); out.set(ct, 13);
    return out;
  },

  // Seals one slice NAL (header and next byte clear) with the given nonce.
  async sealSlice(key, nal, nonce) {
    const ct = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv: nonce }, key, nal.subarray(2)));
    const out = new Uint8Array(2 + 12 + ct.length);
    out.set(nal.subarray(0, 2)); out.set(nonce, 2); out.set(ct, 14);
    return out;
  },

  // Seals one audio frame with a fresh random nonce (ECALL-WIRE §2).
  async sealAudioRandom(key, plain) {
    return ECall.sealAudio(key, plain, crypto.getRandomValues(new Uint8Array(12)));
  },

  // Whether sealed slice bytes (from the clear second byte on) would break Annex-B framing:
  // a 00 00 00 or 00 00 01 inside, or a trailing 00 (taken as part of the next start code).
  breaksAnnexB(b) {
    for (let i = 0; i + 2 < b.length; i++) if (b[i] === 0 && b[i + 1] === 0 && b[i + 2] <= 1) return true;
    return b.length > 0 && b[b.length - 1] === 0;
  },

  // Seals every slice of an Annex-B access unit as a phone does, re-sealing with a fresh nonce
  // until no start code forms (ECALL-WIRE §3). SPS, PPS, SEI, AUD stay clear.
  async sealVideo(key, data) {
    const units = ECall.nalUnits(data);
    if (units.length === 0) throw new Error('no_start_code');
    const parts = [];
    let cursor = 0;
    for (const u of units) {
      const type = data[u.start] & 0x1f;
      parts.push(data.subarray(cursor, u.start));
      const nal = data.subarray(u.start, u.end);
      if ((type === 1 || type === 5) && nal.length >= 2) {
        let sealed = null;
        for (let t = 0; t < 16 && sealed === null; t++) {
          const s = await ECall.sealSlice(key, nal, crypto.getRandomValues(new Uint8Array(12)));
          if (!ECall.breaksAnnexB(s.subarray(1))) sealed = s;
        }
        if (sealed === null) throw new Error('seal_failed');
        parts.push(sealed);
      } else {
        parts.push(nal);
      }
      cursor = u.end;
    }
    parts.push(data.subarray(cursor));
    const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
    let o = 0;
    for (const p of parts) { out.set(p, o); o += p.length; }
    return out;
  },

  // NAL units of an Annex-B access unit: [{prefixStart, start, end}], `start` at the NAL header.
  // A zero right before `00 00 01` belongs to the 4-byte start code, not to the previous NAL.
  nalUnits(data) {
    const units = [];
    let i = 0;
    const n = data.length;
    const codes = [];
    while (i + 2 < n) {
      if (data[i] === 0 && data[i + 1] === 0 && data[i + 2] === 1) {
        const prefixStart = i > 0 && data[i - 1] === 0 ? i - 1 : i;
        codes.push({ prefixStart, start: i + 3 });
        i += 3;
      } else {
        i++;
      }
    }
    for (let k = 0; k < codes.length; k++) {
      const end = k + 1 < codes.length ? codes[k + 1].prefixStart : n;
      units.push({ prefixStart: codes[k].prefixStart, start: codes[k].start, end });
    }
    return units;
  },

  // Opens every slice of one access unit. Returns {data, slices, idr}; throws if any slice fails
  // (the whole frame is then dropped, as sfubot and the phones do).
  async openVideo(key, data) {
    const units = ECall.nalUnits(data);
    if (units.length === 0) throw new Error('no_start_code');
    const parts = [];
    let cursor = 0;
    let slices = 0;
    let idr = false;
    for (const u of units) {
      const type = data[u.start] & 0x1f;
      parts.push(data.subarray(cursor, u.start));
      if (type === 1 || type === 5) {
        if (u.end - u.start < 2 + 12 + 16) throw new Error('too_short');
        const clear = data.subarray(u.start, u.start + 2);
        const nonce = data.subarray(u.start + 2, u.start + 14);
        const plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: nonce }, key, data.subarray(u.start + 14, u.end));
        parts.push(clear, new Uint8Array(plain));
        slices++;
        if (type === 5) idr = true;
      } else {
        parts.push(data.subarray(u.start, u.end));
      }
      cursor = u.end;
    }
    parts.push(data.subarray(cursor));
    const total = parts.reduce((s, p) => s + p.length, 0);
    const out = new Uint8Array(total);
    let o = 0;
    for (const p of parts) { out.set(p, o); o += p.length; }
    return { data: out, slices, idr };
  },
};
if (typeof self !== 'undefined') self.ECall = ECall;
