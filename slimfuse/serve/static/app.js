"use strict";
// The slimfuse page: uploads, options, preview, face gallery, a job with its progress, and the list of jobs.
const $ = (id) => document.getElementById(id);
const state = { options: [], sources: [], target: null, reference: null,
                previewSeq: 0, facesSeq: 0, previewTimer: null, job: null, events: null };
const FINAL = ["succeeded", "failed", "cancelled"];

// The token goes once, in a header, into the server's HttpOnly cookie (POST /v1/session); every request, image,
// video and event stream carries it from there, never in a URL.
function showError(message) {
  const box = $("error");
  box.textContent = message || "";
  box.hidden = !message;
}
async function api(method, url, body, raw = false) {
  const options = { method, headers: {} };
  if (body instanceof Blob) { options.body = body; options.headers["Content-Type"] = "application/octet-stream"; }
  else if (body !== undefined) { options.body = JSON.stringify(body); options.headers["Content-Type"] = "application/json"; }
  let response;
  try { response = await fetch(url, options); } catch (err) { throw new Error("the server cannot be reached"); }
  if (response.status === 401) $("token-form").hidden = false;
  if (!response.ok) {
    let message = `request failed (${response.status})`;
    try { const data = await response.json(); if (data.message) message = data.message; } catch (err) { /* not JSON */ }
    throw new Error(message);
  }
  return raw ? response : response.json();
}

// Uploads ------------------------------------------------------------------------------------------------------
async function upload(file) {
  return api("POST", `/v1/assets?name=${encodeURIComponent(file.name)}`, file);
}
function thumb(file, kind) {
  const element = document.createElement(kind === "video" ? "video" : "img");
  element.src = URL.createObjectURL(file);
  if (kind === "video") { element.muted = true; } else { element.alt = file.name; }
  return element;
}
async function addSources(files) {
  showError("");
  for (const file of files) {
    try {
      const asset = await upload(file);
      state.sources.push(asset);
      $("source-list").append(sourceThumb(file, asset));
    } catch (err) { showError(err.message); }
  }
  changed();
  refreshUploads();
}
// A source photo can be taken out of the job again (a photo without a face, the wrong person): its upload is
// deleted too unless a job still uses it.
function sourceThumb(file, asset) {
  const holder = Object.assign(document.createElement("span"), { className: "thumb" });
  const remove = Object.assign(document.createElement("button"), { type: "button", className: "remove",
                                                                   textContent: "\u00d7" });
  remove.setAttribute("aria-label", `Remove ${file.name}`);
  remove.addEventListener("click", async () => {
    state.sources = state.sources.filter((kept) => kept.id !== asset.id);
    holder.remove();
    showError("");
    await fetch(`/v1/assets/${asset.id}`, { method: "DELETE" });  // 409 while a job uses it: kept for that job
    changed();
    refreshUploads();
  });
  holder.append(thumb(file, "image"), remove);
  return holder;
}
async function setTarget(file) {
  showError("");
  try {
    const asset = await upload(file);
    state.target = asset;
    state.reference = null;
    if ($("face_selector_mode").value === "reference") $("face_selector_mode").value = "one";
    clearResult();
    $("target-info").replaceChildren(thumb(file, asset.kind));
    document.body.classList.toggle("video", asset.kind === "video");
    const frame = $("frame");
    frame.max = Math.max(0, (asset.frames || 1) - 1);
    frame.value = 0;
    $("frame_value").textContent = "0";
    loadFaces();
    changed();
    refreshUploads();
  } catch (err) { showError(err.message); }
}
// The lip syncer's sound: an uploaded sound file or video, picked while the processors include lip_syncer.
function lipSync() { return Boolean(document.querySelector("input[name=processors][value=lip_syncer]:checked")); }
async function addSound(file) {
  showError("");
  try {
    const asset = await upload(file);
    await refreshUploads();
    $("sound").value = asset.id;
    changed();
  } catch (err) { showError(err.message); }
}
function soundChoices(assets) {
  const select = $("sound"), chosen = select.value;
  const sounds = assets.filter((asset) => asset.kind === "audio" || asset.kind === "video").map((asset) =>
    new Option(asset.kind === "audio" ? `${asset.name} (${asset.duration.toFixed(1)} s)` : `${asset.name} (video)`, asset.id));
  select.replaceChildren(new Option("none", ""), ...sounds);
  select.value = sounds.some((option) => option.value === chosen) ? chosen : "";
}
function dropZone(zone, onFiles) {
  zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    onFiles([...event.dataTransfer.files]);
  });
}

// Options ------------------------------------------------------------------------------------------------------
// The form is built from GET /v1/options (the server's option table): the options most people change first, the
// rest under "More options" by section. A job carries only the options that differ from their defaults.
const MAIN = ["face_swapper_model", "face_enhancer_model", "face_enhancer_blend", "blend", "face_selector_mode",
              "face_mask_types", "keep_mouth", "keep_eyes", "target_face_size", "video_memory_level", "memory_budget",
              "output_image_quality", "output_video_quality", "trim_frame_start", "trim_frame_end"];
function title(name) { const text = name.replace(/_/g, " "); return text[0].toUpperCase() + text.slice(1); }
function control(option) {
  if (option.type === "boolean") {
    const box = Object.assign(document.createElement("input"), { type: "checkbox", id: option.name, name: option.name,
                                                                 checked: option.default });
    return box;
  }
  if (option.type === "list" && !option.item.choices) {  // numbers, separated by spaces
    return Object.assign(document.createElement("input"), { type: "text", id: option.name, name: option.name,
                                                            value: option.default.join(" "), inputMode: "numeric" });
  }
  if (option.type === "list") {
    const set = document.createElement("fieldset");
    set.id = option.name;
    set.append(Object.assign(document.createElement("legend"), { textContent: title(option.name) }));
    for (const choice of option.item.choices) {
      const label = document.createElement("label");
      const box = Object.assign(document.createElement("input"), { type: "checkbox", name: option.name, value: choice,
                                                                   checked: (option.default || []).includes(choice) });
      label.append(box, ` ${choice}`);
      set.append(label);
    }
    return set;
  }
  if (option.choices) {
    const select = Object.assign(document.createElement("select"), { id: option.name, name: option.name });
    if (option.default === null) select.append(new Option("default", ""));
    for (const choice of option.choices) select.append(new Option(String(choice), String(choice)));
    select.value = option.default === null ? "" : String(option.default);
    return select;
  }
  const input = Object.assign(document.createElement("input"), { type: "number", id: option.name, name: option.name });
  input.step = option.type === "integer" ? "1" : "any";
  if (option.minimum !== undefined) input.min = String(option.minimum);
  if (option.maximum !== undefined) input.max = String(option.maximum);
  if (option.default === null) input.placeholder = "default"; else input.value = String(option.default);
  return input;
}
function addField(parent, option) {
  const element = control(option);
  element.title = option.help;
  if (option.type === "list" && option.item.choices) {
    if (option.video) element.classList.add("video-only");
    parent.append(element);
    return;
  }
  const label = Object.assign(document.createElement("label"), { htmlFor: option.name, textContent: title(option.name),
                                                                 title: option.help });
  if (option.video) { label.classList.add("video-only"); element.classList.add("video-only"); }
  parent.append(label, element);
}
async function loadOptions() {
  const answer = await api("GET", "/v1/options");
  const options = answer.options.filter((option) => !option.alias_of);  // another name of an option shown
  state.options = options;
  const form = $("options"), more = $("more-options-body"), details = $("more-options");
  const byName = Object.fromEntries(options.map((option) => [option.name, option]));
  for (const name of MAIN) {
    if (byName[name]) for (const node of fragment(byName[name])) form.insertBefore(node, details);
  }
  for (const [section, heading] of Object.entries(answer.sections)) {
    const rest = options.filter((option) => option.section === section && !MAIN.includes(option.name));
    if (!rest.length) continue;
    const title = Object.assign(document.createElement("h3"), { textContent: heading[0].toUpperCase() + heading.slice(1) });
    if (rest.every((option) => option.video)) title.classList.add("video-only");
    more.append(title);
    for (const option of rest) addField(more, option);
  }
  $("options-status").remove();
}
function fragment(option) {
  const holder = document.createElement("div");
  addField(holder, option);
  return [...holder.childNodes];
}
function valueOf(option) {
  const form = $("options");
  if (option.type === "boolean") return $(option.name).checked;
  if (option.type === "list" && !option.item.choices) return $(option.name).value.trim().split(/\s+/).map(Number);
  if (option.type === "list") {  // whole numbers (angles) as numbers; none ticked of a list that has no default: none
    const ticked = [...form.querySelectorAll(`input[name=${option.name}]:checked`)]
      .map((box) => option.item.type === "integer" ? Number(box.value) : box.value);
    return option.default === null && ticked.length === 0 ? null : ticked;
  }
  const text = $(option.name).value;
  if (text === "") return null;
  return option.type === "integer" || option.type === "number" ? Number(text) : text;
}
function options() {
  const chosen = {};
  for (const option of state.options) {
    if (option.video && !(state.target && state.target.kind === "video")) continue;
    const value = valueOf(option);
    if (value === null || JSON.stringify(value) === JSON.stringify(option.default)) continue;
    chosen[option.name] = value;
  }
  if (chosen.face_selector_mode === "reference" && !state.reference) delete chosen.face_selector_mode;
  return chosen;
}
function jobBody() {
  const body = { sources: state.sources.map((asset) => asset.id), target: state.target.id, options: options() };
  if (lipSync() && $("sound").value) body.audio = $("sound").value;
  if (body.options.face_selector_mode === "reference" && state.reference) {
    delete body.options.face_selector_mode;
    body.reference = state.reference;
  }
  return body;
}
// A job puts a source photo's face in only when its processors include the face swapper (none ticked: the default).
function needsSource() {
  const ticked = [...document.querySelectorAll("input[name=processors]:checked")].map((box) => box.value);
  return ticked.length === 0 || ticked.includes("face_swapper");
}
function changed() {
  $("sound-drop").hidden = !lipSync();
  const ready = state.sources.length || (!needsSource() && (!lipSync() || $("sound").value));
  $("run").disabled = !(state.target && ready);
  clearTimeout(state.previewTimer);
  state.previewTimer = setTimeout(preview, 150);
}
async function loadModels() {
  // A model the server does not hold is listed but cannot be chosen (the README says how to add one).
  try {
    const { models } = await api("GET", "/v1/models");
    const missing = new Set(models.filter((model) => model.state === "missing").map((model) => model.name));
    const swappers = models.filter((model) => model.kind === "swapper" && model.name !== "mesh");
    const held = swappers.filter((model) => model.state !== "missing").length;
    $("model-hint").hidden = held > 0;
    $("model-hint").textContent = "Only the embedded mesh swapper is installed on this server. The neural swappers and "
      + "enhancers (inswapper, hyperswap, GFPGAN, ...) become choices here once the server's operator places their "
      + "files in its --models-dir (the README's \"Neural models you bring\" says where to get them).";
    for (const select of $("options").querySelectorAll("select")) {
      for (const choice of select.options) {
        if (!missing.has(choice.value)) continue;
        choice.disabled = true;
        choice.textContent = `${choice.value} (not installed)`;
      }
    }
  } catch (err) { showError(err.message); }
}

// Preview and faces --------------------------------------------------------------------------------------------
async function preview() {
  const status = $("preview-status");
  if (lipSync()) {
    state.previewSeq++;  // a preview still on its way is not shown
    $("preview").hidden = true;
    status.textContent = "No preview with the lip syncer: the mouth follows the sound over time.";
    return;
  }
  if (!state.target || (needsSource() && !state.sources.length)) return;
  const seq = ++state.previewSeq;
  status.textContent = "Rendering the preview...";
  try {
    const response = await api("POST", "/v1/preview", { ...jobBody(), frame: Number($("frame").value) }, true);
    const blob = await response.blob();
    if (seq !== state.previewSeq) return;
    const image = $("preview");
    if (image.src) URL.revokeObjectURL(image.src);
    image.src = URL.createObjectURL(blob);
    image.hidden = false;
    image.dataset.version = String(seq);
    status.textContent = "Preview of one frame with the current options.";
    showError("");
  } catch (err) {
    if (seq !== state.previewSeq) return;
    status.textContent = "No preview.";
    showError(err.message);
  }
}
async function loadFaces() {
  const gallery = $("faces");
  const seq = ++state.facesSeq;
  if (!state.target) return;
  try {
    const { faces } = await api("POST", "/v1/faces", { target: state.target.id, frame: Number($("frame").value) });
    if (seq !== state.facesSeq) return;  // a newer list was asked for
    gallery.replaceChildren();
    if (!faces.length) gallery.textContent = "No faces found in the target.";
    for (const face of faces) {
      const button = document.createElement("button");
      button.type = "button";
      button.setAttribute("aria-pressed", "false");
      button.setAttribute("aria-label", `Face ${face.index + 1} (score ${face.score})`);
      const image = document.createElement("img");
      image.src = face.thumbnail;
      image.alt = "";
      button.append(image);
      button.addEventListener("click", () => {
        for (const other of gallery.querySelectorAll("button")) other.setAttribute("aria-pressed", "false");
        button.setAttribute("aria-pressed", "true");
        state.reference = { position: face.index, frame: Number($("frame").value) };
        $("face_selector_mode").value = "reference";
        changed();
      });
      gallery.append(button);
    }
  } catch (err) { showError(err.message); }
}

// Jobs ---------------------------------------------------------------------------------------------------------
function setProgress(fraction, job = null) {
  $("progress").value = fraction;
  $("progress-text").textContent = `${Math.round(fraction * 100)}%`;
  $("progress-detail").textContent = job ? detail(job) : "";
}
function detail(job) {
  const parts = [];
  if (job.total > 1) parts.push(`frame ${job.done} of ${job.total}`);
  if (job.fps) parts.push(`${job.fps.toFixed(1)} frames/s`);
  if (job.eta_seconds !== null && job.eta_seconds !== undefined) parts.push(`about ${Math.ceil(job.eta_seconds)} s left`);
  if (job.state === "queued") parts.push("waiting for a worker");
  return parts.join(", ");
}
function clearResult() {
  if (state.events) state.events.close();
  setProgress(0);
  $("result").replaceChildren();
  $("download").hidden = true;
}
async function run() {
  showError("");
  clearResult();
  try {
    const job = await api("POST", "/v1/jobs", jobBody());
    follow(job.id);
    refreshJobs();
  } catch (err) { showError(err.message); }
}
function follow(jobId) {
  if (state.events) state.events.close();
  state.job = jobId;
  const events = new EventSource(`/v1/jobs/${jobId}/events`);
  state.events = events;
  events.addEventListener("progress", (event) => {
    const job = JSON.parse(event.data);
    setProgress(job.progress, job);
    if (FINAL.includes(job.state)) {
      events.close();
      finished(job);
      refreshJobs();
    }
  });
  events.onerror = () => { events.close(); };
}
function finished(job) {
  if (job.state !== "succeeded") {
    showError(job.message || `the job was ${job.state}`);
    return;
  }
  const url = `/v1/jobs/${job.id}/output`;
  const video = job.media === "video";
  const figure = (src, caption, alt) => {
    const element = document.createElement(video ? "video" : "img");
    element.src = src;
    if (video) { element.controls = true; element.muted = true; } else { element.alt = alt; }
    const holder = document.createElement("figure");
    holder.append(Object.assign(document.createElement("figcaption"), { textContent: caption }), element);
    return holder;
  };
  $("result").replaceChildren(figure(`/v1/assets/${job.target}/content`, "Before", "The target before the swap"),
                              figure(url, "After", "The swapped result"));
  const link = $("download");
  link.href = url;
  link.hidden = false;
}
async function refreshJobs() {
  try {
    const { jobs } = await api("GET", "/v1/jobs?limit=20");
    const rows = jobs.map((job) => {
      const row = document.createElement("tr");
      const cells = [job.id.slice(0, 8), job.state, `${Math.round(job.progress * 100)}%`, job.message || ""];
      cells.forEach((text, index) => {
        const cell = document.createElement("td");
        if (index === 0) { const code = document.createElement("code"); code.textContent = text; cell.append(code); }
        else cell.textContent = text;
        if (index === 1) cell.className = `state-${job.state}`;
        row.append(cell);
      });
      const actions = document.createElement("td");
      if (!FINAL.includes(job.state)) actions.append(action("Cancel", async () => { await api("POST", `/v1/jobs/${job.id}/cancel`); refreshJobs(); }));
      else actions.append(action("Retry", async () => { const again = await api("POST", `/v1/jobs/${job.id}/retry`); follow(again.id); refreshJobs(); }));
      if (job.state === "succeeded") actions.append(action("Show", () => { setProgress(1); finished(job); }));
      if (FINAL.includes(job.state)) actions.append(action("Delete", async () => { await api("DELETE", `/v1/jobs/${job.id}`, undefined, true); if (state.job === job.id) clearResult(); refreshJobs(); refreshUploads(); }));
      row.append(actions);
      return row;
    });
    if (!rows.length) {
      const row = document.createElement("tr");
      const cell = document.createElement("td");
      cell.colSpan = 5;
      cell.className = "hint";
      cell.textContent = "No jobs yet.";
      row.append(cell);
      rows.push(row);
    }
    $("jobs").tBodies[0].replaceChildren(...rows);
  } catch (err) { /* the error line keeps the last user action's error */ }
}
async function refreshUploads() {
  try {
    const { assets, storage } = await api("GET", "/v1/assets");
    const mb = (bytes) => (bytes / 1048576).toFixed(1);
    $("storage").textContent = `${mb(storage.bytes)} MB of your ${mb(storage.limit_bytes)} MB in use (uploads and outputs).`;
    const rows = assets.map((asset) => {
      const row = document.createElement("tr");
      const when = new Date(asset.created * 1000).toLocaleString();
      for (const text of [asset.name, asset.kind, `${mb(asset.bytes)} MB`, when]) {
        row.append(Object.assign(document.createElement("td"), { textContent: text }));
      }
      const actions = document.createElement("td");
      actions.append(action("Delete", async () => {
        await api("DELETE", `/v1/assets/${asset.id}`, undefined, true);
        state.sources = state.sources.filter((kept) => kept.id !== asset.id);
        refreshUploads();
      }));
      row.append(actions);
      return row;
    });
    $("uploads").tBodies[0].replaceChildren(...rows);
    soundChoices(assets);
  } catch (err) { /* the error line keeps the last user action's error */ }
}
function action(label, handler) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "small secondary";
  button.textContent = label;
  button.addEventListener("click", () => handler().catch((err) => showError(err.message)));
  return button;
}

async function start() {
  try {
    if (!state.options.length) await loadOptions();
  } catch (err) { showError(err.message); return; }
  loadModels();
  refreshJobs();
  refreshUploads();
}

// Wiring -------------------------------------------------------------------------------------------------------
document.addEventListener("DOMContentLoaded", () => {
  $("source-file").addEventListener("change", (event) => addSources([...event.target.files]));
  $("target-file").addEventListener("change", (event) => event.target.files[0] && setTarget(event.target.files[0]));
  dropZone($("source-drop"), addSources);
  dropZone($("target-drop"), (files) => files[0] && setTarget(files[0]));
  $("sound-file").addEventListener("change", (event) => event.target.files[0] && addSound(event.target.files[0]));
  $("sound").addEventListener("change", changed);
  $("options").addEventListener("change", changed);
  $("options").addEventListener("submit", (event) => event.preventDefault());
  $("frame").addEventListener("input", (event) => { $("frame_value").textContent = event.target.value; });
  $("frame").addEventListener("change", () => { loadFaces(); changed(); });
  $("run").addEventListener("click", run);
  $("token-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const response = await fetch("/v1/session", { method: "POST",
                                                  headers: { Authorization: `Bearer ${$("token").value.trim()}` } });
    $("token").value = "";
    if (!response.ok) { showError((await response.json()).message); return; }
    $("token-form").hidden = true;
    showError("");
    start();
  });
  start();
  setInterval(refreshJobs, 3000);
});
