// tracedash client-side helpers (served by Dash from assets/).

// plotly.js: dcc.Graph loads it from window._dashPlotlyJSURL when the first figure mounts, and Dash's renderer
// sets that to the full 4.8 MB bundle. Where the page preloads a partial bundle of the same plotly.js version
// (<link rel="preload" id="tracedash-plotly-js">, see dashboard/figures/plotly_js.py), that URL is kept.
(function () {
  const link = document.getElementById("tracedash-plotly-js");
  if (!link || !link.href) { return; }
  const url = link.href;
  Object.defineProperty(window, "_dashPlotlyJSURL", {configurable: true, get: function () { return url; },
                                                     set: function () {}});
})();

// String.prototype.trim at the engine's speed. Dash's polyfill bundle (core-js 2, loaded first) replaces the
// browser's own with two regular-expression replaces, because its list of white space still holds U+180E, which
// Unicode 6.3 took out. Plotly parses every bar's colour at every draw and trims it: 30 ms of each zoom of the
// 108k sample's figures went there (docs/benchmarks.md, zoom round trip). This is the specification's trim.
(function () {
  const space = c => c === 32 || (c >= 9 && c <= 13) || c === 160 || c === 5760 || (c >= 8192 && c <= 8202) ||
    c === 8232 || c === 8233 || c === 8239 || c === 8287 || c === 12288 || c === 65279;
  Object.defineProperty(String.prototype, "trim", {configurable: true, writable: true, value: function trim() {
    "use strict";  // a null or undefined `this` reaches the check as it is
    if (this === null || this === undefined) { throw new TypeError("String.prototype.trim called on null or undefined"); }
    const s = String(this);
    let a = 0, b = s.length;
    while (a < b && space(s.charCodeAt(a))) { a += 1; }
    while (b > a && space(s.charCodeAt(b - 1))) { b -= 1; }
    return a === 0 && b === s.length ? s : s.slice(a, b);
  }});
})();

// Two things after every Plotly.react of a figure:
// - Numeric arrays arrive base64-encoded ({dtype, bdata}) and Plotly decodes them into new typed arrays at every
//   Plotly.react, where new arrays read as new data: the whole figure recomputed. Once a figure is drawn its
//   traces keep the arrays Plotly decoded, so a react with the same figure only lays it out again.
// - After a relayout (a zoom, a pan, W/S/A/D, a hover's flow line) dcc.Graph copies the changed layout keys into
//   its figure prop, and that new prop makes it react again with the whole figure: a second redraw of what the
//   relayout just drew (40-140 ms of a 108k-kernel timeline, before the zoom's request could leave;
//   docs/benchmarks.md, zoom round trip). A listener that runs before dcc.Graph's writes those keys into the
//   prop's layout first, so dcc.Graph finds them equal and the prop, the drawing and the store stay as they were.
(function () {
  const isSpec = v => !!v && typeof v === "object" && !Array.isArray(v) && !ArrayBuffer.isView(v) &&
                      typeof v.dtype === "string" && v.bdata !== undefined;
  const isPlain = v => !!v && typeof v === "object" && !Array.isArray(v) && !ArrayBuffer.isView(v);
  function keepDecoded(input, full) {
    Object.keys(input).forEach(k => {
      const v = input[k], f = full[k];
      if (isSpec(v)) {
        if (Array.isArray(f) || ArrayBuffer.isView(f)) { input[k] = f; }
      } else if (isPlain(v) && isPlain(f)) {
        keepDecoded(v, f);
      }
    });
  }
  function graphOf(gd) {  // the dcc.Graph component drawing into gd (its React instance: it holds gd as a ref)
    const key = Object.keys(gd).find(k => k.indexOf("__reactFiber$") === 0);
    for (let f = key ? gd[key] : null; f; f = f.return) {
      const s = f.stateNode;
      if (s && s.gd && s.gd.current === gd && s.props) { return s; }
    }
    return null;
  }
  const SIZE_KEYS = ["autosize", "width", "height"];  // dcc.Graph's resize machinery: not copied by it either
  function keepFigureInStep(gd) {
    if (!gd || !gd._ev || typeof gd._ev.prependListener !== "function") { return; }
    // a figure plotly.js drew anew (Plotly.newPlot purges its listeners) gets its listener again
    if (gd._tracedashInStep && gd._ev.listeners("plotly_relayout").indexOf(gd._tracedashInStep) >= 0) { return; }
    const graph = graphOf(gd);
    if (!graph) { return; }
    gd._tracedashInStep = (ev) => {
      const fig = graph.props.figure;
      if (!ev || !fig || !fig.layout || !gd.layout) { return; }
      Object.keys(ev).forEach(k => {
        const top = k.split(".")[0].split("[")[0];  // 'xaxis.range[0]' -> 'xaxis', as dcc.Graph reads it
        if (SIZE_KEYS.indexOf(top) < 0 && gd.layout[top] !== undefined) {
          fig.layout[top] = structuredClone(gd.layout[top]);
        }
      });
    };
    gd._ev.prependListener("plotly_relayout", gd._tracedashInStep);
  }
  // A zoom, pan or reset of the timeline or the Gantt goes to the view state from the figure's own relayout event
  // (tracedashXRange). A clientside callback on dcc.Graph's relayoutData did it before: one more round of Dash's
  // callback machinery (~20 of a zoom's 55 store updates, each ~2 ms of the browser's one thread) before the
  // zoom's request could leave (docs/benchmarks.md, zoom round trip).
  function sendXRange(gd) {
    const id = figureOf(gd);
    if (!id || !gd || !gd._ev || (gd._tracedashX && gd._ev.listeners("plotly_relayout").indexOf(gd._tracedashX) >= 0)) {
      return;
    }
    gd._tracedashX = ev => window.tracedashXRange(id, gd, ev);
    gd._ev.on("plotly_relayout", gd._tracedashX);
  }
  // The figure the user moved draws the server's answer first. After a zoom or pan of the timeline or the Gantt
  // the server redraws both at the new window and the two answers land in either order; the other figure's redraw
  // (the Gantt of a big trace at a wide window is slow) held the browser's one thread while the moved figure's
  // answer waited behind it. Now the other figure's Plotly.react waits while an answer for the moved one
  // is asked for, on its way or being drawn (at most MOVED_FIRST_MS after the move).
  const TIME_FIGURES = ["timeline", "gantt"], MOVED_FIRST_MS = 3000;
  let moved = null, movedDrawing = 0, free = 0;
  const waitingReacts = [];
  window.tracedashMoved = id => { moved = {id: id, at: performance.now()}; };
  function figureOf(g) {
    for (let e = g; e; e = e.parentElement) { if (TIME_FIGURES.indexOf(e.id) >= 0) { return e.id; } }
    return null;
  }
  function answerAwaited(id) {  // a callback that writes figure `id` is requested, running or being applied
    const cbs = window.store && window.store.getState && window.store.getState().callbacks;
    const key = ".." + id + ".figure..";
    return !!cbs && ["requested", "prioritized", "blocked", "executing", "watched", "executed"].some(
      k => (cbs[k] || []).some(c => (".." + ((c && c.callback && c.callback.output) || "") + "..").indexOf(key) >= 0));
  }
  function movedPending() {
    if (!moved) { return false; }
    if (performance.now() - moved.at > MOVED_FIRST_MS) { moved = null; return false; }
    return movedDrawing > 0 || answerAwaited(moved.id);
  }
  function releaseWaiting() {  // twice free 20 ms apart: React applies an answer a moment after the store has it
    free = movedPending() ? 0 : free + 1;
    if (free < 2 && moved) { return; }
    clearInterval(releaseWaiting.timer);
    releaseWaiting.timer = null;
    waitingReacts.splice(0).forEach(run => run());
  }
  // A figure's PNG file name says its window (config.toImageButtonOptions.filename), so each zoom's config
  // differs, and plotly.js 3 answers a Plotly.react whose config differs with a whole new plot followed by the
  // react: every zoom drew both figures twice and lost what the user had set in the figure (a phase hidden in
  // the legend came back). The new file name goes into the drawn figure's context first; any other change of
  // the config still gets its new plot.
  function beforeServerFigure(g, fig) {
    // ...and on the time axis the x range the server sends is the window: the user's own x moves (a drag, a
    // double-click's autorange), which plotly.js would put back over it while the layout's uirevision stays, are
    // forgotten
    const edits = g && g._fullLayout && g._fullLayout._preGUI;
    if (edits && fig && fig.layout && fig.layout.meta && fig.layout.meta.time_axis) {
      Object.keys(edits).forEach(k => { if (k.indexOf("xaxis") === 0) { delete edits[k]; } });
    }
    const next = fig && fig.config && fig.config.toImageButtonOptions;
    const ctx = g && g._context;
    if (!next || !ctx || !ctx.toImageButtonOptions || ctx.toImageButtonOptions.filename === next.filename) { return; }
    ctx.toImageButtonOptions = Object.assign({}, ctx.toImageButtonOptions, {filename: next.filename});
  }
  function wrap(P) {
    if (!P || P.tracedashKeepsDecoded || typeof P.react !== "function") { return P; }
    const react = P.react;
    function draw(self, args, g, id) {
      const mine = !!moved && id === moved.id;
      if (mine) { movedDrawing += 1; }
      let out;
      try { out = react.apply(self, args); } catch (e) { if (mine) { movedDrawing -= 1; } throw e; }
      Promise.resolve(out).then(() => {
        ((g && g._fullData) || []).forEach(t => { if (t && t._input) { keepDecoded(t._input, t); } });
        keepFigureInStep(g);
        sendXRange(g);
      }, () => {}).then(() => { if (mine) { movedDrawing -= 1; } });
      return out;
    }
    P.react = function (gd) {
      const self = this, args = arguments;
      const g = typeof gd === "string" ? document.getElementById(gd) : gd;
      beforeServerFigure(g, args[1]);
      const id = figureOf(g);
      if (!id || !moved || id === moved.id || (!waitingReacts.length && !movedPending())) {
        return draw(self, args, g, id);
      }
      return new Promise((resolve, reject) => {
        waitingReacts.push(() => { try { resolve(draw(self, args, g, id)); } catch (e) { reject(e); } });
        free = 0;
        if (!releaseWaiting.timer) { releaseWaiting.timer = setInterval(releaseWaiting, 20); }
      });
    };
    P.tracedashKeepsDecoded = true;
    return P;
  }
  if (window.Plotly) {
    wrap(window.Plotly);
  } else {  // plotly.js loads later (dcc.Graph adds its script): wrapped as it sets window.Plotly
    let plotly;
    Object.defineProperty(window, "Plotly", {configurable: true, enumerable: true,
                                             get: function () { return plotly; },
                                             set: function (v) { plotly = wrap(v); }});
  }
})();
// The x range of the timeline or the dispatch Gantt (they share the session time axis) after a zoom, pan or reset
// (double-click), written to the view state's input (the x-range store); nothing for an autosize, and nothing from
// a figure that is not on the time axis (a summary's bar chart of totals). The other figure follows when the
// server redraws it at the window: redrawing it here as well (it was, with Plotly.relayout) held the browser's one
// thread for as long again before the zoom's request could leave (docs/benchmarks.md, zoom round trip).
window.tracedashXRange = function (id, gd, ev) {
  const dc = window.dash_clientside, st = window.store && window.store.getState && window.store.getState();
  if (!ev || !gd || !dc || !dc.set_props || !st || !st.paths || !st.paths.strs || !st.paths.strs["x-range"]) { return; }
  if (gd.layout && !(gd.layout.meta && gd.layout.meta.time_axis)) { return; }
  if (gd._tracedashRestoring) { gd._tracedashRestoring = false; return; }  // the relayout just below
  let out = null;
  if (ev["xaxis.autorange"]) {
    // A double-click on a page that shows the whole trace already changes no state, so the server redraws
    // nothing: Plotly's own autorange (padded) would leave this figure out of step with the other one. It
    // goes back to the whole trace's window (the timeline's meta.x_extent_s, where the S key stops) instead.
    const tl = document.querySelector("#timeline .js-plotly-plot");
    const whole = tl && tl.layout && tl.layout.meta && tl.layout.meta.x_extent_s;
    if (Array.isArray(whole) && whole.length === 2 && !/[?&]t0_ns=/.test(window.location.search)) {
      gd._tracedashRestoring = true;
      setTimeout(() => window.Plotly.relayout(gd, {"xaxis.range": whole.slice()}), 0);
      return;
    }
    out = {"xaxis.autorange": true};
  } else if (ev["xaxis.range[0]"] !== undefined && ev["xaxis.range[1]"] !== undefined) {
    out = {"xaxis.range": [ev["xaxis.range[0]"], ev["xaxis.range[1]"]]};
  } else if (Array.isArray(ev["xaxis.range"])) {
    out = {"xaxis.range": ev["xaxis.range"].slice()};
  }
  if (!out) { return; }
  window.tracedashMoved(id);
  out.at = Date.now();  // each move is new to the state, also a second reset
  dc.set_props("x-range", {data: out});
};

window.dash_clientside = Object.assign({}, window.dash_clientside, {
  tracedash: {
    // Download a figure as SVG under the same meaningful file name as its PNG.
    // "Steps from": a preset picked in the list goes into the box (the state's control); a value typed in
    // the box shows as its preset in the list, or as "rule" for a regular expression.
    stepsSource: function (preset, text) {
      const nu = window.dash_clientside.no_update;
      const ctx = window.dash_clientside.callback_context;
      const trig = (ctx && ctx.triggered && ctx.triggered.length) ? ctx.triggered[0].prop_id : "";
      if (trig.indexOf("steps-preset.") === 0) {
        return (preset && preset !== "rule") ? [preset, nu] : [nu, nu];
      }
      const presets = ["auto", "seed", "vllm", "sglang", "trtllm", "torch"];
      const t = String(text || "").trim().toLowerCase() || "auto";
      const shown = presets.indexOf(t) >= 0 ? t : "rule";
      return [nu, shown === preset ? nu : shown];
    },
    downloadSvg: function (n, id) {
      const gd = document.querySelector("#" + id.graph + " .js-plotly-plot");
      if (!gd || !window.Plotly) { return window.dash_clientside.no_update; }
      const opts = (gd._context && gd._context.toImageButtonOptions) || {};
      window.Plotly.downloadImage(gd, {format: "svg", filename: opts.filename || ("tracedash_" + id.graph),
                                       width: gd._fullLayout.width, height: gd._fullLayout.height});
      return "Download this figure as SVG";
    },
    // Copy the address bar (which always holds the current view) to the clipboard. A browser or a policy may refuse
    // the Clipboard API: the old way is tried then, and the button says what happened.
    copyLink: function (n) {
      const href = window.location.href;
      window.tracedashLastCopiedLink = href;
      // "Copy failed" is short so the header keeps its one row (the address bar holds the link)
      const copied = "Link copied", failed = "Copy failed";
      const byCommand = function () {
        const t = document.createElement("textarea"); t.value = href; document.body.appendChild(t);
        try { t.select(); return document.execCommand("copy"); } catch (e) { return false; } finally { t.remove(); }
      };
      // The answer shows for a few seconds, then the button reads "Copy link" again: after a zoom the address bar
      // holds another link, which "Link copied" would claim too.
      const shown = function (text) {
        clearTimeout(window.tracedashCopyTimer);
        window.tracedashCopyTimer = setTimeout(function () {
          window.dash_clientside.set_props("copy-link", {children: "Copy link"});
        }, 3000);
        return text;
      };
      if (navigator.clipboard && navigator.clipboard.writeText) {  // Dash waits for the promise's answer
        return navigator.clipboard.writeText(href).then(
          function () { return shown(copied); }, function () { return shown(byCommand() ? copied : failed); });
      }
      return shown(byCommand() ? copied : failed);
    },
    // Previous / Next of the timeline search: {n, dir} for the view state (the server goes to the occurrence).
    searchStep: function (prev, next, submit) {
      const ctx = window.dash_clientside.callback_context;
      const trig = (ctx && ctx.triggered && ctx.triggered.length) ? ctx.triggered[0].prop_id : "";
      if (!trig) { return window.dash_clientside.no_update; }
      return {n: Date.now() + Math.random(), dir: trig.indexOf("search-prev.") === 0 ? -1 : 1};
    },
    // Sorts and filters the user makes, per table. The first state a grid reports (when drawn) is the
    // link's own: it is recorded, not sent, so opening a link starts no second round of callbacks.
    gridEvents: function () {
      const nu = window.dash_clientside.no_update;
      const tables = ["kernels", "api", "nvtx", "dispatches", "gaps"];
      const args = Array.from(arguments);
      const n = tables.length;
      const prev = args[2 * n] || {sorts: {}, filters: {}};
      const seen = window.tracedashGridSeen = window.tracedashGridSeen || {};
      const sortKey = cs => JSON.stringify((cs || []).filter(c => c && c.sort).map(c => [c.colId, c.sort, c.sortIndex]));
      const out = {sorts: Object.assign({}, prev.sorts), filters: Object.assign({}, prev.filters)};
      let changed = false;
      tables.forEach((t, i) => {
        const cs = args[i], fm = args[n + i];
        const gridId = {kernels: "kernel-table", api: "api-table", nvtx: "nvtx-table", dispatches: "dispatch-table",
                        gaps: "gap-table"}[t];
        const root = document.getElementById(gridId);
        const token = root ? root : null;  // a re-rendered page has new grids: their first report is new
        if (cs !== undefined && cs !== null) {
          const k = sortKey(cs);
          const s = seen["s:" + t];
          if (!s || s.el !== token) { seen["s:" + t] = {el: token, k: k}; }
          else if (s.k !== k) { s.k = k; out.sorts[t] = cs; changed = true; }
        }
        if (fm !== undefined && fm !== null) {
          const k = JSON.stringify(fm);
          const f = seen["f:" + t];
          if (!f || f.el !== token) { seen["f:" + t] = {el: token, k: k}; }
          else if (f.k !== k) { f.k = k; out.filters[t] = fm; changed = true; }
        }
      });
      return changed ? out : nu;
    },
    // Mount a component kept as data (e.g. a finding's evidence grid) the first time its box is opened.
    mountOnOpen: function (n, component, mounted) {
      const has = Array.isArray(mounted) ? mounted.length > 0 : !!mounted;
      return (n && component && !has) ? component : window.dash_clientside.no_update;
    },
    // A page that arrived without its views drawn asks each view's callback once (see views.prerender); one
    // waiting on its trace's load leaves that to the load poll, which asks them as the load ends (load_banner.py).
    renderKick: function (prerendered, pollDisabled) {
      return (prerendered || pollDisabled === false) ? window.dash_clientside.no_update : Date.now();
    },
    // The load preview the poll sent (load_banner.py) into the overview and the timeline, until their views render.
    showPreview: function (data) {
      const none = window.dash_clientside.no_update;
      return (data && data.figure) ? [data.cards, data.figure] : [none, none];
    },
    // A click on a table row: the row's interval and kind for the view state (zoom + mark).
    // Rows carry row_id plus start_ns and end_ns (an idle gap, a dispatch, a kernel's longest run).
    rowClick: function (gapCell, dispatchCell, kernelCell, ganttClick, gapRows, dispatchRows, kernelRows) {
      const nu = window.dash_clientside.no_update;
      const ctx = window.dash_clientside.callback_context;
      const trig = (ctx && ctx.triggered && ctx.triggered.length) ? ctx.triggered[0].prop_id : "";
      if (trig.indexOf("gantt.") === 0) {  // a Gantt bar: its step, as its dispatch row; a run bar: its window
        const pt = ganttClick && ganttClick.points && ganttClick.points[0];
        const cd = pt && pt.customdata;
        if (!cd || cd.length < 4 || !(cd[0] >= 0)) { return nu; }
        const s = Number(cd[1]), e = Number(cd[2]);
        if (!isFinite(s) || !isFinite(e) || e <= s) { return nu; }
        return {kind: Number(cd[3]) > 1 ? "window" : "dispatch", start_ns: s, end_ns: e, at: Date.now()};
      }
      const pick = trig.indexOf("gap-table.") === 0 ? ["gap", gapCell, gapRows]
        : trig.indexOf("dispatch-table.") === 0 ? ["dispatch", dispatchCell, dispatchRows]
        : trig.indexOf("kernel-table.") === 0 ? ["kernel", kernelCell, kernelRows] : null;
      if (!pick) { return nu; }
      const [kind, cell, rows] = pick;
      if (!cell || cell.rowId === undefined || !Array.isArray(rows)) { return nu; }
      const row = rows.find(r => String(r.row_id) === String(cell.rowId));
      if (!row) { return nu; }
      const s = Number(row.start_ns), e = Number(row.end_ns);
      if (!isFinite(s) || !isFinite(e) || e <= s) { return nu; }
      const gd = document.querySelector("#timeline");
      if (gd) { gd.scrollIntoView({behavior: "smooth", block: "center"}); }
      return {kind: kind, start_ns: s, end_ns: e, at: Date.now()};
    }
  }
});

// The address bar holds the view. The server writes the view's query into a store (view-search on the dashboard,
// cmp-search on the compare page); each new value goes to the address bar: replaceState for the canonical form of
// an opened link, pushState for a change (Back undoes it). A listener on Dash's store sees the value as it lands; a
// clientside callback did this before, one more round of Dash's callback machinery in every zoom.
(function () {
  const IDS = ["view-search", "cmp-search"];
  let seen, paths = null, where = [];
  function write(data) {
    if (!data || typeof data.search !== "string") { return; }
    const search = data.search === "?" ? "" : data.search;
    if (window.location.search === search) { return; }
    const url = window.location.pathname + search + window.location.hash;
    if (data.replace) { window.history.replaceState(window.history.state, "", url); }
    else { window.history.pushState(window.history.state, "", url); }
  }
  function check(store) {
    const st = store.getState();
    if (st.paths !== paths) {  // where the stores sit in the layout, found again when the layout changes
      paths = st.paths;
      where = IDS.map(id => paths && paths.strs && paths.strs[id]).filter(Boolean);
    }
    where.forEach(path => {
      let node = st.layout;
      for (let i = 0; node && i < path.length; i++) { node = node[path[i]]; }
      const data = node && node.props && node.props.data;
      if (data !== undefined && data !== seen) { seen = data; write(data); }
    });
  }
  (function attach() {
    const store = window.store;
    if (!store || typeof store.subscribe !== "function") { setTimeout(attach, 20); return; }
    store.subscribe(() => check(store));
    check(store);
  })();
})();

// Upload: "Open file…" (#upload-button) or a file dropped anywhere on the page is sent raw to POST
// /upload (streamed to disk on the server, never base64 in a callback); on success the page opens the
// new trace by its id. Errors appear as an alert in #upload-alert (text only).
(function () {
  function setStatus(text) {
    const el = document.getElementById("upload-status");
    if (el) { el.textContent = text; }
  }
  function showError(text) {
    const box = document.getElementById("upload-alert");
    if (!box) { window.alert(text); return; }
    box.textContent = "";
    const div = document.createElement("div");
    div.className = "alert alert-error"; div.setAttribute("role", "alert"); div.textContent = text;
    div.title = "Click to dismiss"; div.addEventListener("click", () => div.remove());
    box.appendChild(div);
  }
  function send(file) {
    const button = document.getElementById("upload-button");
    if (!button) { return; }
    const limit = Number(button.getAttribute("data-max-bytes") || 0);
    const box = document.getElementById("upload-alert");
    if (box) { box.textContent = ""; }
    if (file.size === 0) { showError(file.name + ": the file is empty (0 bytes)"); return; }
    if (limit && file.size > limit) {
      showError(file.name + ": " + Math.round(file.size / 1048576) + " MiB is over this server's upload limit of " +
                Math.round(limit / 1048576) + " MiB");
      return;
    }
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "upload");
    xhr.setRequestHeader("X-Requested-With", "tracedash");
    xhr.setRequestHeader("X-Trace-Name", encodeURIComponent(file.name));
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) { setStatus("uploading " + Math.round(100 * e.loaded / e.total) + " %"); }
    };
    xhr.onerror = () => { setStatus(""); showError(file.name + ": the upload failed (connection lost)"); };
    xhr.onload = () => {
      setStatus("");
      let body = {};
      try { body = JSON.parse(xhr.responseText); } catch (e) { body = {}; }
      if (xhr.status === 200 && body.trace) {
        setStatus("opening " + body.name);
        window.location.assign(window.location.pathname + "?trace=" + encodeURIComponent(body.trace));
      } else {
        showError(body.error || (file.name + ": the server refused the upload (HTTP " + xhr.status + ")"));
      }
    };
    setStatus("uploading…");
    xhr.send(file);
  }
  window.tracedashUpload = send;
  document.addEventListener("click", (e) => {
    if (!e.target || e.target.id !== "upload-button") { return; }
    const input = document.createElement("input");
    input.type = "file"; input.accept = ".sqlite,.json,.gz,application/json,application/gzip";
    input.style.display = "none";
    input.addEventListener("change", () => { if (input.files.length) { send(input.files[0]); } input.remove(); });
    document.body.appendChild(input);
    input.click();
  });
  document.addEventListener("dragover", (e) => {
    if (document.getElementById("upload-button") && e.dataTransfer && Array.from(e.dataTransfer.types).includes("Files")) {
      e.preventDefault(); document.body.classList.add("dropping");
    }
  });
  document.addEventListener("dragleave", (e) => {
    if (!e.relatedTarget) { document.body.classList.remove("dropping"); }
  });
  document.addEventListener("drop", (e) => {
    document.body.classList.remove("dropping");
    if (!document.getElementById("upload-button") || !e.dataTransfer || !e.dataTransfer.files.length) { return; }
    e.preventDefault();
    send(e.dataTransfer.files[0]);
  });
})();

// Shift+Enter in the search box goes to the previous occurrence (Enter, the box's own submit, to the next).
document.addEventListener("keydown", (e) => {
  const box = e.target;
  if (!box || box.id !== "timeline-search" || e.key !== "Enter" || !e.shiftKey) { return; }
  const dc = window.dash_clientside;
  if (!dc || !dc.set_props) { return; }
  e.preventDefault();
  e.stopPropagation();
  dc.set_props("timeline-search", {value: box.value});
  dc.set_props("search-step", {data: {n: Date.now() + Math.random(), dir: -1}});
}, true);
// Keyboard navigation of the timeline and the step Gantt (the amounts and the list: dashboard/app/keys_help.py,
// read from the overlay's data attributes). W/S/A/D move the x axis with Plotly.relayout, as a drag does (the
// window reaches the state and the link through the relayout listener, tracedashXRange, and the server redraws
// both figures at it); F and Escape go to the state callback (ids.KEY_EVENT). Nothing while typing in a box, nor with Ctrl, Alt or Meta held.
(function () {
  const GRAPHS = ["timeline", "gantt"];
  // The graph under the pointer, else the timeline: the link's window is drawn there first. (The one the pointer
  // was last over could be the Gantt with an older window still arriving from the server.)
  let active = "timeline";
  let pointer = null;       // the pointer's last position (client px)
  let presses = 0;
  const plotOf = id => document.querySelector("#" + id + " .js-plotly-plot");
  const onTimeAxis = gd => !!(gd && gd.layout && gd.layout.meta && gd.layout.meta.time_axis && gd._fullLayout &&
                              gd._fullLayout.xaxis && gd._fullLayout._size);
  function amounts() {
    const d = (document.getElementById("keys-help") || {}).dataset || {};
    return {zoom: Number(d.zoom) || 2, pan: Number(d.pan) || 0.25, minNs: Number(d.minNs) || 100};
  }
  function extentNs() {  // the whole trace's window, from the timeline's meta (render.timeline_view_spec)
    for (const id of GRAPHS) {
      const gd = plotOf(id);
      const e = gd && gd.layout && gd.layout.meta && gd.layout.meta.x_extent_s;
      if (Array.isArray(e) && e.length === 2) { return [Math.round(e[0] * 1e9), Math.round(e[1] * 1e9)]; }
    }
    return null;
  }
  function pointerNs(gd, a, b) {  // the time under the pointer when it is over gd's plot area, else null
    if (!pointer) { return null; }
    const r = gd.getBoundingClientRect(), s = gd._fullLayout._size;
    const x = pointer.x - r.left - s.l, y = pointer.y - r.top - s.t;
    if (x < 0 || x > s.w || y < 0 || y > s.h) { return null; }
    return a + (b - a) * x / s.w;
  }
  // The new window [lo, hi] (integer ns) for key k, "all" for the whole trace, or null for no change.
  function nextWindow(k, gd, a, b) {
    const am = amounts(), w = b - a, ext = extentNs();
    let lo, hi;
    if (k === "w" || k === "s") {
      const f = k === "w" ? 1 / am.zoom : am.zoom;
      if (k === "w" && w * f < am.minNs) { return null; }
      const p = pointerNs(gd, a, b);
      const c = p === null ? (a + b) / 2 : p;
      lo = Math.round(c - (c - a) * f); hi = Math.round(c + (b - c) * f);
    } else {
      const step = Math.round(w * am.pan) * (k === "a" ? -1 : 1);
      lo = a + step; hi = b + step;
    }
    if (ext) {
      if (hi - lo >= ext[1] - ext[0]) {
        if (k === "s") { return (a <= ext[0] && b >= ext[1]) ? null : "all"; }
        // as wide as the trace or wider (the whole trace, a link's window): A and D move it only as far as the
        // whole trace stays in view (it walked off the trace into empty time, QA 2026-12-06)
        if (k === "a" || k === "d") {
          if (lo > ext[0]) { hi -= lo - ext[0]; lo = ext[0]; }
          if (hi < ext[1]) { lo += ext[1] - hi; hi = ext[1]; }
        }
        return (lo === a && hi === b) ? null : [lo, hi];
      }
      if (lo < ext[0]) { hi += ext[0] - lo; lo = ext[0]; }
      if (hi > ext[1]) { lo -= hi - ext[1]; hi = ext[1]; }
    }
    return (lo === a && hi === b) ? null : [lo, hi];
  }
  function typing(e) {
    const TEXTLESS = ["checkbox", "radio", "button", "submit", "reset", "range", "color", "file", "image"];
    return [e.target, document.activeElement].some(el => el && el.nodeType === 1 && (el.isContentEditable ||
      el.tagName === "TEXTAREA" || el.tagName === "SELECT" ||
      (el.tagName === "INPUT" && TEXTLESS.indexOf(String(el.type).toLowerCase()) < 0)));
  }
  function toggleHelp(show) {
    const el = document.getElementById("keys-help");
    if (!el) { return false; }
    el.hidden = show === undefined ? !el.hidden : !show;
    return true;
  }
  function sendKey(key) {
    const dc = window.dash_clientside;  // a dcc.Store draws no element: the page has one when it has a timeline
    if (!dc || !dc.set_props || !document.getElementById("timeline")) { return false; }
    presses += 1;
    dc.set_props("key-event", {data: {key: key, n: presses}});
    return true;
  }
  document.addEventListener("mousemove", (e) => {
    pointer = {x: e.clientX, y: e.clientY};
    active = "timeline";
    for (const id of GRAPHS) {
      const box = document.getElementById(id);
      if (box && box.contains(e.target)) { active = id; }
    }
    bindFlows();
  }, {passive: true, capture: true});  // capture: bound before Plotly's own handler makes the first hover
  document.addEventListener("click", (e) => {
    if (e.target && e.target.id === "keys-button") { toggleHelp(); }
  });
  document.addEventListener("keydown", (e) => {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || typing(e)) { return; }
    const k = e.key === "Escape" || e.key === "?" ? e.key : String(e.key || "").toLowerCase();
    let done = false;
    if (k === "?") {
      done = toggleHelp();
    } else if (k === "Escape") {
      const help = document.getElementById("keys-help");
      done = (help && !help.hidden) ? toggleHelp(false) : sendKey("clear");
    } else if (k === "f") {
      done = sendKey("fit");
    } else if (["w", "s", "a", "d"].indexOf(k) >= 0 && window.Plotly) {
      const ids = [active].concat(GRAPHS.filter(id => id !== active));
      const gd = ids.map(plotOf).find(onTimeAxis);
      if (!gd) { return; }
      const r = gd._fullLayout.xaxis.range;
      const w = nextWindow(k, gd, Math.round(Number(r[0]) * 1e9), Math.round(Number(r[1]) * 1e9));
      if (w === "all") { window.Plotly.relayout(gd, {"xaxis.autorange": true}); }
      else if (w) { window.Plotly.relayout(gd, {"xaxis.range": [w[0] / 1e9, w[1] / 1e9]}); }
      done = true;
    }
    if (done) { e.preventDefault(); }
  }, true);  // capture: a focused table cell (after a row click) stops the keys it handles from bubbling

  // A click on the timeline's plot area where no bar is (Plotly reports clicks on points only) is a point of
  // the time axis too: it becomes the graph's clickData, which "Add note" reads (app/sync.py). A drag (the
  // pointer moved) or Plotly's own click on a bar (plotly_click, after the mouseup) is left alone.
  let down = null, pointClickAt = 0;
  document.addEventListener("mousedown", (e) => {
    const gd = plotOf("timeline");
    down = gd && gd.contains(e.target) ? {x: e.clientX, y: e.clientY} : null;
    if (gd && gd.on && gd._ev && !gd._tracedashClick) {
      gd._tracedashClick = () => { pointClickAt = performance.now(); };
      gd.on("plotly_click", gd._tracedashClick);
    }
  }, true);
  document.addEventListener("mouseup", (e) => {
    const gd = plotOf("timeline"), dc = window.dash_clientside, at = performance.now();
    if (!down || !onTimeAxis(gd) || !dc || !dc.set_props) { return; }
    const moved = Math.abs(e.clientX - down.x) > 3 || Math.abs(e.clientY - down.y) > 3;
    down = null;
    if (e.detail >= 2) {  // a double click resets the zoom: its first click was no point to pin to
      setTimeout(() => dc.set_props("timeline", {clickData: null}), 0);
      return;
    }
    const r = gd._fullLayout.xaxis.range, rect = gd.getBoundingClientRect(), s = gd._fullLayout._size;
    const x = e.clientX - rect.left - s.l, y = e.clientY - rect.top - s.t;
    if (moved || x < 0 || x > s.w || y < 0 || y > s.h) { return; }
    const t = Number(r[0]) + (Number(r[1]) - Number(r[0])) * x / s.w;
    setTimeout(() => {
      if (pointClickAt < at) { dc.set_props("timeline", {clickData: {points: [{x: t}]}}); }
    }, 0);
  }, true);

  // Flows: hovering a kernel draws the line from its launch call on the CUDA API lane to the kernel, as Perfetto
  // draws flow arrows (one layout shape named "hover flow", the figure's own shapes kept). Each kernel bar's
  // customdata holds [call start (s), the API lane's y position] (figures.timeline.launch_flows), NaN for none.
  const FLOW = "hover flow";
  function bindFlows() {
    const gd = plotOf("timeline");
    if (!gd || !gd.on || !gd._ev) { return; }  // _ev: Plotly's event emitter, there once the figure is drawn
    if (gd._tracedashHover && gd._ev.listeners("plotly_hover").indexOf(gd._tracedashHover) >= 0) { return; }
    let shown = null;
    const others = () => (gd.layout.shapes || []).filter(s => s.name !== FLOW);
    gd._tracedashHover = (ev) => {
      const pt = ev && ev.points && ev.points[0];
      const cd = pt && pt.customdata;
      const cats = gd.layout.yaxis && gd.layout.yaxis.categoryarray;
      if (!cd || cd.length !== 2 || !isFinite(cd[0]) || !isFinite(cd[1]) || !Array.isArray(cats)) { return; }
      const base = pt.fullData && pt.fullData.base;  // the bar's drawn start (cut to the window), decoded
      const y1 = cats.indexOf(pt.y), x1 = Number(base ? base[pt.pointNumber] : NaN);
      const key = [pt.curveNumber, pt.pointNumber].join(":");
      if (y1 < 0 || !isFinite(x1)) { return; }
      if (key === shown && others().length !== (gd.layout.shapes || []).length) { return; }  // drawn already
      shown = key;
      window.Plotly.relayout(gd, {shapes: others().concat([{
        type: "line", name: FLOW, xref: "x", yref: "y", x0: Number(cd[0]), y0: Number(cd[1]), x1: x1, y1: y1,
        layer: "above", line: {color: "#111827", width: 2}}])});  // dark: kernels and the mark are orange
    };
    gd.on("plotly_hover", gd._tracedashHover);
    gd.on("plotly_unhover", () => {
      if (shown === null) { return; }
      shown = null;
      if ((gd.layout.shapes || []).some(s => s.name === FLOW)) { window.Plotly.relayout(gd, {shapes: others()}); }
    });
  }
})();

// A finding's "open view" link keeps the page's notes: they are pinned to times of the same trace, and the
// finding's own view (dashboard/render/findings.link_for) is built without them.
document.addEventListener("click", (e) => {
  const a = e.target && e.target.closest ? e.target.closest("a.finding-link") : null;
  const notes = new URLSearchParams(window.location.search).getAll("note");
  if (!a || !notes.length) { return; }
  const url = new URL(a.getAttribute("href"), window.location.href);
  url.searchParams.delete("note");
  notes.forEach(n => url.searchParams.append("note", n));
  a.setAttribute("href", url.pathname + url.search);
}, true);
