import { SHA256_SCRIPT } from "./sha256.generated";

/**
 * The upload page's one script (allowed by its hash in the page's CSP; no inline handlers).
 * It hashes the picked file part by part (each part with WebCrypto, the whole incrementally),
 * starts an upload, sends the parts the relay lacks three at a time with a progress bar,
 * retries a failed part by itself with backoff, completes, and waits until the relay has
 * verified the file. The upload id is kept in sessionStorage: after a reload, picking the
 * same file again resumes with the parts still missing. Written for any current browser;
 * the incremental SHA-256 is @noble/hashes, bundled by scripts/build-page-script.mjs
 * (`pageSha256`, which also carries the relay's `humanSize`). Everything it shows goes through
 * `textContent`.
 */
export const UPLOAD_SCRIPT = `"use strict";
(function () {
${SHA256_SCRIPT}
${String.raw`
var settings = document.getElementById("upload-settings").dataset;
var MAX_BYTES = Number(settings.maxBytes);
var MIN_PART = Number(settings.minPartBytes);
var MAX_PARTS = Number(settings.maxParts);
var PARALLEL = 3;
var ATTEMPTS = 8;
var base = location.pathname.replace(/\/+$/, "");
var storageKey = "airlock-upload:" + base;
var input = document.getElementById("file");
var drop = document.getElementById("drop");
var bar = document.getElementById("progress");
var statusLine = document.getElementById("status");
var busy = false;

function say(text) { statusLine.textContent = text; }
function sleep(ms) { return new Promise(function (resolve) { setTimeout(resolve, ms); }); }
function human(bytes) { return pageSha256.humanSize(bytes); }
function hex(buffer) {
  return Array.prototype.map.call(new Uint8Array(buffer), function (b) { return b.toString(16).padStart(2, "0"); }).join("");
}
function base64OfHex(text) {
  var binary = "";
  for (var i = 0; i < text.length; i += 2) binary += String.fromCharCode(parseInt(text.slice(i, i + 2), 16));
  return btoa(binary);
}
// The relay's part size for a file of this size (src/part-plan.ts partSizeFor).
function partSizeFor(size) {
  var MiB = 1048576;
  return Math.max(MIN_PART, Math.ceil((size + Math.ceil(size / 1000) + 1024) / MAX_PARTS / MiB) * MiB);
}
function partCount(size, partSize) { return Math.max(1, Math.ceil(size / partSize)); }
function partBlob(file, partSize, n) { return file.slice((n - 1) * partSize, Math.min(file.size, n * partSize)); }
function showProgress(fraction, text) {
  bar.hidden = false;
  bar.value = Math.max(0, Math.min(1, fraction));
  say(text);
}

function RelayError(message, status, code) {
  this.message = message; this.status = status; this.code = code;
}
function retryable(error) {
  return !(error instanceof RelayError) || error.status >= 500 || error.status === 408 || error.status === 429;
}
function api(method, path, body) {
  var init = { method: method, headers: { accept: "application/json" } };
  if (body !== undefined) { init.headers["content-type"] = "application/json"; init.body = JSON.stringify(body); }
  return fetch(base + path, init).then(function (response) {
    return response.json().catch(function () { return {}; }).then(function (json) {
      if (response.ok) return json;
      var error = json && json.error ? json.error : { code: "http_" + response.status, message: "the relay answered " + response.status };
      throw new RelayError(error.message, response.status, error.code);
    });
  });
}
async function patiently(what, work) {
  for (var attempt = 1; ; attempt++) {
    try { return await work(); } catch (error) {
      if (!retryable(error) || attempt >= ATTEMPTS) throw error;
      say("Connection trouble while " + what + "; trying again…");
      await sleep(Math.min(500 * Math.pow(2, attempt - 1), 8000));
    }
  }
}

async function hashFile(file, partSize) {
  var whole = pageSha256.createSha256(), parts = [], count = partCount(file.size, partSize);
  for (var n = 1; n <= count; n++) {
    var bytes = await partBlob(file, partSize, n).arrayBuffer();
    parts.push(hex(await crypto.subtle.digest("SHA-256", bytes)));
    whole.update(new Uint8Array(bytes));
    showProgress(0, "Reading the file: " + Math.round((n / count) * 100) + "%");
  }
  return { sha256: whole.hex(), partSha256: parts };
}

async function resumeOrStart(file) {
  var signature = [file.name, file.size, file.lastModified].join("/");
  var saved = null;
  try { saved = JSON.parse(sessionStorage.getItem(storageKey) || "null"); } catch (error) { saved = null; }
  if (saved && saved.signature === signature) {
    try { return await api("GET", "/uploads/" + encodeURIComponent(saved.uploadId)); } catch (error) { /* start afresh */ }
  }
  var digests = await hashFile(file, partSizeFor(file.size));
  var state = await patiently("starting the upload", function () {
    return api("POST", "/uploads", {
      name: file.name, size: file.size, contentType: file.type || undefined,
      sha256: digests.sha256, partSha256: digests.partSha256
    });
  });
  try { sessionStorage.setItem(storageKey, JSON.stringify({ uploadId: state.uploadId, signature: signature })); } catch (error) { /* private mode */ }
  return state;
}

function putPart(state, n, blob, sha256, onProgress) {
  return new Promise(function (resolve, reject) {
    var xhr = new XMLHttpRequest();
    xhr.open("PUT", base + "/uploads/" + encodeURIComponent(state.uploadId) + "/parts/" + n);
    xhr.setRequestHeader("x-amz-checksum-sha256", base64OfHex(sha256));
    xhr.upload.onprogress = function (event) { onProgress(event.loaded); };
    xhr.onload = function () {
      if (xhr.status >= 200 && xhr.status < 300) return resolve();
      var error = {};
      try { error = JSON.parse(xhr.responseText).error || {}; } catch (ignored) { error = {}; }
      reject(new RelayError(error.message || "the relay answered " + xhr.status, xhr.status, error.code));
    };
    xhr.onerror = xhr.onabort = xhr.ontimeout = function () { reject(new Error("the connection dropped")); };
    xhr.send(blob);
  });
}

async function sendParts(file, state) {
  var queue = state.missing.slice(), sent = {}, total = file.size || 1, held = file.size;
  queue.forEach(function (n) { held -= partBlob(file, state.partSize, n).size; });
  function paint() {
    var moved = held;
    for (var n in sent) moved += sent[n];
    showProgress(moved / total, "Uploading: " + human(moved) + " of " + human(file.size) + " (" + Math.floor((moved / total) * 100) + "%)");
  }
  async function sendOne(n) {
    var blob = partBlob(file, state.partSize, n);
    var sha256 = hex(await crypto.subtle.digest("SHA-256", await blob.arrayBuffer()));
    for (var attempt = 1; ; attempt++) {
      try {
        await putPart(state, n, blob, sha256, function (loaded) { sent[n] = loaded; paint(); });
        sent[n] = blob.size; paint();
        return;
      } catch (error) {
        sent[n] = 0; paint();
        if (!retryable(error) || attempt >= ATTEMPTS) throw error;
        say("Connection dropped while sending part " + n + "; trying again…");
        await sleep(Math.min(500 * Math.pow(2, attempt - 1), 8000));
      }
    }
  }
  async function worker() { while (queue.length > 0) await sendOne(queue.shift()); }
  paint();
  var workers = [];
  for (var i = 0; i < PARALLEL; i++) workers.push(worker());
  await Promise.all(workers);
}

async function upload(file) {
  if (file.size > MAX_BYTES) {
    say("This file is " + human(file.size) + "; this link takes files up to " + human(MAX_BYTES) + ". Pick a smaller file.");
    return;
  }
  var state = await resumeOrStart(file);
  if (state.status === "uploading") {
    await sendParts(file, state);
    showProgress(1, "Checking the upload…");
    state = await patiently("finishing the upload", function () {
      return api("POST", "/uploads/" + encodeURIComponent(state.uploadId) + "/complete");
    });
  }
  while (state.status === "verifying") {
    showProgress(1, "Verifying " + state.name + "…");
    await sleep(1000);
    state = await patiently("checking the upload", function () {
      return api("GET", "/uploads/" + encodeURIComponent(state.uploadId));
    });
  }
  try { sessionStorage.removeItem(storageKey); } catch (error) { /* private mode */ }
  showProgress(1, "Received: " + state.name + " (" + human(state.size) + "). You can close this page.");
  document.body.dataset.uploaded = "true";
}

function pick(file) {
  if (!file || busy) return;
  busy = true;
  input.disabled = true;
  upload(file).catch(function (error) {
    say("The upload failed: " + (error && error.message ? error.message : String(error)) + ". Pick the file again to retry.");
  }).then(function () {
    busy = false;
    input.disabled = document.body.dataset.uploaded === "true";
    input.value = "";
  });
}

input.addEventListener("change", function () { pick(input.files && input.files[0]); });
drop.addEventListener("dragover", function (event) { event.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", function () { drop.classList.remove("over"); });
drop.addEventListener("drop", function (event) {
  event.preventDefault();
  drop.classList.remove("over");
  pick(event.dataTransfer && event.dataTransfer.files[0]);
});
`}
})();
`;
