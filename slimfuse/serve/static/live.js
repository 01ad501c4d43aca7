// The live page: the camera's newest frame goes to the server as a JPEG over a WebSocket (an 8-byte stamp, then
// the JPEG), one frame in flight; the swapped frame comes back with the same stamp, so each round trip is timed.
// The controls go as text ({"swap": false}, {"source": ASSET}, ...); the server's lines come back as text:
// {"ready": true, ...} once (what this session can change), then {"notice": ..., "level": ...}.
"use strict";
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const WINDOW = 120; // frames the figures cover
const stats = { frames: 0, latencies: [], arrivals: [], fps: 0, p50: 0, p95: 0, notices: [] };
window.liveStats = stats;
let socket = null;

function token() {
  return $("token").value.trim();
}

// A token typed here goes once, in a header, into the server's HttpOnly cookie: the socket and later requests
// carry it from there, never in a URL.
async function session() {
  if (!token()) return;
  const response = await fetch("/v1/session", { method: "POST", headers: { Authorization: `Bearer ${token()}` } });
  if (!response.ok) throw new Error((await response.json()).message || response.statusText);
}

function fail(message) {
  $("error").textContent = message;
  $("error").hidden = false;
  $("state").textContent = "Stopped.";
  $("start").disabled = false;
  $("stop").disabled = true;
}

async function upload(file) {
  const headers = token() ? { Authorization: `Bearer ${token()}` } : {};
  const response = await fetch(`/v1/assets?name=${encodeURIComponent(file.name)}`, { method: "POST", body: file, headers });
  const body = await response.json();
  if (!response.ok) throw new Error(body.message || response.statusText);
  return body.id;
}

async function uploadSource() {
  if (params.get("source")) return params.get("source");
  const file = $("source-file").files[0];
  if (!file) throw new Error("choose a source photo first");
  return upload(file);
}

function notice(text) {
  stats.notices.push(text);
  $("notice").textContent = text;
}

function control(message) {
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
}

function ready(message) {
  $("controls").disabled = false;
  $("selector").value = message.selector_mode === "many" ? "many" : "one";
  $("mouth").checked = message.keep_mouth === true;
  $("mouth").disabled = message.keep_mouth === null;
  $("mouth").title = message.keep_mouth === null ? "this swapper's masks keep no mouth" : "";
  $("enhancer").checked = message.enhancer;
  $("enhancer").disabled = !message.enhancer;
  $("enhancer").title = message.enhancer ? "" : "the server runs no face enhancer";
  if (!$("swap").checked) control({ swap: false });
  editorSliders(message.face_editor || null);
}

// The face editor's values as sliders (when the session runs the editor): each sends its value when let go.
function editorSliders(values) {
  const box = $("face-editor");
  box.querySelectorAll(".edit").forEach((node) => node.remove());
  box.hidden = values === null;
  box.disabled = values === null;
  if (values === null) return;
  for (const [name, value] of Object.entries(values)) {
    const label = document.createElement("label");
    label.htmlFor = `edit-${name}`;
    label.className = "edit";
    label.textContent = name.replaceAll("_", " ");
    const slider = document.createElement("input");
    Object.assign(slider, { id: `edit-${name}`, type: "range", min: "-1", max: "1", step: "0.05", value: String(value) });
    slider.className = "edit";
    slider.addEventListener("change", () => control({ face_editor: { [name]: Number(slider.value) } }));
    box.append(label, slider);
  }
}

function percentile(values, share) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))] : 0;
}

function record(latency) {
  const now = performance.now();
  stats.frames += 1;
  stats.latencies.push(latency);
  stats.arrivals.push(now);
  if (stats.latencies.length > WINDOW) { stats.latencies.shift(); stats.arrivals.shift(); }
  const span = (stats.arrivals[stats.arrivals.length - 1] - stats.arrivals[0]) / 1000;
  stats.fps = span > 0 ? (stats.arrivals.length - 1) / span : 0;
  stats.p50 = percentile(stats.latencies, 0.5);
  stats.p95 = percentile(stats.latencies, 0.95);
  $("fps").textContent = stats.fps.toFixed(1);
  $("p50").textContent = `${stats.p50.toFixed(0)} ms`;
  $("p95").textContent = `${stats.p95.toFixed(0)} ms`;
  $("frames").textContent = String(stats.frames);
}

async function sendFrame(grab) {
  const video = $("camera");
  grab.width = video.videoWidth;
  grab.height = video.videoHeight;
  const stamp = performance.now(); // when the camera frame was taken: latency counts from here
  grab.getContext("2d").drawImage(video, 0, 0);
  const jpeg = await new Promise((resolve) => grab.toBlob(resolve, "image/jpeg", 0.8));
  const head = new DataView(new ArrayBuffer(8));
  head.setFloat64(0, stamp);
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(new Blob([head.buffer, jpeg]));
}

async function show(data, grab) {
  const stamp = new DataView(data.slice(0, 8)).getFloat64(0);
  const picture = await createImageBitmap(new Blob([data.slice(8)], { type: "image/jpeg" }));
  const canvas = $("result");
  if (canvas.width !== picture.width) { canvas.width = picture.width; canvas.height = picture.height; }
  canvas.getContext("2d").drawImage(picture, 0, 0);
  record(performance.now() - stamp); // camera to screen
  sendFrame(grab);
}

async function start() {
  $("error").hidden = true;
  $("start").disabled = true;
  try {
    await session();
    const source = await uploadSource();
    const video = $("camera");
    video.srcObject = await navigator.mediaDevices.getUserMedia({ video: { width: 640, height: 480 } });
    await video.play(); // headless browsers start only a visible, played video
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const query = new URLSearchParams({ source });
    if (params.get("options")) query.set("options", params.get("options")); // the session's options, as JSON
    socket = new WebSocket(`${scheme}://${location.host}/v1/live?${query}`);
    socket.binaryType = "arraybuffer";
    const grab = document.createElement("canvas");
    $("state").textContent = "Loading the models...";
    socket.onmessage = (event) => {
      if (typeof event.data !== "string") { show(event.data, grab); return; }
      const message = JSON.parse(event.data);
      if (message.error) { fail(message.message); return; }
      if (message.notice) { notice(message.notice); return; }
      ready(message);
      $("state").textContent = "Live.";
      $("stop").disabled = false;
      sendFrame(grab);
    };
    socket.onclose = () => {
      $("controls").disabled = true;
      $("face-editor").disabled = true;
      if ($("state").textContent === "Live.") $("state").textContent = "Stopped.";
    };
  } catch (error) {
    fail(error.message || String(error));
  }
}

function stop() {
  if (socket) socket.close();
  const video = $("camera");
  if (video.srcObject) video.srcObject.getTracks().forEach((track) => track.stop());
  $("state").textContent = "Stopped.";
  $("notice").textContent = "";  // the last session's line is not this one's
  $("start").disabled = false;
  $("stop").disabled = true;
}

$("start").addEventListener("click", start);
$("swap").addEventListener("change", () => control({ swap: $("swap").checked }));
$("selector").addEventListener("change", () => control({ selector_mode: $("selector").value }));
$("mouth").addEventListener("change", () => control({ keep_mouth: $("mouth").checked }));
$("enhancer").addEventListener("change", () => control({ enhancer: $("enhancer").checked }));
$("another-source").addEventListener("change", async () => {
  const file = $("another-source").files[0];
  if (!file) return;
  try {
    control({ source: await upload(file) });
  } catch (error) {
    notice(`${file.name}: ${error.message || String(error)}`);
  }
  $("another-source").value = "";
});
$("stop").addEventListener("click", stop);
if (params.get("autostart")) start();
