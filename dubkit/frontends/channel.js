// dubkit's live channel: renders a view's HTML and gives each of its players a source the
// front end can reach (see dubkit/frontends/detect.py for the paths). One ES module for
// anywidget, so it runs in JupyterLab, Notebook 7, Voila, VS Code, Colab and marimo alike.

const CHUNKS_IN_FLIGHT = 2;
const RATE_WINDOW_MS = 3000; // a Jupyter server's IOPub limit is measured over 3 s
const channels = new WeakMap(); // model -> {pending, blobs, sent}

function channelOf(model) {
  let channel = channels.get(model);
  if (!channel) {
    channel = { pending: new Map(), blobs: new Map(), log: [] };
    model.on("msg:custom", (msg, buffers) => answered(channel, msg, buffers));
    channels.set(model, channel);
  }
  return channel;
}

function answered(channel, msg, buffers) {
  if (!msg || msg.type !== "chunk") return;
  const id = `${msg.key}/${msg.rendition ? 1 : 0}/${msg.index}`;
  const waiting = channel.pending.get(id);
  if (!waiting) return;
  channel.pending.delete(id);
  if (msg.error) waiting.reject(new Error(msg.error));
  else waiting.resolve({ msg, buffer: buffers && buffers[0] });
}

function ask(model, channel, key, rendition, index) {
  const id = `${key}/${rendition ? 1 : 0}/${index}`;
  return new Promise((resolve, reject) => {
    channel.pending.set(id, { resolve, reject });
    model.send({ type: "chunk", key, rendition, index });
  });
}

async function paced(model, channel, bytes) {
  const rate = model.get("rate") || 0;
  if (!rate) return;
  const budget = (rate * RATE_WINDOW_MS) / 1000;
  for (;;) {
    const now = performance.now();
    channel.log = channel.log.filter((e) => now - e.at < RATE_WINDOW_MS);
    const used = channel.log.reduce((sum, e) => sum + e.bytes, 0);
    if (used + bytes <= budget || channel.log.length === 0) break;
    await new Promise((r) => setTimeout(r, RATE_WINDOW_MS - (now - channel.log[0].at) + 5));
  }
  channel.log.push({ at: performance.now(), bytes });
}

// The whole file over the comm, CHUNKS_IN_FLIGHT chunks at a time, as a blob: URL.
async function fetchOverComm(model, key, rendition, progress) {
  const channel = channelOf(model);
  const cached = channel.blobs.get(`${key}/${rendition}`);
  if (cached) return cached;
  const first = await ask(model, channel, key, rendition, 0);
  const { count, mime, chunk } = first.msg;
  const parts = new Array(count);
  parts[0] = first.buffer;
  let next = 1;
  let done = 1;
  const worker = async () => {
    while (next < count) {
      const index = next++;
      await paced(model, channel, chunk);
      parts[index] = (await ask(model, channel, key, rendition, index)).buffer;
      progress(++done / count);
    }
  };
  await Promise.all(Array.from({ length: CHUNKS_IN_FLIGHT }, worker));
  const url = URL.createObjectURL(new Blob(parts, { type: mime }));
  channel.blobs.set(`${key}/${rendition}`, { url, mime });
  return { url, mime };
}

function playable(el, entry) {
  if (!entry.codecs || typeof el.canPlayType !== "function") return true;
  return el.canPlayType(`${entry.mime}; codecs="${entry.codecs}"`) !== "";
}

function setSource(el, url) {
  if (el.tagName === "A") el.href = url;
  else el.src = url; // a player loads only what it needs (preload), as with any src
}

async function colabURL(port, path) {
  const kernel = globalThis.google && google.colab && google.colab.kernel;
  if (!kernel || typeof kernel.proxyPort !== "function") {
    throw new Error("google.colab.kernel.proxyPort is not on this page");
  }
  const base = await kernel.proxyPort(port, { cache: true });
  return base.replace(/\/$/, "") + path;
}

// A download over the comm is fetched when it is asked for, not with the page.
function fetchOnClick(model, root, el, key, rendition) {
  el.href = "#";
  const once = async (event) => {
    event.preventDefault();
    el.removeEventListener("click", once);
    const got = await fetchOverComm(model, key, rendition, (f) =>
      note(root, key, `loading ${Math.round(f * 100)} %`),
    );
    el.href = got.url;
    note(root, key, "");
    el.click();
  };
  el.addEventListener("click", once);
}

function note(root, key, text) {
  root.querySelectorAll(`[data-dubkit-note-for="${key}"]`).forEach((n) => {
    if (text) n.textContent = text;
    n.hidden = !text;
  });
}

async function resolveOne(model, root, el) {
  const key = el.getAttribute("data-dubkit-media");
  const entry = (model.get("media") || {})[key];
  if (!entry || el.dataset.dubkitResolved) return;
  el.dataset.dubkitResolved = "pending";
  try {
    const rendition = entry.rendition || !playable(el, entry);
    const own = el.getAttribute(el.tagName === "A" ? "href" : "src");
    if (own && !rendition) {
      el.dataset.dubkitResolved = "as-is"; // embedded, or the service's URL: it plays as it is
      return;
    }
    const how = rendition ? "comm" : entry.how; // a rendition is made in the kernel
    if (how === "comm" && el.tagName === "A") {
      fetchOnClick(model, root, el, key, rendition);
    } else if (how === "comm") {
      const got = await fetchOverComm(model, key, rendition, (f) =>
        note(root, key, `loading ${Math.round(f * 100)} %`),
      );
      setSource(el, got.url);
    } else if (how === "colab") {
      setSource(el, await colabURL(entry.port, entry.path));
    } else {
      setSource(el, entry.src);
    }
    el.dataset.dubkitResolved = how + (rendition ? "+rendition" : "");
    note(root, key, "");
  } catch (err) {
    el.dataset.dubkitResolved = "failed";
    note(root, key, `cannot play here: ${err.message}`);
  }
}

function resolveAll(model, root) {
  root.querySelectorAll("[data-dubkit-media]").forEach((el) => resolveOne(model, root, el));
}

// Redraw only what changed: a node equal to its last drawing is kept as it is (a player that
// is playing, a field being typed in); an element marked data-dubkit-part is kept and its
// children compared in turn; anything else that changed is replaced. ``old`` is the last
// drawing as parsed (the live DOM carries sources and states the channel added since).
function morph(live, old, fresh) {
  const lives = [...live.childNodes];
  const olds = old ? [...old.childNodes] : [];
  [...fresh.childNodes].forEach((node, i) => {
    const was = olds[i];
    const here = lives[i];
    if (here && was && was.isEqualNode(node)) return;
    const part = node.nodeType === 1 && node.dataset.dubkitPart;
    if (here && was && part && here.nodeType === 1 && here.dataset.dubkitPart === part) {
      [...here.attributes].forEach((a) => node.hasAttribute(a.name) || here.removeAttribute(a.name));
      [...node.attributes].forEach((a) => here.setAttribute(a.name, a.value));
      morph(here, was, node);
      return;
    }
    const copy = node.cloneNode(true);
    if (here) live.replaceChild(copy, here);
    else live.appendChild(copy);
  });
  lives.slice(fresh.childNodes.length).forEach((node) => node.remove());
}

function parse(html) {
  const template = document.createElement("template");
  template.innerHTML = html;
  return template.content;
}

// Controls in the HTML say what they do (data-dubkit-action); the kernel is told, with the
// value of every named field (and the file a data-dubkit-file names), and answers by
// changing the HTML.
async function act(model, root, el) {
  const fields = {};
  root.querySelectorAll("[name]").forEach((f) => {
    if (f.type !== "file") fields[f.name] = f.type === "checkbox" ? f.checked : f.value;
  });
  const value = el.type === "checkbox" ? el.checked : el.value ?? "";
  const message = { type: "action", action: el.dataset.dubkitAction, key: el.dataset.dubkitKey || "", value, fields };
  const picker = el.dataset.dubkitFile && root.querySelector(`#${CSS.escape(el.dataset.dubkitFile)}`);
  const file = picker && picker.files && picker.files[0];
  if (file) {
    message.file_name = file.name;
    model.send(message, undefined, [await file.arrayBuffer()]);
  } else {
    model.send(message);
  }
}

function listen(model, root) {
  // A download is a link (Enter follows it); Space takes it too, as it would a button: every
  // download link, whatever its class (a teacher's CSV, a take, a dub's subtitles).
  // A control that is not a button (a line on a timeline drawn in SVG: role=button) takes
  // Enter and Space as a button does.
  const CONTROL = "button[data-dubkit-action], [role='button'][data-dubkit-action]";
  root.addEventListener("keydown", (event) => {
    const link = event.target.closest && event.target.closest("a[download]");
    if (link && event.key === " ") {
      event.preventDefault();
      link.click();
    }
    const drawn = event.target.closest && event.target.closest("[role='button'][data-dubkit-action]");
    if (drawn && root.contains(drawn) && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      act(model, root, drawn);
    }
  });
  root.addEventListener("click", (event) => {
    const el = event.target.closest(CONTROL);
    if (el && root.contains(el) && !el.disabled) act(model, root, el);
  });
  root.addEventListener("change", (event) => {
    const el = event.target.closest("[data-dubkit-action]");
    if (el && root.contains(el) && el.tagName !== "BUTTON") act(model, root, el);
  });
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.className = "dubkit-live";
  el.appendChild(root);
  listen(model, root);
  let previous = null;
  const draw = () => {
    // The focused element as this widget's own tree sees it: inside a shadow root (marimo),
    // document.activeElement is only the shadow host.
    const scope = root.getRootNode();
    const active = () => scope.activeElement || document.activeElement;
    const focused = root.contains(active()) ? active().id : "";
    const fresh = parse(model.get("value") || "");
    morph(root, previous, fresh);
    previous = fresh;
    const again = focused && root.querySelector(`#${CSS.escape(focused)}`);
    if (again && again !== active()) again.focus(); // a redraw keeps the focus
    resolveAll(model, root);
  };
  model.on("change:value", draw);
  model.on("change:media", () => resolveAll(model, root));
  draw();
  return () => {
    model.off("change:value", draw);
  };
}

export default { render };
