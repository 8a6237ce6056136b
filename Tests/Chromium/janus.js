// janus-protocol over WebSocket, just what the test pages need (no Janus JS library):
// session, one VideoRoom handle, requests answered by success/error, events in a queue.
'use strict';
class JanusClient {
  constructor(url) { this.url = url; this.pending = new Map(); this.events = []; this.waiter = null; this.onHangup = null; this.onTrickle = null; }

  async connect() {
    this.ws = new WebSocket(this.url, 'janus-protocol');
    this.ws.onmessage = (ev) => this.receive(JSON.parse(ev.data));
    await new Promise((res, rej) => { this.ws.onopen = res; this.ws.onerror = () => rej(new Error('websocket to ' + this.url + ' failed')); });
    this.sessionId = (await this.request({ janus: 'create' })).data.id;
    this.keepalive = setInterval(() => this.post({ janus: 'keepalive' }), 25000);
    this.handleId = (await this.request({ janus: 'attach', plugin: 'janus.plugin.videoroom' })).data.id;
  }

  post(msg) {
    msg.transaction = Math.random().toString(36).slice(2);
    if (this.sessionId) msg.session_id = this.sessionId;
    if (this.handleId && msg.janus !== 'keepalive' && msg.janus !== 'attach') msg.handle_id = this.handleId;
    this.ws.send(JSON.stringify(msg));
    return msg.transaction;
  }

  // A request Janus answers with success or error (create, attach, synchronous plugin requests).
  request(msg) {
    const t = this.post(msg);
    return new Promise((resolve, reject) => this.pending.set(t, { resolve, reject }));
  }

  // A plugin request answered asynchronously by an event (join, configure, start).
  message(body, jsep) { this.post(Object.assign({ janus: 'message', body }, jsep ? { jsep } : {})); }
  trickle(candidate) { this.post({ janus: 'trickle', candidate: candidate || { completed: true } }); }

  nextEvent(pred) {
    return new Promise((resolve) => {
      const i = this.events.findIndex(pred);
      if (i >= 0) { resolve(this.events.splice(i, 1)[0]); return; }
      this.waiter = { pred, resolve };
    });
  }

  receive(m) {
    if (m.janus === 'ack') return;
    const p = this.pending.get(m.transaction);
    if (p && (m.janus === 'success' || m.janus === 'error')) {
      this.pending.delete(m.transaction);
      if (m.janus === 'error') p.reject(new Error(JSON.stringify(m.error))); else p.resolve(m);
      return;
    }
    if (m.janus === 'hangup' && this.onHangup) this.onHangup(m.reason);
    // Janus trickles its own candidates (its answer has none): a peer that only reaches Janus
    // through a relay needs them, it cannot learn Janus's address from Janus's checks.
    if (m.janus === 'trickle' && this.onTrickle) { this.onTrickle(m.candidate); return; }
    const data = m.plugindata && m.plugindata.data;
    if (data && data.error) console.log('[janus] ' + data.error);
    if (this.waiter && this.waiter.pred(m)) { const w = this.waiter; this.waiter = null; w.resolve(m); } else this.events.push(m);
  }

  close() { clearInterval(this.keepalive); this.ws.close(); }
}
self.JanusClient = JanusClient;
