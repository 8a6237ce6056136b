// Known answers and round trips for framecryptor.js and sframe.js (formats-vectors.html):
// libwebrtc's own PBKDF2 vector, RFC 9605 Appendix C, and FrameCryptor frames sealed and opened
// with their layout checked byte by byte. POSTs {checked, failures: [...]} to /result.
'use strict';
const hex = (h) => FrameCryptor.fromHex(h.replace(/\s+/g, ''));
const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const range = (n) => Uint8Array.from({ length: n }, (_, i) => i);
let checked = 0;
const failures = [];
function expect(name, ok, detail) { checked++; if (!ok) failures.push(name + (detail ? ': ' + detail : '')); }
async function expectThrows(name, reason, fn) {
  let got = 'opened';
  try { await fn(); } catch (e) { got = e.message; }
  expect(name, got === reason, `wanted ${reason}, got ${got}`);
}

// --- FrameCryptor ---------------------------------------------------------------------------
async function frameCryptorKeys() {
  // frame_crypto_transformer_unittest.cc (KeyProvider): material 00..0f, salt 00..07.
  const key = await FrameCryptor.deriveKeyBytes(range(16), range(8));
  expect('fc pbkdf2 (libwebrtc unit test)', FrameCryptor.toHex(key) === 'a658cd52efbacadfecdfe0a0dc574ec3', FrameCryptor.toHex(key));
  // The ratchet and its key, as Python's hashlib.pbkdf2_hmac computes them (an independent PBKDF2).
  const next = await FrameCryptor.ratchet(range(16), range(8));
  expect('fc ratchet material', FrameCryptor.toHex(next) === 'a658cd52efbacadfecdfe0a0dc574ec3cedbb951a4ff3dda3bc25b61ae8365b3', FrameCryptor.toHex(next));
  const nextKey = await FrameCryptor.deriveKeyBytes(next, range(8));
  expect('fc ratchet key', FrameCryptor.toHex(nextKey) === '705da3b9de90668d90db8b0585444160', FrameCryptor.toHex(nextKey));
  expect('fc salt hex', same(FrameCryptor.parseSalt('hex:00ff10'), Uint8Array.of(0, 255, 16)));
  expect('fc salt text', same(FrameCryptor.parseSalt('PQSRTC é'), Uint8Array.of(0x50, 0x51, 0x53, 0x52, 0x54, 0x43, 0x20, 0xc3, 0xa9)));
}

function escaping() {
  const raw = hex('00 00 00 00 00 01 00 00 03 05');
  const escaped = hex('00 00 03 00 00 03 00 01 00 00 03 03 05');
  expect('fc escape (WriteRbsp)', same(FrameCryptor.escape(raw), escaped), FrameCryptor.toHex(FrameCryptor.escape(raw)));
  expect('fc unescape (ParseRbsp)', same(FrameCryptor.unescape(escaped), raw));
  let bad = 0;
  for (let t = 0; t < 500; t++) {
    const x = Uint8Array.from({ length: 1 + (t % 40) }, () => [0, 0, 0, 1, 2, 3, 0xff][Math.floor(Math.random() * 7)]);
    const e = FrameCryptor.escape(x);
    if (!same(FrameCryptor.unescape(e), x) || FrameCryptor.nalStarts(FrameCryptor.concat([e, Uint8Array.of(0xff)])).length > 0) bad++;
  }
  expect('fc escape round trips with no start code', bad === 0, `${bad} of 500`);
}

async function frameCryptorAudio(key) {
  const salt = FrameCryptor.parseSalt('vectors');
  const sender = new FrameCryptorSender(key, 3);
  const ring = new FrameCryptorKeyRing(salt);
  await ring.setKey(3, range(32));
  const opus = FrameCryptor.concat([Uint8Array.of(0x78), crypto.getRandomValues(new Uint8Array(80))]);
  const ssrc = 0xdeadbeef, ts = 0x12345678;
  const a = await sender.seal('audio', opus, ssrc, ts);
  expect('fc audio layout', a.length === opus.length + 16 + 14 && a[0] === 0x78 && a[a.length - 2] === 12 && a[a.length - 1] === 3);
  expect('fc audio IV = SSRC ‖ ts ‖ ts − 0', FrameCryptor.toHex(a.subarray(a.length - 14, a.length - 2)) === 'deadbeef1234567812345678');
  const b = await sender.seal('audio', opus, ssrc, ts + 960);
  expect('fc audio IV of the 2nd frame: ts − 1', FrameCryptor.toHex(b.subarray(b.length - 14, b.length - 2)) === 'deadbeef12345a3812345a37');
  const opened = await ring.open('audio', a);
  expect('fc audio opens', same(opened.data, opus) && opened.keyIndex === 3);
  const tampered = a.slice(); tampered[0] ^= 1;  // the clear TOC is the AAD
  await expectThrows('fc audio with its clear byte changed', 'decrypt', () => ring.open('audio', tampered));
  const wrong = new FrameCryptorKeyRing(salt); await wrong.setKey(3, range(31));
  await expectThrows('fc audio under another key', 'decrypt', () => wrong.open('audio', a));
  const none = new FrameCryptorKeyRing(salt); await none.setKey(0, range(32));
  await expectThrows('fc audio with no key at its index', 'missing_key', () => none.open('audio', a));
  // Magic bytes: such a frame is not encrypted; the receiver drops the bytes and passes it on.
  const magic = new TextEncoder().encode('MAGIC');
  const plain = await ring.open('audio', FrameCryptor.concat([opus, magic]), magic);
  expect('fc magic bytes: unencrypted', plain.unencrypted === true && same(plain.data, opus));
  // A sender that ratcheted once: a receiver with a ratchet window opens and keeps the new key.
  const ratcheted = new FrameCryptorSender(await FrameCryptor.deriveKey(await FrameCryptor.ratchet(range(32), salt), salt), 3);
  const c = await ratcheted.seal('audio', opus, ssrc, ts);
  await expectThrows('fc ratcheted frame without a window', 'decrypt', () => ring.open('audio', c));
  const windowed = new FrameCryptorKeyRing(salt, 2); await windowed.setKey(3, range(32));
  const r = await windowed.open('audio', c).catch(() => null);
  expect('fc ratcheted frame within the window', r !== null && same(r.data, opus) && windowed.ratcheted === 1);
}

// An Annex-B access unit as libwebrtc's encoder hands it: 4-byte start codes, SPS, PPS, slices.
function accessUnit(sliceTypes, size) {
  const nal = (h, n) => FrameCryptor.concat([Uint8Array.of(0, 0, 0, 1, h), crypto.getRandomValues(new Uint8Array(n))]);
  const parts = [nal(0x67, 10), nal(0x68, 4)];
  for (const t of sliceTypes) {
    const s = nal(t, size);
    // Runs of zeros in the slice: its ciphertext is random, but the escaped region also holds
    // the next slices' start codes, which must come out escaped.
    s.fill(0, 20, 26);
    parts.push(s);
  }
  return FrameCryptor.concat(parts);
}

async function frameCryptorVideo(key) {
  const salt = FrameCryptor.parseSalt('vectors');
  const ring = new FrameCryptorKeyRing(salt);
  await ring.setKey(0, range(32));
  for (const [name, types] of [['IDR', [0x65]], ['two P slices', [0x41, 0x41]], ['IDR, 3 slices', [0x65, 0x65, 0x65]]]) {
    const sender = new FrameCryptorSender(key, 0);
    const au = accessUnit(types, 3000);
    const clear = FrameCryptor.clearLength('video', au);
    const sealed = await sender.seal('video', au, 0x9abcdef1, 0x40302010);
    const starts = FrameCryptor.nalStarts(sealed);
    expect(`fc H.264 ${name}: header clear up to the slice's 2nd byte`, same(sealed.subarray(0, clear), au.subarray(0, clear)) && au[clear - 2] === types[0]);
    expect(`fc H.264 ${name}: no start code after the header`, starts.length === 3 && starts[2] === clear - 2, JSON.stringify(starts));
    const rest = sealed.subarray(clear);
    let raw = false;
    for (let i = 0; i + 2 < rest.length; i++) if (rest[i] === 0 && rest[i + 1] === 0 && rest[i + 2] <= 2) raw = true;
    expect(`fc H.264 ${name}: escaped`, !raw);
    const opened = await ring.open('video', sealed).catch((e) => ({ error: e.message }));
    expect(`fc H.264 ${name}: opens`, opened.data && same(opened.data, au), opened.error);
  }
  // A frame whose IV escaping would change (SSRC 00 00 00 01): re-chosen, and it still opens.
  const sender = new FrameCryptorSender(key, 0);
  const au = accessUnit([0x65], 500);
  const sealed = await sender.seal('video', au, 1, 0x00020000);
  const opened = await ring.open('video', sealed).catch(() => null);
  expect('fc H.264 IV re-chosen when escaping would change it', sender.rechosen === 1 && opened !== null && same(opened.data, au));
  // A frame without a slice (SPS and PPS only): nothing clear, all of it sealed.
  const params = accessUnit([], 0);
  const s2 = await new FrameCryptorSender(key, 0).seal('video', params, 0x9abcdef1, 7);
  expect('fc H.264 without a slice: nothing clear', FrameCryptor.clearLength('video', params) === 0 && FrameCryptor.nalStarts(s2).length === 0);
  const o2 = await ring.open('video', s2).catch(() => null);
  expect('fc H.264 without a slice: opens', o2 !== null && same(o2.data, params));
}

// --- SFrame (RFC 9605 Appendix C) ----------------------------------------------------------
function sframeHeaders() {
  const cases = [[0n, 0n, '00'], [0n, 1n, '01'], [0n, 0xffn, '08ff'], [0n, 0x100n, '090100'], [0n, 0xffffffffffffffffn, '0fffffffffffffffff'],
    [1n, 0x10000n, '1a010000'], [0xffn, 0x10000000000n, '8dff010000000000'], [0xffffn, 0n, '90ffff'], [0xffffffffn, 1n, 'b1ffffffff'],
    [0x10000n, 0xffffffn, 'aa010000ffffff'], [0x100n, 0xffffffffffffffffn, '9f0100ffffffffffffffff'],
    [0xffffffffffn, 0x1000000000000n, 'ceffffffffff01000000000000']];
  for (const [kid, ctr, h] of cases) {
    const enc = FrameCryptor.toHex(SFrame.encodeHeader(kid, ctr));
    const dec = SFrame.parseHeader(hex(h + 'aa'));
    expect(`sframe header ${kid}/${ctr}`, enc === h && dec.kid === kid && dec.ctr === ctr && dec.length === h.length / 2, `${enc} ${dec.kid}/${dec.ctr}`);
  }
}

const AAD = hex('4945544620534672616d65205747'), PT = hex('64726166742d696574662d736672616d652d656e63');
async function sframeCtrHmac() {  // C.2
  const cts = { 1: '6339af04ada1d064688a442b8dc69d5b6bfa40f4bef0583e8081069cc60705', 2: '6339af04ada1d064688a442b8dc69d5b6bfa40f4be6e93b7da076927bb',
    3: '6339af04ada1d064688a442b8dc69d5b6bfa40f4be09480509' };
  for (const id of [1, 2, 3]) {
    const ctx = await SFrame.contextFromKeySalt(id, 0n, range(48), new Uint8Array(12));
    const nonce = hex('101112131415161718191a1b');
    const ct = await SFrame.aeadSeal(ctx, nonce, AAD, PT);
    expect(`sframe C.2 suite ${id} seal`, FrameCryptor.toHex(ct) === cts[id], FrameCryptor.toHex(ct));
    const pt = await SFrame.aeadOpen(ctx, nonce, AAD, hex(cts[id])).catch(() => new Uint8Array(0));
    expect(`sframe C.2 suite ${id} open`, same(pt, PT));
  }
}

const C3 = {
  1: { key: '3f7d9a7c83ae8e1c8a11ae695ab59314b367e359fadac7b9c46b2bc6f81f46e16b96f0811868d59402b7e870102720b3', salt: '50b29329a04dc0f184ac3168',
       ct: '9901234567449408b6f490086165b9d6f62b24ae1a59a56486b4ae8ed036b88912e24f11' },
  2: { key: 'e2ec5c797540310483b16bf6e7a570d2a27d192fe869c7ccd8584a8d9dab91549fbe553f5113461ec6aa83bf3865553e', salt: 'e68ac8dd3d02fbcd368c5577',
       ct: '99012345673f31438db4d09434e43afa0f8a2f00867a2be085046a9f5cb4f101d607' },
  3: { key: '2c5703089cbb8c583475e4fc461d97d18809df79b6d550f78eb6d50ffa80d89211d57909934f46f5405e38cd583c69fe', salt: '38c16e4f5159700c00c7f350',
       ct: '990123456717fc8af28a5a695afcfc6c8df6358a17e26b2fcb3bae32e443' },
  4: { key: 'd34f547f4ca4f9a7447006fe7fcbf768', salt: '75234edefe07819026751816',
       ct: '9901234567b7412c2513a1b66dbb48841bbaf17f598751176ad847681a69c6d0b091c07018ce4adb34eb' },
  5: { key: 'd3e27b0d4a5ae9e55df01a70e6d4d28d969b246e2936f4b7a5d9b494da6b9633', salt: '84991c167b8cd23c93708ec7',
       secret: '0fc3ea6de6aac97a35f194cf9bed94d4b5230f1cb45a785c9fe5dce9c188938ab6ba005bc4c0a19181599e9d1bcf7b74aca48b60bf5e254e546d809313e083a3',
       ct: '990123456794f509d36e9beacb0e261d99c7d1e972f1fed787d4049f17ca21353c1cc24d56ceabced279' },
};
async function sframeVectors() {  // C.3: kid 0x123, ctr 0x4567, base_key 00..0f
  for (const [id, v] of Object.entries(C3).map(([k, x]) => [Number(k), x])) {
    const d = await SFrame.deriveKeySalt(id, 0x123n, range(16));
    const secret = v.secret || 'd926952ca8b7ec4a95941d1ada3a5203ceff8cceee34f574d23909eb314c40c0';
    expect(`sframe C.3 suite ${id} secret`, FrameCryptor.toHex(d.secret) === secret);
    expect(`sframe C.3 suite ${id} key label`, FrameCryptor.toHex(d.keyLabel) === '534672616d6520312e3020536563726574206b6579200000000000000123000' + id);
    expect(`sframe C.3 suite ${id} key and salt`, FrameCryptor.toHex(d.key) === v.key && FrameCryptor.toHex(d.salt) === v.salt);
    const ctx = await SFrame.context(id, 0x123n, range(16));
    const ct = await SFrame.encrypt(ctx, 0x4567n, AAD, PT);
    expect(`sframe C.3 suite ${id} encrypt`, FrameCryptor.toHex(ct) === v.ct, FrameCryptor.toHex(ct));
    const pt = await SFrame.decrypt(async (kid) => (kid === 0x123n ? ctx : null), AAD, hex(v.ct)).catch(() => ({ data: new Uint8Array(0) }));
    expect(`sframe C.3 suite ${id} decrypt`, same(pt.data, PT));
  }
}

async function sframeFrames() {  // as media uses it: the whole frame, metadata empty
  for (const id of [4, 5]) {
    const ctx = await SFrame.context(id, 5n, range(16));
    const sender = new SFrameSender(ctx);
    const opus = crypto.getRandomValues(new Uint8Array(90));
    const f0 = await sender.seal(opus), f1 = await sender.seal(opus);
    expect(`sframe suite ${id} frame layout`, f0[0] === 0x50 && f1[0] === 0x51 && f0.length === 1 + 90 + 16);
    const contextFor = async (kid) => (kid === 5n ? ctx : null);
    const o = await SFrame.decrypt(contextFor, new Uint8Array(0), f1).catch(() => null);
    expect(`sframe suite ${id} frame opens`, o !== null && same(o.data, opus) && o.ctr === 1n);
    const t = f0.slice(); t[0] = 0x52;  // the header is the AAD
    await expectThrows(`sframe suite ${id} header changed`, 'decrypt', () => SFrame.decrypt(contextFor, new Uint8Array(0), t));
    await expectThrows(`sframe suite ${id} unknown KID`, 'missing_key', () => SFrame.decrypt(async () => null, new Uint8Array(0), f0));
  }
}

async function check() {
  await frameCryptorKeys();
  escaping();
  const key = await FrameCryptor.deriveKey(range(32), FrameCryptor.parseSalt('vectors'));
  await frameCryptorAudio(key);
  await frameCryptorVideo(key);
  sframeHeaders();
  await sframeCtrHmac();
  await sframeVectors();
  await sframeFrames();
  return { checked, failures };
}
check().catch((e) => ({ checked, failures: failures.concat(['page: ' + (e && e.stack ? e.stack : e)]) }))
  .then((r) => fetch('/result', { method: 'POST', body: JSON.stringify(r) }))
  .finally(() => { document.title = 'done'; });
