'use strict';
const params = new URLSearchParams(location.search);
const room = Number(params.get('room'));
const janusURL = params.get('janus') || 'ws://127.0.0.1:8188';
const watchSeconds = Number(params.get('seconds') || '15');
// format=framecryptor (key = hex key material at index=, salt = ratchet salt "hex:…" or text,
// ratchet = libwebrtc's ratchet window, magic = "uncrypted magic bytes", text or "hex:…") or sframe (key = hex
// base key for kid=, suite 4 or 5); default ecall (key = 64 hex).
const format = params.get('format') || 'ecall';

const result = {
  phase: 'start', errors: [], feed: null, format, keyIndexes: {}, unencrypted: 0,
  video: { frames: 0, opened: 0, failed: 0, failedAfterKeyframe: 0, keyframesOpened: 0, slicesOpened: 0,
           firstRtpTimestamp: null, lastRtpTimestamp: null, failReasons: {} },
  audio: { frames: 0, opened: 0, failed: 0, failReasons: {} },
  stats: { video: null, audio: null },
};
function note(msg) { console.log('[ecall-page] ' + msg); }
function fail(msg) { result.errors.push(String(msg)); note('error: ' + msg); }

// --- ECall frame transforms ----------------------------------------------------------------
function countReason(map, e) { const k = (e && (e.message || e.name)) || String(e); map[k] = (map[k] || 0) + 1; }
function rtpTimestamp(frame) {
  const md = frame.getMetadata ? frame.getMetadata() : {};
  return md.rtpTimestamp !== undefined ? md.rtpTimestamp : frame.timestamp;
}
// The format's opener: (kind, bytes) → {data, idr, slices}; throws with the reason of a drop.
async function makeOpener() {
  const keyHex = params.get('key') || '';
  if (format === 'ecall') {
    const key = await ECall.importKey(keyHex);
    return async (kind, data) => (kind === 'video' ? ECall.openVideo(key, data) : { data: await ECall.openAudio(key, data) });
  }
  const material = FrameCryptor.fromHex(keyHex);
  const withIdr = (d) => ({ data: d, slices: 0, idr: ECall.nalUnits(d).some((u) => (d[u.start] & 0x1f) === 5) });
  if (format === 'framecryptor') {
    if (!params.get('salt')) throw new Error('format=framecryptor needs salt=');
    // One key ring per kind, as libwebrtc has one transformer (and key handler use) per receiver.
    const rings = {};
    for (const kind of ['audio', 'video']) {
      rings[kind] = new FrameCryptorKeyRing(FrameCryptor.parseSalt(params.get('salt')), Number(params.get('ratchet') || '0'));
      await rings[kind].setKey(Number(params.get('index') || '0'), material);
    }
    const magic = params.get('magic') ? FrameCryptor.parseSalt(params.get('magic')) : null;  // PQSRTC: PQSRTCMagicBytes
    return async (kind, data) => {
      const o = await rings[kind].open(kind, data, magic);
      if (o.unencrypted) { result.unencrypted++; throw new Error('unencrypted'); }  // counted apart, never taken as opened
      result.keyIndexes[o.keyIndex] = (result.keyIndexes[o.keyIndex] || 0) + 1;
      return kind === 'video' ? withIdr(o.data) : o;
    };
  }
  if (format === 'sframe') {
    const kid = BigInt(params.get('kid') || '0');
    const ctx = await SFrame.context(Number(params.get('suite') || '4'), kid, material);
    return async (kind, data) => {
      const o = await SFrame.decrypt(async (k) => (k === kid ? ctx : null), new Uint8Array(0), data);
      return kind === 'video' ? withIdr(o.data) : o;
    };
  }
  throw new Error('format is ecall, framecryptor or sframe');
}

function videoTransform(open) {
  const v = result.video;
  let sawKeyframe = false;
  return new TransformStream({
    async transform(frame, controller) {
      v.frames++;
      const ts = rtpTimestamp(frame) >>> 0;
      if (v.firstRtpTimestamp === null) v.firstRtpTimestamp = ts;
      // The first frames' arrival: where a start-up freeze comes from (sender gap or receiver).
      if (v.frames <= 12) (v.firstArrivals = v.firstArrivals || []).push([Math.round(performance.now()), (ts - v.firstRtpTimestamp) >>> 0, frame.type]);
      v.lastRtpTimestamp = ts;
      try {
        const opened = await open('video', new Uint8Array(frame.data));
        frame.data = opened.data.buffer;
        v.opened++;
        v.slicesOpened += opened.slices;
        if (opened.idr) { v.keyframesOpened++; sawKeyframe = true; }
        controller.enqueue(frame);
      } catch (e) {
        v.failed++;
        if (sawKeyframe) v.failedAfterKeyframe++;
        countReason(v.failReasons, e);
      }
    },
  });
}
function audioTransform(open) {
  const a = result.audio;
  return new TransformStream({
    async transform(frame, controller) {
      a.frames++;
      try {
        frame.data = (await open('audio', new Uint8Array(frame.data))).data.buffer;
        a.opened++;
        controller.enqueue(frame);
      } catch (e) { a.failed++; countReason(a.failReasons, e); }
    },
  });
}

// The decoded audio as a 20 ms RMS envelope at 8 kHz (compared with the source by envelope.py).
// An AudioWorklet, not a ScriptProcessor: the latter drops a 128 ms block whenever the page's main
// thread is late, which shifts the rest of the envelope (one CI run: 0.70 for audio that all
// arrived). Render gaps on the audio thread itself are counted, not hidden.
result.audioEnvelope = [];
result.audioRenderGaps = 0;
const envelopeWorklet = `registerProcessor('envelope', class extends AudioWorkletProcessor {
  constructor() { super(); this.sum = 0; this.n = 0; this.next = -1; }
  process(inputs) {
    if (this.next >= 0 && currentFrame !== this.next) this.port.postMessage({ gap: currentFrame - this.next });
    const block = (inputs[0] && inputs[0][0]) || new Float32Array(128);
    this.next = currentFrame + block.length;
    for (const x of block) {
      this.sum += x * x * 32767 * 32767;
      if (++this.n === 160) { this.port.postMessage(Math.sqrt(this.sum / 160)); this.sum = 0; this.n = 0; }
    }
    return true;
  }
});`;
async function captureEnvelope(track) {
  const ctx = new AudioContext({ sampleRate: 8000 });
  await ctx.audioWorklet.addModule(URL.createObjectURL(new Blob([envelopeWorklet], { type: 'text/javascript' })));
  const source = ctx.createMediaStreamSource(new MediaStream([track]));
  const node = new AudioWorkletNode(ctx, 'envelope');
  node.port.onmessage = (m) => {
    if (typeof m.data === 'number') result.audioEnvelope.push(m.data); else result.audioRenderGaps++;
  };
  source.connect(node);
  node.connect(ctx.destination);
  await ctx.resume();
}

async function collectStats(pc) {
  const report = await pc.getStats();
  report.forEach((s) => {
    if (s.type !== 'inbound-rtp') return;
    const pick = (keys) => Object.fromEntries(keys.filter((k) => s[k] !== undefined).map((k) => [k, s[k]]));
    if (s.kind === 'video') {
      result.stats.video = pick(['framesReceived', 'framesDecoded', 'keyFramesDecoded', 'framesDropped', 'freezeCount',
        'totalFreezesDuration', 'pliCount', 'firCount', 'nackCount', 'packetsReceived', 'packetsLost', 'frameWidth', 'frameHeight']);
    } else if (s.kind === 'audio') {
      result.stats.audio = pick(['packetsReceived', 'packetsLost', 'totalSamplesReceived', 'concealedSamples', 'audioLevel']);
    }
  });
}

async function post() {
  await fetch('/result', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(result) });
}

async function main() {
  const open = await makeOpener();
  // Without a media permission Chromium does not enumerate local addresses for ICE (only the
  // default route's, and there is no route in the namespace): take the fake camera, keep it.
  window.keepPermission = await navigator.mediaDevices.getUserMedia({ audio: true, video: true });
  const janus = new JanusClient(janusURL);
  janus.onHangup = (reason) => fail('janus hangup: ' + reason);
  await janus.connect();

  result.phase = 'waiting for a publisher';
  let feed = null;
  for (let i = 0; i < 600 && feed === null; i++) {
    const r = await janus.request({ janus: 'message', body: { request: 'listparticipants', room } });
    const parts = (r.plugindata && r.plugindata.data && r.plugindata.data.participants) || [];
    const pub = parts.find((p) => p.publisher);
    if (pub) feed = pub.id; else await new Promise((res) => setTimeout(res, 100));
  }
  if (feed === null) throw new Error('no publisher in room ' + room);
  result.feed = feed;

  result.phase = 'subscribing';
  janus.message({ request: 'join', ptype: 'subscriber', room, streams: [{ feed }], use_msid: true });
  const offerEvent = await janus.nextEvent((m) => m.jsep && m.jsep.type === 'offer');

  const pc = new RTCPeerConnection({ encodedInsertableStreams: true, bundlePolicy: 'max-bundle' });
  pc.ontrack = (ev) => {
    const streams = ev.receiver.createEncodedStreams();
    const t = ev.track.kind === 'video' ? videoTransform(open) : audioTransform(open);
    streams.readable.pipeThrough(t).pipeTo(streams.writable).catch((e) => fail('pipe: ' + e));
    const el = document.getElementById(ev.track.kind === 'video' ? 'v' : 'a');
    el.srcObject = new MediaStream([ev.track]);
    el.play().catch(() => {});
    if (ev.track.kind === 'audio') captureEnvelope(ev.track).catch((e) => fail('envelope: ' + e));
  };
  pc.onicecandidate = (ev) => {
    note('local candidate ' + (ev.candidate ? ev.candidate.candidate : 'end'));
    janus.trickle(ev.candidate);
  };
  pc.onconnectionstatechange = () => note('connection ' + pc.connectionState);
  pc.oniceconnectionstatechange = () => note('ice ' + pc.iceConnectionState);
  await pc.setRemoteDescription(offerEvent.jsep);
  const answer = await pc.createAnswer();
  await pc.setLocalDescription(answer);
  janus.message({ request: 'start' }, { type: answer.type, sdp: answer.sdp });

  result.phase = 'watching';
  const until = Date.now() + watchSeconds * 1000;
  while (Date.now() < until) {
    await new Promise((res) => setTimeout(res, 1000));
    await collectStats(pc);
    note(JSON.stringify({ v: result.video.opened, vf: result.video.failed, a: result.audio.opened, dec: result.stats.video && result.stats.video.framesDecoded, fc: result.stats.video && result.stats.video.freezeCount }));
  }
  await collectStats(pc);
  result.phase = 'done';
  pc.close();
  janus.close();
}

main().catch((e) => { fail(e && e.stack ? e.stack : e); })
  .finally(async () => {
    try { await post(); } catch (e) { note('post failed: ' + e); }
    document.title = 'done';
  });
