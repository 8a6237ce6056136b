// See playback.html. Runs of pictures of one size: [["640x360", 120], ["320x180", 97]].
const video = document.getElementById('v');
const runs = [];
let frames = 0, posted = false;
function post(result) {
  if (posted) return;
  posted = true;
  fetch('/result', { method: 'POST', body: JSON.stringify(result) });
}
function onFrame(_now, meta) {
  frames++;
  const size = meta.width + 'x' + meta.height;
  if (!runs.length || runs[runs.length - 1][0] !== size) runs.push([size, 0]);
  runs[runs.length - 1][1]++;
  video.requestVideoFrameCallback(onFrame);
}
video.requestVideoFrameCallback(onFrame);
video.onended = () => post({ ended: true, frames, runs, duration: video.duration });
video.onerror = () => post({ ended: false, frames, runs, error: video.error ? video.error.code + ' ' + video.error.message : 'unknown' });
video.src = new URLSearchParams(location.search).get('src');
video.play().catch((e) => post({ ended: false, frames, runs, error: 'play() refused: ' + e }));
