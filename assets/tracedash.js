// tracedash client-side helpers (served by Dash from assets/).
window.dash_clientside = Object.assign({}, window.dash_clientside, {
  tracedash: {
    // Keep the x axes of the dispatch Gantt and the GPU timeline in step: zooming one zooms both.
    syncX: function (ganttRelayout, timelineRelayout) {
      const ctx = window.dash_clientside.callback_context;
      const trig = (ctx && ctx.triggered && ctx.triggered.length) ? ctx.triggered[0].prop_id : "";
      const fromGantt = trig.indexOf("gantt.") === 0;
      const src = fromGantt ? ganttRelayout : timelineRelayout;
      const target = document.querySelector((fromGantt ? "#timeline" : "#gantt") + " .js-plotly-plot");
      const source = document.querySelector((fromGantt ? "#gantt" : "#timeline") + " .js-plotly-plot");
      const onTimeAxis = gd => gd && gd.layout && gd.layout.meta && gd.layout.meta.time_axis;
      // Only figures on the session time axis follow each other (not, e.g., a bar chart of totals).
      if (!src || !onTimeAxis(target) || !onTimeAxis(source) || !window.Plotly) {
        return window.dash_clientside.no_update;
      }
      let update = null;
      if (src["xaxis.range[0]"] !== undefined && src["xaxis.range[1]"] !== undefined) {
        update = {"xaxis.range": [src["xaxis.range[0]"], src["xaxis.range[1]"]]};
      } else if (Array.isArray(src["xaxis.range"])) {
        update = {"xaxis.range": src["xaxis.range"].slice()};
      } else if (src["xaxis.autorange"]) {
        update = {"xaxis.autorange": true};
      }
      if (!update) { return window.dash_clientside.no_update; }
      const cur = target.layout.xaxis && target.layout.xaxis.range;
      if (update["xaxis.range"] && cur) {
        const a = Number(update["xaxis.range"][0]), b = Number(update["xaxis.range"][1]);
        const eps = Math.abs(b - a) * 1e-9;
        if (Math.abs(Number(cur[0]) - a) <= eps && Math.abs(Number(cur[1]) - b) <= eps) {
          return window.dash_clientside.no_update;  // already there: stop the ping-pong
        }
      }
      if (update["xaxis.autorange"] && target.layout.xaxis && target.layout.xaxis.autorange) {
        return window.dash_clientside.no_update;
      }
      window.Plotly.relayout(target, update);
      return window.dash_clientside.no_update;
    },
    // Download a figure as SVG under the same meaningful file name as its PNG.
    downloadSvg: function (n, id) {
      const gd = document.querySelector("#" + id.graph + " .js-plotly-plot");
      if (!gd || !window.Plotly) { return window.dash_clientside.no_update; }
      const opts = (gd._context && gd._context.toImageButtonOptions) || {};
      window.Plotly.downloadImage(gd, {format: "svg", filename: opts.filename || ("tracedash_" + id.graph),
                                       width: gd._fullLayout.width, height: gd._fullLayout.height});
      return "Download this figure as SVG";
    },
    // Copy the address bar (which always holds the current view) to the clipboard.
    copyLink: function (n) {
      const href = window.location.href;
      try {
        if (navigator.clipboard && navigator.clipboard.writeText) {
          navigator.clipboard.writeText(href);
        } else {
          const t = document.createElement("textarea"); t.value = href; document.body.appendChild(t);
          t.select(); document.execCommand("copy"); document.body.removeChild(t);
        }
        window.tracedashLastCopiedLink = href;
        return "Link copied";
      } catch (e) {
        window.tracedashLastCopiedLink = href;
        return "Copy failed: see address bar";
      }
    },
    // Zoom the GPU timeline to the clicked idle gap, with the gap's width of context on each side.
    // Rows carry row_id plus start_ns and end_ns (an idle gap, a dispatch, a kernel's longest run).
    zoomToRow: function (cell, rows) {
      const nu = window.dash_clientside.no_update;
      if (!cell || cell.rowId === undefined || !Array.isArray(rows)) { return nu; }
      const row = rows.find(r => String(r.row_id) === String(cell.rowId));
      if (!row) { return nu; }
      const s = Number(row.start_ns), e = Number(row.end_ns);
      const gd = document.querySelector("#timeline .js-plotly-plot");
      if (!gd || !window.Plotly || !isFinite(s) || !isFinite(e) || e <= s) { return nu; }
      const pad = Math.max(e - s, 1000);
      window.Plotly.relayout(gd, {"xaxis.range": [(s - pad) / 1e9, (e + pad) / 1e9]});
      gd.scrollIntoView({behavior: "smooth", block: "center"});
      return nu;
    }
  }
});
