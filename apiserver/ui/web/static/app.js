// Glassbox UI behaviour that HTML alone cannot do. Small and dependency
// free; every page works without it, only less comfortably.
(function () {
  "use strict";

  function toast(msg) {
    var t = document.getElementById("toast");
    if (!t) return;
    t.textContent = msg;
    t.hidden = false;
    clearTimeout(toast.timer);
    toast.timer = setTimeout(function () { t.hidden = true; }, 4000);
  }

  // Copy buttons: data-copy holds the text.
  document.addEventListener("click", function (e) {
    var b = e.target.closest("[data-copy]");
    if (!b) return;
    e.preventDefault();
    var text = b.getAttribute("data-copy");
    var done = function () { toast("Copied"); };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallbackCopy(text); done(); });
    } else { fallbackCopy(text); done(); }
  });
  function fallbackCopy(text) {
    var ta = document.createElement("textarea");
    ta.value = text; document.body.appendChild(ta); ta.select();
    try { document.execCommand("copy"); } catch (err) { /* nothing else to try */ }
    ta.remove();
  }

  // Clicking a table row opens it, unless the click was on a control.
  document.addEventListener("click", function (e) {
    var tr = e.target.closest("tr[data-href]");
    if (!tr || e.target.closest("a, button, input, label, select, textarea")) return;
    if (e.metaKey || e.ctrlKey) { window.open(tr.getAttribute("data-href")); return; }
    window.location.href = tr.getAttribute("data-href");
  });

  // Row selection for bulk actions.
  function syncBulk(block) {
    var boxes = block.querySelectorAll("tbody input[name=id]");
    var n = 0;
    boxes.forEach(function (b) { if (b.checked) n++; });
    var c = block.querySelector("[data-selected-count]");
    if (c) c.textContent = n + " selected";
    block.querySelectorAll("[data-bulk-button]").forEach(function (b) { b.disabled = n === 0; });
  }
  document.addEventListener("change", function (e) {
    var block = e.target.closest(".table-block");
    if (!block) return;
    if (e.target.matches("[data-select-all]")) {
      block.querySelectorAll("tbody input[name=id]").forEach(function (b) { b.checked = e.target.checked; });
    }
    if (e.target.matches("[data-select-all], tbody input[name=id]")) syncBulk(block);
  });
  document.addEventListener("submit", function (e) {
    var btn = e.submitter;
    var q = btn && btn.getAttribute("data-confirm");
    if (q && !window.confirm(q)) e.preventDefault();
  });

  // A dashboard's widget form offers the measures and dimensions of the
  // chosen view only.
  function syncView(select) {
    select.form.querySelectorAll("optgroup[data-view]").forEach(function (g) {
      var off = g.getAttribute("data-view") !== select.value;
      g.disabled = off; g.hidden = off;
      var sel = g.parentElement;
      if (!off || !sel.selectedOptions[0] || sel.selectedOptions[0].parentElement !== g) return;
      // Back to "(nothing)" where there is one, else the view's first option.
      var first = sel.options[0];
      if (first.parentElement === sel) first.selected = true;
      else sel.querySelector('optgroup[data-view="' + select.value + '"] option').selected = true;
    });
  }
  document.querySelectorAll("[data-view-select]").forEach(syncView);
  document.addEventListener("change", function (e) {
    if (e.target.matches("[data-view-select]")) syncView(e.target);
  });

  // Forms marked data-autosubmit apply a changed select at once; the time
  // range shows its inputs only for a custom range.
  document.addEventListener("change", function (e) {
    var f = e.target.closest("form[data-autosubmit]");
    if (!f || e.target.tagName !== "SELECT") return;
    var custom = f.querySelector("[data-custom-range]");
    if (custom && e.target.name === "range") {
      custom.hidden = e.target.value !== "";
      if (e.target.value === "") return;
      custom.querySelectorAll("input").forEach(function (i) { i.disabled = true; });
    }
    f.requestSubmit();
  });
  document.querySelectorAll("form[data-autosubmit] [data-custom-range][hidden] input").forEach(function (i) { i.disabled = true; });

  // Errors of htmx calls are told, not swallowed.
  document.body.addEventListener("gb-error", function (e) { toast(e.detail.value || "Failed"); });
  document.body.addEventListener("htmx:responseError", function (e) {
    if (!e.detail.xhr.getResponseHeader("HX-Trigger")) toast("Request failed (" + e.detail.xhr.status + ")");
  });
  document.body.addEventListener("htmx:sendError", function () { toast("The server cannot be reached"); });

  // Times are rendered in UTC; show them in the reader's zone.
  document.querySelectorAll("time[datetime]").forEach(function (t) {
    var d = new Date(t.getAttribute("datetime"));
    if (!isNaN(d)) { t.title = t.textContent + " UTC"; t.textContent = d.toLocaleString(); }
  });

  // Raw toggles switch an input/output between the rendered view and the
  // stored JSON.
  document.addEventListener("change", function (e) {
    if (!e.target.matches("[data-raw-toggle]")) return;
    var io = e.target.closest(".io");
    io.querySelector(".io-pretty").hidden = e.target.checked;
    io.querySelector(".io-raw").hidden = !e.target.checked;
  });

  // Keyboard: j/k (or the arrow keys) walk a trace's observations, J/K
  // the traces of the list it was opened from.
  document.addEventListener("keydown", function (e) {
    if (e.metaKey || e.ctrlKey || e.altKey || e.target.closest("input, textarea, select, [contenteditable]")) return;
    var tree = document.querySelector("[data-tree]");
    if (!tree) return;
    var key = e.key;
    if (key === "J" || key === "K") {
      var link = document.querySelector(key === "J" ? "[rel=next][data-testid=next-trace]" : "[rel=prev][data-testid=prev-trace]");
      if (link) { e.preventDefault(); link.click(); }
      return;
    }
    var step = (key === "j" || key === "ArrowDown") ? 1 : (key === "k" || key === "ArrowUp") ? -1 : 0;
    if (!step) return;
    if (tree.hasAttribute("data-virtual") && window.glassboxTree) {
      e.preventDefault();
      window.glassboxTree.step(step);
      return;
    }
    var nodes = Array.prototype.slice.call(tree.querySelectorAll("[data-node]"));
    var cur = nodes.findIndex(function (n) { return n.classList.contains("selected"); });
    var next = nodes[Math.max(0, Math.min(nodes.length - 1, cur + step))];
    if (!next || next === nodes[cur]) return;
    e.preventDefault();
    next.click();
  });
  // Keyboard on a review: a number picks the category with that key, C
  // completes the item (and opens the next), S skips it.
  document.addEventListener("keydown", function (e) {
    if (e.metaKey || e.ctrlKey || e.altKey || e.target.closest("input[type=text], input[type=number], textarea, select, [contenteditable]")) return;
    var review = document.querySelector("[data-review]");
    if (!review) return;
    var key = e.key.toLowerCase();
    if (/^[1-9]$/.test(key)) {
      var choice = review.querySelector('input[type=radio][data-key="' + key + '"]');
      if (choice) { e.preventDefault(); choice.checked = true; }
    } else if (key === "c") {
      var form = review.querySelector("form[data-complete]");
      if (form) { e.preventDefault(); form.requestSubmit(); }
    } else if (key === "s") {
      var skip = document.querySelector("[data-testid=skip]");
      if (skip) { e.preventDefault(); skip.click(); }
    }
  });
  // Playground: "Run all" streams each variant's answer into its column.
  // The server ends the text with a NUL and the usage line.
  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (!form.matches("form[data-playground]") || !e.submitter || !e.submitter.hasAttribute("data-stream") || !window.ReadableStream) return;
    e.preventDefault();
    var n = +form.querySelector("input[name=variants]").value;
    for (var i = 0; i < n; i++) streamVariant(form, i);
  });
  function streamVariant(form, i) {
    var out = form.querySelector('[data-output="' + i + '"]'), usage = form.querySelector('[data-usage="' + i + '"]');
    var text = "";
    out.textContent = ""; out.classList.remove("failed"); usage.textContent = "running…";
    function show() {
      var k = text.indexOf("\u0000");
      out.textContent = k < 0 ? text : text.slice(0, k).replace(/\n$/, "");
      usage.textContent = k < 0 ? "running…" : text.slice(k + 1);
    }
    fetch(form.getAttribute("data-stream-url") + "?variant=" + i, { method: "POST", body: new FormData(form), credentials: "same-origin" })
      .then(function (res) {
        if (!res.ok) return res.text().then(function (t) { throw new Error(t); });
        var reader = res.body.getReader(), dec = new TextDecoder();
        function pump() {
          return reader.read().then(function (r) {
            if (r.done) { text += dec.decode(); show(); out.dataset.done = "true"; return; }
            text += dec.decode(r.value, { stream: true }); show(); return pump();
          });
        }
        return pump();
      })
      .catch(function (err) { out.textContent = err.message; out.classList.add("failed"); usage.textContent = ""; out.dataset.done = "true"; });
  }
  document.body.addEventListener("htmx:beforeRequest", function (e) {
    var n = e.detail.elt;
    if (!n.matches || !n.matches("[data-node]")) return;
    document.querySelectorAll("[data-node].selected").forEach(function (s) { s.classList.remove("selected"); });
    n.classList.add("selected");
    n.scrollIntoView({ block: "nearest" });
  });

  window.glassbox = { toast: toast };
})();
