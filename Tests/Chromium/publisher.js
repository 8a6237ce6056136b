'use strict';
const params = new URLSearchParams(location.search);
const room = Number(params.get('room'));
const janusURL = params.get('janus') || 'ws://127.0.0.1:8188';
const seconds = Number(params.get('seconds') || '15');
const keyHex = params.get('key');
const display = params.get('display') || '7:Chromium';
// format=framecryptor (libwebrtc's FrameCryptor, as PQSRTC/LiveKit seal: key = hex key material,
// salt = the ratchet salt, "hex:…" or text, index = the key index) or sframe (RFC 9605: key = hex
// base key, kid, suite 4 or 5); default ecall. SFrame publishes audio only: see README.md.
const format = params.get('format') || 'ecall';
const keyIndex = Number(params.get('index') || '0');
// resize=S: after S seconds the encoder halves the picture size, as libwebrtc does by itself
// when bandwidth or CPU drops (issue 13, bug 1).
const withVideo = params.get('video') ? params.get('video') !== '0' : format !== 'sframe';  // video=0: microphone only (bench)
const resizeAfter = params.get('resize') ? Number(params.get('resize')) : null;
// resize2=S: after S seconds the picture goes to 3/4 of the original (480x270 from 640x360): a second change (issue 39).
const resizeAgain = params.get('resize2') ? Number(params.get('resize2')) : null;
// turn=URL with turnUser/turnPass: only through that TURN server (iceTransportPolicy relay),
// as a phone behind a firewall that lets nothing but its TURN server through.
const turn = params.get('turn');
const iceConfig = turn ? { iceServers: [{ urls: turn, username: params.get('turnUser'), credential: params.get('turnPass') }],
  iceTransportPolicy: 'relay' } : {};

const result = { phase: 'start', errors: [], feed: null, codec: null,
  format, video: { frames: 0, sealed: 0, failed: 0, keyframes: 0, times: [] }, audio: { frames: 0, sealed: 0, failed: 0, times: [] }, stats: {} };
function note(msg) { console.log('[ecall-page] ' + msg); }
function fail(msg) { result.errors.push(String(msg)); note('error: ' + msg); }

// The format's sealer: (kind, bytes, frame) → sealed bytes; null with key=none (no transform).
async function makeSealer() {
  if (keyHex === 'none') return null;
  if (format === 'ecall') {
    const key = await ECall.importKey(keyHex);
    return (kind, data) => (kind === 'video' ? ECall.sealVideo(key, data) : ECall.sealAudioRandom(key, data));
  }
  const material = FrameCryptor.fromHex(keyHex || '');
  if (material.length === 0) throw new Error('key= is the hex key material');
  if (format === 'framecryptor') {
    if (!params.get('salt')) throw new Error('format=framecryptor needs salt=');
    const key = await FrameCryptor.deriveKey(material, FrameCryptor.parseSalt(params.get('salt')));
    // One transformer per sender, as libwebrtc has: each keeps its own send count per SSRC.
    const senders = { audio: new FrameCryptorSender(key, keyIndex), video: new FrameCryptorSender(key, keyIndex) };
    ivRechosen = () => senders.video.rechosen;
    return (kind, data, frame) => {
      const md = frame.getMetadata();
      const ts = md.rtpTimestamp !== undefined ? md.rtpTimestamp : frame.timestamp;
      if (!result.firstIv[kind]) result.firstIv[kind] = { ssrc: md.synchronizationSource, rtpTimestamp: ts };
      return senders[kind].seal(kind, data, md.synchronizationSource, ts);
    };
  }
  if (format === 'sframe') {
    const sender = new SFrameSender(await SFrame.context(Number(params.get('suite') || '4'), BigInt(params.get('kid') || '0'), material));
    return (kind, data) => sender.seal(data);
  }
  throw new Error('format is ecall, framecryptor or sframe');
}
result.firstIv = {};
let ivRechosen = null;  // how many video IVs escaping would have changed (FrameCryptorSender)

function sealTransform(seal, kind) {
  const c = result[kind];
  return new TransformStream({
    async transform(frame, controller) {
      c.frames++;
      try {
        frame.data = (await seal(kind, new Uint8Array(frame.data), frame)).buffer;
        if (kind === 'video' && frame.type === 'key') c.keyframes++;
        c.sealed++;
        c.times.push(Date.now());  // when each left: the runner counts what was sent after the recorder's first arrival
        controller.enqueue(frame);
      } catch (e) { c.failed++; c.lastError = String(e); }  // never send a frame in the clear
    },
  });
}

async function main() {
  const seal = await makeSealer();
  const media = await navigator.mediaDevices.getUserMedia({
    // No echo cancellation, noise suppression or gain control: the recording is compared with the file.
    audio: { echoCancellation: false, noiseSuppression: false, autoGainControl: false },
    video: withVideo ? { width: 640, height: 360, frameRate: 10 } : false });
  const janus = new JanusClient(janusURL);
  janus.onHangup = (reason) => { if (result.phase !== 'done') fail('janus hangup: ' + reason); };  // after unpublish: expected
  await janus.connect();
  janus.message({ request: 'join', ptype: 'publisher', room, display });
  const joined = await janus.nextEvent((m) => m.plugindata && m.plugindata.data && m.plugindata.data.videoroom === 'joined');
  result.feed = joined.plugindata.data.id;

  const pc = new RTCPeerConnection(Object.assign(seal ? { encodedInsertableStreams: true, bundlePolicy: 'max-bundle' } : { bundlePolicy: 'max-bundle' }, iceConfig));
  pc.onicecandidate = (ev) => janus.trickle(ev.candidate);
  // Janus's candidates, added once its answer is set (they may come before it).
  const early = [];
  let answered = false;
  const addRemote = (c) => pc.addIceCandidate(c).catch((e) => note('remote candidate: ' + e));
  janus.onTrickle = (c) => { if (c && !c.completed) { if (answered) addRemote(c); else early.push(c); } };
  pc.onconnectionstatechange = () => note('connection ' + pc.connectionState);
  for (const track of media.getTracks()) {
    const t = pc.addTransceiver(track, { direction: 'sendonly' });
    if (track.kind === 'video') {
      // ECall rooms take H.264; Chromium 156 here sends 42e01f, packetization-mode 1.
      const h264 = RTCRtpSender.getCapabilities('video').codecs.filter((c) =>
        c.mimeType === 'video/H264' && /profile-level-id=42e01f/.test(c.sdpFmtpLine || '') && /packetization-mode=1/.test(c.sdpFmtpLine || ''));
      t.setCodecPreferences(h264);
    }
    if (seal) {
      const s = t.sender.createEncodedStreams();
      s.readable.pipeThrough(sealTransform(seal, track.kind)).pipeTo(s.writable).catch((e) => fail('pipe: ' + e));
    }
  }
  const offer = await pc.createOffer();
  await pc.setLocalDescription(offer);
  janus.message({ request: 'configure', audio: true, video: withVideo, videocodec: 'h264' }, { type: offer.type, sdp: offer.sdp });
  const answer = await janus.nextEvent((m) => m.jsep && m.jsep.type === 'answer');
  await pc.setRemoteDescription(answer.jsep);
  answered = true;
  early.splice(0).forEach(addRemote);

  result.phase = 'publishing';
  const started = Date.now();
  const until = started + seconds * 1000;
  const videoSender = withVideo ? pc.getSenders().find((s) => s.track && s.track.kind === 'video') : null;
  while (Date.now() < until) {
    await new Promise((res) => setTimeout(res, 1000));
    if (resizeAfter !== null && !result.resizedAt && Date.now() - started >= resizeAfter * 1000) {
      const p = videoSender.getParameters();
      p.encodings[0].scaleResolutionDownBy = 2;
      await videoSender.setParameters(p);
      result.resizedAt = result.video.sealed;
      note('resized after frame ' + result.resizedAt);
    }
    if (resizeAgain !== null && result.resizedAt && !result.resizedAgainAt && Date.now() - started >= resizeAgain * 1000) {
      const p = videoSender.getParameters();
      p.encodings[0].scaleResolutionDownBy = 4 / 3;
      await videoSender.setParameters(p);
      result.resizedAgainAt = result.video.sealed;
      note('resized again after frame ' + result.resizedAgainAt);
    }
    note(JSON.stringify({ v: result.video.sealed, a: result.audio.sealed, vf: result.video.failed }));
  }
  const report = await pc.getStats();
  report.forEach((s) => {
    if (s.type === 'outbound-rtp') result.stats[s.kind] = { framesEncoded: s.framesEncoded, framesSent: s.framesSent, packetsSent: s.packetsSent,
      frameWidth: s.frameWidth, frameHeight: s.frameHeight, encoderImplementation: s.encoderImplementation, pliCount: s.pliCount, firCount: s.firCount, keyFramesEncoded: s.keyFramesEncoded };
    // The selected pair's candidate types (relay → host through TURN).
    if (s.type === 'transport' && s.selectedCandidatePairId) {
      const pair = report.get(s.selectedCandidatePairId);
      const local = pair && report.get(pair.localCandidateId), remote = pair && report.get(pair.remoteCandidateId);
      if (local && remote) result.pair = { local: local.candidateType, remote: remote.candidateType, relayProtocol: local.relayProtocol };
    }
    if (s.type === 'codec') result.codec = (result.codec ? result.codec + ' ' : '') + s.mimeType + ';' + (s.sdpFmtpLine || '');
  });
  if (ivRechosen) result.video.ivRechosen = ivRechosen();
  result.phase = 'done';
  janus.message({ request: 'unpublish' });
  await new Promise((res) => setTimeout(res, 300));
  pc.close();
  janus.close();
}

main().catch((e) => fail(e && e.stack ? e.stack : e))
  .finally(async () => {
    try { await fetch('/result', { method: 'POST', body: JSON.stringify(result) }); } catch (e) { note('post failed: ' + e); }
    document.title = 'done';
  });
