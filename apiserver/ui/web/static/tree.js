// The observation tree of large traces: the rows come as JSON and only
// those in view (plus a margin) exist in the DOM, so a trace of tens of
// thousands of observations opens at once and scrolls smoothly. Row
// fields: [id, depth, type, name, level, durationMs, totalCost, totalTokens,
// start%, width%]. The detail pane is fetched when a row is chosen.
(function () {
  "use strict";
  var nav = document.querySelector("[data-tree][data-virtual]");
  var dataEl = document.getElementById("tree-data");
  if (!nav || !dataEl) return;
  var rows = JSON.parse(dataEl.textContent);
  var space = nav.querySelector("[data-vspace]");
  var self = nav.getAttribute("data-self");
  var list = nav.getAttribute("data-list");
  var selected = rows.findIndex(function (r) { return r[0] === nav.getAttribute("data-selected"); });
  var rowHeight = 41, overscan = 20, top = space.offsetTop;
  space.style.height = rows.length * rowHeight + "px";
  space.style.position = "relative";

  function fmtMs(ms) {
    if (ms < 0) return "";
    if (ms < 1000) return Math.round(ms) + "ms";
    if (ms < 60000) return (ms / 1000).toFixed(2) + "s";
    return Math.floor(ms / 60000) + "m " + String(Math.floor((ms % 60000) / 1000)).padStart(2, "0") + "s";
  }
  function fmtCost(c) { return c ? " · $" + (c < 0.01 ? c.toFixed(6) : c.toFixed(4)) : ""; }
  function href(id) {
    return self + "?observation=" + encodeURIComponent(id) + (list ? "&list=" + list : "");
  }
  var svgNS = "http://www.w3.org/2000/svg";
  function row(i) {
    var r = rows[i];
    var a = document.createElement("a");
    a.className = "node d" + Math.min(r[1], 25) + (i === selected ? " selected" : "");
    a.href = href(r[0]);
    a.setAttribute("data-node", "");
    a.setAttribute("data-observation-id", r[0]);
    a.setAttribute("data-index", i);
    a.style.position = "absolute";
    a.style.left = "0";
    a.style.right = "0";
    a.style.top = i * rowHeight + "px";
    a.style.height = rowHeight + "px";
    var label = document.createElement("span");
    label.className = "label";
    var badge = document.createElement("span");
    badge.className = "badge " + r[2];
    badge.textContent = r[2];
    label.appendChild(badge);
    label.appendChild(document.createTextNode(" " + r[3]));
    if (r[4] && r[4] !== "DEFAULT") {
      var lv = document.createElement("span");
      lv.className = "level-" + r[4];
      lv.textContent = " " + r[4];
      label.appendChild(lv);
    }
    var meta = document.createElement("span");
    meta.className = "meta";
    meta.textContent = fmtMs(r[5]) + fmtCost(r[6]) + (r[7] ? " · " + r[7] + " tok" : "");
    var svg = document.createElementNS(svgNS, "svg");
    svg.setAttribute("class", "bar");
    svg.setAttribute("viewBox", "0 0 100 10");
    svg.setAttribute("preserveAspectRatio", "none");
    var rect = document.createElementNS(svgNS, "rect");
    rect.setAttribute("x", r[8]);
    rect.setAttribute("y", "2");
    rect.setAttribute("width", r[9]);
    rect.setAttribute("height", "6");
    rect.setAttribute("class", r[2]);
    svg.appendChild(rect);
    a.appendChild(label);
    a.appendChild(meta);
    a.appendChild(svg);
    return a;
  }

  var first = -1, last = -1;
  function render() {
    var view = nav.scrollTop - top;
    var from = Math.max(0, Math.floor(view / rowHeight) - overscan);
    var to = Math.min(rows.length, Math.ceil((view + nav.clientHeight) / rowHeight) + overscan);
    if (from === first && to === last) return;
    first = from; last = to;
    var frag = document.createDocumentFragment();
    for (var i = from; i < to; i++) frag.appendChild(row(i));
    space.replaceChildren(frag);
  }
  var pending = false;
  nav.addEventListener("scroll", function () {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; render(); });
  });
  window.addEventListener("resize", function () { first = -1; render(); });

  function choose(i, push) {
    if (i < 0 || i >= rows.length) return;
    selected = i;
    var url = href(rows[i][0]);
    space.querySelectorAll(".selected").forEach(function (n) { n.classList.remove("selected"); });
    var el = space.querySelector('[data-index="' + i + '"]');
    if (el) el.classList.add("selected");
    var y = top + i * rowHeight;
    if (y < nav.scrollTop + top || y + rowHeight > nav.scrollTop + nav.clientHeight) nav.scrollTop = y - nav.clientHeight / 2;
    if (window.htmx) {
      window.htmx.ajax("GET", url, { target: "#detail", swap: "outerHTML" });
      if (push) history.pushState({}, "", url);
    } else {
      window.location.href = url;
    }
  }
  space.addEventListener("click", function (e) {
    var a = e.target.closest("a[data-index]");
    if (!a || e.metaKey || e.ctrlKey) return;
    e.preventDefault();
    choose(Number(a.getAttribute("data-index")), true);
  });
  window.glassboxTree = { step: function (d) { choose(Math.max(0, Math.min(rows.length - 1, selected + d)), true); } };
  if (selected >= 0) nav.scrollTop = top + selected * rowHeight - nav.clientHeight / 2;
  render();
})();
